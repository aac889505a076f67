package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// TestProgress drives the progress display with the events of an audit
// and checks that every phase ends in one line with its time.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b} // the terminal display
	for _, ev := range []audit.Progress{
		{Phase: "prepare"},
		{Phase: "block gradients"},
		{Phase: "leave-one-block-out residuals"},
		{Phase: "leave-one-block-out residuals", Done: 1, Total: 3},
		{Phase: "leave-one-block-out residuals", Done: 2, Total: 3},
		{Phase: "leave-one-block-out residuals", Done: 3, Total: 3},
		{Phase: "intervals", Done: 1, Total: 2},
		{Phase: ""},
	} {
		p.report(ev)
	}
	p.done()
	out := b.String()
	var lines []string
	for _, l := range regexp.MustCompile(`[\r\n]`).Split(out, -1) {
		if l = strings.TrimSpace(l); regexp.MustCompile(`^[a-z -]+ +[0-9.]+[mµn]?s$`).MatchString(l) {
			lines = append(lines, strings.Fields(l)[0])
		}
	}
	if got := strings.Join(lines, " "); got != "prepare block leave-one-block-out intervals" {
		t.Errorf("phase lines %q in output %q", got, out)
	}
}

// TestNoProgressWhenNotTerminal: a buffer is not a terminal.
func TestNoProgressWhenNotTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
}

// lockedBuffer is a buffer safe for the status goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fakeClock is a time source the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// waitFor polls out until it matches re (the test's own timeout ends a
// display that never writes) and returns the match.
func waitFor(t *testing.T, out *lockedBuffer, re *regexp.Regexp) string {
	t.Helper()
	for {
		if m := re.FindString(out.String()); m != "" {
			return m
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProgressLines: written to a file or pipe, the display reports a
// running phase periodically with its count, the time so far and the time
// left (extrapolated from the rate so far), or just the time so far when
// the phase has no count; a long phase ends with a line with its time; a
// phase shorter than the interval writes nothing.
func TestProgressLines(t *testing.T) {
	var out lockedBuffer
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := newLineProgress(&out, time.Millisecond, clock.now)
	p.report(audit.Progress{Phase: "prepare"})
	p.report(audit.Progress{Phase: "block gradients"}) // prepare ends unreported
	clock.advance(7 * time.Second)
	waitFor(t, &out, regexp.MustCompile(`  block gradients: 7s so far\n`))
	p.report(audit.Progress{Phase: "curvature and solve"})
	clock.advance(12 * time.Second)
	p.report(audit.Progress{Phase: "curvature and solve", Done: 30, Total: 120})
	// 30 of 120 in 12 s: 36 s left.
	waitFor(t, &out, regexp.MustCompile(`  curvature and solve: 30/120 \(25%\), 12s so far, about 36s left\n`))
	p.report(audit.Progress{Phase: "curvature and solve", Done: 120, Total: 120})
	waitFor(t, &out, regexp.MustCompile(`  curvature and solve: 120/120 counted steps done, 12s so far, finishing \(the factorisation or solves that follow have no count\)\n`))
	// The count restarts (rows, then blocks): a second part, whose time
	// left is its own rate's: 10 of 40 in 6 s, 18 s left.
	p.report(audit.Progress{Phase: "curvature and solve", Done: 0, Total: 40})
	clock.advance(6 * time.Second)
	p.report(audit.Progress{Phase: "curvature and solve", Done: 10, Total: 40})
	waitFor(t, &out, regexp.MustCompile(`  curvature and solve, part 2: 10/40 \(25%\), 18s so far, about 18s left in this part\n`))
	p.report(audit.Progress{Phase: "intervals"})
	p.report(audit.Progress{Phase: ""})
	p.done()
	got := out.String()
	if strings.Contains(got, "prepare") || strings.Contains(got, "intervals") {
		t.Errorf("short phases were reported:\n%s", got)
	}
	for _, want := range []string{"  block gradients                  7s\n", "  curvature and solve              18s\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("no end line %q in\n%s", want, got)
		}
	}
	// After done, no more lines.
	n := len(out.String())
	clock.advance(time.Minute)
	time.Sleep(5 * time.Millisecond)
	if len(out.String()) != n {
		t.Errorf("the display wrote after done:\n%s", out.String())
	}
}

// TestRunCanceled: cancelling the context in the middle of an audit ends
// Run with an error that is context.Canceled.
func TestRunCanceled(t *testing.T) {
	g, err := onnx.Load(exModel)
	if err != nil {
		t.Fatal(err)
	}
	train, err := blocks.ReadFile(exTrain, &blocks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"block gradients", "curvature and solve", "leave-one-block-out residuals"} {
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var seen []string
		opt := &audit.Options{Layout: onnx.BatchFirst, Progress: func(ev audit.Progress) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ev.Phase)
			if ev.Phase == phase {
				cancel()
			}
		}}
		_, err := audit.Run(ctx, g, train, nil, opt)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled at %q: error %v, want context.Canceled", phase, err)
		}
		for _, s := range seen {
			if s == "intervals" {
				t.Errorf("cancelled at %q, the audit went on to the intervals", phase)
			}
		}
	}
}

// TestInterrupt runs the command in a child process (this test binary),
// sends it SIGINT while it works, and checks that it ends with one line
// "audit: interrupted" and exit status 130.
func TestInterrupt(t *testing.T) {
	if os.Getenv("AUDIT_TEST_CHILD") == "1" {
		os.Exit(run([]string{"--model", exModel, "--data", exTrain, "--retrain", "-1", "--seed", "1"}, os.Stdout, os.Stderr, nil))
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestInterrupt$")
	cmd.Env = append(os.Environ(), "AUDIT_TEST_CHILD=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Re-training every block takes far longer than the status interval:
	// interrupt at the first status line of a phase.
	sc := bufio.NewScanner(stderr)
	var lines []string
	sent := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if !sent && strings.Contains(sc.Text(), " so far") {
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			sent = true
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130; stderr:\n%s", err, strings.Join(lines, "\n"))
	}
	if last := lines[len(lines)-1]; last != "audit: interrupted" {
		t.Errorf("last line %q, want %q", last, "audit: interrupted")
	}
}
