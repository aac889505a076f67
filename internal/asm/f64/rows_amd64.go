//go:build !purego

package f64

// addRows512 adds rows rows of src (leading dimension ld) to dst, at most
// 24 values, in row order; see rows512_amd64.s. It does not check
// bounds: AddRows does.
//
//go:noescape
func addRows512(dst, src []float64, rows, ld int)
