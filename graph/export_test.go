package graph

import "fmt"

// KernelCounts returns how many steps of p use each kernel type, for
// tests of the program rewrites.
func KernelCounts(p *Program) map[string]int {
	n := map[string]int{}
	for _, st := range p.steps {
		n[fmt.Sprintf("%T", st.k)[len("*graph."):]]++
	}
	return n
}
