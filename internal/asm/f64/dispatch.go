package f64

import "fmt"

// table is the dispatch table: which instruction-set tier the entry points
// of this package run on. It is set once from the processor's features
// (detected, in stubs_*.go) and changed only by Use.
type table struct {
	avx2   bool // AVX2 and FMA: the 4×4 product kernel and the 4-lane tanh
	avx512 bool // AVX-512F: the 8-lane products, tanh and elementwise loops
}

// use is the table every entry point consults.
var use = detected

// Tier is one set of kernel implementations.
type Tier int

const (
	Go     Tier = iota // pure Go (and gonum's BLAS)
	AVX2               // AVX2 and FMA assembly
	AVX512             // AVX-512 assembly where it exists, AVX2 elsewhere
)

// String returns the tier's name.
func (t Tier) String() string {
	switch t {
	case Go:
		return "go"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// tierOf is the tier a table runs.
func tierOf(tb table) Tier {
	switch {
	case tb.avx512:
		return AVX512
	case tb.avx2:
		return AVX2
	}
	return Go
}

// Best returns the fastest tier this build runs on this processor: Go
// under the purego build tag or off amd64.
func Best() Tier { return tierOf(detected) }

// Current returns the tier the kernels run on now.
func Current() Tier { return tierOf(use) }

// Tiers lists the tiers this build can run on this processor, slowest
// first, for tests that compare them.
func Tiers() []Tier {
	ts := []Tier{Go}
	for t := AVX2; t <= Best(); t++ {
		ts = append(ts, t)
	}
	return ts
}

// Use makes every kernel run on tier t and returns the function that
// restores the previous tier. It panics if t is above Best. It is for
// tests and benchmarks that compare tiers (the whole test suite runs on
// the Go tier with the purego build tag); no kernel may run while it
// switches.
func Use(t Tier) (restore func()) {
	if t < Go || t > Best() {
		panic(fmt.Sprintf("f64: tier %v not available (best is %v)", t, Best()))
	}
	prev := use
	use = table{avx2: t >= AVX2, avx512: t >= AVX512}
	return func() { use = prev }
}
