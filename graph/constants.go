package graph

import (
	"fmt"
	"slices"
)

// Constant is a float initializer that the outputs depend on but that is
// not a parameter, with the rule that makes it a constant.
type Constant struct {
	Name   string
	Shape  []int
	Reason string
}

// Which initializers are parameters. An ONNX file does not say which of
// its initializers were trained: PyTorch exports registered buffers (the
// running statistics of batch normalisation, a target scaler's mean and
// standard deviation) beside the weights. Every float initializer that an
// output depends on is a parameter, except
//
//   - the running mean and variance of BatchNormalization (inputs 3 and 4),
//     which are estimated from the data, not trained;
//   - buffers that rescale the output of the model's last affine layer
//     (MatMul or Gemm), y * std + mean or (y - mean) / std, through Add,
//     Sub, Mul and Div with a scalar or one value per output column:
//     whatever they are, the layer's weights and bias already span the
//     directions they would add, so as parameters they would only make
//     the curvature singular. The first Add or Sub after a MatMul (or a
//     Gemm without C) is that layer's bias and stays a parameter.
//
// Constants lists the others with why; Restrict can leave out more.
// construles.go has the rules for input normalisers, masks, folded
// scalars, position tables and buffer names; WithTrained replaces every
// rule by the exporter's record.

// ruleConstants returns the initializers that are constants by rule, with
// the reason for each: running statistics of batch normalisation (when
// nothing else uses them) and output-rescaling buffers.
func (g *Graph) ruleConstants() map[string]string {
	out := g.rescalers()
	for name, why := range g.extraConstants() { // construles.go
		if out[name] == "" {
			out[name] = why
		}
	}
	other := map[string]bool{} // used other than as a statistic
	stat := map[string]string{}
	for _, n := range g.Nodes {
		for k, in := range n.Inputs {
			if !constantInput(n, k) {
				other[in] = true
				continue
			}
			if stat[in] == "" {
				what := "mean"
				if k == 4 {
					what = "variance"
				}
				stat[in] = fmt.Sprintf("the running %s of BatchNormalization node %q: estimated from the data, not trained", what, n.Label())
			}
		}
	}
	for name, r := range stat {
		if !other[name] {
			out[name] = r
		}
	}
	return out
}

// rescalers returns the output-rescaling initializers with the reason
// for each.
func (g *Graph) rescalers() map[string]string {
	producer := map[string]*Node{}
	uses := map[string]int{}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				producer[o] = n
			}
		}
		for _, in := range n.Inputs {
			uses[in]++
		}
	}
	isInit := func(v string) bool {
		t := g.Init[v]
		return t != nil && t.DType == Float
	}
	type link struct {
		n    *Node
		init string
	}
	out := map[string]string{}
	for _, o := range g.Outputs {
		var chain []link
		v := o.Name
	walk:
		for {
			n := producer[v]
			if n == nil || len(n.Inputs) == 0 {
				break
			}
			switch n.OpType {
			case "Identity", "Squeeze", "Unsqueeze", "Reshape", "Flatten":
				v = n.Inputs[0]
				continue
			case "Add", "Sub", "Mul", "Div":
				if len(n.Inputs) != 2 {
					break walk
				}
				a, b := n.Inputs[0], n.Inputs[1]
				var c, next string
				switch {
				case isInit(b) && !isInit(a):
					c, next = b, a
				case isInit(a) && !isInit(b) && n.OpType != "Div":
					c, next = a, b
				default:
					break walk
				}
				if !perColumn(g.Init[c]) || uses[c] != 1 {
					break walk
				}
				chain = append(chain, link{n, c})
				v = next
				continue
			}
			break
		}
		end := producer[v]
		if end == nil || len(chain) == 0 || (end.OpType != "MatMul" && end.OpType != "Gemm") || !slices.ContainsFunc(end.Inputs, isInit) {
			continue
		}
		k := len(chain)
		hasBias := end.OpType == "Gemm" && len(end.Inputs) > 2 && end.Inputs[2] != ""
		if last := chain[k-1].n.OpType; !hasBias && (last == "Add" || last == "Sub") {
			k-- // the layer's own bias
		}
		for _, l := range chain[:k] {
			out[l.init] = fmt.Sprintf("rescales the output of %s node %q (%s node %q): a fixed buffer such as y * std + mean, redundant with that layer's weights and bias",
				end.OpType, end.Label(), l.n.OpType, l.n.Label())
		}
	}
	return out
}

// perColumn reports whether t is a scalar or one value per column of the
// last axis (every other dimension 1).
func perColumn(t *Tensor) bool {
	for i, d := range t.Shape {
		if i < len(t.Shape)-1 && d != 1 {
			return false
		}
	}
	return true
}

// Constants returns the float initializers that the outputs depend on and
// that are not parameters, in file order, with the rule that makes each a
// constant: a running statistic of batch normalisation, an
// output-rescaling buffer, or a parameter left out by Restrict.
func (g *Graph) Constants() []Constant {
	need := map[string]bool{}
	for _, o := range g.Outputs {
		need[o.Name] = true
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		if !slices.ContainsFunc(n.Outputs, func(o string) bool { return need[o] }) || n.OpType == "Shape" || n.OpType == "Size" {
			continue
		}
		for _, in := range n.Inputs {
			need[in] = true
		}
	}
	why := g.ruleConstants()
	var out []Constant
	for _, name := range g.InitOrder {
		t := g.Init[name]
		if t == nil || t.DType != Float || !need[name] {
			continue
		}
		if _, ok := g.isParam[name]; ok {
			continue
		}
		r := why[name]
		if g.trained != nil && !g.trained[name] {
			r = "not among the initializers the export recorded as trained (metadata " + TrainedKey + ")"
		}
		if r == "" {
			r = "left out of the audited parameters (Restrict, --params)"
		}
		out = append(out, Constant{Name: name, Shape: slices.Clone(t.Shape), Reason: r})
	}
	return out
}
