// Package sensitivity holds the figures of the audit's damping
// sensitivity check (how far the intervals move when the damping is
// multiplied and divided by a factor) and the sampling it may run on: a
// random subsample of the evaluated sequences, with the standard error
// of the figure it judges by.
package sensitivity

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Damping is how much the intervals move when the damping is
// multiplied and divided by a factor (audit.SensitivityFactor): the
// damping is a setting that nothing in the data pins down, so intervals
// that depend on it strongly are less trustworthy than their coverage
// says. The figures are from the same audit re-run with rho x factor and
// rho / factor (the solve from the audit's own factorisation, the
// residuals and the limits); the low-rank, CG and LiSSA paths do not
// compute it (Computed false, Reason says why).
type Damping struct {
	Computed bool
	Reason   string // why not computed
	// Rho is the damping of the audit; Low and High are the summaries at
	// Rho / factor and Rho * factor: mean width (over finite intervals),
	// coverage and unbounded intervals.
	Rho       float64
	Low, High Figures
	// Width is the audit's own mean width, for the shares.
	Width float64
	// Sampled is the number of evaluated sequences the re-runs covered
	// when they ran on a random subsample of the Sequences evaluated (0
	// when they covered all of them); SampleWidth is then the audit's own
	// mean width over the same sample, the base of the shares (paired,
	// so that the sample's own spread cancels).
	Sampled, Sequences int
	SampleWidth        float64
}

// Figures are the pooled figures of one re-run at another damping.
type Figures struct {
	Rho        float64
	MeanLength float64
	Coverage   float64
	Infinite   int
	// ShareSE is the standard error of the relative move of the mean
	// width, MeanLength / base - 1, from the sampling of the sequences
	// (0 when every sequence was re-run).
	ShareSE float64
}

// Base is the mean width the re-runs' widths are compared with: the
// audit's own over the sequences re-run.
func (d *Damping) Base() float64 {
	if d.Sampled > 0 {
		return d.SampleWidth
	}
	return d.Width
}

// WidthShare is the largest relative move of the mean width, |w' - w| /
// w, over the two re-runs (NaN when not computed).
func (d *Damping) WidthShare() float64 {
	w := d.Base()
	if !d.Computed || !(w > 0) {
		return math.NaN()
	}
	return math.Max(math.Abs(d.Low.MeanLength-w), math.Abs(d.High.MeanLength-w)) / w
}

// WidthShareSE is the standard error of WidthShare from the sampling of
// the sequences: that of the re-run whose move it reports (0 when every
// sequence was re-run, NaN when not computed).
func (d *Damping) WidthShareSE() float64 {
	w := d.Base()
	if !d.Computed || !(w > 0) {
		return math.NaN()
	}
	if math.Abs(d.Low.MeanLength-w) >= math.Abs(d.High.MeanLength-w) {
		return d.Low.ShareSE
	}
	return d.High.ShareSE
}

// Sample returns m of the indices 0..n-1 drawn at random without
// replacement with the seed, in increasing order (all of them when m >=
// n).
func Sample(n, m int, seed uint64) []int {
	if m >= n {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	r := rand.New(rand.NewPCG(seed, 0x64616d70))
	out := r.Perm(n)[:m]
	slices.Sort(out)
	return out
}

// ShareSE is the standard error of the ratio estimate R = sum(a) /
// sum(b) - 1 over m sampled clusters (sequences) out of n, where b[s]
// sums the audit's own widths of sequence s and a[s] the re-run's over
// the same forecasts: the ratio estimator's (delta method) with the
// finite-population correction, sqrt((1 - m/n) / (m (m - 1)) sum((a_s -
// (1+R) b_s)^2)) / mean(b). It is 0 when m = n (every cluster seen) and
// NaN with fewer than two clusters.
func ShareSE(a, b []float64, n int) float64 {
	m := len(a)
	if m >= n {
		return 0
	}
	if m < 2 {
		return math.NaN()
	}
	var sa, sb float64
	for s := range a {
		sa += a[s]
		sb += b[s]
	}
	if !(sb > 0) {
		return math.NaN()
	}
	ratio := sa / sb
	var ss float64
	for s := range a {
		e := a[s] - ratio*b[s]
		ss += e * e
	}
	fm := float64(m)
	return math.Sqrt((1-fm/float64(n))/(fm*(fm-1))*ss) / (sb / fm)
}

// PairedSE is ShareSE of the widths of points in m sampled clusters out
// of n: point i (of cluster[i], counted when has[i] and both its
// intervals are finite) has the audit's own limits lo0, up0 and the
// re-run's lo, up.
func PairedSE(cluster []int, has []bool, lo0, up0, lo, up []float64, m, n int) float64 {
	a, b := make([]float64, m), make([]float64, m)
	for i, c := range cluster {
		w0, w := up0[i]-lo0[i], up[i]-lo[i]
		if !has[i] || math.IsInf(w0, 0) || math.IsNaN(w0) || math.IsInf(w, 0) || math.IsNaN(w) {
			continue
		}
		a[c] += w
		b[c] += w0
	}
	return ShareSE(a, b, n)
}
