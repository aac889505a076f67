// Package datacheck holds the diagnostics of how the data were given to
// the model: the check that the columns are mapped the way the model was
// trained (the training RMSE under the given mapping and under its
// obvious alternatives: the features in another order, the target
// shifted by a row; FitCheck, with the data sets those alternatives read,
// Permutations, Permuted and Shifted), and the advice on the block scheme
// from the training data's shape and the serial correlation of the
// model's residuals (SchemeAdvice). The audit measures the figures on its
// model and judges them with its policy's levels, which it passes in.
// The advice's rule is in docs/design.md, section 3.5, the thresholds
// that judge the figures in section 10.3. It also says how the data sets
// relate: a calibration set that overlaps the training or test data
// (Overlap), test sequences that continue training sequences
// (ContinuedNote).
package datacheck

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// FitCheck is the audit's check that the data are given to the model
// the way it was trained: the training RMSE under the given column mapping
// (printed so that it can be compared with the training log), the same
// under the mapping's obvious alternatives (the features in another
// order, the target shifted by one row more or less), and the ridge that
// best explains the training gradient. A model far from a stationary
// point of its loss (audit.Diagnostics.Stationarity) may be an ordinary
// mini-batch model or a mistake; these figures tell which.
type FitCheck struct {
	// Sequences is the number of training sequences the RMSEs are
	// measured on (the first of the file, up to the audit's bound).
	Sequences int
	// RMSE is the trained model's root mean squared error on the
	// training targets under the given mapping.
	RMSE float64
	// Alternatives are the other mappings tried, with their RMSE.
	Alternatives []Alternative
	// GradNorm is |grad L| with the given ridge Ridge; FittedRidge is the
	// ridge R >= 0 that minimises |grad L_data + R theta| and
	// FittedGradNorm that minimum. NaN when not measured (the low-rank
	// path does not keep the total gradient).
	Ridge          float64
	GradNorm       float64
	FittedRidge    float64
	FittedGradNorm float64
	// Untrained are the parameter tensors that do not look trained
	// (UntrainedTensors), from the same gradient.
	Untrained []Untrained
}

// Alternative is one column mapping other than the given one: the
// features in the order Features (nil: as given) and the target shift
// Shift, with the trained model's training RMSE under it.
type Alternative struct {
	Features []string
	Shift    int
	RMSE     float64
}

// Flags are the command-line flags that select the alternative, such as
// "--features b,a" or "--shift 0".
func (a Alternative) Flags() string {
	var out []string
	if a.Features != nil {
		out = append(out, "--features "+strings.Join(a.Features, ","))
	}
	out = append(out, fmt.Sprintf("--shift %d", a.Shift))
	return strings.Join(out, " ")
}

// BestAlternative is the alternative with the lowest RMSE, nil when none
// was tried.
func (f *FitCheck) BestAlternative() *Alternative {
	var best *Alternative
	for i := range f.Alternatives {
		if a := &f.Alternatives[i]; !math.IsNaN(a.RMSE) && (best == nil || a.RMSE < best.RMSE) {
			best = a
		}
	}
	return best
}

// maxPermuted is the most features whose every order is tried; up to
// maxSwapped every exchange of two features and the reversed order are,
// beyond it only the reversed order (one forward pass each).
const (
	maxPermuted = 3
	maxSwapped  = 8
)

// SchemeAdvice is the audit's advice on the block scheme: which
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
// audit.DependenceLevel, at most half the longest sequence (two
// intervals).
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
	// Correlated says that |Lag1| is beyond both the audit's least
	// correlation (its policy) and two
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

// NewSchemeAdvice is the advice's account of the training data train
// and the scheme s in use: the sequences with a target and their
// lengths. The caller then measures Lag1, Pairs and Correlated on its
// model's residuals and calls Decide.
func NewSchemeAdvice(train *blocks.Dataset, s *blocks.Scheme) *SchemeAdvice {
	a := &SchemeAdvice{Used: s.Kind.String()}
	if s.Kind != blocks.Sequences {
		a.UsedLength = s.K
	}
	var lens []int
	for i, q := range train.Seqs {
		if hasTargetRows(train, i) {
			lens = append(lens, q.Len())
		}
	}
	a.Sequences = len(lens)
	if len(lens) > 0 {
		slices.Sort(lens)
		a.MedianLength, a.MaxLength = lens[len(lens)/2], lens[len(lens)-1]
	}
	return a
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

// Decide sets the advised scheme, its block length and whether the
// scheme in use fits, from the shape and correlation a holds: the block
// length reaches down to autocorrelation level (audit.DependenceLevel).
func (a *SchemeAdvice) Decide(alpha, level float64) {
	switch {
	case a.Sequences >= ManySequences(alpha):
		a.Shape, a.Scheme = ShapeMany, blocks.Sequences.String()
	case a.Sequences <= 1:
		a.Shape, a.Scheme = ShapeOne, blocks.Intervals.String()
	default:
		a.Shape, a.Scheme, a.Alternative = ShapeFew, blocks.Nested.String(), blocks.Intervals.String()
	}
	if a.Shape != ShapeMany {
		a.SuggestedLength = dependenceLength(a.Lag1, a.Correlated, a.MaxLength, level)
	}
	// Window blocks are the scheme of windows cut from long series,
	// whatever their number.
	a.Fits = a.Used == a.Scheme || (a.Alternative != "" && a.Used == a.Alternative) || a.Used == blocks.Windows.String()
	if a.Fits && a.Shape != ShapeMany && a.UsedLength < a.SuggestedLength {
		a.Fits = false
	}
}

// dependenceLength is the block length K with |rho|^K <= level
// when the residuals are correlated (1 otherwise), at most half of the
// longest sequence maxLen, so that two intervals remain, and at least 1.
func dependenceLength(rho float64, correlated bool, maxLen int, level float64) int {
	k := 1
	if correlated && math.Abs(rho) < 1 {
		k = int(math.Ceil(math.Log(level) / math.Log(math.Abs(rho))))
	} else if correlated {
		k = maxLen
	}
	return max(1, min(k, maxLen/2))
}

// Permutations lists the orders of d features other than the identity
// worth trying: every one up to maxPermuted features, else every
// exchange of two (up to maxSwapped) and the reversed order.
func Permutations(d int) [][]int {
	if d < 2 {
		return nil
	}
	if d > maxPermuted {
		var out [][]int
		if d <= maxSwapped {
			for i := range d {
				for j := i + 1; j < d; j++ {
					sw := make([]int, d)
					for k := range sw {
						sw[k] = k
					}
					sw[i], sw[j] = j, i
					out = append(out, sw)
				}
			}
		}
		rev := make([]int, d)
		for i := range rev {
			rev[i] = d - 1 - i
		}
		return append(out, rev)
	}
	var out [][]int
	var rec func(cur []int, used []bool)
	rec = func(cur []int, used []bool) {
		if len(cur) == d {
			for i, j := range cur {
				if i != j {
					out = append(out, append([]int(nil), cur...))
					return
				}
			}
			return
		}
		for j := range d {
			if !used[j] {
				used[j] = true
				rec(append(cur, j), used)
				used[j] = false
			}
		}
	}
	rec(nil, make([]bool, d))
	return out
}

// Permuted is d with each row's features taken in the order perm
// (feature i of the copy is feature perm[i] of d).
func Permuted(d *blocks.Dataset, perm []int) *blocks.Dataset {
	out := *d
	out.Features = make([]string, len(perm))
	for i, j := range perm {
		out.Features[i] = d.Features[j]
	}
	out.Seqs = make([]*blocks.Sequence, len(d.Seqs))
	for k, s := range d.Seqs {
		c := *s
		c.X = make([][]float64, len(s.X))
		for t, x := range s.X {
			row := make([]float64, len(perm))
			for i, j := range perm {
				row[i] = x[j]
			}
			c.X[t] = row
		}
		out.Seqs[k] = &c
	}
	return &out
}

// Shifted is d with the targets read with shift s instead of d.Shift:
// row t's target is the one row t+s-d.Shift had (none where that row is
// outside the sequence, and none for rows the file's shift already
// left without one).
func Shifted(d *blocks.Dataset, s int) *blocks.Dataset {
	out := *d
	out.Shift = s
	out.Seqs = make([]*blocks.Sequence, len(d.Seqs))
	for k, q := range d.Seqs {
		c := *q
		if q.Y != nil {
			c.Y = make([][]float64, len(q.Y))
			for t := range c.Y {
				if u := t + s - d.Shift; u >= 0 && u < len(q.Y) {
					c.Y[t] = q.Y[u]
				}
			}
		}
		out.Seqs[k] = &c
	}
	return &out
}
