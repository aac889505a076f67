package audit

import (
	"math"
	"slices"
	"sort"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

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
// two coverage counts of the calibration curve (countCovered) are
// threshold counts at the target done the same way. A point then costs
// a few dozen values and binary searches where the plain path
// (jackknifeValues, countCovered, jackknifePlus) forms every value and
// passes over them several times to select; fmin and fmax come from one
// pass over the points' predictions, row by row.
//
// A point takes the plain path, which gives the same limits and counts,
// where a prediction or residual is not finite (jackknifePlus maps NaN to
// infinities), where its interval leaves entries out (a self-audit), where
// the counts contradict the bracket (they cannot), or where a limit is a
// zero, whose sign a tie with the other zero could set: the limits are
// those of the plain path bit for bit.

// selector is what banded selection shares over a scan: the residual
// sets sorted by residual, and one scratch per worker.
type selector struct {
	// sorted is each set of entries sorted by residual, nil for a set
	// with a non-finite residual.
	sorted  map[setKey]*sortedEntries
	scratch []selectScratch
	// spread, when it has one entry per point of a scan (merge), is
	// that of the scan's points, which then need not form it.
	spread predSpread
}

// setKey names a set of entries by its first entry's address and its
// length: two sets alike in both are the same entries.
type setKey struct {
	first *entry
	n     int
}

// sortedEntries are a residual set's residuals r, ascending, and their
// blocks b.
type sortedEntries struct {
	r []float64
	b []int
}

// selectScratch is one worker's scratch space.
type selectScratch struct {
	pred, vm, vp []float64
	cand         []float64
	spread       predSpread // of a range of points
}

// predSpread is, per point, the least and greatest prediction over the
// blocks, and whether one is NaN.
type predSpread struct {
	fmin, fmax []float64
	nan        []bool
}

// reset empties s for n points.
func (s *predSpread) reset(n int) {
	s.fmin, s.fmax, s.nan = slices.Grow(s.fmin[:0], n)[:n], slices.Grow(s.fmax[:0], n)[:n], slices.Grow(s.nan[:0], n)[:n]
	for j := range s.fmin {
		s.fmin[j], s.fmax[j], s.nan[j] = math.Inf(1), math.Inf(-1), false
	}
}

// add takes in one block's predictions at the points.
func (s *predSpread) add(pred []float64) {
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

// usable reports whether point j's predictions are all finite (where one
// is not, the point takes the plain path).
func (s *predSpread) usable(j int) bool {
	return !s.nan[j] && num.Finite(s.fmin[j]) && num.Finite(s.fmax[j])
}

// merge sets s.spread to the spread of the parts' blocks together.
func (s *selector) merge(parts []predSpread) {
	s.spread.reset(len(parts[0].fmin))
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

// newSelector prepares banded selection at the points pts (residual sets
// entries, self as in residualSets.at) on up to workers goroutines.
func newSelector(pts []point, entries *residualSets, self bool, workers int) *selector {
	s := &selector{sorted: map[setKey]*sortedEntries{}, scratch: make([]selectScratch, workers)}
	for _, pt := range pts {
		es, _ := entries.at(pt, self)
		if len(es) == 0 {
			continue
		}
		k := setKey{&es[0], len(es)}
		if _, ok := s.sorted[k]; ok {
			continue
		}
		s.sorted[k] = sortEntries(es)
	}
	return s
}

// sortEntries returns es sorted by residual, nil when a residual is not
// finite.
func sortEntries(es []entry) *sortedEntries {
	idx := make([]int, len(es))
	for i, e := range es {
		if !num.Finite(e.r) {
			return nil
		}
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int {
		switch {
		case es[i].r < es[j].r:
			return -1
		case es[i].r > es[j].r:
			return 1
		}
		return i - j
	})
	s := &sortedEntries{r: make([]float64, len(es)), b: make([]int, len(es))}
	for j, i := range idx {
		s.r[j], s.b[j] = es[i].r, es[i].blk
	}
	return s
}

// of returns the sorted form of es, nil when there is none.
func (s *selector) of(es []entry) *sortedEntries {
	if len(es) == 0 {
		return nil
	}
	return s.sorted[setKey{&es[0], len(es)}]
}

// rows sets s to the spread of the points [p0, p1) of the rows of m,
// every one non-nil, taken row by row.
func (s *predSpread) rows(m predMatrix, p0, p1 int) {
	s.reset(p1 - p0)
	for _, row := range m {
		s.add(row[p0:p1])
	}
}

// banded is the jackknife+ interval (lo, up from m values) at point col
// of the predictions m (of blocks whose least and greatest are fmin and
// fmax), from the sorted residual set s, leaving out no entry, as
// jackknifeValues and jackknifePlus give it; with hits non-nil it also
// adds the point's coverage of y at every calibration level to hits
// (countCovered). ok is false, and hits untouched, where the point needs
// the plain path.
func (sc *selectScratch) banded(alpha float64, s *sortedEntries, m predMatrix, col int, fmin, fmax, y float64, hits []int) (lo, up float64, n int, ok bool) {
	rs, bs := s.r, s.b
	n = len(rs)
	// value is the value of the entry at residual position i: f - r, or
	// f + r.
	value := func(i int, neg bool) float64 {
		f := m[bs[i]][col]
		if neg {
			return f - rs[i]
		}
		return f + rs[i]
	}
	lo, up = math.Inf(-1), math.Inf(1)
	if k := interval.LowerRank(alpha, n); k >= 1 && k <= n {
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
	if k := interval.UpperRank(alpha, n); k >= 1 && k <= n {
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
		interval.CoveredFromCounts(calibrationAlphas, n, below, notAbove, hits)
	}
	return lo, up, n, true
}

// kth is the k-th smallest value given below values surely under blo and
// the band of positions [i0, i1) (values of side neg) holding the rest
// that may lie in [blo, bhi]; ok is false where the counts miss the
// bracket or the value is a zero.
func (sc *selectScratch) kth(k, below, i0, i1 int, neg bool, blo, bhi float64, value func(int, bool) float64) (float64, bool) {
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
	v := interval.KthSmallest(c, k)
	return v, v != 0
}
