package errs

import (
	"errors"
	"fmt"
	"testing"
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
