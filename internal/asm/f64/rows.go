package f64

// AddRows adds every row of src, a row-major matrix with len(dst)
// columns, to dst, row after row: the same sums, bit for bit, as one
// AddTo(dst, row) per row, without a call per row. It is the gradient of
// a row broadcast (a bias added to every row of a matrix product), which
// over thousands of short rows was mostly call overhead.
func AddRows(dst, src []float64) {
	n := len(dst)
	if n == 0 {
		return
	}
	rows := len(src) / n
	src = src[:rows*n]
	if use.avx512 && rows > 0 {
		for lo := 0; lo < n; lo += 24 {
			hi := min(n, lo+24)
			_ = src[(rows-1)*n+hi-1] // the kernel does not check bounds
			addRows512(dst[lo:hi], src[lo:], rows, n)
		}
		return
	}
	for o := 0; o < len(src); o += n {
		row := src[o : o+n]
		for j, v := range row {
			dst[j] += v
		}
	}
}
