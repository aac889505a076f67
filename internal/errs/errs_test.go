package errs

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestList(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	if (List{}).Err() != nil {
		t.Error("an empty list is an error")
	}
	if err := (List{a}).Err(); err != a {
		t.Errorf("a list of one: %v, want the problem itself", err)
	}
	if got, want := (List{a, b}).Err().Error(), "2 problems:\n\ta\n\tb"; got != want {
		t.Errorf("two problems: %q, want %q", got, want)
	}
	cut := List{a, b, fmt.Errorf("stopped: %w", ErrTooMany)}
	if got, want := cut.Error(), "2 problems, and more:\n\ta\n\tb\n\tstopped: too many problems"; got != want {
		t.Errorf("cut list: %q, want %q", got, want)
	}
	var l List
	if err := fmt.Errorf("ctx: %w", List{a, b}); !errors.As(err, &l) || len(l) != 2 || !errors.Is(err, b) {
		t.Errorf("errors.As/Is do not see the wrapped list: %v", err)
	}
}

func TestOptionError(t *testing.T) {
	sentinel := errors.New("hvp: not positive definite")
	err := fmt.Errorf("audit: %w", Fix([]Option{"hvp.Options.Curvature", "hvp.Options.Damping"}, "%w: eigenvalue -1", sentinel))
	if got, want := err.Error(), "audit: hvp: not positive definite: eigenvalue -1 (hvp.Options.Curvature, hvp.Options.Damping)"; got != want {
		t.Errorf("Error %q, want %q", got, want)
	}
	if !errors.Is(err, sentinel) {
		t.Error("the sentinel is not wrapped")
	}
	var f Fixer
	if !errors.As(err, &f) {
		t.Fatal("no Fixer in the chain")
	}
	upper := Names(func(o Option) string {
		if o == "hvp.Options.Damping" {
			return "--damping"
		}
		return "" // no flag: left out
	})
	if got, want := f.Text(upper), "hvp: not positive definite: eigenvalue -1 (--damping)"; got != want {
		t.Errorf("Text %q, want %q", got, want)
	}
	if got := f.Text(Names(func(Option) string { return "" })); got != "hvp: not positive definite: eigenvalue -1" {
		t.Errorf("Text without advice %q", got)
	}
	if got := Option("blocks.Options.Features").Local(); got != "Options.Features" {
		t.Errorf("Local %q", got)
	}
}

func TestContext(t *testing.T) {
	list := List{errors.New("a"), errors.New("b")}
	err := Wrapf(list, "onnx: %s: ", "m.onnx")
	if got, want := err.Error(), fmt.Errorf("onnx: %s: %w", "m.onnx", list).Error(); got != want {
		t.Errorf("Error() = %q, want fmt.Errorf's %q", got, want)
	}
	var l List
	var c *Context
	if !errors.As(err, &l) || len(l) != 2 || !errors.As(err, &c) || c.Prefix != "onnx: m.onnx: " {
		t.Errorf("errors.As does not find the list and the context in %v", err)
	}
}

func TestElide(t *testing.T) {
	if got := Elide("short", 10); got != "short" {
		t.Errorf("short: %q", got)
	}
	s := "[" + strings.Repeat("1 ", 50_000) + "]: the end"
	got := Elide(s, 300)
	if len(got) > 300 || !strings.HasPrefix(got, "[1 1 1") || !strings.HasSuffix(got, "1 ]: the end") || !strings.Contains(got, "bytes elided") {
		t.Errorf("%d bytes: %q", len(got), got)
	}
	// Whole characters only.
	if got := Elide(strings.Repeat("é", 1000), 100); !utf8.ValidString(got) || len(got) > 100 {
		t.Errorf("%d bytes, valid %v: %q", len(got), utf8.ValidString(got), got)
	}
}

func TestGroup(t *testing.T) {
	l := List{errors.New("3:x"), errors.New("4:y"), errors.New("plain"), errors.New("9:x"), errors.New("12:x")}
	place := func(err error) (string, int, bool) {
		line, key, ok := strings.Cut(err.Error(), ":")
		n, _ := strconv.Atoi(line)
		return key, n, ok
	}
	gs := l.Group(place)
	if len(gs) != 3 || gs[0].Key != "x" || !slices.Equal(gs[0].Lines, []int{3, 9, 12}) || gs[0].First != l[0] ||
		gs[1].Key != "y" || !slices.Equal(gs[1].Lines, []int{4}) || gs[2].First != l[2] || gs[2].Lines != nil {
		t.Errorf("groups %+v", gs)
	}
	for _, c := range []struct {
		lines       []int
		shown, more int
		want        string
	}{
		{[]int{3}, 3, 0, "line 3"},
		{[]int{3, 9}, 3, 0, "lines 3 and 9"},
		{[]int{3, 9, 12}, 3, 0, "lines 3, 9 and 12"},
		{[]int{3, 9, 12, 20}, 3, 0, "lines 3, 9, 12 and 1 more"},
		{[]int{3, 9, 12}, 3, 41, "lines 3, 9, 12 and 41 more"},
		{[]int{3}, 3, 2, "lines 3 and 2 more"},
	} {
		if got := Lines(c.lines, c.shown, c.more); got != c.want {
			t.Errorf("Lines(%v, %d, %d) = %q, want %q", c.lines, c.shown, c.more, got, c.want)
		}
	}
}

// repeated is a Repeated problem for the tests: msg, standing for k more.
type repeated struct {
	msg string
	k   int
}

func (r repeated) Error() string { return r.msg }
func (r repeated) Unlisted() int { return r.k }

// TestRepeated checks that a list counts the occurrences its Repeated
// problems stand for: in its header, on their lines, and in their group.
func TestRepeated(t *testing.T) {
	l := List{repeated{"3:x", 31}, errors.New("4:y"), repeated{"9:x", 0}, repeated{"12:x", 2}}
	want := "37 problems:\n\t3:x (and 31 more like it)\n\t4:y\n\t9:x\n\t12:x (and 2 more like it)"
	if got := l.Error(); got != want {
		t.Errorf("Error %q, want %q", got, want)
	}
	cut := append(l[:2:2], fmt.Errorf("stopped: %w", ErrTooMany))
	if got, want := cut.Header(), "33 problems, and more:"; got != want {
		t.Errorf("cut Header %q, want %q", got, want)
	}
	if got, want := (List{repeated{"3:x", 5}}).Error(), "3:x (and 5 more like it)"; got != want {
		t.Errorf("a list of one: %q, want %q", got, want)
	}
	gs := l.Group(func(err error) (string, int, bool) {
		line, key, ok := strings.Cut(err.Error(), ":")
		n, _ := strconv.Atoi(line)
		return key, n, ok
	})
	if len(gs) != 2 || !slices.Equal(gs[0].Lines, []int{3, 9, 12}) || gs[0].More != 33 || gs[1].More != 0 {
		t.Errorf("groups %+v", gs)
	}
	if got, want := Lines(gs[0].Lines, 3, gs[0].More), "lines 3, 9, 12 and 33 more"; got != want {
		t.Errorf("Lines %q, want %q", got, want)
	}
}

// TestValue checks that Value formats as the verb would, elided: a
// 100,000-dimension shape prints in at most ValueBytes bytes, its
// beginning and end kept; a short one prints whole.
func TestValue(t *testing.T) {
	shape := make([]int, 100_000)
	for i := range shape {
		shape[i] = i % 10
	}
	got := fmt.Sprintf("shape %v has a negative dimension", Value(shape))
	if len(got) > ValueBytes+len("shape  has a negative dimension") || !strings.HasPrefix(got, "shape [0 1 2 3") ||
		!strings.HasSuffix(got, "8 9] has a negative dimension") || !strings.Contains(got, "bytes elided") {
		t.Errorf("%d bytes: %q", len(got), got)
	}
	for _, c := range []struct {
		format string
		v      any
	}{{"%v", []int{2, 3}}, {"%d", []int64{-1, 4}}, {"%q", []string{"a", "b"}}, {"%s", "x"}, {"%5.1f", 2.25}, {"%+v", struct{ A int }{1}}} {
		if got, want := fmt.Sprintf(c.format, Value(c.v)), fmt.Sprintf(c.format, c.v); got != want {
			t.Errorf("%s of %v: %q, want %q", c.format, c.v, got, want)
		}
	}
}
