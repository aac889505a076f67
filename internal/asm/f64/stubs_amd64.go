//go:build !purego

package f64

import "golang.org/x/sys/cpu"

// detected is the dispatch table for this processor: AVX2 needs FMA too,
// and AVX-512 is used only alongside them (and not under the noavx512
// build tag).
var detected = func() table {
	avx2 := cpu.X86.HasAVX2 && cpu.X86.HasFMA
	return table{avx2: avx2, avx512: avx2 && cpu.X86.HasAVX512F && !noAVX512}
}()

// gemmAVX2 adds A B to C for a block of m×n (both multiples of 4); see
// gemm_amd64.s. It does not check bounds: gemmNN does.
//
//go:noescape
func gemmAVX2(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int)

// tanhAVX2 sets dst[i] = tanh(src[i]) for the first len(src)&^3 elements;
// see tanh_amd64.s. len(dst) must be at least that.
//
//go:noescape
func tanhAVX2(dst, src []float64)

// tanhAVX512 sets dst[i] = tanh(src[i]) for the first len(src)&^7
// elements; see tanh_amd64.s. len(dst) must be at least that.
//
//go:noescape
func tanhAVX512(dst, src []float64)

// tanh4AVX512 is tanhAVX512 (bit for bit) for the first len(src)&^31
// elements, four groups of eight at a time with their instructions
// interleaved; see tanh4_amd64.s. len(dst) must be at least that.
//
//go:noescape
func tanh4AVX512(dst, src []float64)

// gemmAVX512 sets C = D + A B for a block of m×n (m a multiple of 4); see
// gemm512_amd64.s. It does not check bounds: gemmNN512 does.
//
//go:noescape
func gemmAVX512(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int, d []float64, ldd int, zero int)

// Elementwise AVX-512 kernels (elem512_amd64.s); each covers
// len(first)&^7 elements and the wrappers in elem.go do the rest.
//
//go:noescape
func tanhJVP512(dy, y, dx []float64)

//go:noescape
func tanhVJP512(gx, y, g []float64)

//go:noescape
func tanhVJPTangent512(dgx, y, g, dg, dx []float64)

//go:noescape
func addTo512(dst, src []float64)

//go:noescape
func tanhVJPTangentSet512(dgx, y, g, dg, dx []float64)

//go:noescape
func setSum512(dst, src []float64)

// One-column products (gemv512_amd64.s); callers check bounds.
//
//go:noescape
func dotRows512(m, k int, a []float64, lda int, x, y []float64, acc int)

//go:noescape
func rowGemm512(n, k int, x, b []float64, ldb int, c []float64, acc int)
