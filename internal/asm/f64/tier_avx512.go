//go:build !noavx512

package f64

// noAVX512 is false: the AVX-512 kernels run where the processor has them
// (see tier_noavx512.go).
const noAVX512 = false
