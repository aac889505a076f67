package f64

import "math"

// MatMulEntries sets out[t] to entry (rows[t], col) of C = A B as
// MatMul(false, false, m, n, k, a, b, c) forms it, bit for bit, for
// row-major A (m×k) and B given by its column col (bcol, k values): a
// few entries of a large product without the product. The kernels
// accumulate an entry as fused multiply-adds from zero in order of the
// inner index; the scalar loops (the last m mod 4 rows; without AVX-512
// also the last n mod 4 columns; every entry on the Go tier) add the
// rounded products in the same order. Eight entries run interleaved, so
// that their chains of fused multiply-adds overlap.
func MatMulEntries(m, n, k int, a []float64, rows []int32, col int, bcol, out []float64) {
	bcol = bcol[:k]
	fused := func(r int) bool {
		switch {
		case use.avx512:
			return r < m&^3
		case use.avx2 && n >= 4:
			return r < m&^3 && col < n&^3
		}
		return false
	}
	t := 0
	for ; t+8 <= len(rows); t += 8 {
		var r [8]int
		ok := true
		for u := range r {
			r[u] = int(rows[t+u])
			ok = ok && fused(r[u])
		}
		if !ok {
			break
		}
		// Reslicing to len(bcol) lets the compiler drop the bounds checks.
		a0, a1, a2, a3 := a[r[0]*k:][:len(bcol)], a[r[1]*k:][:len(bcol)], a[r[2]*k:][:len(bcol)], a[r[3]*k:][:len(bcol)]
		a4, a5, a6, a7 := a[r[4]*k:][:len(bcol)], a[r[5]*k:][:len(bcol)], a[r[6]*k:][:len(bcol)], a[r[7]*k:][:len(bcol)]
		var s0, s1, s2, s3, s4, s5, s6, s7 float64
		for p, x := range bcol {
			s0 = math.FMA(a0[p], x, s0)
			s1 = math.FMA(a1[p], x, s1)
			s2 = math.FMA(a2[p], x, s2)
			s3 = math.FMA(a3[p], x, s3)
			s4 = math.FMA(a4[p], x, s4)
			s5 = math.FMA(a5[p], x, s5)
			s6 = math.FMA(a6[p], x, s6)
			s7 = math.FMA(a7[p], x, s7)
		}
		out[t], out[t+1], out[t+2], out[t+3] = s0, s1, s2, s3
		out[t+4], out[t+5], out[t+6], out[t+7] = s4, s5, s6, s7
	}
	for ; t < len(rows); t++ {
		r := int(rows[t])
		ar := a[r*k : r*k+k]
		s := 0.0
		if fused(r) {
			for p, x := range bcol {
				s = math.FMA(ar[p], x, s)
			}
		} else {
			for p, x := range bcol {
				s += ar[p] * x
			}
		}
		out[t] = s
	}
}
