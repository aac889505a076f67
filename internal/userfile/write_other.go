//go:build !linux

package userfile

import (
	"errors"
	"io/fs"
	"os"
)

// errNoUnnamed says that the system has no unnamed temporary files.
var errNoUnnamed = errors.New("no O_TMPFILE on this system")

// openUnnamed fails: only Linux has O_TMPFILE, so WriteAtomic writes
// through a named temporary file.
func openUnnamed(string, fs.FileMode) (*os.File, error) { return nil, errNoUnnamed }

// linkUnnamed is never called without openUnnamed.
func linkUnnamed(*os.File, string) error { return errNoUnnamed }
