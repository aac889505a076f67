package table

import (
	"sync"

	"github.com/rnnaudit/rnnaudit/graph"
)

// projectChunk is the number of vectors Projector.Rows multiplies at once.
const projectChunk = 64

// projectPanel is the number of parameters per panel of Projector.Rows'
// products, each summed on its own and then added: a panel of U's rows
// (k × projectPanel floats) and one strip of the vectors stay in the
// core's caches while the strip is multiplied.
const projectPanel = 256

// projectStrip is the number of vectors per strip of a panel: the
// product kernel's tile width (24 columns, three 8-lane registers), so
// that a strip (projectPanel × 24 floats, 48 KB, packed contiguously)
// stays in the first-level cache while every row of U's panel passes
// it.
const projectStrip = 24

// Projector computes U v for vectors v of P floats, U k×P row-major,
// read where it lies: the coordinates of gradients and Jacobian rows in
// the low-rank factor's basis, the block and test passes' largest
// product. Its calls may run concurrently.
type Projector struct {
	u    []float64
	p, k int
	// scratch holds *projScratch: a call's working memory, reused (250
	// KB per chunk of 64 at rank 200, 4 GB over the block pass of a
	// million sequences).
	scratch sync.Pool
}

// projScratch is the working memory of one Projector.Rows call: a strip
// of the vectors, a panel's product and its sum over panels.
type projScratch struct {
	strip, c, acc []float64
}

// NewProjector returns the projector of U (k×P).
func NewProjector(U []float64, P int) *Projector {
	return &Projector{u: U, p: P, k: len(U) / P}
}

// Rows returns U v (k numbers) for every vector v of vecs: per chunk of
// projectChunk vectors V (columns), the sum over panels of parameters of
// U_panel V_panel^T, each panel's product formed strip by strip of
// vectors (packed, projectStrip wide) and added to the sum (so that every
// coordinate is the same sum, in the same order, whatever the chunk or
// the strips). U's rows are read in place. Measured on 64 gradients at k
// = 200, P = 17,217 (BenchmarkProjectRows, at load 11-15): the product
// with the vectors as rows and U transposed once per projector (27.5 MB)
// ran at 34-37 Gflop per CPU second, with U's rows as rows and the
// vectors' panel transposed whole (128 KB) at 40-45, in strips at 46-52.
//
// each, when not nil, is called with every panel's segment of every
// vector j, seg = vecs[j][p0:p0+len(seg)], panels in order and vectors in
// order within a panel, while the segment is in cache: a pass over the
// vectors' elements that reads nothing from memory a second time.
func (pr *Projector) Rows(vecs [][]float64, each func(j, p0 int, seg []float64)) [][]float64 {
	k, P := pr.k, pr.p
	out := make([][]float64, len(vecs))
	flat := make([]float64, len(vecs)*k)
	for j := range out {
		out[j] = flat[j*k : (j+1)*k : (j+1)*k]
	}
	if k == 0 || len(vecs) == 0 {
		return out
	}
	nb := min(projectChunk, len(vecs))
	sc, _ := pr.scratch.Get().(*projScratch)
	if sc == nil || len(sc.c) < k*nb {
		sc = &projScratch{strip: make([]float64, projectPanel*projectStrip), c: make([]float64, k*projectChunk), acc: make([]float64, k*projectChunk)}
	}
	defer pr.scratch.Put(sc)
	strip := sc.strip // w × width, row-major
	c := sc.c         // U_panel V_panel^T, k × m
	acc := sc.acc     // its sum over panels
	for lo := 0; lo < len(vecs); lo += nb {
		hi := min(lo+nb, len(vecs))
		m := hi - lo
		clear(acc[:k*m])
		for p0 := 0; p0 < P; p0 += projectPanel {
			w := min(projectPanel, P-p0)
			for t0 := 0; t0 < m; t0 += projectStrip {
				width := min(projectStrip, m-t0)
				for col, v := range vecs[lo+t0 : lo+t0+width] {
					seg := v[p0 : p0+w]
					for p, x := range seg {
						strip[p*width+col] = x
					}
					if each != nil {
						each(lo+t0+col, p0, seg)
					}
				}
				graph.GemmStrided(k, width, w, pr.u[p0:], P, strip[:w*width], width, c[t0:], m, false)
			}
			for i, x := range c[:k*m] {
				acc[i] += x
			}
		}
		for j := range m {
			o := out[lo+j]
			for i := range o {
				o[i] = acc[i*m+j]
			}
		}
	}
	return out
}
