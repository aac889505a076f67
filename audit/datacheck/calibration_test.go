package datacheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// readCSV reads a data set from text as the command reads a file.
func readCSV(t *testing.T, name, text string) *blocks.Dataset {
	t.Helper()
	d, err := blocks.Read(strings.NewReader(text), name, &blocks.Options{OptionalTargets: true})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCalibrationOverlap: a calibration set that shares an id or a
// sequence with the training data, or a sequence with the test data, is
// an error that names the calibration file, the line and the other file;
// an unlabelled calibration set, a missing test set and other columns
// are errors too; disjoint files pass.
func TestCalibrationOverlap(t *testing.T) {
	train := readCSV(t, "train.csv", "id,t,x,y\na,1,1,2\na,2,2,3\nb,1,5,1\nb,2,6,2\n")
	test := readCSV(t, "test.csv", "id,t,x,y\nk,1,9,2\nk,2,9,3\n")
	for _, tc := range []struct {
		name, cal string
		test      *blocks.Dataset
		want      []string // in the message
		overlap   bool
	}{
		{"same id", "id,t,x,y\nc,1,0,0\nb,1,7,1\nb,2,8,2\n", test,
			[]string{`cal.csv:3: calibration sequence "b" has the id of a training sequence (train.csv line 4)`, "held out from training"}, true},
		{"same rows", "id,t,x,y\nz,1,5,0\nz,2,6,0\n", test,
			[]string{`cal.csv:2: calibration sequence "z" has the same steps and features as training sequence "b" (train.csv line 4)`}, true},
		{"two overlaps", "id,t,x,y\na,1,0,0\nb,1,0,0\n", test,
			[]string{`calibration sequence "a"`, "and 1 more calibration sequences overlap"}, true},
		{"test rows", "id,t,x,y\nq,2,9,0\nq,1,9,5\n", test,
			[]string{`calibration sequence "q" has the same steps and features as test sequence "k" (test.csv line 2)`, "must be different sequences"}, true},
		{"unlabelled", "id,t,x\nc,1,0\n", test, []string{"cal.csv:1:", "no target column"}, false},
		{"no test", "id,t,x,y\nc,1,0,0\n", nil, []string{"needs test data"}, false},
		{"other features", "id,t,w,y\nc,1,0,0\n", test, []string{"cal.csv:1:", "feature"}, false},
	} {
		cal := readCSV(t, "cal.csv", tc.cal)
		err := Calibration(train, tc.test, cal, false)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
		if got := errors.Is(err, ErrCalibrationOverlap); got != tc.overlap {
			t.Errorf("%s: errors.Is(err, ErrCalibrationOverlap) = %v", tc.name, got)
		}
	}
	// Same id as a test sequence with other rows is allowed (files often
	// number their sequences from 1), and so are disjoint files.
	if err := Calibration(train, test, readCSV(t, "cal.csv", "id,t,x,y\nk,1,0,0\nc,2,1,1\n"), false); err != nil {
		t.Errorf("disjoint: %v", err)
	}
}
