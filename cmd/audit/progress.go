package main

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

// progress shows the phases of an audit on a terminal: a spinner while a
// phase has no count, a bar while it has one, and a line with its time
// when it ends.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	phase string
	total int
	start time.Time
}

func newProgress(w io.Writer) *progress { return &progress{w: w} }

// report is the audit.Options.Progress callback.
func (p *progress) report(ev audit.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
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

// done ends the last phase.
func (p *progress) done() {
	p.mu.Lock()
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
