package onnx

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/rnnaudit/rnnaudit/graph"
)

// useTrained applies the exporter's record of which initializers were
// trained (metadata_props graph.TrainedKey, a JSON list of initializer
// names, which the Python bridge's export writes): when the file has
// one, the parameters are exactly those, whatever the rules say
// (graph.WithTrained). Without one, g is returned as it is.
func useTrained(g *graph.Graph, metadata map[string]string) (*graph.Graph, error) {
	v, ok := metadata[graph.TrainedKey]
	if !ok {
		return g, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(v), &names); err != nil {
		return nil, fmt.Errorf("%w: metadata %q is not a JSON list of initializer names: %v", ErrInvalid, graph.TrainedKey, err)
	}
	r, unknown, err := g.WithTrained(names)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: metadata %q names %s, which the file holds no initializer of: the file was changed after it was exported; export it again", ErrInvalid, graph.TrainedKey, strings.Join(quoteAll(unknown), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return r, nil
}

// useTargetScale sets g.TargetScale from the exporter's record of the
// target's scaling (metadata_props graph.TargetScaleKey, [mean, std]).
func useTargetScale(g *graph.Graph, metadata map[string]string) error {
	v, ok := metadata[graph.TargetScaleKey]
	if !ok {
		return nil
	}
	var s []float64
	if err := json.Unmarshal([]byte(v), &s); err != nil || len(s) != 2 || !(s[1] > 0) || math.IsInf(s[1], 0) || math.IsInf(s[0], 0) || math.IsNaN(s[0]) {
		return fmt.Errorf("%w: metadata %q is %q, not [mean, std] with a finite mean and a positive std: export the model again", ErrInvalid, graph.TargetScaleKey, v)
	}
	g.TargetScale = s
	return nil
}

// quoteAll returns the names quoted.
func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}
