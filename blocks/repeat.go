package blocks

import (
	"hash/fnv"
	"math"
	"slices"
)

// Repeat is a sequence of one data set found again in another: sequence
// Seq of the first is sequence Other of the second, by content (the same
// steps and features) or, when SameID, by id alone.
type Repeat struct {
	Seq, Other int
	SameID     bool
}

// Repeats returns the sequences of d that repeat a sequence of other, in
// the order of d: each with the first sequence of other that has the same
// steps and features (targets are left out, so that an unlabelled file is
// compared too) or, failing that and with byID, the same id. A held-out
// set (a calibration set, test data) that repeats the training data, or
// each other, says nothing about new sequences.
func Repeats(d, other *Dataset, byID bool) []Repeat {
	ids := map[string]int{}
	hashes := map[uint64][]int{}
	for i, s := range other.Seqs {
		ids[s.ID] = i
		h := seqHash(s)
		hashes[h] = append(hashes[h], i)
	}
	var out []Repeat
	for k, s := range d.Seqs {
		found := false
		for _, j := range hashes[seqHash(s)] {
			if sameRows(s, other.Seqs[j]) {
				out = append(out, Repeat{Seq: k, Other: j})
				found = true
				break
			}
		}
		if j, ok := ids[s.ID]; !found && byID && ok {
			out = append(out, Repeat{Seq: k, Other: j, SameID: true})
		}
	}
	return out
}

// seqHash hashes a sequence's steps and features.
func seqHash(s *Sequence) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	put := func(x float64) {
		b := math.Float64bits(x)
		for i := range buf {
			buf[i] = byte(b >> (8 * i))
		}
		h.Write(buf[:])
	}
	for t := range s.Steps {
		put(s.Steps[t])
		for _, x := range s.X[t] {
			put(x)
		}
	}
	return h.Sum64()
}

// sameRows reports whether two sequences have the same steps and
// features: the same input sequence.
func sameRows(a, b *Sequence) bool {
	if !slices.Equal(a.Steps, b.Steps) || len(a.X) != len(b.X) {
		return false
	}
	for t := range a.X {
		if !slices.Equal(a.X[t], b.X[t]) {
			return false
		}
	}
	return true
}
