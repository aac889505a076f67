package graph

import "fmt"

// Normalisation operators, composed of reductions and elementwise
// kernels: LayerNormalization, BatchNormalization (inference form) and
// InstanceNormalization.
//
// BatchNormalization's running mean and variance (inputs 3 and 4) are
// statistics of the training data, not trained weights: they are
// constants by rule (constantInput), never parameters, even when they are
// float initializers. Its scale and bias stay parameters.

// constantInput reports whether input i of n is a constant by rule: an
// initializer feeding it is not a parameter (collectParams).
func constantInput(n *Node, i int) bool {
	return n.OpType == "BatchNormalization" && (n.Domain == "" || n.Domain == "ai.onnx") && (i == 3 || i == 4)
}

// normalize returns (x - mean) and 1/sqrt(var + eps) over the axes in red
// (kept as size 1), with mean and var the population statistics, and the
// mean.
func (c *compiler) normalize(x *value, red []bool, eps float64) (centred, inv, mean *value) {
	scale := c.scalar(1 / float64(reduceCount(x.dims(), red)))
	mean = c.mustBinary(opMul, c.reduce(x, red, reduceSum), scale)
	centred = c.mustBinary(opSub, x, mean)
	variance := c.mustBinary(opMul, c.reduce(square(c, centred), red, reduceSum), scale)
	inv = c.unary(actPow(-0.5), c.mustBinary(opAdd, variance, c.scalar(eps)))
	return centred, inv, mean
}

// lowerLayerNorm normalises over the axes from axis on and applies Scale
// and B (broadcast); the optional outputs are the mean and the inverse
// standard deviation.
func lowerLayerNorm(c *compiler, n *Node, in []*value) ([]*value, error) {
	vs, err := needAll(in, "X", "Scale")
	if err != nil {
		return nil, err
	}
	x, scale := vs[0], vs[1]
	axis, err := n.attrInt("axis", -1)
	if err != nil {
		return nil, err
	}
	eps, err := n.attrFloat("epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	d := x.dims()
	ax, err := normAxis(axis, len(d))
	if err != nil {
		return nil, err
	}
	red := make([]bool, len(d))
	for a := ax; a < len(d); a++ {
		red[a] = true
	}
	centred, inv, mean := c.normalize(x, red, eps)
	y, err := c.binary(opMul, c.mustBinary(opMul, centred, inv), scale)
	if err != nil {
		return nil, err
	}
	if len(in) > 2 && in[2] != nil {
		if y, err = c.binary(opAdd, y, in[2]); err != nil {
			return nil, err
		}
	}
	if !sameShape(y.dims(), d) {
		return nil, shapeErr("LayerNormalization: Scale and B change the shape %v to %v", d, y.dims())
	}
	return []*value{y, mean, inv}, nil
}

// channelView reshapes a per-channel vector [C] to [C, 1, ...] for an
// input of rank r laid out [N, C, ...].
func (c *compiler) channelView(v *value, r int, what string, channels int) (*value, error) {
	if d := v.dims(); len(d) != 1 || d[0] != channels {
		return nil, shapeErr("%s has shape %v, want [%d] (one value per channel)", what, d, channels)
	}
	shape := make([]int, r-1)
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = channels
	return c.view(v, shape), nil
}

// lowerBatchNorm is the inference form: y = (x - mean) / sqrt(var + eps)
// scale + B, computed as x a + b with a = scale / sqrt(var + eps) and b =
// B - mean a per channel (folded at compile time when all four are
// constants).
func lowerBatchNorm(c *compiler, n *Node, in []*value) ([]*value, error) {
	names := []string{"X", "scale", "B", "input_mean", "input_var"}
	vs, err := needAll(in, names...)
	if err != nil {
		return nil, err
	}
	if train, err := n.attrInt("training_mode", 0); err != nil {
		return nil, err
	} else if train != 0 {
		return nil, fmt.Errorf("%w: BatchNormalization in training mode uses the batch's statistics; export the model in evaluation mode (model.eval())", ErrAttr)
	}
	if isTest, err := n.attrInt("is_test", 1); err != nil {
		return nil, err
	} else if c.g.Opset < 7 && isTest == 0 {
		return nil, fmt.Errorf("%w: BatchNormalization with is_test 0 uses the batch's statistics; export the model in evaluation mode (model.eval())", ErrAttr)
	}
	eps, err := n.attrFloat("epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	x := vs[0]
	d := x.dims()
	if len(d) < 2 {
		return nil, shapeErr("BatchNormalization input has shape %v, want [N, C, ...]", d)
	}
	for i := 1; i < 5; i++ {
		if vs[i], err = c.channelView(vs[i], len(d), names[i], d[1]); err != nil {
			return nil, err
		}
	}
	inv := c.unary(actPow(-0.5), c.mustBinary(opAdd, vs[4], c.scalar(eps)))
	a := c.mustBinary(opMul, vs[1], inv)
	b := c.mustBinary(opSub, vs[2], c.mustBinary(opMul, vs[3], a))
	return []*value{c.mustBinary(opAdd, c.mustBinary(opMul, x, a), b)}, nil
}

// lowerInstanceNorm normalises each channel of each example over the
// spatial axes and applies the per-channel scale and B.
func lowerInstanceNorm(c *compiler, n *Node, in []*value) ([]*value, error) {
	vs, err := needAll(in, "input", "scale", "B")
	if err != nil {
		return nil, err
	}
	x, scale, bias := vs[0], vs[1], vs[2]
	eps, err := n.attrFloat("epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	d := x.dims()
	if len(d) < 3 {
		return nil, shapeErr("InstanceNormalization input has shape %v, want [N, C, D1, ...]", d)
	}
	if scale, err = c.channelView(scale, len(d), "scale", d[1]); err != nil {
		return nil, err
	}
	if bias, err = c.channelView(bias, len(d), "B", d[1]); err != nil {
		return nil, err
	}
	red := make([]bool, len(d))
	for a := 2; a < len(d); a++ {
		red[a] = true
	}
	centred, inv, _ := c.normalize(x, red, eps)
	y := c.mustBinary(opMul, c.mustBinary(opMul, centred, inv), scale)
	return []*value{c.mustBinary(opAdd, y, bias)}, nil
}
