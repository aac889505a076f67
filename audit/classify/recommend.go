package classify

import "math"

// SetRecommendation is the kind of prediction sets an audit with a
// calibration set recommends for a binary classifier's new forecasts,
// read from the calibration labels and from the sets' sizes (which read
// no label), never from test labels: split conformal's sets cover the
// calibration labels by construction, the jackknife+ sets only if their
// coverage holds there; of the kinds that hold, the smaller sets.
type SetRecommendation struct {
	// Kind is "jackknife+" or "split conformal"; "" until Recommend
	// is called.
	Kind string
	// CalCoverage is the jackknife+ sets' coverage on the calibration
	// labels and Holds whether it holds there by the audit's rule for
	// intervals; NaN and false when not measured (a score other than
	// LAC: only LAC's binary sets are the labels inside the jackknife+
	// limits whose calibration coverage the audit measures).
	CalCoverage float64
	Holds       bool
	// JackknifeSize and SplitSize are the mean set sizes over every
	// forecast, labelled or not.
	JackknifeSize, SplitSize float64
}

// Recommend chooses the kind of sets to recommend from the jackknife+
// limits' coverage cov of the calibration labels and whether it holds
// there (the audit's calibration figures of its jackknife+ intervals):
// for binary LAC sets, the jackknife+ sets when their coverage holds on
// the calibration labels and they are no larger than split conformal's,
// else split conformal's; for other scores or more classes split
// conformal's. A summary without split-conformal sets (no calibration
// set) is left as it is.
func (s *Summary) Recommend(cov float64, holds bool) {
	r := s.Recommended
	if r == nil {
		return
	}
	r.Kind, r.CalCoverage, r.Holds = "split conformal", math.NaN(), false
	if s.Classes != 2 || (s.Score != LAC && s.Score != "") {
		return
	}
	r.CalCoverage, r.Holds = cov, holds
	if holds && r.JackknifeSize <= r.SplitSize {
		r.Kind = "jackknife+"
	}
}

// meanSizes returns the mean sizes of the jackknife+ and split sets
// over every forecast of fs (NaN without forecasts).
func meanSizes(fs []Forecast) (jk, split float64) {
	for _, f := range fs {
		jk += float64(len(f.Set))
		split += float64(len(f.Split))
	}
	return ratio(jk, float64(len(fs))), ratio(split, float64(len(fs)))
}
