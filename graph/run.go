package graph

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// State holds the buffers of one evaluation of a Program. Buffers are
// allocated once, so running a State again allocates nothing. A State must
// not be used by two goroutines at once.
type State struct {
	p    *Program
	vals []*Tensor
	ins  []*Tensor
	d    *diffState
	ran  bool // a Forward has run
	x    exec
}

// SetSerial keeps every kernel of this State on the calling goroutine.
// Use it when several States already run in parallel, so that large
// kernels do not split their work again.
func (s *State) SetSerial(serial bool) { s.x.serial = serial }

// NewState allocates the buffers for running p.
func (p *Program) NewState() *State {
	s := &State{p: p, vals: make([]*Tensor, len(p.slots))}
	for i, sl := range p.slots {
		if sl.kind == slotConst {
			s.vals[i] = sl.c
		} else {
			s.vals[i] = &Tensor{DType: Float, Shape: sl.shape}
		}
	}
	p.allocate(s.vals)
	for i, sl := range p.slots {
		// Views of the arguments are bound in every Forward.
		if sl.kind == slotView && p.live[i] && !p.isArgView(sl) {
			s.vals[i].F = sl.viewOf(s.vals[sl.index].F)
		}
	}
	return s
}

// allocate gives the step results among ts (slot-indexed; nil entries are
// skipped) their storage: an array for each owner, and for a part its
// place in its container (which is set whenever the part is: a container
// is live and active with any of its parts).
func (p *Program) allocate(ts []*Tensor) {
	for _, i := range p.owners {
		if ts[i] != nil {
			ts[i].F = make([]float64, numel(p.slots[i].shape))
		}
	}
	for i, sl := range p.slots {
		if sl.kind == slotPart && ts[i] != nil && p.live[i] {
			ts[i].F = ts[sl.index].F[sl.off : sl.off+numel(sl.shape)]
		}
	}
}

// viewOf returns the part of its root's data that a view slot covers.
func (sl *slot) viewOf(root []float64) []float64 {
	return root[sl.off : sl.off+numel(sl.shape)]
}

// Forward evaluates the program with parameter vector theta (length
// Graph.NumParams) and the inputs it was compiled for (same shapes, and the
// same values for integer inputs). The returned tensors belong to the State
// and are overwritten by the next call; theta and inputs are only read, and
// must not change while the outputs are in use.
func (s *State) Forward(theta []float64, inputs []*Tensor) ([]*Tensor, error) {
	p := s.p
	g := p.g
	if len(theta) != len(g.theta) {
		return nil, fmt.Errorf("graph: %w: parameter vector has length %d, the model has %d parameters", ErrInput, len(theta), len(g.theta))
	}
	if len(inputs) != len(p.inputs) {
		return nil, fmt.Errorf("graph: %w: %d inputs given, the program was compiled for %d", ErrInput, len(inputs), len(p.inputs))
	}
	for i, t := range inputs {
		if !sameShape(t.Shape, p.inputs[i]) {
			return nil, fmt.Errorf("graph: %w: input %q has shape %v, the program was compiled for %v", ErrInput, g.Inputs[i].Name, errs.Value(t.Shape), errs.Value(p.inputs[i]))
		}
	}
	for _, i := range p.args.params {
		pr := g.params[p.slots[i].index]
		s.vals[i].F = theta[pr.Offset : pr.Offset+pr.Size]
	}
	for _, i := range p.args.inputs {
		s.vals[i].F = inputs[p.slots[i].index].F
	}
	for _, i := range p.args.paramViews {
		sl := &p.slots[i]
		s.vals[i].F = sl.viewOf(s.vals[sl.index].F)
	}
	for _, i := range p.args.inputViews {
		sl := &p.slots[i]
		s.vals[i].F = sl.viewOf(s.vals[sl.index].F)
	}
	if s.d != nil {
		s.d.tanValid, s.d.cotValid = false, false
	}
	s.x.transposes.reset()
	for _, st := range p.steps {
		s.ins = s.ins[:0]
		for _, j := range st.in {
			s.ins = append(s.ins, s.vals[j])
		}
		st.k.forward(&s.x, s.vals[st.out], s.ins)
	}
	s.ran = true
	outs := make([]*Tensor, len(p.outputs))
	for i, v := range p.outputs {
		if v.isStatic() {
			outs[i] = v.t
		} else {
			outs[i] = s.vals[v.slot]
		}
	}
	return outs, nil
}
