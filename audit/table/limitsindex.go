package table

// Exact jackknife+ limits of the low-rank path without every block's
// shift at every point.
//
// At point x the perturbed values are V-_b = (F + Delta_b) - r_b and
// V+_b = (F + Delta_b) + r_b, rounded as written, with Delta_b = c_x·c_b
// (the point's and the block's coefficient rows, w = K + KS floats). The
// rounded dot product is at most (1 + w 2^-53) sum_j |c_xj||c_bj| in
// magnitude, so |Delta_b| <= beta = sum_j |c_xj| tau_j (1 + boundMargin)
// + boundFloor for every regular block, one whose |c_bj| <= tau_j for
// every j (limitsIndex; the others, a few per thousand, are outliers,
// taken exactly). Rounding is monotone, so a regular block's V-_b lies
// in [fl(fl(F-beta) - r_b), fl(fl(F+beta) - r_b)], and both ends are
// monotone in r_b: with the regular blocks sorted by residual per
// forecast slot (once per table), the blocks whose value is surely below
// a threshold, or surely above it, are two ranges found by binary
// search. A limit, the k-th smallest value, lies between the k-th
// smallest lower end and the k-th (or, when the point leaves a block
// out, the (k+1)-th) smallest upper end, the outliers' exact values
// included (kthUnion); only the blocks whose ends straddle that bracket
// need their shift, formed entry by entry bit for bit as the product
// over the table would form it (graph.MatMulEntries), and the k-th
// smallest among the values inside the bracket, after the count of
// those surely below, is the limit, exactly. The coverage counts of the
// calibration curve are threshold counts at the target y, done the same
// way.
//
// On the 100k-sequence LSTM's table (benchmarks/scale) a shift is of the
// order of the residuals' spacing: about 3,500 shifts per point are
// formed instead of 100,000, and the count does not grow with N (shifts
// shrink as 1/N as the spacing does). Where the bounds settle too little
// (shifts as large as the residuals: small tables, few blocks) or a
// point's numbers are not finite, the chunk falls back to finalizeFull,
// which gives the same limits.

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

const (
	// indexMinBlocks is the size of table from which FinalizeLimits
	// bounds the shifts instead of forming them all.
	indexMinBlocks = 4096
	// boundMargin and boundFloor widen the bound of a shift to cover
	// the rounding of the product and of the bound's own sum (relative
	// errors of order w·2^-53) and underflow.
	boundMargin = 1e-6
	boundFloor  = 1e-300
	// The N/outlierShare blocks (at least outlierMin) of largest |c_bj|
	// for each coefficient j are outliers, taken exactly, so that a few
	// influential blocks do not widen every point's bound; fewer per
	// coefficient while the outliers are more than N/outlierCap.
	outlierShare = 4096
	outlierMin   = 16
	outlierCap   = 32
	tauSample    = 1 << 16
	// exactPanel is the number of rows of one product of rowShifts.
	exactPanel = 2048
	// entriesShare: a chunk whose bounds leave more than q N /
	// entriesShare shifts to form entry by entry (each a chain of w
	// fused multiply-adds, several times the product's cost per shift)
	// forms them all instead.
	entriesShare = 16
)

// limitsIndex is what finalizeIndexed needs of a table besides the
// table: per coefficient j the bound tau[j] of the regular blocks'
// |c_bj|, the other blocks (outliers, ascending), and per forecast slot
// the regular blocks with a residual there, sorted by residual.
type limitsIndex struct {
	tau   []float64
	out   []int32
	slots []slotIndex
	// outRows are the outliers' rows, gathered (gatherRows).
	outRows   []float64
	outKernel int
}

// slotIndex is one forecast slot's regular blocks b with a residual r
// (not NaN), ascending in r.
type slotIndex struct {
	r []float64
	b []int32
}

// newLimitsIndex builds the index of t on up to workers goroutines. A
// shift's bound is sum_j |x_j| tau[j] (its terms' magnitudes), far below
// |x||c_b| on these tables: a block's step lies mostly along the
// factor's directions of small curvature, a point's gradient along those
// of large curvature. tau[j] leaves the N/outlierShare largest |c_bj| of
// each coefficient above it, so that a few influential blocks do not
// widen every point's bound.
func newLimitsIndex(t *BlockTable, workers int) *limitsIndex {
	return sampledLimitsIndex(t, workers, tauSample)
}

// sampledLimitsIndex is newLimitsIndex with the thresholds tau from
// min(N, sample) blocks.
func sampledLimitsIndex(t *BlockTable, workers, sample int) *limitsIndex {
	w := t.K + t.KS
	ix := &limitsIndex{tau: make([]float64, w)}
	outlier := make([]bool, t.N)
	// c outliers per coefficient, fewer while they are more than
	// N/outlierCap in all (coefficients of independent sizes). The
	// thresholds come from every (N/tauSample)-th block: any threshold
	// gives exact limits, and a column of a million-block table is a
	// pass over all of it (sample is tauSample but in tests).
	ns := min(t.N, sample)
	for c := min(t.N, max(outlierMin, t.N/outlierShare)); ; c /= 2 {
		cs := max(1, c*ns/t.N)
		par.Ranges(w, workers, func(lo, hi int) {
			col := make([]float64, 0, ns)
			for j := lo; j < hi; j++ {
				col = col[:0]
				for i := 0; i < ns; i++ {
					b := i * t.N / ns
					if v := math.Abs(t.Coef[b*w+j]); v <= math.MaxFloat64 {
						col = append(col, v)
					}
				}
				ix.tau[j] = 0
				if len(col) > cs {
					ix.tau[j] = interval.KthSmallest(col, len(col)-cs)
				}
			}
		})
		ix.out = ix.out[:0]
		for b := 0; b < t.N; b++ {
			outlier[b] = false
			for j, v := range t.Coef[b*w : (b+1)*w] {
				if !(math.Abs(v) <= ix.tau[j]) {
					outlier[b] = true
					ix.out = append(ix.out, int32(b))
					break
				}
			}
		}
		if len(ix.out) <= max(outlierMin, t.N/outlierCap) || c <= 1 {
			break
		}
	}
	ix.outRows, ix.outKernel = t.gatherRows(ix.out)
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
				if r := t.Res[b*t.F+s]; !math.IsNaN(r) && !outlier[b] {
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

// gatherRows returns the rows of blocks bs (ascending, distinct) as
// rowShifts takes them: those the product's kernel takes (below N &^ 3),
// nk of them, padded with zero rows to a multiple of four, then the last
// N mod 4 blocks', which the product forms on its scalar loop.
func (t *BlockTable) gatherRows(bs []int32) (a []float64, nk int) {
	w := t.K + t.KS
	nk = sort.Search(len(bs), func(j int) bool { return int(bs[j]) >= t.N&^3 })
	m := (nk+3)&^3 + len(bs) - nk
	a = make([]float64, m*w)
	for j, b := range bs {
		at := j
		if j >= nk {
			at = (nk+3)&^3 + j - nk
		}
		copy(a[at*w:(at+1)*w], t.Coef[int(b)*w:(int(b)+1)*w])
	}
	return a, nk
}

// rowShifts returns the shifts of the n blocks gathered in a
// (gatherRows, nk of them in the kernel's part) at the q points of xt
// (pointsT), n × q, bit for bit as shiftsInto forms them.
func (t *BlockTable) rowShifts(a []float64, nk, n int, xt []float64, q int) []float64 {
	w := t.K + t.KS
	out := make([]float64, n*q)
	if w == 0 || q == 0 || n == 0 {
		return out
	}
	m4 := (nk + 3) &^ 3
	var c []float64
	for j0 := 0; j0 < m4; j0 += exactPanel {
		m := min(exactPanel, m4-j0)
		if j0+m <= nk {
			graph.MatMul(false, false, m, q, w, a[j0*w:(j0+m)*w], xt, out[j0*q:(j0+m)*q])
			continue
		}
		c = slices.Grow(c[:0], m*q)[:m*q]
		graph.MatMul(false, false, m, q, w, a[j0*w:(j0+m)*w], xt, c)
		copy(out[j0*q:nk*q], c)
	}
	if nt := n - nk; nt > 0 {
		graph.MatMul(false, false, nt, q, w, a[m4*w:(m4+nt)*w], xt, out[nk*q:])
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
// number of shifts (block, point) it formed, -1 when
// the bounds settled too little (or a point's numbers are not finite)
// and the chunk needs finalizeFull.
func indexedLimits(alpha float64, alphas []float64, t *BlockTable, ix *limitsIndex, pts []PointRecord) (_ ChunkLimits, formed int, _ error) {
	xt, err := t.pointsT(pts)
	if err != nil {
		return ChunkLimits{}, 0, err
	}
	q, w := len(pts), t.K+t.KS
	eOut := t.rowShifts(ix.outRows, ix.outKernel, len(ix.out), xt, q)
	out := ChunkLimits{Lo: make([]float64, q), Up: make([]float64, q), M: make([]int, q), Covered: make([]int, len(alphas))}
	// Per point: the bounds fl(F ± beta) of F + shift, and the block it
	// leaves out.
	fms, fps := make([]float64, q), make([]float64, q)
	var tasks []task
	straddling, budget := 0, q*t.N/entriesShare
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
		beta := 0.0
		for j, v := range row {
			beta += math.Abs(v) * ix.tau[j]
		}
		beta = beta*(1+boundMargin) + boundFloor
		fm, fp := p.F-beta, p.F+beta
		if !num.Finite(p.F) || !num.Finite(fm) || !num.Finite(fp) {
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
			straddling += j2 - j1
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
		if straddling > budget {
			return ChunkLimits{}, -1, nil
		}
		// The limits: the lower is the k-th smallest of V-, the upper of
		// V+ (NaN counting as unbounded on its side, as in jackknifePlus).
		for _, neg := range []bool{true, false} {
			k, o := interval.LowerRank(alpha, m), outLo
			if !neg {
				k, o = interval.UpperRank(alpha, m), outHi
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
		if straddling > budget {
			return ChunkLimits{}, -1, nil
		}
	}
	// The shifts the tasks need: those of the blocks of their ranges
	// whose bounds differ (equal bounds are the value), entry by entry,
	// bit for bit as the product over the whole table would form them.
	counts := make([][2]int, q) // V+ below y, V- not above y
	var rows, js []int32
	var vals, sh []float64
	for _, tk := range tasks {
		i, p := tk.i, pts[tk.i]
		bs := ix.slots[p.Forecast].b
		fm, fp := fms[i], fps[i]
		rows, vals = rows[:0], vals[:0]
		for j := tk.j1; j < tk.j2; j++ {
			b, r := bs[j], tk.sd.r[j]
			if int(b) == p.Skip {
				continue
			}
			if v := tk.sd.value(fm, r); v == tk.sd.value(fp, r) {
				vals = append(vals, v)
			} else {
				rows = append(rows, int32(j))
			}
		}
		if len(rows) > 0 {
			for j := range row {
				row[j] = xt[j*q+i]
			}
			sh = slices.Grow(sh[:0], len(rows))[:len(rows)]
			js = append(js[:0], rows...)
			for u, j := range js {
				rows[u] = bs[j]
			}
			graph.MatMulEntries(t.N, q, w, t.Coef, rows, i, row, sh)
			formed += len(rows)
			for u, j := range js {
				vals = append(vals, tk.sd.value(p.F+sh[u], tk.sd.r[j]))
			}
		}
		n := tk.base
		for _, v := range vals {
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
			v := interval.KthSmallest(tk.cands, kk)
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
			interval.CoveredFromCounts(alphas, out.M[i], counts[i][0], counts[i][1], out.Covered)
			out.Labelled++
		}
	}
	return out, formed + q*len(ix.out), nil
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
