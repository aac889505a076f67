package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rnnaudit/rnnaudit/graph"
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
// Otherwise it follows the input to the first RNN, LSTM or GRU node that
// reads it as X, through Transpose nodes and nodes that keep the axis
// order (Identity, Cast, Gather, elementwise arithmetic and activations):
// a recurrent node with layout 0 reads [time, batch, features] and one
// with layout 1 reads [batch, time, features], and each Transpose with
// perm [1 0 2] on the way swaps the two. Any other path gives Unknown.
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
	"Relu", "Tanh", "Sigmoid", "LeakyRelu", "Elu", "Neg", "Abs", "Clip"}

// layoutFromGraph follows the value name through the graph to a recurrent
// node.
func layoutFromGraph(g *graph.Graph, name string) (Layout, string) {
	swaps := 0
	var transposes []string
	seen := map[string]bool{}
	for !seen[name] {
		seen[name] = true
		var next string
		for _, n := range g.Nodes {
			i := slices.Index(n.Inputs, name)
			if i < 0 {
				continue
			}
			switch {
			case (n.OpType == "RNN" || n.OpType == "LSTM" || n.OpType == "GRU") && i == 0:
				layout := n.Attrs["layout"].I
				if layout != 0 && layout != 1 {
					return Unknown, fmt.Sprintf("%s node %q has layout %d", n.OpType, n.Label(), layout)
				}
				l := TimeFirst
				if (layout == 1) != (swaps%2 == 1) {
					l = BatchFirst
				}
				if len(transposes) > 0 {
					return l, fmt.Sprintf("Transpose [1 0 2] before %s node %q (layout %d)", n.OpType, n.Label(), layout)
				}
				return l, fmt.Sprintf("the input feeds %s node %q (layout %d)", n.OpType, n.Label(), layout)
			case n.OpType == "Scan" && g.Opset >= 9:
				if l, why, ok := scanLayout(n, i, swaps); ok {
					return l, why
				}
				continue
			case n.OpType == "Transpose":
				perm := n.Attrs["perm"].Ints
				if !slices.Equal(perm, []int64{1, 0, 2}) {
					return Unknown, fmt.Sprintf("Transpose node %q with perm %v", n.Label(), perm)
				}
				swaps++
				transposes = append(transposes, n.Label())
			case slices.Contains(keepsAxes, n.OpType) && (n.OpType != "Gather" || i == 0):
			default:
				continue
			}
			if len(n.Outputs) > 0 && n.Outputs[0] != "" {
				next = n.Outputs[0]
			}
			break
		}
		if next == "" {
			break
		}
		name = next
	}
	return Unknown, "no RNN, LSTM, GRU or Scan node reads the input"
}

// scanLayout reads the layout from a Scan (opset 9 and later) that scans
// input i of n along axis 0 or 1 of a rank-3 value, after swaps
// transposes of the first two axes; ok is false when input i is a state.
func scanLayout(n *graph.Node, i, swaps int) (Layout, string, bool) {
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
	l := TimeFirst
	if (axis == 1) != (swaps%2 == 1) {
		l = BatchFirst
	}
	return l, fmt.Sprintf("Scan node %q scans axis %d of the input after %d transposes", n.Label(), axis, swaps), true
}
