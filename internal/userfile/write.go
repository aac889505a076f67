package userfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TempMark is in the name of every named temporary file WriteAtomic
// makes (".report.html.rnnaudit-tmp-1f2e3d4c"), so that one a killed run
// left behind is removed by the next write of the same file.
const TempMark = ".rnnaudit-tmp-"

// WriteAtomic writes the file at path with perm through write, so that
// the file appears whole or not at all, and a process killed while
// writing (kill -9) leaves nothing behind:
//
//   - on Linux the data go to an unnamed temporary file in path's
//     directory (open with O_TMPFILE), which has no name until it is
//     complete; it is then linked into place (linkat of
//     /proc/self/fd/N). A new file is linked at path directly; an
//     existing one is replaced by linking the temporary under a name with
//     TempMark and renaming it over path, two system calls apart: only a
//     kill between those two leaves a named temporary, which the next
//     WriteAtomic of path removes.
//   - elsewhere, or where the file system has no O_TMPFILE (or /proc is
//     not mounted), the data go to a named temporary file with TempMark
//     beside path, renamed over path when complete: a kill while writing
//     leaves that temporary, and the next WriteAtomic of path removes it
//     (the stated recovery).
//
// Errors are the cause without the temporary file's name; the caller
// names path.
func WriteAtomic(path string, perm fs.FileMode, write func(io.Writer) error) error {
	return writeAtomic(path, perm, write, true)
}

// writeAtomic is WriteAtomic, through an unnamed temporary file when
// unnamed is set and the system has them.
func writeAtomic(path string, perm fs.FileMode, write func(io.Writer) error, unnamed bool) error {
	dir, base := filepath.Dir(path), filepath.Base(path)
	removeStale(dir, base)
	if unnamed {
		if f, err := openUnnamed(dir, perm); err == nil {
			return finishUnnamed(f, path, perm, write)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+base+TempMark+"*")
	if err != nil {
		return cause(err)
	}
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return cause(err)
	}
	return nil
}

// finishUnnamed writes through the unnamed temporary file f and links it
// at path.
func finishUnnamed(f *os.File, path string, perm fs.FileMode, write func(io.Writer) error) error {
	defer f.Close()
	if err := write(f); err != nil {
		return cause(err)
	}
	// The mode O_TMPFILE was given is reduced by the umask; set it as
	// the named path sets it with Chmod.
	if err := f.Chmod(perm); err != nil {
		return cause(err)
	}
	err := linkUnnamed(f, path)
	if !errors.Is(err, fs.ErrExist) {
		return cause(err)
	}
	// path exists: link under a temporary name and rename over it.
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+TempMark+randomSuffix())
	if err := linkUnnamed(f, tmp); err != nil {
		return cause(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return cause(err)
	}
	return nil
}

// removeStale removes the named temporary files of path (base in dir)
// that a killed run left behind.
func removeStale(dir, base string) {
	stale, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(base)+TempMark+"*"))
	for _, f := range stale {
		os.Remove(f)
	}
}

// randomSuffix is 8 random hexadecimal digits.
func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cause is err without the operation and the file name (a temporary
// one, which a message must not show).
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// globEscape quotes the characters of s that filepath.Match treats as
// patterns.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`).Replace(s)
}
