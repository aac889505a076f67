package table

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/rnnaudit/rnnaudit/hvp"
)

// TestWireBytes: the encodings of every kind of value are the bytes
// audit wrote before the values moved to this package (the SHA-256 of
// their concatenation), so that an executor's workers of either side of
// the move read each other's chunks.
func TestWireBytes(t *testing.T) {
	var all []byte
	add := func(b []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	f := &FactorSpec{P: 2, U: []float64{1, 2, 3, 4}, Reduced: hvp.Reduced{D: []float64{0.5, 0.25}, Inv: 0.125}, Loss: 1, Slots: [][2]int{{0, 1}, {2, 3}}, WithRows: true, Newton: false, Problem: [32]byte{1, 2, 3}}
	add(f.MarshalBinary())
	bc := &BlockChunk{Seqs: []int{4, 5}, Blocks: []int{0, -1}, Labels: []string{"a", ""}, Terms: [][]Term{{{T: 1, H: 2, Y: 1.5, FX: -2.5, W: 1, Forecast: 3}}, nil}}
	add(bc.MarshalBinary())
	o := &BlockChunkOut{
		Recs:  []BlockRecord{{A: []float64{1, 2}, S: []float64{}, Res: []float64{4}}},
		GNorm: []float64{5}, Norms: []float64{6}, Shift: []float64{7},
		Lev: [][]float64{{0.5}}, LevMax: []float64{0.5}, Unbounded: []bool{true},
		Total: []float64{8, 9},
	}
	add(o.MarshalBinary())
	pc := &PointChunk{Cal: true, Seqs: []int{3}, Points: []ChunkPoint{{Seq: 0, Forecast: 1, F: 2.5, Slot: 1, Skip: -1, Y: 3.5, Labelled: true}}}
	add(pc.MarshalBinary())
	pts := []PointRecord{{F: 1, Forecast: 0, Skip: 2, Y: 3, Labelled: true, G: []float64{1}, H: []float64{}}}
	all = append(all, EncodePoints(pts)...)
	ts := &TableSpec{Alpha: 0.1, Alphas: []float64{0.2}, Table: BlockTable{N: 1, K: 1, F: 1, Coef: []float64{2}, Res: []float64{3}}}
	add(ts.MarshalBinary())
	fc := &FinalizeChunk{Points: pts}
	add(fc.MarshalBinary())
	l := &ChunkLimits{Lo: []float64{1}, Up: []float64{2}, M: []int{3}, Covered: []int{4}, Labelled: 5}
	add(l.MarshalBinary())
	g := NewGradientSum(2)
	if err := g.Add([]float64{1e100, 1, -1e100, 2}); err != nil {
		t.Fatal(err)
	}
	add(g.MarshalBinary())
	const want = "1081 4eff08b681432a9ab98d506896488ef8d90ee0720e6b27c5ba406cb724b9117a"
	if got := fmt.Sprintf("%d %x", len(all), sha256.Sum256(all)); got != want {
		t.Errorf("the encodings are %s, want %s", got, want)
	}
	// And they decode to what was encoded.
	bc2 := &BlockChunk{}
	if b, _ := bc.MarshalBinary(); bc2.UnmarshalBinary(b) != nil || bc2.Terms[0][0] != bc.Terms[0][0] || len(bc2.Terms[1]) != 0 {
		t.Errorf("a block chunk decodes to %+v, want %+v", bc2, bc)
	}
	pc2 := &PointChunk{}
	if b, _ := pc.MarshalBinary(); pc2.UnmarshalBinary(b) != nil || pc2.Points[0] != pc.Points[0] || !pc2.Cal {
		t.Errorf("a point chunk decodes to %+v, want %+v", pc2, pc)
	}
}
