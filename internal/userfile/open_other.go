//go:build !unix

package userfile

import (
	"errors"
	"os"
)

// openNonblock opens path for reading after checking that it is a
// regular file (on systems without O_NONBLOCK a named pipe cannot be
// opened without waiting for a writer).
func openNonblock(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("not a regular file")}
	}
	return os.Open(path)
}
