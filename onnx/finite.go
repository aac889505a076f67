package onnx

import (
	"errors"
	"fmt"
	"math"

	"github.com/rnnaudit/rnnaudit/graph"
)

// ErrNonFinite is wrapped by the error for a model whose parameters hold
// NaN or infinite values: no forecast, gradient or curvature of such a
// model is a number, so nothing about it can be audited.
var ErrNonFinite = errors.New("NaN or infinite parameter values")

// checkFinite reports every parameter tensor of g that holds a NaN or an
// infinity, with the count of each, as one error (a graph.ErrorList for
// several tensors).
func checkFinite(g *graph.Graph) error {
	theta := g.Theta()
	var problems graph.ErrorList
	for _, p := range g.Params() {
		nan, inf := 0, 0
		for _, v := range theta[p.Offset : p.Offset+p.Size] {
			switch {
			case math.IsNaN(v):
				nan++
			case math.IsInf(v, 0):
				inf++
			}
		}
		if nan+inf == 0 {
			continue
		}
		var what string
		switch {
		case inf == 0:
			what = fmt.Sprintf("%d NaN", nan)
		case nan == 0:
			what = fmt.Sprintf("%d infinite", inf)
		default:
			what = fmt.Sprintf("%d NaN and %d infinite", nan, inf)
		}
		problems = append(problems, fmt.Errorf("initializer %q: %w: %s of its %d values (the training diverged or the export is broken; re-train or re-export the model)", p.Name, ErrNonFinite, what, p.Size))
	}
	return problems.Err()
}
