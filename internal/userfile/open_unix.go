//go:build unix

package userfile

import (
	"os"
	"syscall"
)

// openNonblock opens path for reading without blocking: opening a named
// pipe that nobody writes waits for a writer unless O_NONBLOCK is given.
// It makes no difference to reading a regular file.
func openNonblock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
