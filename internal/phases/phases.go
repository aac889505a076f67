// Package phases times the consecutive phases of a long run: the wall
// time and the process's CPU time of each, and an announcement as each
// begins (what a progress line shows). The audit's Diagnostics.Phases and
// the command's --timings are its records.
package phases

import "time"

// Phase is the time one named phase of a run took.
type Phase struct {
	Name    string
	Seconds float64
	// CPUSeconds is the process's user and system CPU time during the
	// phase (NaN where the system does not report it): with Seconds, how
	// well the phase used the cores, and the per-phase cost the worker
	// model of benchmarks/scale/workers.py divides among machines.
	CPUSeconds float64
}

// Clock records consecutive phases. The zero Clock announces nothing; a
// Clock is used by one goroutine.
type Clock struct {
	// Announce, when set, is called with a phase's name as it begins and
	// with "" when the run ends.
	Announce func(name string)
	phases   []Phase
	start    time.Time
	cpu      float64 // ProcessCPU at start
}

// Begin ends the current phase, if any, and starts the phase name,
// unless name is the current phase (a phase may be begun again by a
// later part of the run that goes on with it).
func (c *Clock) Begin(name string) {
	if len(c.phases) > 0 && c.phases[len(c.phases)-1].Name == name {
		return
	}
	now, cpu := time.Now(), ProcessCPU()
	if len(c.phases) > 0 {
		c.phases[len(c.phases)-1].Seconds = now.Sub(c.start).Seconds()
		c.phases[len(c.phases)-1].CPUSeconds = cpu - c.cpu
	}
	c.phases = append(c.phases, Phase{Name: name})
	c.start, c.cpu = now, cpu
	c.announce(name)
}

// End ends the current phase and returns the phases in the order they
// began.
func (c *Clock) End() []Phase {
	if len(c.phases) > 0 {
		c.phases[len(c.phases)-1].Seconds = time.Since(c.start).Seconds()
		c.phases[len(c.phases)-1].CPUSeconds = ProcessCPU() - c.cpu
	}
	c.announce("")
	return c.phases
}

func (c *Clock) announce(name string) {
	if c.Announce != nil {
		c.Announce(name)
	}
}
