package interval

import (
	"math"
	"slices"
	"sort"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// Residual is one leave-one-block-out residual R = |y - f(x;
// theta_-Blk)| of a training forecast of sequence Seq, with block Blk
// left out: an element of a forecast's sets V± (docs/design.md, section
// 5). The sequence and block say which residuals a point's interval may
// leave out (Skip).
type Residual struct {
	Blk int
	Seq int
	R   float64
}

// Skip names the residuals a point's interval leaves out: those of
// training sequence Seq and those of block Blk (-1: none). A self-audit
// leaves out a point's own sequence, or with pooled residuals its own
// block, so that no point is judged by residuals it helped make.
type Skip struct{ Seq, Blk int }

// Drops reports whether the interval leaves e out.
func (s Skip) Drops(e Residual) bool { return e.Seq == s.Seq || e.Blk == s.Blk }

// JackknifeValues returns the sets V- = {pred[b] - r} and V+ = {pred[b] +
// r} of the point whose residuals are es and whose perturbed predictions
// are pred (pred[b] the prediction of block b's model), leaving out the
// residuals skip drops and those of blocks keep rejects (keep nil: none),
// in vm and vp (scratch space, reused). They are the values JackknifePlus
// takes the limits of (docs/design.md, section 5.4); the banded selection
// (Scratch.Banded) gives the same limits without forming them all.
func JackknifeValues(es []Residual, pred []float64, skip Skip, keep func(blk int) bool, vm, vp []float64) ([]float64, []float64) {
	vm, vp = vm[:0], vp[:0]
	for _, e := range es {
		if skip.Drops(e) || (keep != nil && !keep(e.Blk)) {
			continue
		}
		f := pred[e.Blk]
		vm = append(vm, f-e.R)
		vp = append(vp, f+e.R)
	}
	return vm, vp
}

// Banded selection of the jackknife+ order statistics.
//
// At a point, block b's values are V-_b = f_b - r_b and V+_b = f_b + r_b,
// f_b its model's prediction and r_b its residual, both rounded as
// written. With fmin <= f_b <= fmax over the blocks, rounding being
// monotone, fl(fmin - r_b) <= V-_b <= fl(fmax - r_b), and both ends fall
// as r_b grows. So the k-th smallest of V- lies in [lo, hi] = [fl(fmin -
// R), fl(fmax - R)], R the k-th largest residual; with the residuals of
// the point's forecast sorted once for the whole scan, the blocks whose
// upper end is below lo are surely below the bracket, those whose lower
// end is above hi surely above it, each a range of residual positions
// found by binary search, and only the blocks between (the band, those
// whose residual is within fmax - fmin of R: a few dozen of a thousand at
// the paper's scale, where the blocks' predictions spread over about ten
// residual spacings) need their value. The limit is the (k - below)-th
// smallest of the band's values inside the bracket, below counting the
// values below it. V+ is the same with the ends rising with r_b, and the
// two coverage counts of the calibration curve (CountCovered) are
// threshold counts at the target done the same way. A point then costs
// a few dozen values and binary searches where the plain path
// (JackknifeValues, CountCovered, JackknifePlus: Scratch.Plain) forms
// every value and passes over them several times to select; fmin and
// fmax come from one pass over the points' predictions, row by row
// (Spread).
//
// A point takes the plain path, which gives the same limits and counts,
// where a prediction or residual is not finite (JackknifePlus maps NaN to
// infinities), where its interval leaves residuals out (a self-audit),
// where the counts contradict the bracket (they cannot), or where a limit
// is a zero, whose sign a tie with the other zero could set: the limits
// are those of the plain path bit for bit.

// Selector is what banded selection shares over a scan of points: the
// points' residual sets sorted by residual (Add), one Scratch per
// worker, and the spread of the points' predictions when a caller
// gathered it as it made them (Merge). It exists so that each set is
// sorted once for every point that shares it, and every worker's
// scratch is reused from one range of points to the next.
type Selector struct {
	// sorted is each set of residuals sorted by residual, nil for a set
	// with a non-finite residual.
	sorted  map[setKey]*SortedResiduals
	scratch []Scratch
	// spread, when it has one entry per point of a scan (Merge), is
	// that of the scan's points, which then need not form it.
	spread Spread
}

// setKey names a set of residuals by its first residual's address and
// its length: two sets alike in both are the same residuals.
type setKey struct {
	first *Residual
	n     int
}

// SortedResiduals is a residual set's residuals, ascending, and their
// blocks: the form banded selection searches (Scratch.Banded).
type SortedResiduals struct {
	r []float64
	b []int
}

// Scratch is one worker's scratch space for a scan of points, banded
// (Banded) or plain (Pred, Plain); it is reused from point to point so
// that the scan allocates nothing per point.
type Scratch struct {
	pred, vm, vp []float64
	cand         []float64
	spread       Spread // of a range of points
}

// Spread is, per point, the least and greatest prediction over the
// blocks, and whether one is NaN: the bracket banded selection searches
// within, gathered row by row (Add) as the blocks' predictions are made.
type Spread struct {
	fmin, fmax []float64
	nan        []bool
}

// Reset empties s for n points.
func (s *Spread) Reset(n int) {
	s.fmin, s.fmax, s.nan = slices.Grow(s.fmin[:0], n)[:n], slices.Grow(s.fmax[:0], n)[:n], slices.Grow(s.nan[:0], n)[:n]
	for j := range s.fmin {
		s.fmin[j], s.fmax[j], s.nan[j] = math.Inf(1), math.Inf(-1), false
	}
}

// Add takes in one block's predictions at the points.
func (s *Spread) Add(pred []float64) {
	lo, hi := s.fmin, s.fmax[:len(s.fmin)]
	pred = pred[:len(lo)]
	nan := false
	for j, v := range pred {
		if v < lo[j] {
			lo[j] = v
		}
		if v > hi[j] {
			hi[j] = v
		}
		if v != v {
			nan = true
		}
	}
	if nan {
		for j, v := range pred {
			if v != v {
				s.nan[j] = true
			}
		}
	}
}

// Usable reports whether point j's predictions are all finite (where one
// is not, the point takes the plain path).
func (s *Spread) Usable(j int) bool {
	return !s.nan[j] && num.Finite(s.fmin[j]) && num.Finite(s.fmax[j])
}

// rows sets s to the spread of the points [p0, p1) of the rows of m,
// every one non-nil, taken row by row.
func (s *Spread) rows(m [][]float64, p0, p1 int) {
	s.Reset(p1 - p0)
	for _, row := range m {
		s.Add(row[p0:p1])
	}
}

// NewSelector returns an empty Selector for scans on up to workers
// goroutines.
func NewSelector(workers int) *Selector {
	return &Selector{sorted: map[setKey]*SortedResiduals{}, scratch: make([]Scratch, workers)}
}

// Add sorts the residual set es for the scan, once however many points
// share it (the same slice).
func (s *Selector) Add(es []Residual) {
	if len(es) == 0 {
		return
	}
	k := setKey{&es[0], len(es)}
	if _, ok := s.sorted[k]; ok {
		return
	}
	s.sorted[k] = sortResiduals(es)
}

// sortResiduals returns es sorted by residual (ties in the order of es),
// nil when a residual is not finite. It is a stable radix sort of the
// residuals' bits made order-preserving (radixOrder): a one-sequence
// predict of the paper-scale example sorts ten sets of 1000 residuals,
// which a comparison sort through indices took most of its limits'
// time to do.
func sortResiduals(es []Residual) *SortedResiduals {
	keys := make([]uint64, len(es))
	for i, e := range es {
		if !num.Finite(e.R) {
			return nil
		}
		keys[i] = orderedBits(e.R)
	}
	s := &SortedResiduals{r: make([]float64, len(es)), b: make([]int, len(es))}
	for j, i := range radixOrder(keys) {
		s.r[j], s.b[j] = es[i].R, es[i].Blk
	}
	return s
}

// orderedBits maps a finite x to a key whose unsigned order is x's
// order, equal exactly when the values are (-0 is +0's key).
func orderedBits(x float64) uint64 {
	if x == 0 {
		x = 0
	}
	b := math.Float64bits(x)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// radixOrder returns the indices of keys in increasing order of key,
// equal keys in increasing order of index: a least-significant-digit
// radix sort by bytes, which skips the bytes every key shares (the
// leading bytes of residuals of one scale).
func radixOrder(keys []uint64) []int32 {
	n := len(keys)
	idx, tmp := make([]int32, n), make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	var count [256]int
	for shift := uint(0); shift < 64 && n > 1; shift += 8 {
		count = [256]int{}
		for _, k := range keys {
			count[byte(k>>shift)]++
		}
		if count[byte(keys[0]>>shift)] == n {
			continue // every key has this byte
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, i := range idx {
			d := byte(keys[i] >> shift)
			tmp[count[d]] = i
			count[d]++
		}
		idx, tmp = tmp, idx
	}
	return idx
}

// Sorted returns the sorted form of es (Add), nil when there is none.
func (s *Selector) Sorted(es []Residual) *SortedResiduals {
	if len(es) == 0 {
		return nil
	}
	return s.sorted[setKey{&es[0], len(es)}]
}

// Scratch returns the workers' scratch spaces, one per worker.
func (s *Selector) Scratch() []Scratch { return s.scratch }

// Merge sets the selector's spread to that of the parts' blocks
// together: the spread of a scan whose predictions the parts gathered
// as they were made, so that the scan's workers need not form it again.
func (s *Selector) Merge(parts []Spread) {
	s.spread.Reset(len(parts[0].fmin))
	for _, q := range parts {
		sp := &s.spread
		for j := range sp.fmin {
			if q.fmin[j] < sp.fmin[j] {
				sp.fmin[j] = q.fmin[j]
			}
			if q.fmax[j] > sp.fmax[j] {
				sp.fmax[j] = q.fmax[j]
			}
			sp.nan[j] = sp.nan[j] || q.nan[j]
		}
	}
}

// Spread returns the spread of the points [p0, p1) of a scan of n
// points whose predictions are the rows of m (every one non-nil) from
// column off on, and at, the spread's index of point 0 (point p is at p
// - at): sel's merged spread where it has one entry per point of the
// scan (Merge), else sc's own of the range, taken row by row.
func (sc *Scratch) Spread(sel *Selector, m [][]float64, n, off, p0, p1 int) (sp *Spread, at int) {
	sp = &sel.spread
	if len(sp.fmin) != n {
		sc.spread.rows(m, off+p0, off+p1)
		sp, at = &sc.spread, p0
	}
	return sp, at
}

// Pred returns sc's buffer for the n blocks' predictions at a point of
// the plain path, made on first use.
func (sc *Scratch) Pred(n int) []float64 {
	if sc.pred == nil {
		sc.pred = make([]float64, n)
	}
	return sc.pred
}

// Plain is the plain path at one point: the jackknife+ limits lo, up of
// its m values (JackknifeValues of es, pred, skip and keep, then
// JackknifePlus at alpha) and, with hits non-nil, its coverage of y at
// the calibration levels alphas added to hits (CountCovered).
func (sc *Scratch) Plain(alphas []float64, alpha float64, es []Residual, pred []float64, skip Skip, keep func(blk int) bool, y float64, hits []int) (lo, up float64, m int) {
	sc.vm, sc.vp = JackknifeValues(es, pred, skip, keep, sc.vm, sc.vp)
	if hits != nil {
		// Before JackknifePlus, which reorders the values and maps NaN
		// to infinities.
		CountCovered(alphas, y, sc.vm, sc.vp, hits)
	}
	lo, up = JackknifePlus(alpha, sc.vm, sc.vp)
	return lo, up, len(sc.vp)
}

// Banded is the jackknife+ interval (lo, up from n values) at point col
// of the predictions m (m[b][col] that of block b's model; the point's
// spread is sp's j-th), from the sorted residual set s, leaving out no
// residual, as JackknifeValues and JackknifePlus give it; with hits
// non-nil it also adds the point's coverage of y at every calibration
// level of alphas to hits (CountCovered). ok is false, and hits
// untouched, where the point needs the plain path (Plain).
func (sc *Scratch) Banded(alphas []float64, alpha float64, s *SortedResiduals, m [][]float64, col int, sp *Spread, j int, y float64, hits []int) (lo, up float64, n int, ok bool) {
	fmin, fmax := sp.fmin[j], sp.fmax[j]
	rs, bs := s.r, s.b
	n = len(rs)
	// value is the value of the residual at position i: f - r, or
	// f + r.
	value := func(i int, neg bool) float64 {
		f := m[bs[i]][col]
		if neg {
			return f - rs[i]
		}
		return f + rs[i]
	}
	lo, up = math.Inf(-1), math.Inf(1)
	if k := LowerRank(alpha, n); k >= 1 && k <= n {
		// V-: both ends fall with the position.
		blo, bhi := fmin-rs[n-k], fmax-rs[n-k]
		i0 := sort.Search(n, func(i int) bool { return fmin-rs[i] <= bhi })
		i1 := sort.Search(n, func(i int) bool { return fmax-rs[i] < blo })
		v, ok := sc.kth(k, n-i1, i0, i1, true, blo, bhi, value)
		if !ok {
			return 0, 0, 0, false
		}
		lo = v
	}
	if k := UpperRank(alpha, n); k >= 1 && k <= n {
		// V+: both ends rise with the position.
		blo, bhi := fmin+rs[k-1], fmax+rs[k-1]
		j0 := sort.Search(n, func(i int) bool { return fmax+rs[i] >= blo })
		j1 := sort.Search(n, func(i int) bool { return fmin+rs[i] > bhi })
		v, ok := sc.kth(k, j0, j0, j1, false, blo, bhi, value)
		if !ok {
			return 0, 0, 0, false
		}
		up = v
	}
	if hits != nil {
		below, notAbove := 0, 0
		if y == y {
			// V+ below y: surely before c0, surely not from c1.
			c0 := sort.Search(n, func(i int) bool { return fmax+rs[i] >= y })
			c1 := sort.Search(n, func(i int) bool { return fmin+rs[i] >= y })
			below = c0
			for i := c0; i < c1; i++ {
				below += b2i(value(i, false) < y)
			}
			// V- not above y: surely not before d0, surely from d1.
			d0 := sort.Search(n, func(i int) bool { return fmin-rs[i] <= y })
			d1 := sort.Search(n, func(i int) bool { return fmax-rs[i] <= y })
			notAbove = n - d1
			for i := d0; i < d1; i++ {
				notAbove += b2i(value(i, true) <= y)
			}
		}
		CoveredFromCounts(alphas, n, below, notAbove, hits)
	}
	return lo, up, n, true
}

// kth is the k-th smallest value given below values surely under blo and
// the band of positions [i0, i1) (values of side neg) holding the rest
// that may lie in [blo, bhi]; ok is false where the counts miss the
// bracket or the value is a zero.
func (sc *Scratch) kth(k, below, i0, i1 int, neg bool, blo, bhi float64, value func(int, bool) float64) (float64, bool) {
	c := sc.cand[:0]
	for i := i0; i < i1; i++ {
		switch v := value(i, neg); {
		case v < blo:
			below++
		case v <= bhi:
			c = append(c, v)
		}
	}
	sc.cand = c
	k -= below
	if k < 1 || k > len(c) {
		return 0, false
	}
	v := KthSmallest(c, k)
	return v, v != 0
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
