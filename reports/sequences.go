package reports

import "github.com/rnnaudit/rnnaudit/audit"

// JSONSequence is one sequence's forecasts as the JSON report's
// "sequences" array holds them (see the package documentation, "JSON
// format"): its id and one step object per forecast, with every kind of
// interval the result holds.
type JSONSequence struct {
	ID    string     `json:"id"`
	Steps []jsonStep `json:"steps"`
}

// JSONSequences are the sequences of r in the form of the JSON report, for
// programs that answer with them (audit serve): the same keys and values
// WriteJSON writes, with unbounded limits as null.
func JSONSequences(r *audit.Result) []JSONSequence {
	out := make([]JSONSequence, len(r.Sequences))
	for i, s := range r.Sequences {
		steps := make([]jsonStep, len(s.Steps))
		for k := range s.Steps {
			steps[k] = jsonStepOf(&s.Steps[k])
		}
		out[i] = JSONSequence{ID: s.ID, Steps: steps}
	}
	return out
}
