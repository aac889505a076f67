package audit

import (
	"context"
	"iter"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// SchemeAdvice is the audit's advice on the block scheme (issue 23): which
// scheme fits the training data's shape and the serial correlation of the
// model's training residuals, and why. Package reports puts it into words.
//
// The rule: jackknife+ needs blocks that are exchangeable and whose
// leave-out residuals stand for new data.
//   - Many sequences (at least ManySequences(alpha)): sequence blocks.
//     Each block is one sequence, the unit new data come in; a sequence's
//     serially correlated errors stay inside its own block; and every step
//     has a residual from each sequence.
//   - One sequence: interval blocks (nested blocks would delete the whole
//     series with every block, and are refused).
//   - A few sequences: nested blocks (or interval blocks): too few
//     sequences to leave out one at a time, so stretches of time are left
//     out, in every sequence (interval) or in one at a time together with
//     that sequence (nested, N·J blocks).
//
// With interval or nested blocks the block length should reach past the
// residuals' serial dependence, so that a left-out interval is nearly
// independent of the data kept: for an AR(1)-like decay rho^K of the
// lag-1 autocorrelation rho, SuggestedLength is the K with |rho|^K <=
// DependenceLevel, at most half the longest sequence (two intervals).
type SchemeAdvice struct {
	// Sequences is the number of training sequences with a target;
	// MedianLength and MaxLength their rows.
	Sequences    int
	MedianLength int
	MaxLength    int
	// Lag1 is the lag-1 autocorrelation of the model's in-sample training
	// residuals y - f (first horizon, consecutive forecast rows within a
	// sequence, pooled over sequences about the pooled mean); NaN when no
	// sequence has two consecutive forecasts (a many-to-one model). Pairs
	// is the number of consecutive pairs it rests on.
	Lag1  float64
	Pairs int
	// Correlated says that |Lag1| is beyond both minCorrelation and two
	// standard errors under independence, 2/sqrt(Pairs).
	Correlated bool
	// Used and UsedLength are the scheme in use (blocks.Kind.String) and
	// its block length (0 for sequence blocks).
	Used       string
	UsedLength int
	// Scheme is the recommended scheme and Alternative a second one that
	// fits as well ("" when none): "sequence", "interval" or "nested".
	Scheme      string
	Alternative string
	// Shape says which rule chose it.
	Shape SchemeShape
	// SuggestedLength is the block length advised for interval and
	// nested blocks (0 for sequence blocks).
	SuggestedLength int
	// Fits says that the scheme in use is Scheme or Alternative and,
	// for interval and nested blocks, no shorter than SuggestedLength.
	Fits bool
}

// SchemeShape is the shape of the training data that decides the
// advised scheme.
type SchemeShape string

// The shapes.
const (
	// ShapeMany: at least ManySequences(alpha) sequences.
	ShapeMany SchemeShape = "many-sequences"
	// ShapeFew: two or more sequences, fewer than ManySequences(alpha).
	ShapeFew SchemeShape = "few-sequences"
	// ShapeOne: one sequence.
	ShapeOne SchemeShape = "one-sequence"
)

// ManySequences is the fewest training sequences for which sequence
// blocks are advised at level alpha: twice the ceil(1/alpha) - 1
// residuals a forecast needs for a finite jackknife+ limit, and at least
// 20, so that each step's residual set is more than just enough.
func ManySequences(alpha float64) int {
	need := int(math.Ceil(1/alpha-1e-9)) - 1
	return max(20, 2*need)
}

// adviseScheme measures the shape of p's training data and the lag-1
// autocorrelation of the model's in-sample training residuals, from the
// model's outputs fx on the training batches (problem.trainOutputs), and
// returns the advice.
func adviseScheme(ctx context.Context, p *problem, fx trainOutputs) (*SchemeAdvice, error) {
	a := &SchemeAdvice{Used: p.scheme.Kind.String()}
	if p.scheme.Kind != blocks.Sequences {
		a.UsedLength = p.scheme.K
	}
	var lens []int
	for i, s := range p.train.Seqs {
		if hasTargetRows(p.train, i) {
			lens = append(lens, s.Len())
		}
	}
	a.Sequences = len(lens)
	if len(lens) > 0 {
		slices.Sort(lens)
		a.MedianLength, a.MaxLength = lens[len(lens)/2], lens[len(lens)-1]
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.Lag1, a.Pairs = lag1Runs(residualRuns(p, fx))
	a.Correlated = a.Pairs > 0 && math.Abs(a.Lag1) > minCorrelation && math.Abs(a.Lag1) > 2/math.Sqrt(float64(a.Pairs))
	a.decide(p.opt.Alpha)
	return a, nil
}

// hasTargetRows reports whether sequence i of d has a row with a target.
func hasTargetRows(d *blocks.Dataset, i int) bool {
	s := d.Seqs[i]
	for t := range s.Len() {
		if s.HasTarget(t) {
			return true
		}
	}
	return false
}

// residualRuns yields the runs of the model's in-sample training
// residuals y - f at the first horizon (from its outputs fx on the
// training batches), by batch, sequence and row: a sequence's
// consecutive forecast rows with a target, a row without one ending a
// run. The slice yielded is reused for the next run. The scheme advice
// correlates them without holding them (a million sequences' series were
// a million small slices).
func residualRuns(p *problem, fx trainOutputs) iter.Seq[[]float64] {
	return func(yield func([]float64) bool) {
		var r []float64
		for gi, gr := range p.groups {
			fs := p.io.Forecasts(gr.T)
			h0 := math.MaxInt
			for _, f := range fs {
				h0 = min(h0, f.H)
			}
			B := len(gr.seqs)
			for b := range gr.seqs {
				r = r[:0]
				last := -2
				for _, f := range fs {
					if f.H != h0 {
						continue
					}
					q := p.io.Index(B, gr.T, b, f.T, f.H)
					if gr.weight[q] == 0 {
						continue
					}
					if f.T != last+1 && len(r) > 0 {
						// A gap (a row without a target) ends a run.
						if !yield(r) {
							return
						}
						r = r[:0]
					}
					r = append(r, gr.target[q]-fx[gi][q])
					last = f.T
				}
				if len(r) > 0 && !yield(r) {
					return
				}
			}
		}
	}
}

// lag1Runs is num.Lag1: the pooled lag-1 autocorrelation of the runs
// runs yields.
func lag1Runs(runs iter.Seq[[]float64]) (float64, int) { return num.Lag1(runs) }

// decide sets the advised scheme, its block length and whether the
// scheme in use fits, from the shape and correlation a holds.
func (a *SchemeAdvice) decide(alpha float64) {
	switch {
	case a.Sequences >= ManySequences(alpha):
		a.Shape, a.Scheme = ShapeMany, blocks.Sequences.String()
	case a.Sequences <= 1:
		a.Shape, a.Scheme = ShapeOne, blocks.Intervals.String()
	default:
		a.Shape, a.Scheme, a.Alternative = ShapeFew, blocks.Nested.String(), blocks.Intervals.String()
	}
	if a.Shape != ShapeMany {
		a.SuggestedLength = dependenceLength(a.Lag1, a.Correlated, a.MaxLength)
	}
	a.Fits = a.Used == a.Scheme || (a.Alternative != "" && a.Used == a.Alternative)
	if a.Fits && a.Shape != ShapeMany && a.UsedLength < a.SuggestedLength {
		a.Fits = false
	}
}

// dependenceLength is the block length K with |rho|^K <= DependenceLevel
// when the residuals are correlated (1 otherwise), at most half of the
// longest sequence maxLen, so that two intervals remain, and at least 1.
func dependenceLength(rho float64, correlated bool, maxLen int) int {
	k := 1
	if correlated && math.Abs(rho) < 1 {
		k = int(math.Ceil(math.Log(DependenceLevel) / math.Log(math.Abs(rho))))
	} else if correlated {
		k = maxLen
	}
	return max(1, min(k, maxLen/2))
}
