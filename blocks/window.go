package blocks

import (
	"fmt"
	"math"
	"sort"
)

// Windowing says how a dataset of windows was cut from long series
// (CutWindows): the sliding windows, stride 1, that a many-to-one model
// was trained on, each a sequence of its own.
type Windowing struct {
	// W is the number of rows a window gives the model to read.
	W int
	// Len is the number of rows of each window sequence: W, then the
	// K-1 rows whose targets a model with K horizons also forecasts.
	Len int
	// Series is the dataset the windows were cut from, one sequence per
	// series.
	Series *Dataset
	// Origin[i] is where window i starts: sequence Seq of Series, row
	// Start. Windows are in series order, then in order of Start.
	Origin []Span
}

// Rows returns the rows [lo, hi) of window i's series that the window
// uses: the rows it reads and those its targets were read from (the
// dataset's shift after the last row of the window).
func (w *Windowing) Rows(i int) (lo, hi int) {
	o := w.Origin[i]
	return o.Lo, o.Hi + max(w.Series.Shift, 0)
}

// Last returns the row of window i's series that is the last row the
// model reads: the row at which its first forecast is made.
func (w *Windowing) Last(i int) int { return w.Origin[i].Lo + w.W - 1 }

// CutWindows returns the windows of d's series that a many-to-one model
// with k horizons reads: for every series of at least w+k-1 rows and
// every start row, stride 1, the sequence of the w+k-1 rows from there.
// The model reads the first w of them and forecasts the targets of the
// last k. A window is kept when one of its forecast rows has a target (in
// a dataset without targets, every window) and is not a context row
// (Sequence.Context: rows of the training series that a test series
// continues), so that a test set continued by Continue gives one window
// per test row. The windows share d's rows; each is named by its series
// id and the step of its last row read ("S1@24"). The result's Windows
// says where each window comes from.
//
// The error wraps ErrScheme when w < 1, k < 1, the shift is negative, no
// series has a window, or a continued series (Continue) leaves a gap
// after equally spaced training steps: its windows would straddle it.
func CutWindows(d *Dataset, w, k int) (*Dataset, error) {
	bad := func(format string, args ...any) (*Dataset, error) {
		return nil, fmt.Errorf("blocks: %w", fail(ErrScheme, format, args...))
	}
	switch {
	case w < 1 || k < 1:
		return bad("window of %d rows with %d horizons: both must be at least 1", w, k)
	case d.Shift < 0:
		return bad("windows with shift %d: a window's target must not come before its rows; use a shift of 0 or more", d.Shift)
	}
	n := w + k - 1
	for _, s := range d.Seqs {
		if c := s.Context; c > 1 && c < s.Len() && regular(s.Steps[:c]) && s.Steps[c]-s.Steps[c-1] != s.Steps[1]-s.Steps[0] {
			return bad("series %s of %s starts at step %s, and the training series it continues ends at step %s, its steps %s apart: windows across the gap would read rows the model never saw together; start the file at step %s, or audit it alone (restart)",
				s.ID, d.File, formatStep(s.Steps[c]), formatStep(s.Steps[c-1]), formatStep(s.Steps[1]-s.Steps[0]), formatStep(s.Steps[c-1]+s.Steps[1]-s.Steps[0]))
		}
	}
	out := &Dataset{File: d.File, IDCol: d.IDCol, TimeCol: d.TimeCol, Features: d.Features, Targets: d.Targets, Shift: d.Shift}
	win := &Windowing{W: w, Len: n, Series: d}
	for si, s := range d.Seqs {
		for lo := 0; lo+n <= s.Len(); lo++ {
			if !windowKept(d, s, lo+w-1, lo+n) {
				continue
			}
			q := &Sequence{ID: fmt.Sprintf("%s@%s", s.ID, formatStep(s.Steps[lo+w-1])),
				Steps: s.Steps[lo : lo+n : lo+n], X: s.X[lo : lo+n : lo+n]}
			if s.Lines != nil {
				q.Lines = s.Lines[lo : lo+n : lo+n]
			}
			if s.Y != nil {
				q.Y = s.Y[lo : lo+n : lo+n]
			}
			out.Seqs = append(out.Seqs, q)
			win.Origin = append(win.Origin, Span{Seq: si, Lo: lo, Hi: lo + n})
		}
	}
	if len(out.Seqs) == 0 {
		return bad("no series of %s has a window of %d rows with a target (longest series: %d rows): choose a shorter window", d.File, n, d.MaxLen())
	}
	out.Windows = win
	return out, nil
}

// regular reports whether the steps are equally spaced.
func regular(steps []float64) bool {
	for t := 2; t < len(steps); t++ {
		if steps[t]-steps[t-1] != steps[1]-steps[0] {
			return false
		}
	}
	return true
}

// windowKept reports whether a window whose forecast rows are [first,
// end) of s has a forecast row with a target read from past the context
// (row + shift at or after Context; any such row when d has no targets):
// with a shift of 1, the window that ends at the last context row
// forecasts the first value past the context.
func windowKept(d *Dataset, s *Sequence, first, end int) bool {
	for r := max(first, s.Context-max(d.Shift, 0)); r < end; r++ {
		if !d.Labelled() || s.HasTarget(r) {
			return true
		}
	}
	return false
}

// windowBlocks returns the window blocks of length k over the windows of
// d (see "Windows" in the package documentation): for each series and
// each stretch [jk, (j+1)k) of its rows, the block whose evaluation
// region is the windows whose last row read is in the stretch and which
// deletes every window that uses a row of the stretch. Stretches without
// a window in their region have no block.
func windowBlocks(d *Dataset, k int) []Block {
	w := d.Windows
	var out []Block
	i := 0 // the first window of the current series
	for i < len(w.Origin) {
		si := w.Origin[i].Seq
		end := i
		for end < len(w.Origin) && w.Origin[end].Seq == si {
			end++
		}
		s := w.Series.Seqs[si]
		for lo := 0; lo < s.Len(); lo += k {
			hi := min(lo+k, s.Len())
			// Last(x) and both ends of Rows(x) increase with x.
			first := func(ok func(x int) bool) int { return i + sort.Search(end-i, func(a int) bool { return ok(i + a) }) }
			b := Block{Kind: Windows, Seq: -1, Interval: -1,
				Lo: first(func(x int) bool { return w.Last(x) >= lo }), Hi: first(func(x int) bool { return w.Last(x) >= hi }),
				DelLo: first(func(x int) bool { _, z := w.Rows(x); return z > lo }), DelHi: first(func(x int) bool { a, _ := w.Rows(x); return a >= hi })}
			if b.Lo >= b.Hi {
				continue
			}
			b.Label = fmt.Sprintf("series %d (id %s) × %s", si+1, s.ID, stepsLabel(lo, hi))
			if hi > lo+1 {
				b.Label += fmt.Sprintf(" (t = %s–%s)", formatStep(s.Steps[lo]), formatStep(s.Steps[hi-1]))
			}
			out = append(out, b)
		}
		i = end
	}
	return out
}

// WindowBlockLength chooses the length of window blocks, in rows, from
// the in-sample residuals res of the windows of d (res[i] is window i's
// residual at its first horizon; NaN for none), by Politis' rule for the
// flat-top lag window (Politis 2003, "Adaptive bandwidth choice"): m is
// the smallest lag after which the residuals' autocorrelation (pooled
// over the series, each series' residuals in time order) stays within
// 2 sqrt(log10(n)/n) for 5 lags, n the number of residuals; the block
// length is 2m or the window length W, the longer, and at most an eighth
// of the longest series, so that every series keeps at least eight
// blocks. At least W: a block deletes the windows of its stretch and the
// W-1 (plus the shift) before it that share a row with it, so shorter
// blocks spend most of each leave-out solve on windows they do not
// evaluate (on benchmarks/windows, blocks of 1 row took 6 times as long
// as blocks of 24 and covered less). why says so in a sentence a report
// can print.
func WindowBlockLength(d *Dataset, res []float64) (k int, why string) {
	w := d.Windows
	var runs [][]float64
	var run []float64
	for i, r := range res {
		if i > 0 && w.Origin[i].Seq != w.Origin[i-1].Seq && len(run) > 0 {
			runs, run = append(runs, run), nil
		}
		if !math.IsNaN(r) {
			run = append(run, r)
		}
	}
	if len(run) > 0 {
		runs = append(runs, run)
	}
	n := 0
	for _, r := range runs {
		n += len(r)
	}
	top := max(1, w.Series.MaxLen()/8)
	if n < 8 {
		return top, fmt.Sprintf("Window blocks of %s: %d residuals are too few to measure their autocorrelation, so the blocks are an eighth of the longest series.", plural(top, "row"), n)
	}
	const lags = 5
	band := 2 * math.Sqrt(math.Log10(float64(n))/float64(n))
	rho := autocorrelation(runs, min(n/2, 4*top+lags))
	m := 0
	for quiet := 0; m+quiet+1 < len(rho) && quiet < lags; {
		if math.Abs(rho[m+quiet+1]) < band {
			quiet++
		} else {
			m, quiet = m+quiet+1, 0
		}
	}
	k = min(max(2*m, w.W), top)
	why = fmt.Sprintf("Window blocks of %s: the longer of the window (%s; a block then deletes at most about twice the windows it evaluates) and twice the last lag at which the autocorrelation of the %d in-sample residuals is significant (%d: it stays within ±%.2g from lag %d on, Politis' rule)",
		plural(k, "row"), plural(w.W, "row"), n, 2*m, band, m+1)
	if max(2*m, w.W) > top {
		why += fmt.Sprintf(", at most an eighth of the longest series (%s)", plural(top, "row"))
	}
	return k, why + ". Set the block length to choose another."
}

// autocorrelation returns the autocorrelation of the runs at lags 0 to
// most (fewer when the runs are shorter), pooled: each run is centred on
// the mean of all, and the products of every run at a lag are summed.
func autocorrelation(runs [][]float64, most int) []float64 {
	var sum float64
	n := 0
	for _, r := range runs {
		for _, x := range r {
			sum += x
		}
		n += len(r)
	}
	mean := sum / float64(n)
	var rho []float64
	for lag := 0; lag <= most; lag++ {
		var c float64
		pairs := 0
		for _, r := range runs {
			for t := lag; t < len(r); t++ {
				c += (r[t] - mean) * (r[t-lag] - mean)
				pairs++
			}
		}
		if pairs == 0 {
			break
		}
		rho = append(rho, c)
	}
	if len(rho) == 0 || rho[0] == 0 {
		return nil
	}
	for l := len(rho) - 1; l >= 0; l-- {
		rho[l] /= rho[0]
	}
	return rho
}
