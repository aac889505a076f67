//go:build !amd64 || purego

package f64

// detected is the dispatch table without assembly (another architecture,
// or the purego build tag): every entry point runs its Go loop.
var detected = table{}

// The assembly kernels' stand-ins: the dispatch table never selects them.

func gemmAVX2(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int) {
	panic("f64: gemmAVX2 without assembly")
}

func tanhAVX2(dst, src []float64)    { panic("f64: tanhAVX2 without assembly") }
func tanhAVX512(dst, src []float64)  { panic("f64: tanhAVX512 without assembly") }
func tanh4AVX512(dst, src []float64) { panic("f64: tanh4AVX512 without assembly") }

func gemmAVX512(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int, d []float64, ldd int, zero int) {
	panic("f64: gemmAVX512 without assembly")
}

func tanhJVP512(dy, y, dx []float64)                { panic("f64: AVX-512 without assembly") }
func tanhVJP512(gx, y, g []float64)                 { panic("f64: AVX-512 without assembly") }
func tanhVJPTangent512(dgx, y, g, dg, dx []float64) { panic("f64: AVX-512 without assembly") }
func addTo512(dst, src []float64)                   { panic("f64: AVX-512 without assembly") }

func tanhVJPTangentSet512(dgx, y, g, dg, dx []float64) { panic("f64: AVX-512 without assembly") }
func setSum512(dst, src []float64)                     { panic("f64: AVX-512 without assembly") }

func dotRows512(m, k int, a []float64, lda int, x, y []float64, acc int) {
	panic("f64: AVX-512 without assembly")
}

func rowGemm512(n, k int, x, b []float64, ldb int, c []float64, acc int) {
	panic("f64: AVX-512 without assembly")
}
