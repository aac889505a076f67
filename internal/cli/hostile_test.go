package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hostile-input catalogue: inputs an attacker or an unlucky
// user could give the command (models, data, flags, output paths, signals),
// each run in a child process under limits, as a user's shell would run
// the command (the test binary is the command there: TestMain). Every case must end with exit status 1 or 2 and one
// short message on standard error that names the file and the node, line
// or flag, with no stack trace; its peak memory must stay within
// hostileRSS; it must change no input (checked by hash) and leave no
// report or temporary file behind.
//
// The small hostile models are committed in testdata/hostile (made by
// make_hostile.py); the big inputs (a model nested a million levels deep,
// a 100 MB CSV line, /dev/zero) are made by the cases themselves.

// Limits of every catalogue run.
const (
	// hostileAS is the address-space limit (RLIMIT_AS) of the child: the
	// runtime fails to allocate beyond it instead of the machine paging.
	hostileAS = 3 << 30
	// hostileRSS is the memory budget: the most resident memory a case
	// may reach (the Go runtime's own soft limit, GOMEMLIMIT, is set to
	// the same).
	hostileRSS = 256 << 20
	// hostileTime is the time limit of one case.
	hostileTime = 60 * time.Second
)

// childEnv, when set in the environment of the test binary, makes it the
// command instead of a test run: it lowers its address-space limit to the
// value of the variable and runs the command line after "--" (TestMain).
// The catalogue so runs the command as a process of its own, under
// limits, without building it.
const childEnv = "RNNAUDIT_TEST_RLIMIT_AS"

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(runAsChild(v, flagArgs()))
	}
	os.Exit(m.Run())
}

// flagArgs returns the command line after "--" (the test binary's own
// flags come before it).
func flagArgs() []string {
	if i := slices.Index(os.Args, "--"); i >= 0 {
		return os.Args[i+1:]
	}
	return nil
}

// runAsChild sets RLIMIT_AS to limit bytes and runs the command with args.
func runAsChild(limit string, args []string) int {
	n, err := strconv.ParseUint(limit, 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: bad limit")
		return 3
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	code := run(args, os.Stdout, os.Stderr, nil)
	if path := os.Getenv(peakEnv); path != "" {
		// The child's own peak resident memory (VmHWM counts this process
		// only, from its exec on; rusage would count the test's memory too).
		if b, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					os.WriteFile(path, []byte(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))), 0o644)
				}
			}
		}
	}
	return code
}

// peakEnv names the file where the child writes its peak resident memory,
// in KiB.
const peakEnv = "RNNAUDIT_TEST_PEAK_FILE"

// childRun is the outcome of one run of the binary.
type childRun struct {
	code           int
	stdout, stderr string
	// maxRSS is the child's peak resident memory in bytes. Linux counts
	// in it the memory of the test process at the fork, so it is an upper
	// bound: the cases keep the test's own memory small.
	maxRSS  int64
	elapsed time.Duration
}

// runLimited runs the binary with args in dir under the catalogue's
// limits; ctx may end it early. signal, if positive, is sent after delay.
func runLimited(t *testing.T, ctx context.Context, dir string, args []string, stdin string, sig syscall.Signal, delay time.Duration) childRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, hostileTime)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Dir = dir
	peak := filepath.Join(t.TempDir(), "peak")
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(hostileAS), peakEnv+"="+peak, "GOMEMLIMIT="+strconv.Itoa(hostileRSS), "GOTRACEBACK=single")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if sig > 0 {
		go func() {
			time.Sleep(delay)
			cmd.Process.Signal(sig)
		}()
	}
	err = cmd.Wait()
	r := childRun{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("%q: still running after %v (killed)\nstderr: %s", args, hostileTime, clip(r.stderr))
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	r.code = cmd.ProcessState.ExitCode()
	if b, err := os.ReadFile(peak); err == nil {
		if kb, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			r.maxRSS = kb << 10
		}
	} else if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss * 1024 // includes the test's memory at the fork
	}
	return r
}

// clip shortens a long output for a failure message.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// hostileCase is one entry of the catalogue.
type hostileCase struct {
	name  string
	class int // the class of the catalogue it belongs to (1-7)
	// setup, if set, makes the case's own inputs in dir (a copy of
	// testdata/hostile) and may return arguments to append.
	setup func(t *testing.T, dir string) []string
	args  []string
	code  int      // the exit status: 1 or 2 (130 for a signal)
	want  []string // each must appear in the message
	// sig, if set, is sent after delay; the run must then end within
	// interruptGrace.
	sig   syscall.Signal
	delay time.Duration
}

// interruptGrace is how soon after Ctrl-C (SIGINT) an audit must end.
const interruptGrace = 3 * time.Second

func TestHostile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the catalogue's limits use Linux's setrlimit and rusage")
	}
	const m, d = "model.onnx", "train.csv"
	audit := func(model string, more ...string) []string {
		return append([]string{"--model", model, "--data", d, "--quiet"}, more...)
	}
	cases := []hostileCase{
		// 1. Outputs that are inputs.
		{name: "out is data", class: 1, args: audit(m, "--out", d), code: 2, want: []string{"--data train.csv"}},
		{name: "out is data by another path", class: 1, args: audit(m, "--out", "./sub/../train.csv"), code: 2,
			setup: mkdir("sub"), want: []string{"--out ./sub/../train.csv is the same file as --data train.csv"}},
		{name: "out is a symlink to data", class: 1, args: audit(m, "--out", "link.csv"), code: 2,
			setup: symlink("train.csv", "link.csv"), want: []string{"--out link.csv is the same file as --data train.csv"}},
		{name: "out is a hard link to data", class: 1, args: audit(m, "--out", "hard.csv"), code: 2,
			setup: hardlink("train.csv", "hard.csv"), want: []string{"--out hard.csv is the same file as --data train.csv"}},
		{name: "out through a symlinked directory", class: 1, args: audit(m, "--out", "d/train.csv"), code: 2,
			setup: symlink(".", "d"), want: []string{"--out d/train.csv is the same file as --data train.csv"}},
		{name: "json is test", class: 1, args: audit(m, "--test", "test.csv", "--json", "test.json"), code: 2,
			setup: func(t *testing.T, dir string) []string {
				copyFile(t, filepath.Join(dir, d), filepath.Join(dir, "test.csv"))
				symlink("test.csv", "test.json")(t, dir)
				return nil
			}, want: []string{"--json test.json is the same file as --test test.csv"}},
		{name: "out is model", class: 1, args: audit(m, "--out", "m.html"), code: 2,
			setup: hardlink(m, "m.html"), want: []string{"--out m.html is the same file as --model model.onnx"}},
		{name: "out is the config", class: 1, args: audit(m, "--config", "c.yaml", "--out", "c.md"), code: 2,
			setup: func(t *testing.T, dir string) []string {
				writeFile(t, filepath.Join(dir, "c.yaml"), "alpha: 0.1\n")
				symlink("c.yaml", "c.md")(t, dir)
				return nil
			}, want: []string{"--out c.md is the same file as --config c.yaml"}},
		{name: "config names data as out", class: 1, args: audit(m, "--config", "c.yaml"), code: 2,
			setup: func(t *testing.T, dir string) []string {
				writeFile(t, filepath.Join(dir, "c.yaml"), "out: hard.json\n")
				hardlink(d, "hard.json")(t, dir)
				return nil
			}, want: []string{"hard.json is the same file as --data train.csv"}},
		{name: "two outputs one file", class: 1, args: audit(m, "--out", "r.json", "--json", "d/r.json"), code: 2,
			setup: symlink(".", "d"), want: []string{"--json d/r.json is the same file as --out r.json"}},

		// 2. Memory and time bombs.
		{name: "ConstantOfShape 1e9", class: 2, args: audit("cos_1e9.onnx"), code: 1,
			want: []string{"cos_1e9.onnx", `node "bomb" (ConstantOfShape)`, "1000000000 elements"}},
		{name: "ConstantOfShape 1e12", class: 2, args: audit("cos_1e12.onnx"), code: 1,
			want: []string{"cos_1e12.onnx", `node "bomb" (ConstantOfShape)`, "1000000000000 elements"}},
		{name: "Expand 1e10", class: 2, args: audit("expand_1e10.onnx"), code: 1,
			want: []string{"expand_1e10.onnx", `node "bomb" (Expand)`, "10000000000 elements"}},
		{name: "Range 1e9", class: 2, args: audit("range_1e9.onnx"), code: 1,
			want: []string{"range_1e9.onnx", `node "bomb" (Range)`, "1e+09 elements"}},
		{name: "inspect ConstantOfShape 1e12", class: 2, args: []string{"inspect", "--model", "cos_1e12.onnx"}, code: 1,
			want: []string{"cos_1e12.onnx", `node "bomb" (ConstantOfShape)`}},
		{name: "inspect Expand 1e10", class: 2, args: []string{"inspect", "--model", "expand_1e10.onnx"}, code: 1,
			want: []string{"expand_1e10.onnx", `node "bomb" (Expand)`}},
		{name: "type nested a million levels", class: 2, args: audit("deep.onnx"), code: 1,
			setup: deepModel(m, "deep.onnx", 1_000_000), want: []string{"deep.onnx", `graph value "z" nests sequence types more than 100 levels deep`}},
		{name: "inspect type nested a million levels", class: 2, args: []string{"inspect", "--model", "deep.onnx"}, code: 1,
			setup: deepModel(m, "deep.onnx", 1_000_000), want: []string{"deep.onnx", `graph value "z" nests sequence types more than 100 levels deep`}},
		{name: "attribute nested a million levels", class: 2, args: audit("deepattr.onnx"), code: 1,
			setup: deepAttrModel(m, "deepattr.onnx", 1_000_000), want: []string{"deepattr.onnx", `attribute "a" is a value (type 2) but also holds a graph`}},
		{name: "model /dev/zero", class: 2, args: audit("/dev/zero"), code: 1, want: []string{"/dev/zero", "invalid field number 0"}},
		{name: "inspect /dev/zero", class: 2, args: []string{"inspect", "--model", "/dev/zero"}, code: 1, want: []string{"/dev/zero", "invalid field number 0"}},
		{name: "data /dev/zero", class: 2, args: []string{"--model", m, "--data", "/dev/zero"}, code: 1, want: []string{"/dev/zero:1", "longer than 1048576 bytes"}},
		{name: "100 MB CSV line", class: 2, args: audit(m), code: 1,
			setup: func(t *testing.T, dir string) []string {
				writeStream(t, filepath.Join(dir, "long.csv"), func(w *bufio.Writer) {
					w.WriteString("id,t,x,y\n1,1,")
					for range 100 << 10 {
						w.WriteString(strings.Repeat("9", 1<<10))
					}
					w.WriteString(",1\n")
				})
				return []string{"--data", "long.csv"}
			}, want: []string{"long.csv:2", "line 2 is longer than"}},

		// 3. Internal errors reachable from a file.
		{name: "Range to infinity", class: 3, args: audit("range_inf.onnx"), code: 1,
			want: []string{"range_inf.onnx", `node "bomb" (Range)`, "limit +Inf", "must be finite"}},
		{name: "ConstantOfShape overflow", class: 3, args: audit("cos_overflow.onnx"), code: 1,
			want: []string{"cos_overflow.onnx", `node "bomb" (ConstantOfShape)`, "more than 2^63 elements"}},
		{name: "no parameters", class: 3, args: audit("no_params.onnx"), code: 1,
			want: []string{"no_params.onnx", "no parameters"}},

		// 4. Non-finite weights.
		{name: "NaN weight", class: 4, args: audit("nan_weight.onnx"), code: 1,
			want: []string{"nan_weight.onnx", `initializer "w"`, "1 NaN of its 1 values"}},
		{name: "Inf weight", class: 4, args: audit("inf_weight.onnx"), code: 1,
			want: []string{"inf_weight.onnx", `initializer "b"`, "1 infinite of its 1 values"}},

		// 5. Control characters from the user's files reach the terminal
		// escaped (the CSV export's formula ids: reports.TestCSVNeutralisesFormulas;
		// HTML: reports.TestHTMLEscapes).
		{name: "column names with ESC and BEL", class: 5, args: audit(m), code: 1,
			setup: func(t *testing.T, dir string) []string {
				writeFile(t, filepath.Join(dir, "ctl.csv"), "id,t,x\x1b[2J,y\x07\n1,1,2,3\n")
				return []string{"--data", "ctl.csv"}
			}, want: []string{"ctl.csv:1", `x\x1b[2J, y\x07`}},
		{name: "flag value with ESC", class: 5, args: audit(m, "--target", "y\x1b]0;owned\x07"), code: 1,
			want: []string{"train.csv:1", `y\x1b]0;owned\a`}},

		// 6. Signals and long sequences.
		// The CG solver makes one solve per block: the self-audit of the
		// small example's 100 sequences takes about 14 s on an idle 2-core
		// machine, so the signal always lands in the influence phase
		// (a workload of a second or two raced the signal and passed or
		// failed with the machine's load).
		{name: "Ctrl-C during the influence solves", class: 6, code: 130, sig: syscall.SIGINT, delay: 1500 * time.Millisecond,
			setup: func(t *testing.T, dir string) []string {
				return []string{"--model", absPath(t, exModel), "--data", absPath(t, exTrain), "--solver", "cg", "--quiet", "--out", "r.html"}
			}, want: []string{"interrupted"}},
		{name: "a sequence of 200,000 steps", class: 6, code: 1,
			setup: func(t *testing.T, dir string) []string {
				longData(t, filepath.Join(dir, "long.csv"), 200_000, 20, 20)
				return []string{"--model", absPath(t, exModel), "--data", "long.csv", "--quiet", "--out", "r.html"}
			}, want: []string{"long.csv", `sequence "a" has 200000 steps`, "split long sequences"}},

		// 7. Smaller.
		{name: "CR-only line endings", class: 7, args: audit(m), code: 1,
			setup: func(t *testing.T, dir string) []string {
				b := readFile(t, filepath.Join(dir, d))
				writeFile(t, filepath.Join(dir, "cr.csv"), strings.ReplaceAll(b, "\n", "\r"))
				return []string{"--data", "cr.csv"}
			}, want: []string{"cr.csv:1", "carriage return alone"}},
		{name: "header of a million columns", class: 7, args: audit(m), code: 1,
			setup: func(t *testing.T, dir string) []string {
				writeStream(t, filepath.Join(dir, "wide.csv"), func(w *bufio.Writer) {
					w.WriteString("id,t,y,")
					for i := range 1_000_000 {
						fmt.Fprintf(w, "c%d,", i)
					}
					w.WriteString("x\n")
				})
				return []string{"--data", "wide.csv"}
			}, want: []string{"wide.csv:1", "longer than"}},
		{name: "target of 1e308", class: 7, args: audit(m), code: 1,
			setup: func(t *testing.T, dir string) []string {
				b := readFile(t, filepath.Join(dir, d))
				writeFile(t, filepath.Join(dir, "huge.csv"), b+"s99,1,0.5,1e308\n")
				return []string{"--data", "huge.csv"}
			}, want: []string{"huge.csv:102", `"1e308" is too large`, "overflow"}},
		{name: "50,000 feature columns", class: 7, args: audit(m), code: 1,
			setup: func(t *testing.T, dir string) []string {
				writeFile(t, filepath.Join(dir, "wide.csv"), "id,t,y,c"+wideHeader(50_000)+"\na,1,1,1"+strings.Repeat(",0.5", 50_000)+"\n")
				return []string{"--data", "wide.csv"}
			}, want: []string{"wide.csv:1", "the model takes 1 feature, the file has 50001 feature columns", "(50001 columns)"}},
		{name: "header of 300,000 short columns", class: 7, args: audit(m), code: 1,
			setup: func(t *testing.T, dir string) []string {
				writeFile(t, filepath.Join(dir, "wide.csv"), "id,t,y"+strings.Repeat(",a", 300_000)+"\n")
				return []string{"--data", "wide.csv"}
			}, want: []string{"wide.csv:1", "300003 columns"}},
	}
	runHostileCases(t, cases)
}

// runHostileCases runs each case of the catalogue in a copy of
// testdata/hostile under the catalogue's limits, and checks its exit,
// its message and memory (checkFailure), and that it changed no file
// and left none behind.
func runHostileCases(t *testing.T, cases []hostileCase) {
	src := filepath.Join("testdata", "hostile")
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d/%s", tc.class, tc.name), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			args := slices.Clone(tc.args)
			if tc.setup != nil {
				args = append(args, tc.setup(t, dir)...)
			}
			before := hashTree(t, dir)
			r := runLimited(t, context.Background(), dir, args, "", tc.sig, tc.delay)
			checkFailure(t, tc, args, r)
			if tc.sig != 0 && r.elapsed > tc.delay+interruptGrace {
				t.Errorf("%q: ended %v after the signal, want at most %v", args, r.elapsed-tc.delay, interruptGrace)
			}
			after := hashTree(t, dir)
			for name, h := range before {
				if after[name] != h {
					t.Errorf("%q: %s was changed", args, name)
				}
			}
			for name := range after {
				if _, ok := before[name]; !ok {
					t.Errorf("%q: left %s behind", args, name)
				}
			}
			t.Logf("exit %d in %v, peak RSS %.1f MiB: %s", r.code, r.elapsed.Round(time.Millisecond), float64(r.maxRSS)/(1<<20), strings.TrimSpace(r.stderr))
		})
	}
}

// TestHostileNames: inspect prints the names of a model's inputs and
// outputs with their control characters escaped (the ONNX file of
// testdata/hostile/control_names.onnx names them "x\x1b[2J\x07" and
// "y\x1b]0;owned\x07": clear the screen, set the window title).
func TestHostileNames(t *testing.T) {
	code, out, errs := runCmd("inspect", "--model", filepath.Join("testdata", "hostile", "control_names.onnx"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("control characters reach the terminal: %q", out)
	}
	for _, want := range []string{`x\x1b[2J\x07`, `y\x1b]0;owned\x07`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// checkFailure checks the exit status and the message of a failed run.
func checkFailure(t *testing.T, tc hostileCase, args []string, r childRun) {
	t.Helper()
	if r.code != tc.code {
		t.Errorf("%q: exit %d, want %d\nstderr: %s", args, r.code, tc.code, clip(r.stderr))
	}
	msg := r.stderr
	if strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic") || strings.Contains(msg, ".go:") || strings.Contains(msg, "fatal error") {
		t.Errorf("%q: stderr has a stack trace or a crash: %s", args, clip(msg))
	}
	if !strings.HasPrefix(msg, "audit: ") {
		t.Errorf("%q: stderr does not start with the program name: %s", args, clip(msg))
	}
	if n := strings.Count(strings.TrimSpace(msg), "\n") + 1; n > 4 || len(msg) > 1200 {
		t.Errorf("%q: a message of %d lines and %d bytes, want at most 4 lines of a few hundred bytes: %s", args, n, len(msg), clip(msg))
	}
	if strings.ContainsAny(msg, "\x1b\x07") {
		t.Errorf("%q: control characters reach the terminal: %q", args, clip(msg))
	}
	for _, w := range tc.want {
		if !strings.Contains(msg, w) {
			t.Errorf("%q: the message lacks %q: %s", args, w, clip(msg))
		}
	}
	if r.maxRSS > hostileRSS {
		t.Errorf("%q: peak memory %.0f MiB, over the budget of %d MiB", args, float64(r.maxRSS)/(1<<20), hostileRSS>>20)
	}
}

// hashTree returns the SHA-256 of every file under dir (symbolic links by
// their target's name), by path relative to dir.
func hashTree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			out[rel] = sha256.Sum256([]byte("link:" + target))
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		out[rel] = [32]byte(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	es, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), ".py") {
			copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeStream writes a big file through a buffer, keeping the test's own
// memory (which the child's peak memory includes) small.
func writeStream(t *testing.T, path string, write func(*bufio.Writer)) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	write(w)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(name string) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}

func symlink(target, name string) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}

func hardlink(target, name string) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		if err := os.Link(filepath.Join(dir, target), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}

// wideHeader returns ",f0,f1,...", n names.
func wideHeader(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, ",f%d", i)
	}
	return b.String()
}

// longData writes a data file for the linear models of testdata/hostile:
// sequences "a", "b", ... of the given lengths.
func longData(t *testing.T, path string, lengths ...int) {
	t.Helper()
	writeStream(t, path, func(w *bufio.Writer) {
		w.WriteString("id,t,x,y\n")
		x := 0.3
		for s, n := range lengths {
			for i := range n {
				x = 3.9 * x * (1 - x) // deterministic, chaotic
				fmt.Fprintf(w, "%c,%d,%.4f,%.4f\n", 'a'+s, i, x, 0.9*x+0.1+0.05*(x-0.5))
			}
		}
	})
}

func absPath(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// deepModel writes to name the model base with one more graph input,
// "z", whose type nests levels sequence types, each inside the last
// (about 8 bytes a level), before its tensor type: a type no real model
// has, which a decoder that recurses without a limit cannot read.
func deepModel(base, name string, levels int) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		b, err := os.ReadFile(filepath.Join(dir, base))
		if err != nil {
			t.Fatal(err)
		}
		// Built from the innermost type outwards, back to front.
		var rev []byte
		prepend := func(field int, length int) {
			var tmp [2 * binary.MaxVarintLen64]byte
			n := binary.PutUvarint(tmp[:], uint64(field)<<3|2)
			n += binary.PutUvarint(tmp[n:], uint64(length))
			for i := n - 1; i >= 0; i-- {
				rev = append(rev, tmp[i])
			}
		}
		rev = []byte{0x01, 0x08} // TensorTypeProto{elem_type: FLOAT}, reversed
		prepend(1, len(rev))     // as TypeProto.tensor_type (field 1)
		for range levels {
			prepend(1, len(rev)) // TypeProto as Sequence.elem_type (field 1)
			prepend(4, len(rev)) // Sequence as TypeProto.sequence_type (field 4)
		}
		// The outermost type ends with a tensor type, so that it reads as
		// a tensor: the sequences are there only to nest.
		rev = append([]byte{0x01, 0x08, 0x02, 0x0a}, rev...)
		prepend(2, len(rev)) // TypeProto as ValueInfoProto.type (field 2)
		rev = append(rev, 'z', 1, 0x0a)
		prepend(11, len(rev)) // ValueInfoProto as GraphProto.input (field 11)
		prepend(7, len(rev))  // GraphProto as ModelProto.graph (field 7), merged with the first
		slices.Reverse(rev)
		if err := os.WriteFile(filepath.Join(dir, name), append(b, rev...), 0o644); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}

// TestHostileWrites: a temporary report left by a run killed while writing
// (kill -9) is removed by the next run that writes the same report; a
// chart path taken by a directory fails naming it, and leaves neither the
// Markdown report nor its charts nor a temporary file; an output that
// cannot be written is named as the user gave it, before the audit runs.
func TestHostileWrites(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "hostile"), dir)
	m, d := filepath.Join(dir, "model.onnx"), filepath.Join(dir, "train.csv")
	hidden := func() []string {
		var names []string
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			if strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		return names
	}

	stale := filepath.Join(dir, ".r.json.rnnaudit-tmp-12345")
	writeFile(t, stale, strings.Repeat("x", 4<<20))
	if code, _, errs := runCmd("--model", m, "--data", d, "--quiet", "--out", filepath.Join(dir, "r.json")); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if h := hidden(); len(h) > 0 {
		t.Errorf("temporary files left: %q", h)
	}

	md := filepath.Join(dir, "r.md")
	if err := os.MkdirAll(filepath.Join(dir, "r_files", "coverage.svg"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCmd("--model", m, "--data", d, "--quiet", "--out", md)
	if want := filepath.Join(dir, "r_files", "coverage.svg") + ": it is a directory"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("chart path taken: exit %d, stderr %q, want it to contain %q", code, errs, want)
	}
	if _, err := os.Stat(md); err == nil {
		t.Error("r.md was written although its charts were not")
	}
	if es, _ := os.ReadDir(filepath.Join(dir, "r_files")); len(es) != 1 {
		t.Errorf("r_files holds %d entries, want only the directory in the way", len(es))
	}
	if h := hidden(); len(h) > 0 {
		t.Errorf("temporary files left: %q", h)
	}

	code, _, errs = runCmd("--model", m, "--data", d, "--quiet", "--out", "/proc/r.html")
	if code != 1 || !strings.HasPrefix(errs, "audit: cannot write /proc/r.html: ") {
		t.Errorf("unwritable output: exit %d, stderr %q", code, errs)
	}
}

// TestHostileLongSequence: sequences too long for the Newton estimator's
// dense leverage matrix (cubic in a sequence's length: 2,000 steps took
// 38 s and could not be interrupted) take its Lanczos path, whose cost is
// linear in the length per step, and the audit takes a second with the
// Newton estimator (they fell back to the infinitesimal estimator with
// a note before the Lanczos path).
func TestHostileLongSequence(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "hostile"), dir)
	data := filepath.Join(dir, "long.csv")
	longData(t, data, 2000, 2000, 20)
	js := filepath.Join(dir, "r.json")
	if code, _, errs := runCmd("--model", filepath.Join(dir, "model.onnx"), "--data", data, "--quiet", "--json", js); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b := readFile(t, js)
	if !strings.Contains(b, `"estimator": "newton"`) || strings.Contains(b, "infinitesimal jackknife is used") {
		t.Errorf("the long sequences did not keep the Newton estimator:\n%s", clip(b))
	}
}

// TestHostileBlockLength: a --block-length that leaves fewer than two
// intervals with a target falls back to sequence blocks, and the terminal
// says so (it was only in the report's notes).
func TestHostileBlockLength(t *testing.T) {
	dir := filepath.Join("testdata", "hostile")
	code, _, errs := runCmd("--model", filepath.Join(dir, "model.onnx"), "--data", filepath.Join(dir, "train.csv"), "--blocks", "interval", "--block-length", "50")
	if want := "audit: note: --block-length 50 leaves fewer than two intervals that hold a target (the longest sequence of " + filepath.Join(dir, "train.csv") + " has 5 steps)"; code != 0 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q, want it to contain %q", code, errs, want)
	}
}

// deepAttrModel writes to name the model base with one more node, an
// Identity of "y", whose int attribute also carries a graph whose node has
// an attribute with a graph, and so on, levels deep: an attribute onnx-go
// is given (it is an int) that nests without end.
func deepAttrModel(base, name string, levels int) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		b, err := os.ReadFile(filepath.Join(dir, base))
		if err != nil {
			t.Fatal(err)
		}
		var rev []byte // the message back to front
		push := func(bs ...byte) {
			for i := len(bs) - 1; i >= 0; i-- {
				rev = append(rev, bs[i])
			}
		}
		prepend := func(field int, length int) {
			var tmp [2 * binary.MaxVarintLen64]byte
			n := binary.PutUvarint(tmp[:], uint64(field)<<3|2)
			n += binary.PutUvarint(tmp[n:], uint64(length))
			push(tmp[:n]...)
		}
		// The innermost attribute: name "a", type INT (20: 2), i: 1 (3: 1).
		attr := []byte{0x0a, 0x01, 'a', 0xa0, 0x01, 0x02, 0x18, 0x01}
		push(attr...)
		for range levels {
			prepend(5, len(rev)) // AttributeProto as NodeProto.attribute
			prepend(1, len(rev)) // NodeProto as GraphProto.node
			prepend(6, len(rev)) // GraphProto as AttributeProto.g
			push(attr...)        // ... of an int attribute "a"
		}
		prepend(5, len(rev)) // as the attribute of the outer node
		push(0x0a, 0x01, 'y', 0x12, 0x02, 'z', '2', 0x22, 0x08, 'I', 'd', 'e', 'n', 't', 'i', 't', 'y')
		prepend(1, len(rev)) // NodeProto as GraphProto.node
		prepend(7, len(rev)) // GraphProto as ModelProto.graph, merged with the first
		slices.Reverse(rev)
		if err := os.WriteFile(filepath.Join(dir, name), append(b, rev...), 0o644); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}
