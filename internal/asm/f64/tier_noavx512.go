//go:build noavx512

package f64

// noAVX512 keeps the AVX-512 kernels off, so that go test -tags noavx512
// runs the whole suite on the AVX2 tier.
const noAVX512 = true
