package blocks_test

import (
	"fmt"
	"strings"

	"github.com/rnnaudit/rnnaudit/blocks"
)

const train = `id,t,x,y
P1,0,0.5,1.0
P2,0,0.1,2.0
P1,1,0.7,1.5
P1,2,0.2,1.25
P2,1,0.3,2.5
`

func ExampleRead() {
	d, err := blocks.Read(strings.NewReader(train), "train.csv", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("features", d.Features, "targets", d.Targets)
	for _, s := range d.Seqs {
		fmt.Println(s.ID, s.Steps, s.X, s.Y)
	}
	// Output:
	// features [x] targets [y]
	// P1 [0 1 2] [[0.5] [0.7] [0.2]] [[1] [1.5] [1.25]]
	// P2 [0 1] [[0.1] [0.3]] [[2] [2.5]]
}

func ExampleRead_errors() {
	const bad = `id,t,x,y
P1,0,0.5,1.0
P1,1,n/a,1.5
P1,0,0.2,1.25
`
	_, err := blocks.Read(strings.NewReader(bad), "train.csv", nil)
	fmt.Println(err)
	// Output:
	// 2 problems:
	// 	train.csv:3: column "x": missing value "n/a": fill it in; rnnaudit does not impute missing values
	// 	train.csv:4: column "t": step 0 of sequence "P1" is also on line 2: steps within a sequence must be unique; remove one of the rows or give it another id
}

func ExampleNewScheme() {
	d, err := blocks.Read(strings.NewReader(train), "train.csv", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range []int{2, 3} {
		s, err := blocks.NewScheme(d, blocks.Nested, k)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("K=%d: %v scheme, degenerate %v\n", k, s.Kind, s.Degenerate)
		for _, b := range s.Blocks {
			fmt.Printf("  %v: deletes %v, residuals on %v\n", b, b.Deleted(d), b.Region(d))
		}
		for _, n := range s.Notes {
			fmt.Println("  note:", n)
		}
	}
	// Output:
	// K=2: nested scheme, degenerate false
	//   sequence 1 (id P1) × steps 1–2 (t = 0–1): deletes [{0 0 3} {1 0 2}], residuals on [{0 0 2}]
	//   sequence 1 (id P1) × step 3 (t = 2): deletes [{0 0 3}], residuals on [{0 2 3}]
	//   sequence 2 (id P2) × steps 1–2 (t = 0–1): deletes [{0 0 2} {1 0 2}], residuals on [{1 0 2}]
	//   note: 1 of 4 nested blocks have no target in their evaluation region (the sequence is shorter than the interval, or has no targets there) and were left out
	// K=3: sequence scheme, degenerate true
	//   sequence 1 (id P1): deletes [{0 0 3}], residuals on [{0 0 3}]
	//   sequence 2 (id P2): deletes [{1 0 2}], residuals on [{1 0 2}]
	//   note: interval length 3 is at least the length of the longest sequence (3 steps): the nested scheme would delete the whole training set, so sequence blocks are used instead
}
