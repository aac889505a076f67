package blocks

import (
	"errors"
	"strings"
	"testing"
)

// mustRead reads src or fails the test.
func mustRead(t *testing.T, name, src string, opts *Options) *Dataset {
	t.Helper()
	d, err := Read(strings.NewReader(src), name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCheckFeatures(t *testing.T) {
	t.Parallel()
	d := mustRead(t, "train.csv", "id,t,x1,x2,y\nA,0,1,2,3\n", nil)
	if err := d.CheckFeatures(2); err != nil {
		t.Errorf("CheckFeatures(2) = %v, want nil", err)
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{3, "train.csv:1: the model takes 3 features, the file has 2 feature columns (x1, x2): choose the feature columns (Options.Features)"},
		{1, "train.csv:1: the model takes 1 feature, the file has 2 feature columns (x1, x2): choose the feature columns (Options.Features)"},
	} {
		err := d.CheckFeatures(tc.n)
		if err == nil || err.Error() != tc.want {
			t.Errorf("CheckFeatures(%d) = %v, want %q", tc.n, err, tc.want)
			continue
		}
		if de, ok := errors.AsType[*DataError](err); !ok || !errors.Is(err, ErrFeatures) || de.Line != 1 {
			t.Errorf("CheckFeatures(%d) = %#v: want a *DataError on line 1 wrapping ErrFeatures", tc.n, err)
		}
	}
}

func TestCheckCompatible(t *testing.T) {
	t.Parallel()
	train := mustRead(t, "train.csv", "id,t,x1,x2,y\nA,0,1,2,3\n", nil)
	for _, tc := range []struct {
		name string
		src  string
		opts *Options
		is   error    // nil: compatible
		msg  []string // substrings of the message
	}{
		{"same columns", "id,t,x1,x2,y\nB,0,1,2,3\n", nil, nil, nil},
		{"same columns, no targets", "id,t,x1,x2\nB,0,1,2\n", &Options{OptionalTargets: true}, nil, nil},
		{"columns in another file order, read with the training features",
			"x2,id,x1,t\n2,B,1,0\n", &Options{Features: []string{"x1", "x2"}, OptionalTargets: true}, nil, nil},
		{"another order", "id,t,x2,x1\nB,0,1,2\n", &Options{OptionalTargets: true},
			ErrFeatures, []string{"test.csv:1: the file has the feature columns of train.csv in another order (x2, x1)", "(x1, x2), in that order"}},
		{"a feature missing", "id,t,x1\nB,0,1\n", &Options{OptionalTargets: true},
			ErrFeatures, []string{"the file lacks feature column x2 of train.csv"}},
		{"extra features", "id,t,x1,x2,x3,x4\nB,0,1,2,3,4\n", &Options{OptionalTargets: true},
			ErrFeatures, []string{"the file has feature columns x3, x4 that train.csv does not have"}},
		{"other features", "id,t,x1,x3\nB,0,1,2\n", &Options{OptionalTargets: true},
			ErrFeatures, []string{"lacks feature column x2 of train.csv and has x3 instead"}},
		{"other target", "id,t,x1,x2,z\nB,0,1,2,3\n", &Options{Targets: []string{"z"}},
			ErrTargets, []string{"the file has target column z, train.csv has y", "(Options.Targets)"}},
		{"other shift", "id,t,x1,x2,y\nB,0,1,2,3\n", &Options{Shift: 1},
			ErrTargets, []string{"shift 1, train.csv with shift 0", "(Options.Shift)"}},
	} {
		test := mustRead(t, "test.csv", tc.src, tc.opts)
		err := CheckCompatible(train, test)
		if tc.is == nil {
			if err != nil {
				t.Errorf("%s: %v, want nil", tc.name, err)
			}
			continue
		}
		de, ok := errors.AsType[*DataError](err)
		if !ok || !errors.Is(err, tc.is) || de.File != "test.csv" || de.Line != 1 {
			t.Errorf("%s: error %#v, want a *DataError about test.csv line 1 wrapping %v", tc.name, err, tc.is)
			continue
		}
		for _, s := range tc.msg {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, s)
			}
		}
	}
}

func TestErrorListErr(t *testing.T) {
	t.Parallel()
	if err := (ErrorList{}).Err(); err != nil {
		t.Errorf("empty list: Err() = %v, want nil", err)
	}
	one := &DataError{File: "f.csv", Line: 2, Column: "x", Err: ErrMissing}
	if err := (ErrorList{one}).Err(); err != one {
		t.Errorf("list of one: Err() = %#v, want the error itself", err)
	}
	two := ErrorList{one, &DataError{File: "f.csv", Err: ErrNoRows}}
	if err := two.Err(); err == nil || err.Error() != "2 problems:\n\tf.csv:2: column \"x\": missing value\n\tf.csv: no data rows" {
		t.Errorf("list of two: Err() = %q", err)
	}
	if got := (&DataError{File: "f.csv", Line: 3}).Error(); got != "f.csv:3: unknown problem" {
		t.Errorf("DataError without Err: %q", got)
	}
}
