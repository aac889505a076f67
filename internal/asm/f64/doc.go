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
package f64
