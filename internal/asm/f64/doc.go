// Package f64 holds the float64 kernels the graph evaluator spends its time
// in: matrix products, tanh and the elementwise loops of tanh's
// derivatives, each in AVX-512 and AVX2/FMA assembly (the *_amd64.s files)
// with a pure-Go fallback.
//
// # Dispatch
//
// One dispatch table (dispatch.go), filled once from the processor's
// features, decides which implementation every entry point runs; Use
// switches it for tests and benchmarks that compare tiers. With the purego
// build tag (go test -tags purego ./...), or off amd64, no assembly is
// built and every kernel runs its Go loop, so that the Go tier is tested
// by the whole suite; the noavx512 build tag likewise keeps the AVX-512
// kernels off, to run the suite on the AVX2 tier. As in gonum's
// internal/asm, callers check shapes: the entry points assume slices long
// enough for the sizes they are given.
//
// All tiers agree to rounding: products within a few units in the last
// place of the naive loop, tanh within 4 units of math.Tanh (and the two
// assembly tiers bit for bit).
//
// # gonum's mat
//
// The module has one vocabulary for linear algebra: products on raw
// row-major slices run here (through graph.MatMul), and factorisations
// (mat.EigenSym, mat.Cholesky) stay in gonum's mat on gonum's own BLAS;
// no product on a hot path goes through mat. These kernels are not
// plugged into mat with blas64.Use, by measurement (blas_bench_test.go,
// go test ./internal/asm/f64 -run '^$' -bench BLAS, on the shared 2-core
// machine at load 20-26, so within wide noise): mat.Dense.Mul of two
// 481×481 matrices takes 6.0 ms on them against 58 ms, but no product of
// that kind is made; mat.EigenSym with vectors, the exact solver's
// factorisation, takes 0.63-0.67 s against 0.69-0.82 s at P = 481 and
// 28-33 s against 22-29 s at P = 1201, no measurable gain, because Dgemm
// is 13% of its arithmetic (1.3e8 of about 1e9 flops at P = 481, half of
// it in shapes the kernel takes; the rest is the Householder reduction
// and the QR sweeps, in Level 1 and 2). blas64.Use is process-wide state,
// which a library must not set for its callers, and the kernels' rounding
// would change the eigenvectors and every number after them.
package f64
