package errs

import (
	"fmt"
	"unicode/utf8"
)

// Elide is s when it is at most n bytes long, else its beginning and its
// end (whole characters) around "… (N bytes elided) …", at most about n
// bytes in all: a message that repeats a value (a 100,000-dimension
// shape, a long cell, a request's id) stays a few hundred bytes and still
// shows how the value begins and ends.
func Elide(s string, n int) string {
	if len(s) <= n {
		return s
	}
	mark := fmt.Sprintf(" … (%d bytes elided) … ", len(s)-n)
	keep := max(n-len(mark), 2)
	head, tail := keep*2/3, keep-keep*2/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:head] + fmt.Sprintf(" … (%d bytes elided) … ", t-head) + s[t:]
}

// ValueBytes is the most bytes of one shape or list of values that a
// message prints: Value elides the middle of a longer one.
const ValueBytes = 200

// Value is v for a message's arguments: formatted with the message's verb
// as v would be, then elided to ValueBytes bytes (Elide), so that a
// message that prints a shape or a list of values where it is built
// stays a few hundred bytes whatever their length:
// fmt.Errorf("cannot reshape %v", errs.Value(shape)).
func Value(v any) fmt.Formatter { return value{v} }

// value is the fmt.Formatter of Value.
type value struct{ v any }

// Format writes the value as fmt would with the same verb and flags,
// elided.
func (e value) Format(f fmt.State, verb rune) {
	fmt.Fprint(f, Elide(fmt.Sprintf(fmt.FormatString(f, verb), e.v), ValueBytes))
}
