package graph

// Derivative rules of the kernels, for forward-over-reverse Hessian-vector
// products. For a kernel y = k(x_1..x_n) with input tangents dx_i (nil
// means zero), output cotangent g = dL/dy and its tangent dg:
//
//	jvp:        dy    = sum_i J_i dx_i
//	vjp:        gx_i += J_i^T g
//	vjpTangent: dgx_i += J_i^T dg + (D_dx J_i^T) g
//
// where D_dx is the directional derivative along the input tangents. The
// last term vanishes for kernels linear in their inputs (mapK, concatK,
// add, sub). Gradient slices (gin, dgin) are nil for inputs that need no
// gradient; rules accumulate with +=. The elementwise kernel's rules
// (unaryK) sit beside the activations they apply, in activations.go.

import "github.com/rnnaudit/rnnaudit/internal/asm/f64"

// --- mapK: y[i] = x[idx[i]] ---

func (k *mapK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	if din[0] == nil {
		clear(dout.F)
		return
	}
	k.forward(ex, dout, din)
}

// vjp: gx[idx[i]] += g[i]
func (k *mapK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	if gin[0] == nil {
		return
	}
	gx := gin[0].F
	for i, j := range k.idx {
		gx[j] += g.F[i]
	}
}

func (k *mapK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	k.vjp(ex, dgin, in, out, dg)
}

// --- concatK: y = [x_1, ..., x_n] along an axis ---

func (k *concatK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	off := 0
	for o := 0; o < k.outer; o++ {
		for j := range in {
			c := k.chunk[j]
			if din[j] == nil {
				clear(dout.F[off : off+c])
			} else {
				copy(dout.F[off:off+c], din[j].F[o*c:(o+1)*c])
			}
			off += c
		}
	}
}

// vjp: gx_j += the chunk of g that x_j occupies.
func (k *concatK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	off := 0
	for o := 0; o < k.outer; o++ {
		for j := range in {
			c := k.chunk[j]
			if gin[j] != nil {
				dst := gin[j].F[o*c : (o+1)*c]
				for i, v := range g.F[off : off+c] {
					dst[i] += v
				}
			}
			off += c
		}
	}
}

func (k *concatK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	k.vjp(ex, dgin, in, out, dg)
}

// --- binK: y = a op b with broadcasting ---

// jvp:
//
//	add: dy = da + db        sub: dy = da - db
//	mul: dy = da b + a db    div: dy = da/b - a db/b²
func (k *binK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	a, b := in[0].F, in[1].F
	da, db := din[0], din[1]
	y := dout.F
	clear(y)
	if da != nil {
		switch k.op {
		case opAdd, opSub:
			for i := range y {
				y[i] += da.F[at(k.ia, i)]
			}
		case opMul:
			for i := range y {
				y[i] += da.F[at(k.ia, i)] * b[at(k.ib, i)]
			}
		case opDiv:
			for i := range y {
				y[i] += da.F[at(k.ia, i)] / b[at(k.ib, i)]
			}
		}
	}
	if db != nil {
		switch k.op {
		case opAdd:
			for i := range y {
				y[i] += db.F[at(k.ib, i)]
			}
		case opSub:
			for i := range y {
				y[i] -= db.F[at(k.ib, i)]
			}
		case opMul:
			for i := range y {
				y[i] += a[at(k.ia, i)] * db.F[at(k.ib, i)]
			}
		case opDiv:
			for i := range y {
				bv := b[at(k.ib, i)]
				y[i] -= a[at(k.ia, i)] * db.F[at(k.ib, i)] / (bv * bv)
			}
		}
	}
}

// vjp:
//
//	add: ga += g, gb += g         sub: ga += g, gb -= g
//	mul: ga += g b, gb += g a     div: ga += g/b, gb -= g a/b²
//
// summed over the broadcast positions.
func (k *binK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	a, b := in[0].F, in[1].F
	if ga := gin[0]; ga != nil {
		switch k.op {
		case opAdd, opSub:
			addCotangent(ga.F, k.ia, g.F, false)
		case opMul:
			for i, v := range g.F {
				ga.F[at(k.ia, i)] += v * b[at(k.ib, i)]
			}
		case opDiv:
			for i, v := range g.F {
				ga.F[at(k.ia, i)] += v / b[at(k.ib, i)]
			}
		}
	}
	if gb := gin[1]; gb != nil {
		switch k.op {
		case opAdd, opSub:
			addCotangent(gb.F, k.ib, g.F, k.op == opSub)
		case opMul:
			for i, v := range g.F {
				gb.F[at(k.ib, i)] += v * a[at(k.ia, i)]
			}
		case opDiv:
			for i, v := range g.F {
				bv := b[at(k.ib, i)]
				gb.F[at(k.ib, i)] -= v * a[at(k.ia, i)] / (bv * bv)
			}
		}
	}
}

// vjpTangent: the vjp applied to dg, plus for the nonlinear operators
//
//	mul: dga += g db,                  dgb += g da
//	div: dga -= g db/b²,               dgb += -g da/b² + 2 g a db/b³
func (k *binK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	k.vjp(ex, dgin, in, out, dg)
	if k.op == opAdd || k.op == opSub {
		return
	}
	a, b := in[0].F, in[1].F
	da, db := din[0], din[1]
	if dga := dgin[0]; dga != nil && db != nil {
		switch k.op {
		case opMul:
			for i, v := range g.F {
				dga.F[at(k.ia, i)] += v * db.F[at(k.ib, i)]
			}
		case opDiv:
			for i, v := range g.F {
				bv := b[at(k.ib, i)]
				dga.F[at(k.ia, i)] -= v * db.F[at(k.ib, i)] / (bv * bv)
			}
		}
	}
	if dgb := dgin[1]; dgb != nil {
		switch k.op {
		case opMul:
			if da != nil {
				for i, v := range g.F {
					dgb.F[at(k.ib, i)] += v * da.F[at(k.ia, i)]
				}
			}
		case opDiv:
			for i, v := range g.F {
				bi := at(k.ib, i)
				bv := b[bi]
				s := 0.0
				if da != nil {
					s -= da.F[at(k.ia, i)] / (bv * bv)
				}
				if db != nil {
					s += 2 * a[at(k.ia, i)] * db.F[bi] / (bv * bv * bv)
				}
				dgb.F[bi] += v * s
			}
		}
	}
}

// --- matmulK: C = A B per batch ---

// jvp: dC = dA B + A dB (+ dD)
func (k *matmulK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	a, b := in[0].F, in[1].F
	da, db := din[0] != nil, din[1] != nil
	beta := 1.0
	if k.jvpAddend(ex, dout, din, b) {
		da = false // in dout already
	} else if k.jvpSetsFirst(ex, din) {
		beta = 0 // the product dA B sets dout
	} else {
		k.jvpSeed(dout, din)
	}
	mn := k.m * k.n
	for bi := range k.ia {
		c := dout.F[bi*mn:]
		if da {
			dA := din[0].F[k.ia[bi]:]
			if nz, ok := ex.sparseOf(dA[:k.m*k.k]); ok {
				// C[i,:] += dA[i,p] B[p,:]
				for _, e := range nz.at {
					i, p := int(e)/k.k, int(e)%k.k
					axpy(dA[e], b[k.ib[bi]+p*k.n:k.ib[bi]+(p+1)*k.n], c[i*k.n:(i+1)*k.n])
				}
			} else {
				f64.Gemm(false, false, k.m, k.n, k.k, 1, dA, b[k.ib[bi]:], beta, c)
			}
		}
		if db {
			dB := din[1].F[k.ib[bi]:]
			if nz, ok := ex.sparseOf(dB[:k.k*k.n]); ok {
				// C[:,q] += A[:,p] dB[p,q]
				for _, e := range nz.at {
					p, q := int(e)/k.n, int(e)%k.n
					axpyStrided(k.m, dB[e], a[k.ia[bi]+p:], k.k, c[q:], k.n)
				}
			} else {
				f64.Gemm(false, false, k.m, k.n, k.k, 1, a[k.ia[bi]:], dB, 1, c)
			}
		}
	}
}

// vjp: gA += gC B^T, gB += A^T gC (, gD += gC)
func (k *matmulK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	if k.add && gin[2] != nil {
		gd := gin[2].F
		if k.addRow {
			f64.AddRows(gd[:k.n], g.F)
		} else if k.addIdx == nil {
			ex.setSum(2, gd[:len(g.F)], g.F) // all of gd when fresh (setsFresh)
		} else {
			for i, v := range g.F {
				gd[k.addIdx[i]] += v
			}
		}
	}
	a, b := in[0].F, in[1].F
	mn := k.m * k.n
	for bi := range k.ia {
		gc := g.F[bi*mn:]
		if gin[0] != nil {
			beta := 1.0
			if ex.freshIn(0) {
				beta = 0 // one product, setting all of gin[0] (setsFresh)
			}
			ex.gemmTransB(k.m, k.k, k.n, gc, b[k.ib[bi]:k.ib[bi]+k.k*k.n], beta, gin[0].F[k.ia[bi]:])
		}
		if gin[1] != nil {
			f64.Gemm(true, false, k.k, k.n, k.m, 1, a[k.ia[bi]:], gc, 1, gin[1].F[k.ib[bi]:])
		}
	}
}

// vjpTangent: dgA += dgC B^T + gC dB^T, dgB += A^T dgC + dA^T gC
func (k *matmulK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	k.vjp(ex, dgin, in, out, dg)
	mn := k.m * k.n
	da, db := din[0] != nil, din[1] != nil
	for bi := range k.ia {
		gc := g.F[bi*mn:]
		if dgin[0] != nil && db {
			dB, dgA := din[1].F[k.ib[bi]:], dgin[0].F[k.ia[bi]:]
			if nz, ok := ex.sparseOf(dB[:k.k*k.n]); ok {
				// dgA[:,p] += gC[:,q] dB[p,q]
				for _, e := range nz.at {
					p, q := int(e)/k.n, int(e)%k.n
					axpyStrided(k.m, dB[e], gc[q:], k.n, dgA[p:], k.k)
				}
			} else {
				f64.Gemm(false, true, k.m, k.k, k.n, 1, gc, dB, 1, dgA)
			}
		}
		if dgin[1] != nil && da {
			dA, dgB := din[0].F[k.ia[bi]:], dgin[1].F[k.ib[bi]:]
			if nz, ok := ex.sparseOf(dA[:k.m*k.k]); ok {
				// dgB[p,:] += dA[i,p] gC[i,:]
				for _, e := range nz.at {
					i, p := int(e)/k.k, int(e)%k.k
					axpy(dA[e], gc[i*k.n:(i+1)*k.n], dgB[p*k.n:(p+1)*k.n])
				}
			} else {
				f64.Gemm(true, false, k.k, k.n, k.m, 1, dA, gc, 1, dgB)
			}
		}
	}
}

// sparse holds the positions of the nonzero entries of a small tangent.
// Along a unit direction of the parameters most weight tangents are zero
// and one has a single nonzero entry: a product with it is nothing, or a
// few scaled rows or columns, not a matrix product. This halves the
// arithmetic of a dense Hessian.
type sparse struct {
	buf [sparseMax]int32
	at  []int32
}

// sparseScanMax is the longest tangent that find scans.
const sparseScanMax = 4096

// sparseMax is the most nonzero entries a tangent may have to be treated
// as sparse (and at most one in eight of its entries).
const sparseMax = 32

// find records the nonzero entries of x and reports whether x is small
// (at most 4096 entries, so the scan is cheap next to the product) and
// sparse enough for entrywise products; an all-zero x has none.
func (s *sparse) find(x []float64) bool {
	if len(x) > sparseScanMax {
		return false
	}
	limit := min(sparseMax, len(x)/8)
	s.at = s.buf[:0]
	for i, v := range x {
		if v != 0 {
			if len(s.at) == limit {
				return false
			}
			s.at = append(s.at, int32(i))
		}
	}
	return true
}

// axpy adds alpha x to y (equal lengths).
func axpy(alpha float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// axpyStrided adds alpha x[i*incX] to y[i*incY] for i < n.
func axpyStrided(n int, alpha float64, x []float64, incX int, y []float64, incY int) {
	if n == 0 {
		return
	}
	_, _ = x[(n-1)*incX], y[(n-1)*incY]
	for i := 0; i < n; i++ {
		y[i*incY] += alpha * x[i*incX]
	}
}

// --- softmaxK: y = softmax(x) or log softmax(x) along one axis ---

// lane calls f for each softmax lane with its base offset and stride.
func (k *softmaxK) lanes(f func(base, stride int)) {
	for o := 0; o < k.outer; o++ {
		for j := 0; j < k.inner; j++ {
			f(o*k.n*k.inner+j, k.inner)
		}
	}
}

// jvp: softmax dy = y ⊙ (dx - <y, dx>); log-softmax dy = dx - <p, dx>, p = exp(y)
func (k *softmaxK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	if din[0] == nil {
		clear(dout.F)
		return
	}
	y, dx, dy := out.F, din[0].F, dout.F
	k.lanes(func(base, st int) { k.laneTangent(y, dx, base, st, dy[base:], st) })
}

// laneTangent writes the output tangent of one lane (base, stride st of y
// and dx) into dy[0], dy[dst], dy[2 dst], ...
func (k *softmaxK) laneTangent(y, dx []float64, base, st int, dy []float64, dst int) {
	s := 0.0
	for i := 0; i < k.n; i++ {
		s += k.prob(y[base+i*st]) * dx[base+i*st]
	}
	for i := 0; i < k.n; i++ {
		p := base + i*st
		if k.log {
			dy[i*dst] = dx[p] - s
		} else {
			dy[i*dst] = y[p] * (dx[p] - s)
		}
	}
}

// prob is the probability of an output value.
func (k *softmaxK) prob(y float64) float64 {
	if k.log {
		return exp(y)
	}
	return y
}

// vjp: softmax gx += y ⊙ (g - <y, g>); log-softmax gx += g - p sum(g)
func (k *softmaxK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	if gin[0] == nil {
		return
	}
	y, gv, gx := out.F, g.F, gin[0].F
	k.lanes(func(base, st int) {
		s := 0.0
		for i := 0; i < k.n; i++ {
			p := base + i*st
			if k.log {
				s += gv[p]
			} else {
				s += y[p] * gv[p]
			}
		}
		for i := 0; i < k.n; i++ {
			p := base + i*st
			if k.log {
				gx[p] += gv[p] - exp(y[p])*s
			} else {
				gx[p] += y[p] * (gv[p] - s)
			}
		}
	})
}

// vjpTangent, with dy the output tangent (from jvp):
//
//	softmax:     dgx += dy ⊙ (g - s) + y ⊙ (dg - ds),  s = <y, g>, ds = <dy, g> + <y, dg>
//	log-softmax: dgx += dg - p sum(dg) - (p ⊙ dy) sum(g)
func (k *softmaxK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	if dgin[0] == nil {
		return
	}
	if din[0] == nil {
		k.vjp(ex, dgin, in, out, dg)
		return
	}
	y, dx, gv, dgv, dgx := out.F, din[0].F, g.F, dg.F, dgin[0].F
	dy := make([]float64, k.n)
	k.lanes(func(base, st int) {
		k.laneTangent(y, dx, base, st, dy, 1) // this lane's output tangent
		if k.log {
			sg, sdg := 0.0, 0.0
			for i := 0; i < k.n; i++ {
				sg += gv[base+i*st]
				sdg += dgv[base+i*st]
			}
			for i := 0; i < k.n; i++ {
				p := base + i*st
				pr := exp(y[p])
				dgx[p] += dgv[p] - pr*sdg - pr*dy[i]*sg
			}
			return
		}
		sy, ds := 0.0, 0.0
		for i := 0; i < k.n; i++ {
			p := base + i*st
			sy += y[p] * gv[p]
			ds += dy[i]*gv[p] + y[p]*dgv[p]
		}
		for i := 0; i < k.n; i++ {
			p := base + i*st
			dgx[p] += dy[i]*(gv[p]-sy) + y[p]*(dgv[p]-ds)
		}
	})
}
