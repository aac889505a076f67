package blocks

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRead checks that any bytes give a dataset or an error naming the
// file, never a panic; that a dataset satisfies the invariants of Read;
// and that every scheme built over it is consistent.
func FuzzRead(f *testing.F) {
	files, err := filepath.Glob("testdata/*.csv")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
		f.Add(b, uint8(1))
	}
	for _, s := range []string{
		"",
		"\ufeff",
		"id,t,x,y\n",
		"id,t,x,y\nA,0,1,2\nA,0,1,2\n",
		"id,t,x,y\nA,0,1\nB,\"1,2\n",
		"id,t,x,y\r\nA,1e999,NaN,-Inf\r\n\"\"\"\",0,1,1\n",
		"id;t;x;y\n1;2;3;4\n",
		"id,t,x,x,y,\n",
		"y,t,id\n1,2,3\n",
		"id,t,y\na,0,1\na,1,2\na,2,3\nb,5,1\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := &Options{MaxErrors: int(mode>>4) + 1}
		if mode&1 != 0 { // forecast layout: y is a feature, shifted target
			opts.Features, opts.Shift = []string{"y"}, 1
		}
		if mode&2 != 0 {
			opts.OptionalTargets = true
		}
		d, err := Read(bytes.NewReader(data), "fuzz.csv", opts)
		if err != nil {
			if d != nil {
				t.Fatalf("dataset and error %v", err)
			}
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("error %q (%T) is not a *DataError", err, err)
			}
			var list ErrorList
			if errors.As(err, &list) {
				if len(list) > opts.MaxErrors+1 {
					t.Fatalf("%d errors with MaxErrors %d", len(list), opts.MaxErrors)
				}
				des := asDataErrors(t, list)
				for i, e := range des {
					if e.File != "fuzz.csv" || (i > 0 && des[i-1].Line > e.Line) {
						t.Fatalf("error %d of %q out of order or without the file", i, err)
					}
				}
			} else if de.File != "fuzz.csv" {
				t.Fatalf("error %q does not name the file", err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.csv") && !strings.Contains(err.Error(), "problems") {
				t.Fatalf("message %q does not start with the file", err)
			}
			return
		}
		checkDataset(t, d)
		if !d.Labelled() {
			return
		}
		for _, kind := range []Kind{Sequences, Intervals, Nested} {
			for _, k := range []int{1, 2, 5} {
				s, err := NewScheme(d, kind, k)
				if err != nil {
					if !errors.Is(err, ErrScheme) {
						t.Fatalf("NewScheme: %v", err)
					}
					continue
				}
				checkScheme(t, d, s)
			}
		}
	})
}
