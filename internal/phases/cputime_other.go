//go:build !unix

package phases

import "math"

// ProcessCPU is NaN where the process's CPU time is not read (every
// system but unix): phases then report no CPU seconds.
func ProcessCPU() float64 { return math.NaN() }
