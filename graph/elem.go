package graph

// Elementwise loops of the derivative passes, on the AVX-512 kernels of
// elem512_amd64.s where the processor has them. All slices are read at
// the positions of the first one, which fixes the length.

// tanhJVP sets dy = (1 - y²) dx, the tangent of y = tanh(x).
func tanhJVP(dy, y, dx []float64) {
	n := 0
	if useAVX512 {
		n = len(dy) &^ 7
		tanhJVP512(dy[:n], y[:n], dx[:n])
	}
	y, dx = y[:len(dy)], dx[:len(dy)]
	for i := n; i < len(dy); i++ {
		dy[i] = (1 - y[i]*y[i]) * dx[i]
	}
}

// tanhVJP adds (1 - y²) g to gx, the cotangent of x for y = tanh(x).
func tanhVJP(gx, y, g []float64) {
	n := 0
	if useAVX512 {
		n = len(gx) &^ 7
		tanhVJP512(gx[:n], y[:n], g[:n])
	}
	y, g = y[:len(gx)], g[:len(gx)]
	for i := n; i < len(gx); i++ {
		gx[i] += (1 - y[i]*y[i]) * g[i]
	}
}

// tanhVJPTangent adds (1 - y²)(dg - 2 y dx g) to dgx: the tangent of
// tanhVJP's result when g changes by dg and x by dx (f” = -2 y f').
func tanhVJPTangent(dgx, y, g, dg, dx []float64) {
	n := 0
	if useAVX512 {
		n = len(dgx) &^ 7
		tanhVJPTangent512(dgx[:n], y[:n], g[:n], dg[:n], dx[:n])
	}
	y, g, dg, dx = y[:len(dgx)], g[:len(dgx)], dg[:len(dgx)], dx[:len(dgx)]
	for i := n; i < len(dgx); i++ {
		d1 := 1 - y[i]*y[i]
		dgx[i] += d1 * (dg[i] - 2*y[i]*dx[i]*g[i])
	}
}

// addTo adds src to dst.
func addTo(dst, src []float64) {
	n := 0
	if useAVX512 {
		n = len(dst) &^ 7
		addTo512(dst[:n], src[:n])
	}
	src = src[:len(dst)]
	for i := n; i < len(dst); i++ {
		dst[i] += src[i]
	}
}
