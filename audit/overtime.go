package audit

import (
	"math"

	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/blocks"
)

// Coverage over time (docs/design.md, section 8.7): package adaptive
// computes the figures (adaptive.Over) from the labelled points'
// coverage and errors in time order; the audit gives it the points and
// builds the warnings the figures call for.

// overTime computes the coverage over time of the labelled points pts of
// the evaluated set d with intervals l (lo, up), at level alpha; lag is
// the block length (0: sequence blocks, the automatic Newey-West lag).
// Nil without labelled points. The windows of a series (blocks.Windowing)
// are that series, in time.
func overTime(d *blocks.Dataset, pts []point, l limits, alpha float64, lag int) *adaptive.OverTime {
	w, seqs := d.Windows, d.Seqs
	if w != nil {
		seqs = w.Series.Seqs
	}
	ids := make([]string, len(seqs))
	for i, s := range seqs {
		ids[i] = s.ID
	}
	vals := make([]adaptive.Value, 0, len(pts))
	for p, pt := range pts {
		if !pt.has {
			continue
		}
		c := 0.0
		if l.lo[p] <= pt.y && pt.y <= l.up[p] {
			c = 1
		}
		s := d.Seqs[pt.seq]
		v := adaptive.Value{Seq: pt.seq, Step: s.Steps[min(pt.f.T+pt.f.H, s.Len()-1)], Hit: c, Err: pt.y - pt.pred}
		if w != nil {
			v.Seq = w.Origin[pt.seq].Seq
		}
		vals = append(vals, v)
	}
	return adaptive.Over(ids, vals, alpha, lag)
}

// timeWarnings are the warnings of coverage over time o at level alpha,
// for long series only (OverTime.Long): coverage that drifts between the
// early and late test period by more than DriftTolerance (CoverageDrift),
// and errors whose lag-1 autocorrelation exceeds 2/sqrt(pairs)
// (SerialCorrelation).
func timeWarnings(o *adaptive.OverTime) []Warning {
	if o == nil || !o.Long {
		return nil
	}
	var out []Warning
	if !math.IsNaN(o.Early) && math.Abs(o.Late-o.Early) > o.DriftTolerance {
		out = append(out, Warning{Code: CoverageDrift, Step: -1, Figure: o.Late, Bound: o.Early, Ratio: o.DriftTolerance, Count: o.EarlyPoints + o.LatePoints})
	}
	if o.AutocorrPairs > 0 {
		if b := 2 / math.Sqrt(float64(o.AutocorrPairs)); math.Abs(o.Autocorrelation) > b {
			out = append(out, Warning{Code: SerialCorrelation, Step: -1, Figure: o.Autocorrelation, Bound: b, Count: o.AutocorrPairs})
		}
	}
	return out
}

// timeLag is the Newey-West lag of the over-time analysis: the block
// length of interval and nested blocks, else 0 (NeweyWestLag).
func (o *Options) timeLag() int {
	if o.Blocks != blocks.Sequences {
		return o.BlockLength
	}
	return 0
}
