package blocks

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// rows is a short way to write [][]float64 in tables; nil entries are
// rows without a target.
type rows = [][]float64

func TestRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		file string // a file in testdata, or
		src  string // the file's text
		opts *Options
		want *Dataset
	}{
		{
			name: "default columns, rows in any order, variable lengths",
			file: "basic.csv",
			want: &Dataset{
				File: "testdata/basic.csv", IDCol: "id", TimeCol: "t",
				Features: []string{"x1", "x2"}, Targets: []string{"y"},
				Seqs: []*Sequence{
					{ID: "B", Steps: []float64{0.5, 2}, Lines: []int{5, 2},
						X: rows{{0.25, 0.75}, {0.5, 1}}, Y: rows{{9}, {10}}},
					{ID: "A", Steps: []float64{0, 5, 10}, Lines: []int{3, 6, 4},
						X: rows{{1, 2}, {1.25, 2.25}, {1.5, 2.5}}, Y: rows{{3}, {3.25}, {3.5}}},
					{ID: "C", Steps: []float64{1}, Lines: []int{7},
						X: rows{{7, 8}}, Y: rows{{9}}},
				},
			},
		},
		{
			name: "chosen columns in another order, numeric ids, a text column left out",
			file: "custom.csv",
			opts: &Options{IDCol: "patient", TimeCol: "day", Targets: []string{"outcome"},
				Features: []string{"insulin", " glucose "}},
			want: &Dataset{
				File: "testdata/custom.csv", IDCol: "patient", TimeCol: "day",
				Features: []string{"insulin", "glucose"}, Targets: []string{"outcome"},
				Seqs: []*Sequence{
					{ID: "101", Steps: []float64{1, 2, 3}, Lines: []int{3, 2, 5},
						X: rows{{0, 5.25}, {1, 5.5}, {0.5, 6.5}}, Y: rows{{6}, {6.25}, {7}}},
					{ID: "102", Steps: []float64{1}, Lines: []int{4}, X: rows{{2, 7}}, Y: rows{{7.5}}},
				},
			},
		},
		{
			name: "BOM, CRLF, quotes, spaces, blank line",
			file: "messy.csv",
			want: &Dataset{
				File: "testdata/messy.csv", IDCol: "id", TimeCol: "t",
				Features: []string{"x"}, Targets: []string{"y"},
				Seqs: []*Sequence{
					{ID: "Smith, J", Steps: []float64{0, 1}, Lines: []int{3, 2},
						X: rows{{1.5}, {2.5}}, Y: rows{{2}, {3}}},
					{ID: `O"Brien`, Steps: []float64{0}, Lines: []int{4}, X: rows{{-1e-3}}, Y: rows{{4}}},
				},
			},
		},
		{
			name: "test file without targets",
			file: "unlabelled.csv",
			opts: &Options{OptionalTargets: true},
			want: &Dataset{
				File: "testdata/unlabelled.csv", IDCol: "id", TimeCol: "t",
				Features: []string{"x1", "x2"},
				Seqs: []*Sequence{
					{ID: "A", Steps: []float64{0, 1}, Lines: []int{2, 3}, X: rows{{1, 2}, {3, 4}}},
					{ID: "B", Steps: []float64{0}, Lines: []int{4}, X: rows{{5, 6}}},
				},
			},
		},
		{
			name: "optional targets present",
			file: "basic.csv",
			opts: &Options{OptionalTargets: true, Features: []string{"x2"}},
			want: &Dataset{
				File: "testdata/basic.csv", IDCol: "id", TimeCol: "t",
				Features: []string{"x2"}, Targets: []string{"y"},
				Seqs: []*Sequence{
					{ID: "B", Steps: []float64{0.5, 2}, Lines: []int{5, 2}, X: rows{{0.75}, {1}}, Y: rows{{9}, {10}}},
					{ID: "A", Steps: []float64{0, 5, 10}, Lines: []int{3, 6, 4},
						X: rows{{2}, {2.25}, {2.5}}, Y: rows{{3}, {3.25}, {3.5}}},
					{ID: "C", Steps: []float64{1}, Lines: []int{7}, X: rows{{8}}, Y: rows{{9}}},
				},
			},
		},
		{
			name: "shift 1: the current value is the feature, the next one the target",
			file: "forecast.csv",
			opts: &Options{Features: []string{"y"}, Shift: 1},
			want: &Dataset{
				File: "testdata/forecast.csv", IDCol: "id", TimeCol: "t",
				Features: []string{"y"}, Targets: []string{"y"}, Shift: 1,
				Seqs: []*Sequence{
					{ID: "a", Steps: []float64{1, 2, 3}, Lines: []int{2, 3, 4},
						X: rows{{10}, {11}, {12}}, Y: rows{{11}, {12}, nil}, Head: rows{{10}}},
					{ID: "b", Steps: []float64{1, 2}, Lines: []int{5, 6}, X: rows{{20}, {21}}, Y: rows{{21}, nil}, Head: rows{{20}}},
				},
			},
		},
		{
			name: "shift -1 and the step column as a feature",
			file: "forecast.csv",
			opts: &Options{Features: []string{"t"}, Shift: -1},
			want: &Dataset{
				File: "testdata/forecast.csv", IDCol: "id", TimeCol: "t",
				Features: []string{"t"}, Targets: []string{"y"}, Shift: -1,
				Seqs: []*Sequence{
					{ID: "a", Steps: []float64{1, 2, 3}, Lines: []int{2, 3, 4},
						X: rows{{1}, {2}, {3}}, Y: rows{nil, {10}, {11}}},
					{ID: "b", Steps: []float64{1, 2}, Lines: []int{5, 6}, X: rows{{1}, {2}}, Y: rows{nil, {20}}},
				},
			},
		},
		{
			name: "shift longer than a sequence",
			src:  "id,t,x,y\nA,0,1,2\nB,0,3,4\nB,1,5,6\nB,2,7,8\n",
			opts: &Options{Shift: 2},
			want: &Dataset{
				File: "in.csv", IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"}, Shift: 2,
				Seqs: []*Sequence{
					{ID: "A", Steps: []float64{0}, Lines: []int{2}, X: rows{{1}}, Y: rows{nil}, Head: rows{{2}}},
					{ID: "B", Steps: []float64{0, 1, 2}, Lines: []int{3, 4, 5}, X: rows{{3}, {5}, {7}}, Y: rows{{8}, nil, nil}, Head: rows{{4}, {6}}},
				},
			},
		},
		{
			name: "two targets, negative and decimal steps, spaces in names",
			src:  " y2 , x , t , id , y1 \n7,1,-0.5,s,8\n9,2,-1.5,s,10\n",
			opts: &Options{Targets: []string{"y1", "y2"}},
			want: &Dataset{
				File: "in.csv", IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y1", "y2"},
				Seqs: []*Sequence{
					{ID: "s", Steps: []float64{-1.5, -0.5}, Lines: []int{3, 2}, X: rows{{2}, {1}}, Y: rows{{10, 9}, {8, 7}}},
				},
			},
		},
		{
			name: "CRLF, leading blank lines, a quoted field over two lines",
			src:  "\r\n\r\nid,t,x,y\r\n\"a\r\nb\",1,2,3\r\n\"a\r\nb\",0,4,5\r\n",
			want: &Dataset{
				File: "in.csv", IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"},
				Seqs: []*Sequence{
					{ID: "a\nb", Steps: []float64{0, 1}, Lines: []int{6, 4}, X: rows{{4}, {2}}, Y: rows{{5}, {3}}},
				},
			},
		},
		{
			name: "empty target cells: no label on those rows (one label per window)",
			src:  "id,t,x,y\nw1,0,1,\nw1,1,2, \nw1,2,3,7\nw2,0,4,\"\"\nw2,1,5,\nw2,2,6,8\n",
			want: &Dataset{
				File: "in.csv", IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"},
				Seqs: []*Sequence{
					{ID: "w1", Steps: []float64{0, 1, 2}, Lines: []int{2, 3, 4}, X: rows{{1}, {2}, {3}}, Y: rows{nil, nil, {7}}},
					{ID: "w2", Steps: []float64{0, 1, 2}, Lines: []int{5, 6, 7}, X: rows{{4}, {5}, {6}}, Y: rows{nil, nil, {8}}},
				},
			},
		},
		{
			name: "empty target cells with a shift: the label moves with its row",
			src:  "id,t,x,y\nA,0,1,10\nA,1,2,\nA,2,3,30\nA,3,4,40\n",
			opts: &Options{Shift: 1},
			want: &Dataset{
				File: "in.csv", IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"}, Shift: 1,
				Seqs: []*Sequence{
					{ID: "A", Steps: []float64{0, 1, 2, 3}, Lines: []int{2, 3, 4, 5}, X: rows{{1}, {2}, {3}, {4}}, Y: rows{nil, {30}, {40}, nil}, Head: rows{{10}}},
				},
			},
		},
		{
			name: "two targets, both empty: no label",
			src:  "id,t,x,y1,y2\nA,0,1,,\nA,1,2,5,6\n",
			opts: &Options{Targets: []string{"y1", "y2"}},
			want: &Dataset{
				File: "in.csv", IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y1", "y2"},
				Seqs: []*Sequence{
					{ID: "A", Steps: []float64{0, 1}, Lines: []int{2, 3}, X: rows{{1}, {2}}, Y: rows{nil, {5, 6}}},
				},
			},
		},
		{
			name: "ids that look like numbers stay text",
			src:  "id,t,x,y\n7,0,1,1\n07,0,2,2\n7.0,0,3,3\n",
			want: &Dataset{
				File: "in.csv", IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"},
				Seqs: []*Sequence{
					{ID: "7", Steps: []float64{0}, Lines: []int{2}, X: rows{{1}}, Y: rows{{1}}},
					{ID: "07", Steps: []float64{0}, Lines: []int{3}, X: rows{{2}}, Y: rows{{2}}},
					{ID: "7.0", Steps: []float64{0}, Lines: []int{4}, X: rows{{3}}, Y: rows{{3}}},
				},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *Dataset
			var err error
			if tc.file != "" {
				got, err = ReadFile(filepath.Join("testdata", tc.file), tc.opts)
			} else {
				got, err = Read(strings.NewReader(tc.src), "in.csv", tc.opts)
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", dump(got), dump(tc.want))
			}
			checkDataset(t, got)
		})
	}
}

// dump prints a dataset for failure messages.
func dump(d *Dataset) string {
	var b strings.Builder
	fmt.Fprintf(&b, "file %q id %q time %q features %q targets %q shift %d\n",
		d.File, d.IDCol, d.TimeCol, d.Features, d.Targets, d.Shift)
	for _, s := range d.Seqs {
		fmt.Fprintf(&b, "  %q steps %v lines %v X %v Y %v head %v\n", s.ID, s.Steps, s.Lines, s.X, s.Y, s.Head)
	}
	return b.String()
}

// checkDataset checks the invariants every dataset from Read satisfies.
func checkDataset(t *testing.T, d *Dataset) {
	t.Helper()
	if len(d.Seqs) == 0 || len(d.Features) == 0 {
		t.Fatalf("dataset with %d sequences and %d features", len(d.Seqs), len(d.Features))
	}
	ids := map[string]bool{}
	for _, s := range d.Seqs {
		if ids[s.ID] || s.ID == "" {
			t.Errorf("id %q empty or repeated", s.ID)
		}
		ids[s.ID] = true
		n := s.Len()
		if n == 0 || len(s.Steps) != n || len(s.Lines) != n {
			t.Fatalf("sequence %q: %d rows, %d steps, %d lines", s.ID, n, len(s.Steps), len(s.Lines))
		}
		if d.Labelled() != (s.Y != nil) || (s.Y != nil && len(s.Y) != n) {
			t.Errorf("sequence %q: Y has %d rows, labelled %v", s.ID, len(s.Y), d.Labelled())
		}
		for r := range n {
			if r > 0 && !(s.Steps[r-1] < s.Steps[r]) {
				t.Errorf("sequence %q: steps %v not increasing", s.ID, s.Steps)
			}
			if len(s.X[r]) != len(d.Features) {
				t.Errorf("sequence %q row %d: %d features, want %d", s.ID, r, len(s.X[r]), len(d.Features))
			}
			// A row whose shifted target row is outside the sequence has
			// no target; one inside has it unless the file's target
			// cells there are empty (no label).
			inRange := d.Labelled() && r+d.Shift >= 0 && r+d.Shift < n
			if s.HasTarget(r) && !inRange {
				t.Errorf("sequence %q row %d: a target, though row %d is outside the sequence", s.ID, r, r+d.Shift)
			}
			if s.HasTarget(r) && len(s.Y[r]) != len(d.Targets) {
				t.Errorf("sequence %q row %d: %d targets, want %d", s.ID, r, len(s.Y[r]), len(d.Targets))
			}
		}
	}
}

func TestDatasetHelpers(t *testing.T) {
	t.Parallel()
	d, err := ReadFile("testdata/basic.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Len(); got != 3 {
		t.Errorf("Len = %d, want 3", got)
	}
	if got := d.MaxLen(); got != 3 {
		t.Errorf("MaxLen = %d, want 3", got)
	}
	if got := d.Rows(); got != 6 {
		t.Errorf("Rows = %d, want 6", got)
	}
	if !d.Labelled() {
		t.Error("Labelled = false, want true")
	}
	s := d.Seqs[0]
	for r, want := range []bool{false, true, true, false} {
		if got := s.HasTarget(r - 1); got != want {
			t.Errorf("HasTarget(%d) = %v, want %v", r-1, got, want)
		}
	}
	if got := (&Dataset{}).MaxLen(); got != 0 {
		t.Errorf("empty MaxLen = %d, want 0", got)
	}
}

// wantErr describes the first problem of an error.
type wantErr struct {
	is     []error // sentinels the error wraps
	line   int
	column string
	msg    []string // substrings of the message: what is wrong and what to do
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  string
		opts *Options
		want wantErr
	}{
		{"empty file", "", nil,
			wantErr{[]error{ErrEmptyFile}, 0, "", []string{"bad.csv: the file is empty", "header line", "id,t,x1,y"}}},
		{"byte order mark only", "\ufeff", nil,
			wantErr{[]error{ErrEmptyFile}, 0, "", []string{"empty"}}},
		{"blank lines only", "\n\r\n\n", nil,
			wantErr{[]error{ErrEmptyFile}, 0, "", []string{"empty"}}},
		{"header only", "id,t,x,y\n", nil,
			wantErr{[]error{ErrNoRows}, 1, "", []string{"bad.csv:1: no data rows", "only the header", "id, t, x, y"}}},
		{"missing target column", "id,t,x1,x2\nA,0,1,2\n", nil,
			wantErr{[]error{ErrColumn}, 1, "y", []string{`bad.csv:1: column "y": no such column`, "the file has id, t, x1, x2", "(Options.Targets)"}}},
		{"missing id column, other case", "ID,t,x,y\nA,0,1,2\n", nil,
			wantErr{[]error{ErrColumn}, 1, "id", []string{`did you mean "ID"?`, "(Options.IDCol)"}}},
		{"missing time column", "id,time,x,y\nA,0,1,2\n", nil,
			wantErr{[]error{ErrColumn}, 1, "t", []string{"no such column", "id, time, x, y", "(Options.TimeCol)"}}},
		{"missing chosen feature", "id,t,x,y\nA,0,1,2\n", &Options{Features: []string{"x", "z"}},
			wantErr{[]error{ErrColumn}, 1, "z", []string{"no such column", "(Options.Features)"}}},
		{"missing one of two targets, targets optional", "id,t,x,y1\nA,0,1,2\n", &Options{Targets: []string{"y1", "y2"}, OptionalTargets: true},
			wantErr{[]error{ErrColumn}, 1, "y2", []string{"no such column", "(Options.Targets)"}}},
		{"header after blank lines", "\n\nid,t,x\nA,0,1\n", nil,
			wantErr{[]error{ErrColumn}, 3, "y", []string{"bad.csv:3:"}}},
		{"duplicate header name", "id,t,x,x,y\nA,0,1,2,3\n", nil,
			wantErr{[]error{ErrColumn}, 1, "x", []string{"two columns", "fields 3 and 4", "rename"}}},
		{"trailing comma in the header", "id,t,x,y,\nA,0,1,2,\n", nil,
			wantErr{[]error{ErrColumn}, 1, "", []string{"field 5 of the header is empty", "trailing comma", "(Options.Features)"}}},
		{"no feature column", "id,t,y\nA,0,1\n", nil,
			wantErr{[]error{ErrColumn}, 1, "", []string{"no feature column", "(Options.Features)"}}},
		{"target as feature without shift", "id,t,x,y\nA,0,1,2\n", &Options{Features: []string{"x", "y"}},
			wantErr{[]error{ErrColumn}, 1, "y", []string{"both a feature and the target", "shift the target by 1 row", "(Options.Features, Options.Shift)"}}},
		{"id as feature", "id,t,x,y\nA,0,1,2\n", &Options{Features: []string{"id"}},
			wantErr{[]error{ErrColumn}, 1, "id", []string{"id column cannot be a feature"}}},
		{"feature named twice", "id,t,x,y\nA,0,1,2\n", &Options{Features: []string{"x", "x"}},
			wantErr{[]error{ErrColumn}, 1, "x", []string{"twice", "(Options.Features)"}}},
		{"id and time the same column", "id,t,x,y\nA,0,1,2\n", &Options{IDCol: "t"},
			wantErr{[]error{ErrColumn}, 1, "t", []string{"the same column is the id and the step column"}}},
		{"target is the step column", "id,t,x,y\nA,0,1,2\n", &Options{Targets: []string{"t"}},
			wantErr{[]error{ErrColumn}, 1, "t", []string{"the step column cannot be a target"}}},
		{"empty feature name in options", "id,t,x,y\nA,0,1,2\n", &Options{Features: []string{"x", " "}},
			wantErr{[]error{ErrColumn}, 0, "", []string{"bad.csv: feature column 2 of 2 has an empty name", "(Options.Features)"}}},
		{"semicolons", "id;t;x;y\nA;0;1,5;2\n", nil,
			wantErr{[]error{ErrSyntax}, 1, "", []string{`single field "id;t;x;y"`, "comma-separated files only"}}},
		{"non-numeric feature", "id,t,x,y\nA,0,1,2\nA,1,abc,3\n", nil,
			wantErr{[]error{ErrNumber}, 3, "x", []string{`bad.csv:3: column "x": "abc" is not a number`, "such as 1.5", "(Options.Features)"}}},
		{"non-numeric chosen feature", "id,t,x,y\nA,1,abc,3\n", &Options{Features: []string{"x"}},
			wantErr{[]error{ErrNumber}, 2, "x", []string{`"abc" is not a number: write a number such as 1.5 or -2e-3`}}},
		{"decimal comma", "id,t,x,y\nA,0,\"1,5\",2\n", nil,
			wantErr{[]error{ErrNumber}, 2, "x", []string{`"1,5" is not a number`, "decimal separator as a point"}}},
		{"NaN target", "id,t,x,y\nA,0,1,NaN\n", nil,
			wantErr{[]error{ErrMissing}, 2, "y", []string{`missing value "NaN"`, "leave the cell empty if the row has no label", "does not impute", "leave out the target columns"}}},
		{"NA feature", "id,t,x,y\nA,0, NA ,1\n", nil,
			wantErr{[]error{ErrMissing}, 2, "x", []string{`missing value "NA"`, "fill it in"}}},
		{"empty feature cell", "id,t,x1,x2,y\nA,0,1,,1\n", nil,
			wantErr{[]error{ErrMissing}, 2, "x2", []string{"empty cell", "fill it in"}}},
		{"one of two targets empty", "id,t,x,y1,y2\nA,0,1,\"  \",3\n", &Options{Targets: []string{"y1", "y2"}},
			wantErr{[]error{ErrMissing}, 2, "y1", []string{"empty cell, while 1 of the row's 2 target columns hold a value", "in none (no label here)"}}},
		{"infinite feature", "id,t,x,y\nA,0,-Inf,1\n", nil,
			wantErr{[]error{ErrNumber}, 2, "x", []string{`"-Inf" is infinite`}}},
		{"out of range", "id,t,x,y\nA,0,1e999,1\n", nil,
			wantErr{[]error{ErrNumber}, 2, "x", []string{`"1e999" is out of the range`}}},
		{"empty id", "id,t,x,y\n ,0,1,1\n", nil,
			wantErr{[]error{ErrMissing}, 2, "id", []string{"every row needs a sequence id"}}},
		{"empty row", "id,t,x,y\nA,0,1,1\n, ,,\n", nil,
			wantErr{[]error{ErrMissing}, 3, "", []string{"bad.csv:3: the row is empty (4 empty fields): delete it"}}},
		{"empty step", "id,t,x,y\nA,,1,1\n", nil,
			wantErr{[]error{ErrMissing}, 2, "t", []string{"every row needs a step"}}},
		{"date as step", "id,t,x,y\nA,2024-01-05,1,1\n", nil,
			wantErr{[]error{ErrNumber}, 2, "t", []string{`"2024-01-05" is not a number`, "convert dates"}}},
		{"NaN step", "id,t,x,y\nA,nan,1,1\n", nil,
			wantErr{[]error{ErrMissing}, 2, "t", []string{`missing value "nan"`}}},
		{"duplicate step", "id,t,x,y\nA,3,1,1\nB,3,1,1\nA,1,1,1\nA,3.0,2,2\n", nil,
			wantErr{[]error{ErrDuplicateStep}, 5, "t", []string{`bad.csv:5: column "t": step 3 of sequence "A" is also on line 2`, "must be unique"}}},
		{"ragged row", "id,t,x,y\nA,0,1,1\nA,1,2\n", nil,
			wantErr{[]error{ErrSyntax, csv.ErrFieldCount}, 3, "", []string{"bad.csv:3: the row has 3 fields, the header has 4 (id, t, x, y)", "one value per column"}}},
		{"long row", "id,t,x,y\nA,0,1,1,5\n", nil,
			wantErr{[]error{ErrSyntax, csv.ErrFieldCount}, 2, "", []string{"5 fields"}}},
		{"bare quote", "id,t,x,y\nA,0,1\"2,1\n", nil,
			wantErr{[]error{ErrSyntax, csv.ErrBareQuote}, 2, "", []string{"malformed CSV at byte 6 of line 2", "quote the whole field"}}},
		{"unclosed quote", "id,t,x,y\nA,0,1,1\n\"A,1,2,2\nA,2,3,3\n", nil,
			wantErr{[]error{ErrSyntax, csv.ErrQuote}, 3, "", []string{"bad.csv:3:", "found on line 4", "not closed"}}},
		{"bad quote in header", "id,\"t\"x,x,y\nA,0,1,1\n", nil,
			wantErr{[]error{ErrSyntax, csv.ErrQuote}, 1, "", []string{"malformed CSV"}}},
		{"line of a field after a multi-line field", "id,t,x,y\n\"a\nb\",0,,1\n", nil,
			wantErr{[]error{ErrMissing}, 3, "x", []string{"bad.csv:3:", "empty cell"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := Read(strings.NewReader(tc.src), "bad.csv", tc.opts)
			if err == nil {
				t.Fatalf("no error; got\n%s", dump(d))
			}
			if d != nil {
				t.Errorf("got a dataset with the error %v", err)
			}
			checkErr(t, err, tc.want)
		})
	}
}

// checkErr checks the first problem of err against want.
func checkErr(t *testing.T, err error, want wantErr) {
	t.Helper()
	de, ok := errors.AsType[*DataError](err)
	if !ok {
		t.Fatalf("error %q (%T) is not a *DataError", err, err)
	}
	if de.File != "bad.csv" || de.Line != want.line || de.Column != want.column {
		t.Errorf("error %q at file %q line %d column %q, want bad.csv line %d column %q",
			err, de.File, de.Line, de.Column, want.line, want.column)
	}
	for _, s := range want.is {
		if !errors.Is(err, s) {
			t.Errorf("error %q does not wrap %q", err, s)
		}
	}
	for _, s := range want.msg {
		if !strings.Contains(de.Error(), s) {
			t.Errorf("error %q does not say %q", de, s)
		}
	}
}

func TestReadErrorList(t *testing.T) {
	t.Parallel()
	src := strings.Join([]string{
		"id,t,x,y",
		"A,0,1,1",
		"A,1,zz,1",    // line 3: x not a number
		"A,0,2,2",     // line 4: duplicate of line 2
		"B,0,,NaN",    // line 5: x empty (first problem of the row only)
		"B,1,2",       // line 6: ragged
		"B,2,1,1e999", // line 7: out of range
	}, "\n")
	_, err := Read(strings.NewReader(src), "bad.csv", nil)
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %q (%T) is not an ErrorList", err, err)
	}
	want := []struct {
		line   int
		column string
		is     error
	}{
		{3, "x", ErrNumber},
		{4, "t", ErrDuplicateStep},
		{5, "x", ErrMissing},
		{6, "", ErrSyntax},
		{7, "y", ErrNumber},
	}
	if len(list) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(list), len(want), err)
	}
	des := asDataErrors(t, list)
	for i, w := range want {
		e := des[i]
		if e.Line != w.line || e.Column != w.column || !errors.Is(e, w.is) || e.File != "bad.csv" {
			t.Errorf("problem %d = %q, want line %d column %q wrapping %q", i, e, w.line, w.column, w.is)
		}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "5 problems:\n\tbad.csv:3: ") || strings.Count(msg, "\n\t") != 5 {
		t.Errorf("message %q: want 5 problems, one per line", msg)
	}
	if !errors.Is(err, ErrMissing) || !errors.Is(err, csv.ErrFieldCount) {
		t.Errorf("errors.Is does not look into the list %q", err)
	}
}

// TestReadTooManyErrors checks the limit on the problems listed: past
// MaxErrors, a problem the list already holds (the same column and
// message) is counted in its first problem's More and reading goes on to
// the end of the file; the first other problem stops the reading, which
// the list's last problem (wrapping ErrTooMany) says, at its line.
func TestReadTooManyErrors(t *testing.T) {
	t.Parallel()
	var same strings.Builder
	same.WriteString("id,t,x,y\n")
	for i := range 30 {
		fmt.Fprintf(&same, "A,%d,bad,1\n", i) // lines 2..31, one problem
	}
	// Then another problem at line 32: the reading, gone through the
	// repeated problem, stops there unless the limit holds it too.
	other := same.String() + "A,30,,1\n"
	for _, tc := range []struct {
		file       string
		max, kept  int // kept: problems listed before the last
		cut        bool
		more, want int // more: the first problem's More; want: the header's count
	}{
		{same.String(), 0, DefaultMaxErrors, false, 30 - DefaultMaxErrors, 30},
		{same.String(), 1, 1, false, 29, 30},
		{same.String(), 3, 3, false, 27, 30},
		{same.String(), 30, 30, false, 0, 30},
		{same.String(), 100, 30, false, 0, 30},
		{other, 3, 3, true, 27, 30},
		{other, 30, 30, true, 0, 30},
		{other, 31, 31, false, 0, 31},
	} {
		name := fmt.Sprintf("max %d, %d bytes", tc.max, len(tc.file))
		_, err := Read(strings.NewReader(tc.file), "bad.csv", &Options{MaxErrors: tc.max})
		var list ErrorList
		if !errors.As(err, &list) {
			t.Fatalf("%s: error %q is not an ErrorList", name, err)
		}
		n := tc.kept
		if tc.cut {
			n++
		}
		if len(list) != n {
			t.Fatalf("%s: %d errors, want %d", name, len(list), n)
		}
		des := asDataErrors(t, list)
		for i, e := range des[:min(tc.kept, 30)] {
			want := 0
			if i == 0 {
				want = tc.more
			}
			if e.Line != i+2 || !errors.Is(e, ErrNumber) || e.More != want {
				t.Errorf("%s: problem %d = %q (more %d), want line %d, more %d", name, i, e, e.More, i+2, want)
			}
		}
		last := des[len(des)-1]
		if got := errors.Is(last, ErrTooMany); got != tc.cut {
			t.Errorf("%s: last error %q wraps ErrTooMany: %v, want %v", name, last, got, tc.cut)
		}
		header := fmt.Sprintf("%d problems:", tc.want)
		if tc.cut {
			header = fmt.Sprintf("%d problems, and more:", tc.want)
			if last.Line != 32 || !strings.Contains(last.Error(), fmt.Sprintf("stopped after %d problems", tc.kept)) {
				t.Errorf("%s: last error %q, want line 32", name, last)
			}
		}
		if msg := err.Error(); !strings.HasPrefix(msg, header+"\n") && msg != des[0].Error()+fmt.Sprintf(" (and %d more like it)", tc.more) {
			t.Errorf("%s: message starts %.60q, want %q", name, msg, header)
		}
	}

	// The duplicate steps, found after the rows, may come before the
	// problems kept: the list keeps the first by line and stops at the
	// next (the fuzzer's testdata/fuzz/FuzzRead/5cb614fd409db67b).
	_, err := Read(strings.NewReader("id,t,x,y\na,0,1,1\na,0,1,1\na,1,1,2\na,5,x,1\n"), "dup.csv", &Options{MaxErrors: 1})
	var dup ErrorList
	if !errors.As(err, &dup) || len(dup) != 2 || !errors.Is(dup[0], ErrDuplicateStep) || asDataErrors(t, dup)[0].Line != 3 ||
		!errors.Is(dup[1], ErrTooMany) || asDataErrors(t, dup)[1].Line != 5 {
		t.Errorf("duplicate step first: %v, want line 3's, then the stop at line 5", err)
	}

	// A file with a different problem on every line stops at the first
	// beyond the limit: 30 bad lines, then 2 MiB of good ones that it
	// does not read.
	var distinct strings.Builder
	distinct.WriteString("id,t,x,y\n")
	for i := range 30 {
		fmt.Fprintf(&distinct, "A,%d,bad%d,1\n", i, i)
	}
	for i := 30; distinct.Len() < 2<<20; i++ {
		fmt.Fprintf(&distinct, "A,%d,1,1\n", i)
	}
	r := &countingReader{r: strings.NewReader(distinct.String())}
	_, err = Read(r, "bad.csv", &Options{MaxErrors: 3})
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 4 || !errors.Is(list[3], ErrTooMany) || asDataErrors(t, list)[3].Line != 5 {
		t.Errorf("distinct problems: %v, want 3 and the stop at line 5", err)
	}
	if r.n > 1<<20 {
		t.Errorf("distinct problems: read %d bytes of %d, want the reading stopped at line 5", r.n, distinct.Len())
	}
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// failingReader returns some bytes, then an error.
type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadIOError(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk on fire")
	for _, src := range []string{"", "id,t,x,y\n", "id,t,x,y\nA,0,1,1\n"} {
		_, err := Read(&failingReader{src, boom}, "bad.csv", nil)
		if !errors.Is(err, boom) {
			t.Errorf("after %q: error %v does not wrap the reader's error", src, err)
		}
		if de, ok := errors.AsType[*DataError](err); !ok || de.File != "bad.csv" {
			t.Errorf("after %q: error %v does not name the file", src, err)
		}
	}
	// io.ErrUnexpectedEOF from the reader is an error too, not an end.
	if _, err := Read(&failingReader{"id,t,x,y\nA,0,1,1\n", io.ErrUnexpectedEOF}, "bad.csv", nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestReadFileMissing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nothere.csv")
	_, err := ReadFile(path, nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v: want one that wraps fs.ErrNotExist and names %s", err, path)
	}
}

func TestReadDoesNotChangeOptions(t *testing.T) {
	t.Parallel()
	opts := &Options{Features: []string{" x1 "}, Targets: []string{" y"}}
	if _, err := ReadFile("testdata/basic.csv", opts); err != nil {
		t.Fatal(err)
	}
	if opts.Features[0] != " x1 " || opts.Targets[0] != " y" || opts.IDCol != "" || opts.MaxErrors != 0 {
		t.Errorf("options changed to %+v", opts)
	}
}

func TestReadFixturesExist(t *testing.T) {
	t.Parallel()
	// The CRLF and BOM of messy.csv must survive checkouts; if they were
	// normalised, TestRead would no longer test them.
	b, err := os.ReadFile("testdata/messy.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "\ufeff") || !strings.Contains(string(b), "\r\n") {
		t.Errorf("testdata/messy.csv lost its byte order mark or CRLF line ends")
	}
}

// asDataErrors returns the problems of a list read by Read, failing the
// test when one is not a *DataError.
func asDataErrors(t testing.TB, list ErrorList) []*DataError {
	t.Helper()
	des := make([]*DataError, len(list))
	for i, e := range list {
		de, ok := e.(*DataError)
		if !ok {
			t.Fatalf("problem %d (%T) is not a *DataError: %v", i, e, e)
		}
		des[i] = de
	}
	return des
}
