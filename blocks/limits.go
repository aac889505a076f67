package blocks

import (
	"bytes"
	"errors"
	"io"
)

// MaxLineBytes is the longest line Read accepts: 1 MiB. A longer line is
// not data anyone writes by hand or exports from a data frame (a header
// of 100,000 columns fits); it is a file that is not CSV (a binary file,
// /dev/zero) or whose line endings the reader does not see, and reading it
// whole would take memory without bound.
const MaxLineBytes = 1 << 20

// MaxColumns is the widest header Read accepts.
const MaxColumns = 100_000

// MaxValue is the largest magnitude Read accepts for a feature or a
// target: 1e150, below the square root of the largest float64 (1.3e154),
// so that squared errors and gradients stay finite. A target of 1e308
// overflowed every residual to +Inf, which the audit then blamed on too
// few residuals.
const MaxValue = 1e150

// ErrLineTooLong is wrapped by the error for a line longer than
// MaxLineBytes.
var ErrLineTooLong = errors.New("line too long")

// lineLimiter passes its reader's bytes through until a line grows longer
// than MaxLineBytes; then it fails with a *lineError naming that line.
type lineLimiter struct {
	r    io.Reader
	line int // 1-based line of the next byte
	run  int // bytes of the current line so far
	err  error
}

// lineError is the error of a lineLimiter: the line that is too long.
type lineError struct{ line int }

func (e *lineError) Error() string { return "line too long" }
func (e *lineError) Unwrap() error { return ErrLineTooLong }

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.run += len(b)
			break
		}
		if l.run+i > MaxLineBytes {
			l.run += i
			break
		}
		l.line++
		l.run = 0
		b = b[i+1:]
	}
	if l.run > MaxLineBytes {
		l.err = &lineError{l.line}
		return 0, l.err
	}
	return n, err
}

// lineEndings reports, from the first bytes of a file, line endings that
// the CSV reader does not take: carriage returns alone (classic Mac OS),
// which would read the whole file as one line. It returns "" when the
// line endings are LF or CR LF.
func lineEndings(head []byte) string {
	if bytes.IndexByte(head, '\n') < 0 && bytes.IndexByte(head, '\r') >= 0 {
		return "CR"
	}
	return ""
}
