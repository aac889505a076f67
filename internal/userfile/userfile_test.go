package userfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenRefuses checks each kind of path Open refuses, with the error
// kind and a message that names the origin and the path: a missing
// file, a directory, a named pipe nobody writes (without waiting for a
// writer), a character device (/dev/zero), a symbolic link loop and a
// file above its kind's limit; and that a regular file opens with its
// size and reads whole.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(good, []byte("alpha: 0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), 1<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		is   error
		want string
	}{
		{filepath.Join(dir, "none"), fs.ErrNotExist, "no such file or directory"},
		{dir, ErrNotRegular, "it is a directory, not a regular file"},
		{fifo, ErrNotRegular, "it is a named pipe, not a regular file"},
		{"/dev/zero", ErrNotRegular, "it is a character device, not a regular file"},
		{loop, syscall.ELOOP, "too many levels of symbolic links"},
		{big, ErrTooLarge, "too large: 1048577 bytes, and a config file holds at most 1048576"},
	} {
		for _, origin := range []string{"--config", "the config recorded in x.rna"} {
			_, err := ReadFile(c.path, origin, Config)
			var ue *Error
			if !errors.As(err, &ue) || !errors.Is(err, c.is) {
				t.Errorf("%s: error %v, want an *Error wrapping %v", c.path, err, c.is)
				continue
			}
			sep := " "
			if origin[0] != '-' {
				sep = ", "
			}
			if want := origin + sep + c.path + ": " + c.want; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		}
	}
	b, err := ReadFile(good, "--config", Config)
	if err != nil || string(b) != "alpha: 0.1\n" {
		t.Errorf("a regular file: %q, %v", b, err)
	}
	f, size, err := Open(big, "--load", Artifact)
	if err != nil || size != 1<<20+1 {
		t.Fatalf("a file below its kind's limit: size %d, %v", size, err)
	}
	f.Close()
	if Model.Limit() != 2<<30 || Artifact.Limit() != 16<<30 || Config.Limit() != 1<<20 {
		t.Errorf("limits %d, %d, %d: the documentation states 2 GiB, 16 GiB and 1 MiB", Model.Limit(), Artifact.Limit(), Config.Limit())
	}
	if !strings.Contains(Artifact.String(), "fitted audit") {
		t.Errorf("Artifact names itself %q", Artifact)
	}
}
