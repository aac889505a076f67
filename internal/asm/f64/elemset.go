package f64

// This file: the set forms of the accumulating elementwise kernels, for a
// destination not yet written (the reverse passes' first contribution to
// a cotangent), which the caller would otherwise zero first.

// TanhVJPTangentSet sets dgx to what TanhVJPTangent adds to a zeroed dgx,
// bit for bit (0 + v, so a negative zero becomes a positive one), without
// reading dgx.
func TanhVJPTangentSet(dgx, y, g, dg, dx []float64) {
	n := 0
	if use.avx512 {
		n = len(dgx) &^ 7
		tanhVJPTangentSet512(dgx[:n], y[:n], g[:n], dg[:n], dx[:n])
	}
	clear(dgx[n:])
	TanhVJPTangent(dgx[n:], y[n:], g[n:], dg[n:], dx[n:])
}

// SetSum sets dst to what AddTo gives on a zeroed dst, bit for bit (0 +
// src, so a negative zero becomes a positive one), without reading dst.
func SetSum(dst, src []float64) {
	n := 0
	if use.avx512 {
		n = len(dst) &^ 7
		setSum512(dst[:n], src[:n])
	}
	clear(dst[n:])
	AddTo(dst[n:], src[n:])
}
