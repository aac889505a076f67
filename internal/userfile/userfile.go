// Package userfile opens the files whose paths come from a user or from
// another file (an artifact's model path, --load, --config): regular
// files only, refusing directories, devices, named pipes and sockets
// without blocking on them (the file is opened non-blocking and checked
// before anything is read), at most a size stated per kind of file, and
// errors that name the path and where it came from. The trust boundary
// is here so that no reader of such a path grows without limit on
// /dev/zero or waits forever on a pipe nobody writes.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// A Kind is a kind of file rnnaudit reads, which bounds its size.
type Kind int

// The kinds of file, with their limits (Limit).
const (
	// Model is an ONNX model: at most 2 GiB, the most one protobuf
	// message holds.
	Model Kind = iota
	// Artifact is a fitted audit (audit fit --save): at most 16 GiB,
	// artifact.MaxSize.
	Artifact
	// Config is a YAML configuration file (--config): at most 1 MiB.
	Config
	// ExternalData is a file of an ONNX model's tensors kept beside it:
	// at most 64 GiB (it is read tensor by tensor, each checked against
	// the graph's limits).
	ExternalData
)

// Limit is the largest file of kind k that is read, in bytes.
func (k Kind) Limit() int64 {
	switch k {
	case Model:
		return 2 << 30
	case Artifact:
		return 16 << 30
	case ExternalData:
		return 64 << 30
	}
	return 1 << 20
}

// String names the kind in messages.
func (k Kind) String() string {
	switch k {
	case Model:
		return "an ONNX model"
	case Artifact:
		return "a fitted audit"
	case ExternalData:
		return "an external data file"
	}
	return "a config file"
}

// An Error is a file that cannot be read: its path, where the path came
// from, and why (without the path).
type Error struct {
	// Origin is where the path came from: a flag ("--load") or a
	// phrase ("the model recorded in a.rna").
	Origin string
	Path   string
	Err    error
}

// Error renders e as "--load a.rna: is a directory, not a file", or
// with an origin that is not a flag, "the model recorded in a.rna,
// /x/m.onnx: ...".
func (e *Error) Error() string {
	if len(e.Origin) > 0 && e.Origin[0] == '-' {
		return fmt.Sprintf("%s %s: %v", e.Origin, e.Path, e.Err)
	}
	return fmt.Sprintf("%s, %s: %v", e.Origin, e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrNotRegular is the cause of an Error for a path that is not a
// regular file (a directory, a device, a named pipe, a socket).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is the cause of an Error for a file above its kind's Limit.
var ErrTooLarge = errors.New("too large")

// Open opens the regular file at path, which came from origin, for
// reading, and returns it with its size. It refuses, as an *Error, a
// path that does not open (the system's reason: missing, no
// permission, too many levels of symbolic links), that is not a
// regular file, or whose file is larger than k's Limit.
func Open(path, origin string, k Kind) (*os.File, int64, error) {
	fail := func(err error) error { return &Error{Origin: origin, Path: path, Err: err} }
	f, err := openNonblock(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, 0, fail(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fail(err)
	}
	if m := st.Mode(); !m.IsRegular() {
		f.Close()
		return nil, 0, fail(fmt.Errorf("it is %s, %w", ModeName(m), ErrNotRegular))
	}
	if st.Size() > k.Limit() {
		f.Close()
		return nil, 0, fail(fmt.Errorf("%w: %d bytes, and %s holds at most %d", ErrTooLarge, st.Size(), k, k.Limit()))
	}
	return f, st.Size(), nil
}

// ReadFile reads the whole regular file at path, as Open checks it,
// and never more than k's Limit even if the file grows while it is read.
func ReadFile(path, origin string, k Kind) ([]byte, error) {
	f, size, err := Open(path, origin, k)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, size+1)
	b, err = readAll(io.LimitReader(f, k.Limit()+1), b)
	if err != nil {
		return nil, &Error{Origin: origin, Path: path, Err: err}
	}
	if int64(len(b)) > k.Limit() {
		return nil, &Error{Origin: origin, Path: path, Err: fmt.Errorf("%w: it grew beyond %d bytes while it was read", ErrTooLarge, k.Limit())}
	}
	return b, nil
}

// readAll appends what r holds to b.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// ModeName says what kind of file, other than a regular one, m is ("a named
// pipe", "a directory", ...): the words of every message that refuses
// or limits a file for not being regular.
func ModeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}
