package modelio

import (
	"fmt"
	"math"

	"github.com/rnnaudit/rnnaudit/graph"
)

// CheckTargetScale checks a target scaling {mean, std} (Config.TargetScale):
// nil, or two finite numbers with std > 0.
func CheckTargetScale(s []float64) error {
	if s == nil {
		return nil
	}
	if len(s) != 2 || math.IsNaN(s[0]) || math.IsInf(s[0], 0) || !(s[1] > 0) || math.IsInf(s[1], 0) {
		return fmt.Errorf("audit: target scale %v: give the mean and the standard deviation (> 0) the target was scaled with, as in (y - mean) / std", s)
	}
	return nil
}

// withTargetScale returns g with its forecast output (the first) read in
// the target's own units: mean + std * output, for a model trained on the
// target scaled as (y - mean) / std. The two numbers are Constant nodes,
// not initializers, so they are never parameters; the parameter table is
// g's (graph.Rewired).
func withTargetScale(g *graph.Graph, s []float64) (*graph.Graph, error) {
	out := g.Outputs[0].Name
	raw := "rnnaudit_scaled/" + out
	nodes := make([]*graph.Node, 0, len(g.Nodes)+4)
	for _, n := range g.Nodes {
		cp := *n
		cp.Outputs = append([]string(nil), n.Outputs...)
		for j, o := range cp.Outputs {
			if o == out {
				cp.Outputs[j] = raw
			}
		}
		cp.Inputs = append([]string(nil), n.Inputs...)
		for j, in := range cp.Inputs {
			if in == out {
				cp.Inputs[j] = raw
			}
		}
		nodes = append(nodes, &cp)
	}
	scalar := func(name string, v float64) *graph.Node {
		return &graph.Node{Name: name, OpType: "Constant", Outputs: []string{name},
			Attrs: map[string]graph.Attr{"value": {Kind: graph.AttrTensor, T: graph.NewFloat(nil, []float64{v})}}}
	}
	nodes = append(nodes, scalar("rnnaudit_target_std", s[1]), scalar("rnnaudit_target_mean", s[0]),
		&graph.Node{Name: "rnnaudit_target_times_std", OpType: "Mul", Inputs: []string{raw, "rnnaudit_target_std"}, Outputs: []string{raw + "*std"}},
		&graph.Node{Name: "rnnaudit_target_plus_mean", OpType: "Add", Inputs: []string{raw + "*std", "rnnaudit_target_mean"}, Outputs: []string{out}})
	return g.Rewired(g.Inputs, g.Outputs, nodes)
}

// scaleNote says how the forecasts are read with a target scale (none
// without one).
func scaleNote(s []float64) []string {
	if s == nil {
		return nil
	}
	return []string{fmt.Sprintf("Forecasts are in the target's units: %g + %g × the model's output, which was trained on (y - %g) / %g (--target-scale); intervals, thresholds and figures are in those units.", s[0], s[1], s[0], s[1])}
}
