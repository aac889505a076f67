package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// Layout is the order of the batch and time axes of a sequence input.
type Layout = graph.Layout

// Input layouts.
const (
	// Unknown: the model does not say; the user must.
	Unknown    = graph.UnknownLayout
	BatchFirst = graph.BatchFirst
	TimeFirst  = graph.TimeFirst
)

// Dimension names, lower case, that mark the batch and the time axis.
// PyTorch exports take them from the user's dynamic_axes.
var (
	batchNames = []string{"batch", "batch_size", "batchsize", "batch_dim", "n", "b", "bs", "nbatch", "num_sequences"}
	timeNames  = []string{"time", "times", "t", "seq", "seq_len", "seq_length", "seqlen", "sequence", "sequence_length",
		"sequence_len", "steps", "step", "time_steps", "timesteps", "num_steps", "len", "length"}
)

// axisName classifies a dimension name as "batch", "time" or "".
func axisName(name string) string {
	s := strings.ToLower(name)
	switch {
	case slices.Contains(batchNames, s):
		return "batch"
	case slices.Contains(timeNames, s):
		return "time"
	}
	return ""
}

// DetectLayout returns the layout of the model's sequence input, the first
// graph input that is a float tensor of rank 3, and a short reason for the
// inspect report.
//
// It trusts the dimension names first: [batch time 2] is BatchFirst and
// [time batch 2] is TimeFirst (names are compared case-insensitively with
// common spellings such as "batch_size", "N", "seq", "T" or "steps").
// Otherwise it follows the input along every path to the first RNN, LSTM,
// GRU or Scan node that reads it as its sequence, through Transpose nodes
// (any permutation of the three axes, followed), 1-D Conv, pooling and
// normalisation nodes (which keep [batch, channels, length] in place, as
// in a CNN-LSTM's x.permute(0, 2, 1) -> Conv1d -> permute -> LSTM) and
// nodes that keep the axis order (Identity, Cast, Gather, elementwise
// arithmetic and activations): a recurrent node with layout 0 reads
// [time, batch, features] and one with layout 1 reads [batch, time,
// features]. Any other path gives Unknown.
func DetectLayout(g *graph.Graph) (Layout, string) {
	var in *graph.ValueInfo
	for i := range g.Inputs {
		v := &g.Inputs[i]
		if dt, ok := v.Elem.DType(); ok && dt == graph.Float && len(v.Dims) == 3 {
			in = v
			break
		}
	}
	if in == nil {
		return Unknown, "no float input of rank 3"
	}
	if l := layoutFromNames(in.Dims); l != Unknown {
		return l, "dimension names " + in.ShapeString()
	}
	return layoutFromGraph(g, in.Name)
}

// layoutFromNames reads the layout from the names of the first two
// dimensions, and returns Unknown when they say nothing or contradict
// each other.
func layoutFromNames(dims []graph.Dim) Layout {
	a, b := axisName(dims[0].Name), axisName(dims[1].Name)
	bf := a == "batch" || b == "time"
	tf := a == "time" || b == "batch"
	switch {
	case bf && !tf:
		return BatchFirst
	case tf && !bf:
		return TimeFirst
	}
	return Unknown
}

// keepsAxes lists operators whose output has the axis order of their
// input.
var keepsAxes = []string{"Identity", "Cast", "Dropout", "Gather", "Add", "Sub", "Mul", "Div",
	"Relu", "Tanh", "Sigmoid", "LeakyRelu", "Elu", "Neg", "Abs", "Clip", "Softplus", "Erf", "Exp",
	"Log", "Sqrt", "Pow", "Gelu", "LayerNormalization"}

// channelOps lists operators that read a rank-3 value as [batch, channels,
// length] and return [batch, channels', length'] (1-D convolution, pooling
// and normalisation): the batch and time axes stay where they are.
var channelOps = []string{"Conv", "MaxPool", "AveragePool", "BatchNormalization", "InstanceNormalization"}

// walk is a value on a path from the sequence input: perm[k] is the axis of
// the input that axis k of the value holds, and steps names the
// axis-moving nodes on the way, for the reason.
type walk struct {
	name  string
	perm  []int
	steps []string
	swaps int
}

// layoutFromGraph follows the value name through the graph, breadth first
// along every path, to a recurrent node or Scan that reads it as its
// sequence, keeping track of where the input's axes go: through
// Transpose nodes of rank 3 (any permutation), 1-D Conv, pooling and
// normalisation nodes (which keep [batch, channels, length] in place) and
// nodes that keep the axis order. The first recurrent node reached
// decides; a recurrent node whose batch or time axis is the input's third
// axis gives Unknown.
func layoutFromGraph(g *graph.Graph, name string) (Layout, string) {
	queue := []walk{{name: name, perm: []int{0, 1, 2}}}
	seen := map[string]bool{name: true}
	why := "no RNN, LSTM, GRU or Scan node reads the input"
	failed := false
	for len(queue) > 0 {
		w := queue[0]
		queue = queue[1:]
		for _, n := range g.Nodes {
			i := slices.Index(n.Inputs, w.name)
			if i < 0 {
				continue
			}
			next := w
			switch {
			case (n.OpType == "RNN" || n.OpType == "LSTM" || n.OpType == "GRU") && i == 0:
				l, reason := recurrentLayout(n, w)
				if l != Unknown {
					return l, reason
				}
				if !failed {
					why, failed = reason, true
				}
				continue
			case n.OpType == "Scan" && g.Opset >= 9:
				if l, reason, ok := scanLayout(n, i, w); ok {
					if l != Unknown {
						return l, reason
					}
					if !failed {
						why, failed = reason, true
					}
				}
				continue
			case n.OpType == "Transpose":
				perm := n.Attrs["perm"].Ints
				if len(perm) != 3 || !isPerm(perm) {
					if !failed {
						why, failed = fmt.Sprintf("Transpose node %q with perm %v", n.Label(), errs.Value(perm)), true
					}
					continue
				}
				next.perm = []int{w.perm[perm[0]], w.perm[perm[1]], w.perm[perm[2]]}
				next.steps = append(slices.Clip(w.steps), fmt.Sprintf("Transpose node %q with perm %v", n.Label(), errs.Value(perm)))
				if slices.Equal(perm, []int64{1, 0, 2}) {
					next.swaps++
				}
			case slices.Contains(channelOps, n.OpType) && i == 0:
				next.steps = append(slices.Clip(w.steps), fmt.Sprintf("%s node %q", n.OpType, n.Label()))
			case slices.Contains(keepsAxes, n.OpType) && (n.OpType != "Gather" || i == 0):
			default:
				continue
			}
			if len(n.Outputs) == 0 || n.Outputs[0] == "" || seen[n.Outputs[0]] {
				continue
			}
			next.name = n.Outputs[0]
			seen[next.name] = true
			queue = append(queue, next)
		}
	}
	return Unknown, why
}

// recurrentLayout reads the layout from recurrent node n that reads the
// walked value as X: a node with layout 0 reads [time, batch, features]
// and one with layout 1 reads [batch, time, features].
func recurrentLayout(n *graph.Node, w walk) (Layout, string) {
	layout := n.Attrs["layout"].I
	if layout != 0 && layout != 1 {
		return Unknown, fmt.Sprintf("%s node %q has layout %d", n.OpType, n.Label(), layout)
	}
	time, batch := w.perm[0], w.perm[1]
	if layout == 1 {
		time, batch = batch, time
	}
	var l Layout
	switch {
	case batch == 0 && time == 1:
		l = BatchFirst
	case batch == 1 && time == 0:
		l = TimeFirst
	default:
		return Unknown, fmt.Sprintf("%s node %q (layout %d) reads axis %d of the input as batch and axis %d as time after %s",
			n.OpType, n.Label(), layout, batch, time, strings.Join(w.steps, ", "))
	}
	if len(w.steps) > 0 {
		if slices.Equal(w.perm, []int{1, 0, 2}) && w.swaps == len(w.steps) {
			return l, fmt.Sprintf("Transpose [1 0 2] before %s node %q (layout %d)", n.OpType, n.Label(), layout)
		}
		return l, fmt.Sprintf("%s before %s node %q (layout %d)", strings.Join(w.steps, ", "), n.OpType, n.Label(), layout)
	}
	return l, fmt.Sprintf("the input feeds %s node %q (layout %d)", n.OpType, n.Label(), layout)
}

// isPerm reports whether p is a permutation of 0..len(p)-1.
func isPerm(p []int64) bool {
	seen := make([]bool, len(p))
	for _, v := range p {
		if v < 0 || int(v) >= len(p) || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

// scanLayout reads the layout from a Scan (opset 9 and later) that scans
// input i of n along axis 0 or 1 of the walked rank-3 value; ok is false
// when input i is a state.
func scanLayout(n *graph.Node, i int, w walk) (Layout, string, bool) {
	first := len(n.Inputs) - int(n.Attrs["num_scan_inputs"].I)
	if i < first || first < 0 {
		return Unknown, "", false
	}
	axis := int64(0)
	if axes := n.Attrs["scan_input_axes"].Ints; i-first < len(axes) {
		axis = axes[i-first]
	}
	if axis < 0 {
		axis += 3
	}
	if axis != 0 && axis != 1 {
		return Unknown, fmt.Sprintf("Scan node %q scans axis %d", n.Label(), axis), true
	}
	var l Layout
	switch w.perm[axis] {
	case 0:
		l = TimeFirst
	case 1:
		l = BatchFirst
	default:
		return Unknown, fmt.Sprintf("Scan node %q scans axis %d, the input's feature axis, after %s", n.Label(), axis, strings.Join(w.steps, ", ")), true
	}
	return l, fmt.Sprintf("Scan node %q scans axis %d of the input after %d transposes", n.Label(), axis, len(w.steps)), true
}
