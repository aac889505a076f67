//go:build !amd64 || purego

package f64

func addRows512(dst, src []float64, rows, ld int) { panic("f64: AVX-512 without assembly") }
