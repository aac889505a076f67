//go:build !amd64

package graph

const useAVX2 = false

func gemmAVX2(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int) {
	panic("graph: gemmAVX2 without amd64")
}

func tanhAVX2(dst, src []float64) { panic("graph: tanhAVX2 without amd64") }

var useAVX512 = false // a variable so that tests can switch kernels, as on amd64

func tanhAVX512(dst, src []float64) { panic("graph: tanhAVX512 without amd64") }

func gemmAVX512(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int, d []float64, ldd int, zero int) {
	panic("graph: gemmAVX512 without amd64")
}

func tanhJVP512(dy, y, dx []float64)                { panic("graph: AVX-512 without amd64") }
func tanhVJP512(gx, y, g []float64)                 { panic("graph: AVX-512 without amd64") }
func tanhVJPTangent512(dgx, y, g, dg, dx []float64) { panic("graph: AVX-512 without amd64") }
func addTo512(dst, src []float64)                   { panic("graph: AVX-512 without amd64") }

func dotRows512(m, k int, a []float64, lda int, x, y []float64, acc int) {
	panic("graph: AVX-512 without amd64")
}

func rowGemm512(n, k int, x, b []float64, ldb int, c []float64, acc int) {
	panic("graph: AVX-512 without amd64")
}
