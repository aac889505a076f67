package datacheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// windows is n windows of 4 rows labelled only on their last row, read
// with the given shift: row t takes the label written on row t+shift.
func windows(n, shift int) *blocks.Dataset {
	d := &blocks.Dataset{File: "w.csv", Features: []string{"x"}, Targets: []string{"y"}}
	for i := range n {
		q := &blocks.Sequence{ID: string(rune('a' + i))}
		for r := range 4 {
			q.X = append(q.X, []float64{float64(r)})
			q.Y = append(q.Y, nil)
		}
		q.Y[3] = []float64{7}
		d.Seqs = append(d.Seqs, q)
	}
	return Shifted(d, shift)
}

// lastRow is a many-to-one model's forecast rows: the last row.
func lastRow(T int) []int { return []int{T - 1} }

// TestUnmatched: one label per window on its last row, a many-to-one
// model: with shift 0 every forecast has a target; with shift 1 none has
// (row 3 takes the label of row 4, which does not exist, and row 2 the
// label of row 3, which is not forecast), an error naming the shift that
// says shift 0 would match the 3 labels.
func TestUnmatched(t *testing.T) {
	if err := Unmatched(windows(3, 0), lastRow); err != nil {
		t.Errorf("shift 0: %v", err)
	}
	err := Unmatched(windows(3, 1), lastRow)
	var oe *errs.OptionError
	if !errors.As(err, &oe) || len(oe.Options) != 1 || oe.Options[0] != blocks.OptShift {
		t.Fatalf("shift 1: %v, want an error naming the shift", err)
	}
	for _, want := range []string{
		"no target of w.csv can be matched to a forecast",
		"the model's output forecasts row 4 of a sequence of 4 rows, and that row has no target in any sequence with shift 1 (row t takes the target written on row t+1), though 3 other rows have one",
		"with shift 0, 3 forecasts would have one",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}
	// A test file without labels, and one whose labels sit where the
	// forecasts are, pass.
	d := windows(2, 0)
	d.Targets = nil
	for _, q := range d.Seqs {
		q.Y = nil
	}
	if err := Unmatched(d, lastRow); err != nil {
		t.Errorf("no labels: %v", err)
	}
}

// TestNoResiduals: every forecast without a leave-one-out residual is an
// error naming the rows on both sides and the shift; one forecast with
// residuals is not.
func TestNoResiduals(t *testing.T) {
	train := windows(3, 0) // labels at row 4 (1-based)
	row := func(i int) int { return 4 }
	test := windows(2, 0)
	test.File = "test.csv"
	err := NoResiduals(train, test, []int{0, 0}, row, lastRow)
	if err == nil || !strings.Contains(err.Error(), "every interval of test.csv would be unbounded: its forecasts are compared with the targets of rows 5 to 5, and no training forecast is compared with a target at any of those rows (those of w.csv are at rows 4 to 4)") {
		t.Errorf("no residuals: %v", err)
	}
	var oe *errs.OptionError
	if !errors.As(err, &oe) || oe.Options[0] != blocks.OptShift {
		t.Errorf("the error does not name the shift: %v", err)
	}
	if err := NoResiduals(train, test, []int{0, 3}, row, lastRow); err != nil {
		t.Errorf("one forecast with residuals: %v", err)
	}
	if err := NoResiduals(train, test, nil, row, lastRow); err != nil {
		t.Errorf("no forecasts: %v", err)
	}
	test.Seqs[0].Context = 2 // continues a training sequence
	if err := NoResiduals(train, test, []int{0, 0}, row, lastRow); err != nil {
		t.Errorf("continued sequences: %v", err)
	}
}

// TestTargetAsInput: windows whose target sits on an extra row after the
// window, with the target value in the feature column too, are found;
// one window whose feature differs from its target clears them, and so
// do fewer than 5 windows.
func TestTargetAsInput(t *testing.T) {
	extra := func(n int) *blocks.Dataset {
		d := windows(n, 0)
		for _, q := range d.Seqs {
			q.X[3] = []float64{7} // the target, fed as the last input
		}
		return d
	}
	if got := TargetAsInput(extra(6), lastRow); got != 6 {
		t.Errorf("6 windows with the target as input: %d", got)
	}
	d := extra(6)
	d.Seqs[4].X[3] = []float64{6.5}
	if got := TargetAsInput(d, lastRow); got != 0 {
		t.Errorf("one window differs: %d", got)
	}
	if got := TargetAsInput(extra(4), lastRow); got != 0 {
		t.Errorf("4 windows: %d", got)
	}
	if got := TargetAsInput(windows(6, 0), lastRow); got != 0 {
		t.Errorf("windows whose inputs are not the target: %d", got)
	}
}
