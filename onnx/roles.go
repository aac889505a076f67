package onnx

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/graph"
)

// inputNames are the ONNX specification's names of the inputs of the
// operators whose parameters users need to recognise.
var inputNames = map[string][]string{
	"RNN":    {"X", "W", "R", "B", "sequence_lens", "initial_h"},
	"GRU":    {"X", "W", "R", "B", "sequence_lens", "initial_h"},
	"LSTM":   {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"},
	"Gemm":   {"A", "B", "C"},
	"MatMul": {"A", "B"},
	"Add":    {"A", "B"},
	"Sub":    {"A", "B"},
	"Mul":    {"A", "B"},
	"Div":    {"A", "B"},
}

// ParamRole says which node first uses the parameter tensor name and as
// which of its inputs, such as `W of RNN node "/rnn/RNN"`, by the input
// names of the ONNX specification ("input 2" for operators not listed
// there). Exporters often name weights after the node that takes them
// (onnx::RNN_40), which does not say which weight it is. It returns ""
// when no node uses name.
func ParamRole(g *graph.Graph, name string) string {
	for _, n := range g.Nodes {
		for i, in := range n.Inputs {
			if in != name {
				continue
			}
			role := fmt.Sprintf("input %d", i)
			if r := inputNames[n.OpType]; i < len(r) {
				role = r[i]
			}
			return fmt.Sprintf("%s of %s node %q", role, n.OpType, n.Label())
		}
	}
	return ""
}
