package audit

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/audit/artifact"
)

// arrays are pointers to every float64 array of b, in a fixed order that
// depends only on the lengths of b's lists, which the gob body carries:
// the order of the artifact's raw section (artifact.Write).
func (b *fitBody) arrays() []*f64s {
	var out []*f64s
	for k := range b.Delta {
		out = append(out, &b.Delta[k])
	}
	for i := range b.Entries {
		out = append(out, &b.Entries[i].R)
	}
	if b.Table != nil {
		out = append(out, &b.Table.Coef, &b.Table.Res)
	}
	out = append(out, &b.Basis, &b.Shift)
	for i := range b.Naive {
		out = append(out, &b.Naive[i].R)
	}
	if b.Context != nil {
		out = append(out, &b.Context.Steps, &b.Context.X)
	}
	return out
}

// detach moves the arrays of b out of it: it records their lengths in
// b.Lens, empties them for the gob body and returns them for
// artifact.Write.
func (b *fitBody) detach() [][]float64 {
	ptrs := b.arrays()
	out := make([][]float64, len(ptrs))
	b.Lens = make([]int, len(ptrs))
	for i, p := range ptrs {
		out[i], b.Lens[i] = *p, len(*p)
		*p = nil
	}
	return out
}

// attach sets b's arrays to the raw section of c, of the lengths
// b.Lens.
func (b *fitBody) attach(c *artifact.Contents) error {
	ptrs := b.arrays()
	if len(b.Lens) != len(ptrs) {
		return fmt.Errorf("%d array lengths for %d arrays: the file is damaged", len(b.Lens), len(ptrs))
	}
	raw, err := c.Arrays(b.Lens)
	if err != nil {
		return err
	}
	for i, p := range ptrs {
		*p = raw[i]
	}
	return nil
}
