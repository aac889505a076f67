package userfile

import (
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed opens an unnamed temporary file in dir (O_TMPFILE), which
// linkUnnamed gives a name; it fails where the file system has none or
// /proc is not mounted.
func openUnnamed(dir string, perm fs.FileMode) (*os.File, error) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil, err // linkUnnamed could not name it
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// linkUnnamed gives the unnamed file f the name path (linkat of its
// /proc/self/fd link, which needs no privilege, unlike AT_EMPTY_PATH).
func linkUnnamed(f *os.File, path string) error {
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return &fs.PathError{Op: "link", Path: path, Err: err}
	}
	return nil
}
