package onnx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rnnaudit/rnnaudit/internal/userfile"
)

// MaxFileSize is the largest model file Load reads: 2 GiB, the most one
// protobuf message may hold, so no valid ONNX file is larger.
const MaxFileSize = 2 << 30

// MaxStreamSize is the most Load reads from a file that is not a regular
// file (a pipe, a device such as /dev/zero, a socket), whose size cannot
// be known before reading it: 256 MiB. Save a larger model to a file.
const MaxStreamSize = 256 << 20

// readModel reads the file at path, checking its size before it reads:
// a regular file is read whole if it is at most MaxFileSize bytes; any
// other file is read only while its first bytes can start a protobuf
// message (/dev/zero cannot) and up to MaxStreamSize bytes.
func readModel(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case st.IsDir():
		return nil, errors.New("is a directory, not a file")
	case st.Mode().IsRegular():
		if st.Size() > MaxFileSize {
			return nil, fmt.Errorf("%w: the file is %d bytes; an ONNX file holds at most 2 GiB (save a larger model with its weights as external data, beside the file)", ErrInvalid, st.Size())
		}
		data := make([]byte, st.Size())
		n, err := io.ReadFull(f, data)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		return data[:n], nil
	}
	// A stream: look at its start before reading on.
	head := make([]byte, 16)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if err := startsMessage(head[:n]); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(io.MultiReader(bytes.NewReader(head[:n]), f), MaxStreamSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxStreamSize {
		return nil, fmt.Errorf("%w: it is not a regular file (%s) and holds more than %d bytes (256 MiB), the most read from a pipe or device: save the model to a file", ErrInvalid, userfile.ModeName(st.Mode()), MaxStreamSize)
	}
	return data, nil
}

// startsMessage returns an error wrapping ErrInvalid unless b, the first
// bytes of a file, can start a serialized protobuf message: a field tag
// with a field number from 1 and a wire type in use.
func startsMessage(b []byte) error {
	if len(b) == 0 {
		return nil // decode reports the empty file
	}
	tag, n := binary.Uvarint(b)
	if n < 0 || (n == 0 && len(b) >= binary.MaxVarintLen64) {
		return wireErr(0, "bad field tag")
	}
	if n == 0 {
		return nil
	}
	switch num, wire := tag>>3, tag&7; {
	case num == 0:
		return wireErr(0, "invalid field number 0")
	case wire != wireVarint && wire != wireFixed64 && wire != wireBytes && wire != wireFixed32:
		return wireErr(0, "field %d: invalid wire type %d", num, wire)
	}
	return nil
}
