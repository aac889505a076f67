package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rnnaudit/rnnaudit/audit"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress shows the phases of an audit. On a terminal: a spinner while
// a phase has no count, a bar while it has one, and a line with its time
// when it ends. Elsewhere (a log file, a pipe, a CI job): a line when a
// phase starts, a status line every interval while it runs (its count and
// an estimate of the time left when it has a count, else the time so
// far), and a line with its time when it ends.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	phase string
	total int
	start time.Time

	// Line mode (not a terminal).
	lines       bool
	count       int
	stop        chan struct{}
	stopped     chan struct{}
	now         func() time.Time
	phaseActive bool
	printed     bool // a status line of the running phase was written
	// part counts the counted loops of the running phase before the
	// current one (a phase whose count restarts, e.g. rows then blocks),
	// partStart is when the current one began: the time left is its
	// rate's, and the line names the part, so that a count never seems
	// to go backwards.
	part      int
	partStart time.Time
}

// statusInterval is how often line mode reports a running phase.
const statusInterval = 5 * time.Second

// newProgress returns the display for w: bars on a terminal, lines
// elsewhere.
func newProgress(w io.Writer) *progress {
	if isTerminal(w) {
		return &progress{w: w}
	}
	return newLineProgress(w, statusInterval, time.Now)
}

// newLineProgress returns a line display that reports the running phase
// every interval, reading the time from now.
func newLineProgress(w io.Writer, interval time.Duration, now func() time.Time) *progress {
	p := &progress{w: w, lines: true, stop: make(chan struct{}), stopped: make(chan struct{}), now: now}
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.status()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// status writes the line-mode status of the running phase:
// "  phase: done/total (pct%), elapsed, about T left", or the time so far
// when the phase has no count.
func (p *progress) status() {
	if !p.phaseActive {
		return
	}
	p.printed = true
	el := p.now().Sub(p.start)
	if p.total <= 0 || p.count <= 0 {
		fmt.Fprintf(p.w, "  %s: %s so far\n", p.phase, roundDuration(el))
		return
	}
	name, in := p.phase, ""
	if p.part > 0 {
		name, in = fmt.Sprintf("%s, part %d", p.phase, p.part+1), " in this part"
	}
	if p.count >= p.total {
		// The counted work is done; what follows (a factorisation, the
		// solves) has no count.
		fmt.Fprintf(p.w, "  %s: %d/%d counted steps done, %s so far, finishing (the factorisation or solves that follow have no count)\n", name, p.count, p.total, roundDuration(el))
		return
	}
	left := time.Duration(float64(p.now().Sub(p.partStart)) * float64(p.total-p.count) / float64(p.count))
	fmt.Fprintf(p.w, "  %s: %d/%d (%.0f%%), %s so far, about %s left%s\n", name, p.count, p.total,
		100*float64(p.count)/float64(p.total), roundDuration(el), roundDuration(left), in)
}

// roundDuration rounds d for display: to the second above ten seconds,
// else to 100 ms.
func roundDuration(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// reportLines is report in line mode.
func (p *progress) reportLines(ev audit.Progress) {
	if ev.Phase == "" {
		p.endLines()
		return
	}
	if !p.phaseActive || ev.Phase != p.phase {
		p.endLines()
		p.phase, p.start, p.phaseActive, p.printed = ev.Phase, p.now(), true, false
		p.part, p.partStart = 0, p.start
	} else if ev.Total > 0 && p.total > 0 && (ev.Total != p.total || ev.Done < p.count) {
		// The phase's count restarted: a new counted loop.
		p.part++
		p.partStart = p.now()
	}
	p.total, p.count = ev.Total, min(ev.Done, max(ev.Total, 0))
}

// endLines ends the running phase in line mode, with a line with its time
// when it was long enough to have a status line.
func (p *progress) endLines() {
	if !p.phaseActive {
		return
	}
	p.phaseActive = false
	if !p.printed {
		return
	}
	fmt.Fprintf(p.w, "  %-32s %s\n", p.phase, p.now().Sub(p.start).Round(10*time.Millisecond))
}

// report is the audit.Options.Progress callback.
func (p *progress) report(ev audit.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lines {
		p.reportLines(ev)
		return
	}
	switch {
	case ev.Phase == "":
		p.endPhase() // the audit has ended
		return
	case p.bar == nil || ev.Phase != p.phase:
		p.endPhase()
		p.phase, p.total, p.start = ev.Phase, ev.Total, time.Now()
		p.bar = newBar(p.w, ev.Phase, ev.Total)
	case ev.Total != p.total:
		// The same phase now has a count: swap the spinner for a bar.
		p.bar.Finish()
		p.total = ev.Total
		p.bar = newBar(p.w, ev.Phase, ev.Total)
	}
	if ev.Total > 0 {
		p.bar.Set(min(ev.Done, ev.Total))
	}
}

// done ends the last phase and stops line mode's status lines.
func (p *progress) done() {
	p.mu.Lock()
	if p.lines {
		p.endLines()
		p.mu.Unlock()
		close(p.stop)
		<-p.stopped
		return
	}
	defer p.mu.Unlock()
	p.endPhase()
}

// endPhase clears the bar of the current phase and leaves a line with
// its time.
func (p *progress) endPhase() {
	if p.bar == nil {
		return
	}
	p.bar.Finish()
	p.bar = nil
	fmt.Fprintf(p.w, "  %-32s %s\n", p.phase, time.Since(p.start).Round(10*time.Millisecond))
}

// newBar returns a bar for a phase of total steps, or a spinner when the
// total is not known (0). Both clear themselves when finished.
func newBar(w io.Writer, phase string, total int) *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("  " + phase),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
	}
	if total <= 0 {
		return progressbar.NewOptions(-1, append(opts, progressbar.OptionSpinnerType(14))...)
	}
	return progressbar.NewOptions(total, append(opts,
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetTheme(progressbar.ThemeASCII),
	)...)
}
