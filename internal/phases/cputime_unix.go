//go:build unix

package phases

import (
	"math"
	"syscall"
)

// ProcessCPU is the process's user and system CPU time so far, in
// seconds (NaN when the system does not report it).
func ProcessCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
