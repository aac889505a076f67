package classify

import (
	"math"
	"testing"
)

// TestRecommend: the rule worked by hand on two forecasts whose
// jackknife+ sets hold 1 and 2 labels (mean 1.5) and split sets 2 and 2
// (mean 2).
func TestRecommend(t *testing.T) {
	fs := []Forecast{
		{Probs: BinaryProbs(0.9), Set: []int{1}, Split: []int{0, 1}, Label: 1},
		{Probs: BinaryProbs(0.5), Set: []int{0, 1}, Split: []int{0, 1}, Label: -1},
	}
	for _, c := range []struct {
		name  string
		score Score
		cov   float64
		holds bool
		want  string
	}{
		{"holds and smaller", LAC, 0.91, true, "jackknife+"},
		{"short on the calibration labels", LAC, 0.8, false, "split conformal"},
		{"APS is not measured", APS, 0.91, true, "split conformal"},
	} {
		s := Summarize(fs, 0.1, c.score, nil, nil)
		r := s.Recommended
		if r == nil || r.Kind != "" || r.JackknifeSize != 1.5 || r.SplitSize != 2 {
			t.Fatalf("%s: before Recommend %+v, want sizes 1.5 and 2 and no kind", c.name, r)
		}
		s.Recommend(c.cov, c.holds)
		if r.Kind != c.want {
			t.Errorf("%s: %q, want %q", c.name, r.Kind, c.want)
		}
		if c.score == LAC && (r.CalCoverage != c.cov || r.Holds != c.holds) || c.score != LAC && !math.IsNaN(r.CalCoverage) {
			t.Errorf("%s: calibration coverage %g holds %v", c.name, r.CalCoverage, r.Holds)
		}
	}
	// Larger jackknife+ sets lose though they hold.
	fs[0].Set = []int{0, 1}
	fs[0].Split = []int{1}
	s := Summarize(fs, 0.1, LAC, nil, nil)
	s.Recommend(0.95, true)
	if s.Recommended.Kind != "split conformal" {
		t.Errorf("jackknife+ sets of 2 labels against split sets of 1.5: %q", s.Recommended.Kind)
	}
	// No calibration set: nothing to recommend.
	fs[0].Split, fs[1].Split = nil, nil
	s = Summarize(fs, 0.1, LAC, nil, nil)
	s.Recommend(0.95, true)
	if s.Recommended != nil {
		t.Errorf("a recommendation without split sets: %+v", s.Recommended)
	}
}
