//go:build !unix

package audit

import "math"

// processCPU is NaN where the process's CPU time is not read (every
// system but unix): phaseClock then reports no CPU seconds.
func processCPU() float64 { return math.NaN() }
