package graph

import (
	"fmt"
	"maps"
	"slices"
)

// TargetScaleKey is the key of the ONNX metadata entry in which an
// exporter records the target's scaling, a JSON list [mean, std]: the
// model was trained on (y - mean) / std (Graph.TargetScale).
const TargetScaleKey = "rnnaudit.target_scale"

// TrainBudgetKey is the key of the ONNX metadata entry in which an
// exporter records how the model was trained, in --train-budget's form
// (Graph.TrainBudget).
const TrainBudgetKey = "rnnaudit.train_budget"

// Rewired returns a graph with other inputs, outputs and nodes over g's
// initializers that keeps g's parameter table exactly: the same
// parameters, in the same order and at the same offsets of the flat
// vector, also when g is a Restrict-ed copy or when the new nodes use an
// initializer more often than g's (which would change what New takes for
// a constant by rule). A program of the result takes g's theta. It is
// meant for rewritings that apply g's operators to parts of the data,
// such as running a model whose batch size is fixed on chunks of a larger
// batch; the nodes must not hold subgraphs, and every parameter of g must
// still be used.
func (g *Graph) Rewired(inputs, outputs []ValueInfo, nodes []*Node) (*Graph, error) {
	for _, n := range nodes {
		if len(subgraphs(n)) > 0 {
			return nil, fmt.Errorf("graph: rewiring a model with subgraphs (node %q, %s) is not supported", n.Label(), n.OpType)
		}
	}
	h, err := New(g.Opset, inputs, outputs, nodes, maps.Clone(g.Init), slices.Clone(g.InitOrder))
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, n := range h.Nodes {
		for _, in := range n.Inputs {
			used[in] = true
		}
	}
	for _, p := range g.params {
		if !used[p.Name] {
			return nil, fmt.Errorf("graph: the rewired model no longer uses parameter %q", p.Name)
		}
	}
	h.params, h.theta, h.isParam = g.params, g.theta, g.isParam
	return h, nil
}
