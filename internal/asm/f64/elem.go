package f64

import "math"

// Elementwise loops of the derivative passes, on the AVX-512 kernels of
// elem512_amd64.s where the processor has them. All slices are read at
// the positions of the first one, which fixes the length.

// TanhJVP sets dy = (1 - y²) dx, the tangent of y = tanh(x).
func TanhJVP(dy, y, dx []float64) {
	n := 0
	if use.avx512 {
		n = len(dy) &^ 7
		tanhJVP512(dy[:n], y[:n], dx[:n])
	}
	y, dx = y[:len(dy)], dx[:len(dy)]
	for i := n; i < len(dy); i++ {
		dy[i] = (1 - y[i]*y[i]) * dx[i]
	}
}

// TanhVJP adds (1 - y²) g to gx, the cotangent of x for y = tanh(x).
func TanhVJP(gx, y, g []float64) {
	n := 0
	if use.avx512 {
		n = len(gx) &^ 7
		tanhVJP512(gx[:n], y[:n], g[:n])
	}
	y, g = y[:len(gx)], g[:len(gx)]
	for i := n; i < len(gx); i++ {
		gx[i] += (1 - y[i]*y[i]) * g[i]
	}
}

// TanhVJPTangent adds (1 - y²)(dg - 2 y dx g) to dgx: the tangent of
// TanhVJP's result when g changes by dg and x by dx (f” = -2 y f').
func TanhVJPTangent(dgx, y, g, dg, dx []float64) {
	n := 0
	if use.avx512 {
		n = len(dgx) &^ 7
		tanhVJPTangent512(dgx[:n], y[:n], g[:n], dg[:n], dx[:n])
	}
	y, g, dg, dx = y[:len(dgx)], g[:len(dgx)], dg[:len(dgx)], dx[:len(dgx)]
	for i := n; i < len(dgx); i++ {
		d1 := 1 - y[i]*y[i]
		dgx[i] += d1 * (dg[i] - 2*y[i]*dx[i]*g[i])
	}
}

// AddTo adds src to dst.
func AddTo(dst, src []float64) {
	n := 0
	if use.avx512 {
		n = len(dst) &^ 7
		addTo512(dst[:n], src[:n])
	}
	src = src[:len(dst)]
	for i := n; i < len(dst); i++ {
		dst[i] += src[i]
	}
}

// Tanh sets dst[i] = tanh(src[i]): eight at a time on the AVX-512
// kernel and four at a time on the AVX2 one, when the processor has them
// (both within a few units in the last place of math.Tanh and identical to
// each other), the rest with math.Tanh.
func Tanh(dst, src []float64) {
	n := 0
	if use.avx512 {
		m := len(src) &^ 31
		tanh4AVX512(dst[:m], src[:m])
		n = len(src) &^ 7
		tanhAVX512(dst[m:n], src[m:n])
	}
	if use.avx2 && len(src)-n >= 4 {
		m := n + (len(src)-n)&^3
		tanhAVX2(dst[n:m], src[n:m])
		n = m
	}
	for i := n; i < len(src); i++ {
		dst[i] = math.Tanh(src[i])
	}
}
