package userfile

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killEnv, set in the environment of the test binary, makes it a writer
// that the test kills: it writes half a file to the path the variable
// names through WriteAtomic (unnamed temporary) or, when killNamedEnv is
// set too, through a named temporary, says so on its standard output and
// waits to be killed.
const (
	killEnv      = "RNNAUDIT_USERFILE_KILL_WRITE"
	killNamedEnv = "RNNAUDIT_USERFILE_KILL_NAMED"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(killEnv); path != "" {
		err := writeAtomic(path, 0o644, func(w io.Writer) error {
			if _, err := w.Write(bytes.Repeat([]byte("x"), 2<<20)); err != nil {
				return err
			}
			os.Stdout.WriteString("half written\n")
			time.Sleep(time.Minute)
			return nil
		}, os.Getenv(killNamedEnv) == "")
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(3)
		}
		os.Exit(4) // never reached: the test kills it first
	}
	os.Exit(m.Run())
}

// killWriter runs the test binary as a writer of path, waits until it has
// written 2 MiB and kills it with SIGKILL.
func killWriter(t *testing.T, path string, named bool) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), killEnv+"="+path)
	if named {
		cmd.Env = append(cmd.Env, killNamedEnv+"=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "half written\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the writer said %q, stderr %s", line, errb.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); err == nil || !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the writer was not killed: %v", err)
	}
}

// names lists the directory dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestWriteAtomicKilled kills a writer (a child process) with SIGKILL in
// the middle of a 4 MiB write and checks what it leaves: through the
// unnamed temporary file, nothing at all, whether the report was new or
// replaced an old one (left unchanged); through the named temporary file
// (the fallback), the temporary, which the next write of the same path
// removes.
func TestWriteAtomicKilled(t *testing.T) {
	unnamed := true
	if f, err := openUnnamed(t.TempDir(), 0o644); err != nil {
		unnamed = false
		t.Logf("no unnamed temporary files here (%v): only the fallback is tested", err)
	} else {
		f.Close()
	}
	if unnamed {
		dir := t.TempDir()
		path := filepath.Join(dir, "report.html")
		killWriter(t, path, false)
		if got := names(t, dir); len(got) != 0 {
			t.Errorf("a writer killed while writing a new file left %q", got)
		}
		if err := os.WriteFile(path, []byte("old report"), 0o644); err != nil {
			t.Fatal(err)
		}
		killWriter(t, path, false)
		if got := names(t, dir); !slices.Equal(got, []string{"report.html"}) {
			t.Errorf("a writer killed while replacing a file left %q", got)
		}
		if b, _ := os.ReadFile(path); string(b) != "old report" {
			t.Errorf("the old file became %q", b[:min(len(b), 20)])
		}
	}
	// The fallback leaves its named temporary; the next write removes it.
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	killWriter(t, path, true)
	got := names(t, dir)
	if len(got) != 1 || !strings.HasPrefix(got[0], ".report.html"+TempMark) {
		t.Fatalf("the fallback killed left %q, want one temporary file", got)
	}
	for _, un := range []bool{false, unnamed} {
		if err := writeAtomic(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "new report"); return err }, un); err != nil {
			t.Fatal(err)
		}
		if got := names(t, dir); !slices.Equal(got, []string{"report.html"}) {
			t.Errorf("after the next write (unnamed %v): %q, want the report alone", un, got)
		}
	}
}

// TestWriteAtomic checks that a write creates and replaces a file with
// its mode whatever the umask, through either temporary, and that a
// failing write leaves the old file and nothing else.
func TestWriteAtomic(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	for _, un := range []bool{true, false} {
		dir := t.TempDir()
		path := filepath.Join(dir, "a.rna")
		for i, content := range []string{"first", "second"} {
			if err := writeAtomic(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, content); return err }, un); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if b, _ := os.ReadFile(path); err != nil || string(b) != content || st.Mode().Perm() != 0o644 {
				t.Errorf("unnamed %v, write %d: %q, mode %v, %v", un, i, b, st.Mode(), err)
			}
		}
		err := writeAtomic(path, 0o600, func(w io.Writer) error { io.WriteString(w, "partial"); return io.ErrShortWrite }, un)
		if err != io.ErrShortWrite {
			t.Errorf("unnamed %v: a failing write gave %v", un, err)
		}
		if b, _ := os.ReadFile(path); string(b) != "second" || !slices.Equal(names(t, dir), []string{"a.rna"}) {
			t.Errorf("unnamed %v: after a failing write: %q, files %q", un, b, names(t, dir))
		}
		err = writeAtomic(filepath.Join(dir, "none", "a.rna"), 0o644, func(w io.Writer) error { return nil }, un)
		if err == nil || strings.Contains(err.Error(), TempMark) {
			t.Errorf("unnamed %v: a write into a missing directory: %v, want an error without the temporary's name", un, err)
		}
	}
}
