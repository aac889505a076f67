package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// terminalSafe returns s with every control character but newline and tab
// written as a Go escape (\x1b, \a written \x07, \u009b): names read from
// a model or a data file (a column called "x\x1b[2J", an ONNX input whose
// name sets the terminal's title) reach the terminal as visible text, never
// as commands to it.
func terminalSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
	}
	return b.String()
}

// isControl reports whether r is a C0 or C1 control character or DEL,
// other than newline and tab.
func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0)
}

func needsEscape(s string) bool {
	for _, r := range s {
		if isControl(r) || r == utf8.RuneError {
			return true
		}
	}
	return false
}

// safeWriter writes through terminalSafe: the command's standard output,
// where the summary and inspect print names from the user's files.
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, terminalSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
