package audit

// Exact jackknife+ limits of the low-rank path without every block's
// shift at every point.
//
// At point x the perturbed values are V-_b = (F + Delta_b) - r_b and
// V+_b = (F + Delta_b) + r_b, rounded as written, with Delta_b = c_x·c_b
// (the point's and the block's coefficient rows, w = K + KS floats). By
// Cauchy–Schwarz, and the usual bound on a rounded dot product,
// |Delta_b| <= beta = |c_x| tau (1 + boundMargin) + boundFloor for every
// block whose row norm is at most tau. Rounding is monotone, so such a
// block's V-_b lies in [fl(fl(F-beta) - r_b), fl(fl(F+beta) - r_b)], and
// both ends are monotone in r_b: with a block's residuals sorted per
// forecast slot (limitsIndex, once per table), the blocks whose value is
// surely below a threshold, or surely above it, are two ranges found by
// binary search. A limit, the k-th smallest value, lies between the
// k-th smallest lower end and the k-th (or, when the point leaves a block
// out, the (k+1)-th) smallest upper end; only the blocks whose ends
// straddle that bracket, and the few blocks of largest norm (outliers,
// taken exactly), need their shift, which is computed by the same product
// as BlockTable.Shifts (so it is bit for bit the same), and the k-th
// smallest among the values inside the bracket, after the count of those
// surely below, is the limit, exactly. The coverage counts of the
// calibration curve are threshold counts at the target y, done the same
// way. At a million blocks a block's shift is of the order of the
// residuals' spacing, so a handful of blocks per point straddle: the
// chunk forms a few thousand shifts instead of q × N.
//
// Where the bounds settle too little (large shifts: small tables,
// strongly influential blocks) or a point's numbers are not finite, the
// chunk falls back to finalizeFull, which gives the same limits.

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"

	"gonum.org/v1/gonum/floats"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

const (
	// indexMinBlocks is the size of table from which FinalizeLimits
	// bounds the shifts instead of forming them all.
	indexMinBlocks = 4096
	// boundMargin and boundFloor widen the Cauchy–Schwarz bound of a
	// shift to cover the rounding of the product and of the norms
	// (relative errors of order w·2^-53) and underflow.
	boundMargin = 1e-6
	boundFloor  = 1e-300
	// outlierShare: the 1/outlierShare blocks of largest coefficient
	// norm (at least outlierMin) are always taken exactly, so that a few
	// influential blocks do not widen every point's bound.
	outlierShare = 1024
	outlierMin   = 16
	// exactPanel is the number of rows of one product of exactShifts.
	exactPanel = 2048
)

// limitsIndex is what finalizeIndexed needs of a table besides the
// table: the bound tau of the regular blocks' coefficient norms, the
// other blocks (outliers), and per forecast slot the regular blocks with
// a residual there, sorted by residual.
type limitsIndex struct {
	tau   float64
	out   []int32
	slots []slotIndex
}

// slotIndex is one forecast slot's regular blocks b with a residual r
// (not NaN), ascending in r.
type slotIndex struct {
	r []float64
	b []int32
}

// newLimitsIndex builds the index of t on up to workers goroutines.
func newLimitsIndex(t *BlockTable, workers int) *limitsIndex {
	w := t.K + t.KS
	norms := make([]float64, t.N)
	par.Ranges(t.N, workers, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			norms[b] = floats.Norm(t.Coef[b*w:(b+1)*w], 2)
		}
	})
	sorted := make([]float64, 0, t.N)
	for _, v := range norms {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			sorted = append(sorted, v)
		}
	}
	ix := &limitsIndex{}
	if nOut := min(t.N, max(outlierMin, t.N/outlierShare)); len(sorted) > nOut {
		slices.Sort(sorted)
		ix.tau = sorted[len(sorted)-1-nOut]
	}
	regular := func(b int) bool { return norms[b] <= ix.tau }
	for b := range norms {
		if !regular(b) {
			ix.out = append(ix.out, int32(b))
		}
	}
	ix.slots = make([]slotIndex, t.F)
	type entry struct {
		r float64
		b int32
	}
	par.Ranges(t.F, workers, func(lo, hi int) {
		var es []entry
		for s := lo; s < hi; s++ {
			es = es[:0]
			for b := 0; b < t.N; b++ {
				if r := t.Res[b*t.F+s]; !math.IsNaN(r) && regular(b) {
					es = append(es, entry{r, int32(b)})
				}
			}
			slices.SortFunc(es, func(x, y entry) int { return cmp.Compare(x.r, y.r) })
			si := slotIndex{r: make([]float64, len(es)), b: make([]int32, len(es))}
			for j, e := range es {
				si.r[j], si.b[j] = e.r, e.b
			}
			ix.slots[s] = si
		}
	})
	return ix
}

// finalize is FinalizeLimits with t's table and levels, the table's
// index built once, by the first call, and shared by every chunk.
func (t *TableSpec) finalize(pts []PointRecord) (ChunkLimits, error) {
	if t.Table.N < indexMinBlocks {
		return finalizeFull(t.Alpha, t.Alphas, &t.Table, pts)
	}
	t.indexOnce.Do(func() { t.index = newLimitsIndex(&t.Table, runtime.GOMAXPROCS(0)) })
	return finalizeIndexed(t.Alpha, t.Alphas, &t.Table, t.index, pts)
}

// pointsT checks the points against t and returns their coefficient rows
// transposed (w × q), the right operand of the shifts' product.
func (t *BlockTable) pointsT(pts []PointRecord) ([]float64, error) {
	w, q := t.K+t.KS, len(pts)
	xt := make([]float64, w*q)
	for i, p := range pts {
		if len(p.G) != t.K || len(p.H) != t.KS {
			return nil, fmt.Errorf("audit: test point %d has %d+%d coefficients, the blocks %d+%d", i, len(p.G), len(p.H), t.K, t.KS)
		}
		if p.Forecast < -1 || p.Forecast >= t.F {
			return nil, fmt.Errorf("audit: test point %d has forecast slot %d of %d", i, p.Forecast, t.F)
		}
		if p.Skip < -1 || p.Skip >= t.N {
			return nil, fmt.Errorf("audit: test point %d leaves out block %d of %d", i, p.Skip, t.N)
		}
		for j, v := range p.G {
			xt[j*q+i] = v
		}
		for j, v := range p.H {
			xt[(t.K+j)*q+i] = v
		}
	}
	return xt, nil
}

// exactShifts returns the shifts of blocks bs (ascending, distinct) at
// the q points of xt (pointsT), len(bs) × q, bit for bit as shiftsInto
// forms them: the product's kernel takes rows four at a time and the
// last N mod 4 blocks of the table on its scalar loop, so the rows are
// gathered in panels of multiples of four and those blocks apart.
func (t *BlockTable) exactShifts(xt []float64, q int, bs []int32) []float64 {
	w := t.K + t.KS
	out := make([]float64, len(bs)*q)
	if w == 0 || q == 0 {
		return out
	}
	nk := sort.Search(len(bs), func(j int) bool { return int(bs[j]) >= t.N&^3 })
	a := make([]float64, min(exactPanel, (nk+3)&^3)*w)
	for j0 := 0; j0 < nk; j0 += exactPanel {
		n := min(exactPanel, nk-j0)
		m := (n + 3) &^ 3
		clear(a[n*w : m*w])
		for j, b := range bs[j0 : j0+n] {
			copy(a[j*w:(j+1)*w], t.Coef[int(b)*w:(int(b)+1)*w])
		}
		if m == n {
			graph.MatMul(false, false, m, q, w, a[:m*w], xt, out[j0*q:(j0+n)*q])
			continue
		}
		c := make([]float64, m*q)
		graph.MatMul(false, false, m, q, w, a[:m*w], xt, c)
		copy(out[j0*q:], c[:n*q])
	}
	if nt := len(bs) - nk; nt > 0 {
		at := make([]float64, nt*w)
		for j, b := range bs[nk:] {
			copy(at[j*w:], t.Coef[int(b)*w:(int(b)+1)*w])
		}
		graph.MatMul(false, false, nt, q, w, at, xt, out[nk*q:])
	}
	return out
}

// side is one side of a point's values over a slot's regular blocks:
// V- (neg: c - r, ascending in p = n-1-j for residual position j) or V+
// (c + r, ascending in p = j), for c the bound fl(F ± beta) or F + shift.
type side struct {
	r   []float64
	neg bool
}

func (s side) value(c, r float64) float64 {
	if s.neg {
		return c - r
	}
	return c + r
}

// at is the value with c at ascending position p.
func (s side) at(c float64, p int) float64 {
	if s.neg {
		return c - s.r[len(s.r)-1-p]
	}
	return c + s.r[p]
}

// first is the first position p whose value with c satisfies ok (which
// must be monotone: false, then true).
func (s side) first(c float64, ok func(float64) bool) int {
	return sort.Search(len(s.r), func(p int) bool { return ok(s.at(c, p)) })
}

// positions turns the ascending range [p1, p2) into residual positions.
func (s side) positions(p1, p2 int) (int, int) {
	if s.neg {
		return len(s.r) - p2, len(s.r) - p1
	}
	return p1, p2
}

// kthUnion is the k-th smallest (1-based, 1 <= k <= n + len(o)) of the
// values f(0) <= ... <= f(n-1) and the ascending o.
func kthUnion(f func(int) float64, n int, o []float64, k int) float64 {
	lo, hi := max(0, k-len(o)), min(k, n)
	// The smallest i (values taken from f) with f(i) >= o[k-i-1].
	for lo < hi {
		i := (lo + hi) / 2
		if f(i) < o[k-i-1] {
			lo = i + 1
		} else {
			hi = i
		}
	}
	v := math.Inf(-1)
	if lo > 0 {
		v = f(lo - 1)
	}
	if j := k - lo; j > 0 {
		v = max(v, o[j-1])
	}
	return v
}

// task is one order statistic or threshold count of one point over the
// regular blocks whose bounds straddle (residual positions [j1, j2)),
// the rest being settled: base values surely below, and cands, the
// outliers' values in the bracket.
type task struct {
	i      int
	sd     side
	j1, j2 int
	base   int
	// An order statistic: the k-th smallest, in [lo, hi].
	k      int
	lo, hi float64
	cands  []float64
	// A count (k == 0) of values below y (strict) or not above it.
	y      float64
	strict bool
}

// finalizeIndexed is FinalizeLimits with the index ix of t (see the top
// of this file); it gives the same limits and counts as finalizeFull.
func finalizeIndexed(alpha float64, alphas []float64, t *BlockTable, ix *limitsIndex, pts []PointRecord) (ChunkLimits, error) {
	out, formed, err := indexedLimits(alpha, alphas, t, ix, pts)
	if err != nil || formed >= 0 {
		return out, err
	}
	return finalizeFull(alpha, alphas, t, pts)
}

// indexedLimits is finalizeIndexed without its fallback: formed is the
// number of blocks whose shifts it formed at the chunk's points, -1 when
// the bounds settled too little (or a point's numbers are not finite)
// and the chunk needs finalizeFull.
func indexedLimits(alpha float64, alphas []float64, t *BlockTable, ix *limitsIndex, pts []PointRecord) (_ ChunkLimits, formed int, _ error) {
	xt, err := t.pointsT(pts)
	if err != nil {
		return ChunkLimits{}, 0, err
	}
	q, w := len(pts), t.K+t.KS
	eOut := t.exactShifts(xt, q, ix.out)
	out := ChunkLimits{Lo: make([]float64, q), Up: make([]float64, q), M: make([]int, q), Covered: make([]int, len(alphas))}
	// Per point: the bounds fl(F ± beta) of F + shift, and the block it
	// leaves out.
	fms, fps := make([]float64, q), make([]float64, q)
	var tasks []task
	row := make([]float64, w)
	var outLo, outHi []float64
	for i, p := range pts {
		out.Lo[i], out.Up[i] = math.Inf(-1), math.Inf(1)
		if p.Forecast < 0 {
			continue
		}
		s := p.Forecast
		sl := ix.slots[s]
		for j := range row {
			row[j] = xt[j*q+i]
		}
		beta := floats.Norm(row, 2)*ix.tau*(1+boundMargin) + boundFloor
		fm, fp := p.F-beta, p.F+beta
		if !finite(p.F) || !finite(fm) || !finite(fp) {
			return ChunkLimits{}, -1, nil
		}
		fms[i], fps[i] = fm, fp
		// The outliers' values.
		outLo, outHi = outLo[:0], outHi[:0]
		for o, b := range ix.out {
			r := t.Res[int(b)*t.F+s]
			if math.IsNaN(r) || int(b) == p.Skip {
				continue
			}
			f := p.F + eOut[o*q+i]
			outLo, outHi = append(outLo, f-r), append(outHi, f+r)
		}
		skipReg, skipR := false, 0.0
		if p.Skip >= 0 {
			skipR = t.Res[p.Skip*t.F+s]
			_, isOut := slices.BinarySearch(ix.out, int32(p.Skip))
			skipReg = !math.IsNaN(skipR) && !isOut
		}
		drop := 0
		if skipReg {
			drop = 1
		}
		n := len(sl.r)
		m := n - drop + len(outHi)
		out.M[i] = m
		// straddle returns the positions [j1, j2) of the regular blocks
		// whose value is neither surely in (below) nor surely out: below
		// is true, then false, along the ascending values, and beyond
		// (false, then true) marks the values surely past the range of
		// interest; and base, how many regular values (the skipped block
		// apart) are surely below.
		straddle := func(sd side, below, beyond func(float64) bool) (j1, j2, base int) {
			p1 := sd.first(fp, func(v float64) bool { return !below(v) })
			p2 := max(p1, sd.first(fm, beyond))
			base = p1
			if skipReg && below(sd.value(fp, skipR)) {
				base--
			}
			j1, j2 = sd.positions(p1, p2)
			return j1, j2, base
		}
		if p.Labelled && len(alphas) > 0 && p.Y == p.Y {
			y := p.Y
			// V+ below y.
			sd := side{r: sl.r}
			below := func(v float64) bool { return v < y }
			j1, j2, base := straddle(sd, below, func(v float64) bool { return !below(v) })
			for _, v := range outHi {
				if below(v) {
					base++
				}
			}
			tasks = append(tasks, task{i: i, sd: sd, j1: j1, j2: j2, base: base, y: y, strict: true})
			// V- not above y.
			sd = side{r: sl.r, neg: true}
			below = func(v float64) bool { return v <= y }
			j1, j2, base = straddle(sd, below, func(v float64) bool { return !below(v) })
			for _, v := range outLo {
				if below(v) {
					base++
				}
			}
			tasks = append(tasks, task{i: i, sd: sd, j1: j1, j2: j2, base: base, y: y})
		}
		// The limits: the lower is the k-th smallest of V-, the upper of
		// V+ (NaN counting as unbounded on its side, as in jackknifePlus).
		for _, neg := range []bool{true, false} {
			k, o := lowerRank(alpha, m), outLo
			if !neg {
				k, o = upperRank(alpha, m), outHi
			}
			if k < 1 || k > m {
				continue
			}
			sd := side{r: sl.r, neg: neg}
			infForNaNSide(o, neg)
			slices.Sort(o)
			lo := kthUnion(func(p int) float64 { return sd.at(fm, p) }, n, o, k)
			hi := math.Inf(1)
			if k+drop <= n+len(o) {
				hi = kthUnion(func(p int) float64 { return sd.at(fp, p) }, n, o, k+drop)
			}
			j1, j2, base := straddle(sd, func(v float64) bool { return v < lo }, func(v float64) bool { return v > hi })
			var cands []float64
			for _, v := range o {
				if v < lo {
					base++
				} else if v <= hi {
					cands = append(cands, v)
				}
			}
			tasks = append(tasks, task{i: i, sd: sd, j1: j1, j2: j2, base: base, k: k, lo: lo, hi: hi, cands: cands})
		}
	}
	// The blocks whose shift some task needs: those of its range whose
	// bounds differ (equal bounds are the value).
	total := 0
	for _, tk := range tasks {
		total += tk.j2 - tk.j1
	}
	if total > 4*t.N {
		return ChunkLimits{}, -1, nil
	}
	var need []int32
	for _, tk := range tasks {
		p := pts[tk.i]
		bs := ix.slots[p.Forecast].b
		for j := tk.j1; j < tk.j2; j++ {
			r := tk.sd.r[j]
			if int(bs[j]) != p.Skip && tk.sd.value(fms[tk.i], r) != tk.sd.value(fps[tk.i], r) {
				need = append(need, bs[j])
			}
		}
	}
	slices.Sort(need)
	need = slices.Compact(need)
	if len(need) > t.N/4 {
		return ChunkLimits{}, -1, nil
	}
	e := t.exactShifts(xt, q, need)
	counts := make([][2]int, q) // V+ below y, V- not above y
	for _, tk := range tasks {
		i, p := tk.i, pts[tk.i]
		bs := ix.slots[p.Forecast].b
		fm, fp := fms[i], fps[i]
		n := tk.base
		for j := tk.j1; j < tk.j2; j++ {
			b, r := bs[j], tk.sd.r[j]
			if int(b) == p.Skip {
				continue
			}
			v := tk.sd.value(fm, r)
			if v != tk.sd.value(fp, r) {
				at, _ := slices.BinarySearch(need, b)
				v = tk.sd.value(p.F+e[at*q+i], r)
			}
			switch {
			case tk.k > 0:
				if v < tk.lo {
					n++
				} else if v <= tk.hi {
					tk.cands = append(tk.cands, v)
				}
			case tk.strict && v < tk.y, !tk.strict && v <= tk.y:
				n++
			}
		}
		switch {
		case tk.k > 0:
			kk := tk.k - n
			if kk < 1 || kk > len(tk.cands) {
				// The bracket missed: cannot happen with exact bounds;
				// the full computation is the answer anyway.
				return ChunkLimits{}, -1, nil
			}
			v := kthSmallest(tk.cands, kk)
			if tk.sd.neg {
				out.Lo[i] = v
			} else {
				out.Up[i] = v
			}
		case tk.strict:
			counts[i][0] = n
		default:
			counts[i][1] = n
		}
	}
	for i, p := range pts {
		if p.Labelled && len(alphas) > 0 {
			coveredFromCounts(alphas, out.M[i], counts[i][0], counts[i][1], out.Covered)
			out.Labelled++
		}
	}
	return out, len(ix.out) + len(need), nil
}

// infForNaNSide maps NaN in v to -Inf (neg: values of V-) or +Inf.
func infForNaNSide(v []float64, neg bool) {
	inf := math.Inf(1)
	if neg {
		inf = math.Inf(-1)
	}
	for i, x := range v {
		if x != x {
			v[i] = inf
		}
	}
}

// finite reports whether v is neither infinite nor NaN.
func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
