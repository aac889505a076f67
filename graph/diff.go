package graph

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// Derivatives of a Program with respect to the parameter vector theta.
//
// The three passes compose into what the hvp package needs:
//
//	gradient:       Forward, then Backward with g = dL/dy
//	J v:            ForwardTangent
//	H v (exact):    ForwardTangent, then BackwardTangent with g = dL/dy and
//	                dg = d²L/dy² · dy (forward-over-reverse)
//	Gauss-Newton v: ForwardTangent, then Backward with g = d²L/dy² · dy
//
// Only slots that depend on a parameter carry tangents and cotangents.

// activeSlots marks the slots that depend on some parameter.
func (p *Program) activeSlots() []bool {
	act := make([]bool, len(p.slots))
	views := map[int][]int{}
	for i, sl := range p.slots {
		if sl.kind == slotView {
			views[sl.index] = append(views[sl.index], i)
		}
	}
	var set func(i int)
	set = func(i int) {
		act[i] = true
		for _, v := range views[i] {
			act[v] = true
		}
		if sl := p.slots[i]; sl.kind == slotPart && !act[sl.index] {
			set(sl.index) // its container
		}
	}
	for i, sl := range p.slots {
		if sl.kind == slotParam {
			set(i)
		}
	}
	for _, st := range p.steps {
		for _, j := range st.in {
			if act[j] {
				set(st.out)
				break
			}
		}
	}
	return act
}

// diffState holds the derivative buffers of a State, made on first use.
type diffState struct {
	active   []bool
	tanValid bool         // tan holds the tangents of the last Tangent
	cotValid bool         // cot holds the cotangents of the last Backward
	tan      []*Tensor    // tangents
	cot      []*Tensor    // cotangents
	dcot     []*Tensor    // tangents of the cotangents
	zero     zeroTangents // tangents known zero in the last Tangent (zerotan.go)
	gin      []*Tensor
	dgin     []*Tensor
	din      []*Tensor
	ex       *exampleState // BackwardPerExample
	fresh    *freshPlan    // SecondOrder's (freshcot.go)
}

// buffers returns a slot-indexed set of tensors for the active slots:
// steps' outputs get their own storage, views share their root's.
func (s *State) buffers() []*Tensor {
	p := s.p
	ts := make([]*Tensor, len(p.slots))
	for i, sl := range p.slots {
		if s.d.active[i] {
			ts[i] = &Tensor{DType: Float, Shape: sl.shape}
		}
	}
	p.allocate(ts)
	for i, sl := range p.slots {
		// Views of parameters are bound with them, in bindParams.
		if sl.kind == slotView && ts[i] != nil && p.live[i] && p.slots[sl.index].kind != slotParam {
			ts[i].F = sl.viewOf(ts[sl.index].F)
		}
	}
	return ts
}

func (s *State) diff() *diffState {
	if s.d == nil {
		s.d = &diffState{active: s.p.activeSlots()}
	}
	return s.d
}

// bindParams points the parameter slots (and their views) of ts at vec.
func (s *State) bindParams(ts []*Tensor, vec []float64) {
	p := s.p
	for _, i := range p.args.params {
		pr := p.g.params[p.slots[i].index]
		ts[i].F = vec[pr.Offset : pr.Offset+pr.Size]
	}
	for _, i := range p.args.paramViews {
		if sl := &p.slots[i]; ts[i] != nil {
			ts[i].F = sl.viewOf(ts[sl.index].F)
		}
	}
}

// ForwardTangent evaluates the program like Forward and also the output
// tangents along direction v of the parameters (J v, one tensor per
// output; nil for an output that does not depend on the parameters). The
// returned tensors belong to the State.
func (s *State) ForwardTangent(theta, v []float64, inputs []*Tensor) (outs, douts []*Tensor, err error) {
	if outs, err = s.Forward(theta, inputs); err != nil {
		return nil, nil, err
	}
	douts, err = s.Tangent(v)
	return outs, douts, err
}

// Tangent computes the output tangents J v at the point of the last
// Forward of this State (same theta and inputs, which must not have
// changed since). Many directions can be taken from one Forward.
func (s *State) Tangent(v []float64) ([]*Tensor, error) {
	if !s.ran {
		return nil, fmt.Errorf("graph: Tangent needs a Forward first")
	}
	if len(v) != len(s.p.g.theta) {
		return nil, fmt.Errorf("graph: %w: direction has length %d, want %d", ErrInput, len(v), len(s.p.g.theta))
	}
	d := s.diff()
	if d.tan == nil {
		d.tan = s.buffers()
	}
	s.bindParams(d.tan, v)
	s.x.sparsity.reset()
	s.startZero(v)
	for _, st := range s.p.steps {
		if !d.active[st.out] {
			continue
		}
		if s.inputsZero(st) {
			s.setZero(st.out) // zerotan.go
			continue
		}
		nilOK := nilTangents(st.k)
		d.din = d.din[:0]
		s.ins = s.ins[:0]
		for _, j := range st.in {
			d.din = append(d.din, s.tangentIn(j, nilOK))
			s.ins = append(s.ins, s.vals[j])
		}
		st.k.jvp(&s.x, d.tan[st.out], s.ins, d.din, s.vals[st.out])
	}
	d.tanValid = true
	douts := make([]*Tensor, len(s.p.outputs))
	for i, o := range s.p.outputs {
		if !o.isStatic() && d.active[o.slot] {
			s.materialize(o.slot)
			douts[i] = d.tan[o.slot]
		}
	}
	return douts, nil
}

// BackwardTangent is Backward for cotangents g, and also accumulates into
// hv the derivative of J^T g along the direction v of the last Tangent
// (or ForwardTangent), when g itself changes along v by dg:
//
//	hv += J^T dg + (D_v J^T) g.
//
// With g = dL/dy and dg = d²L/dy² (J v) this is the exact Hessian-vector
// product of the loss L(y(theta)).
func (s *State) BackwardTangent(g, dg []*Tensor, grad, hv []float64) error {
	if err := s.Backward(g, grad); err != nil {
		return err
	}
	return s.SecondOrder(dg, hv)
}

// SecondOrder is the second half of BackwardTangent: it accumulates
// J^T dg + (D_v J^T) g into hv, reusing the cotangents g of the last
// Backward and the tangents of the last Tangent of this State. For many
// directions at one point, run Forward and Backward once, then Tangent
// and SecondOrder per direction.
func (s *State) SecondOrder(dg []*Tensor, hv []float64) error {
	p := s.p
	d := s.diff()
	if !d.tanValid || !d.cotValid {
		return fmt.Errorf("graph: SecondOrder needs a Tangent and a Backward first")
	}
	if len(hv) != len(p.g.theta) {
		return fmt.Errorf("graph: %w: result has length %d, want %d", ErrInput, len(hv), len(p.g.theta))
	}
	if d.dcot == nil {
		d.dcot = s.buffers()
		d.fresh = p.freshPlan(d.active)
	}
	if err := s.seed(d.dcot, hv, dg, d.fresh.keep); err != nil {
		return err
	}
	for i := len(p.steps) - 1; i >= 0; i-- {
		st := p.steps[i]
		if !d.active[st.out] {
			continue
		}
		nilOK := nilTangents(st.k)
		d.dgin, d.din, s.ins = d.dgin[:0], d.din[:0], s.ins[:0]
		for _, j := range st.in {
			s.ins = append(s.ins, s.vals[j])
			d.dgin = append(d.dgin, d.dcot[j])
			d.din = append(d.din, s.tangentIn(j, nilOK))
		}
		for k, zero := 0, d.fresh.zero[i]; zero != 0; k, zero = k+1, zero>>1 {
			if zero&1 != 0 {
				clear(d.dgin[k].F)
			}
		}
		s.x.fresh = d.fresh.set[i]
		st.k.vjpTangent(&s.x, d.dgin, s.ins, d.din, s.vals[st.out], d.cot[st.out], d.dcot[st.out])
		s.x.fresh = 0
	}
	return nil
}

// Backward accumulates into grad (length NumParams) the gradient of
// sum_o <g[o], y_o> with respect to theta, where y_o are the outputs of
// the last Forward of this State: the vector-Jacobian product J^T g. A
// nil g[o] counts as zero; a non-nil one must have the output's shape.
func (s *State) Backward(g []*Tensor, grad []float64) error {
	p := s.p
	if !s.ran {
		return fmt.Errorf("graph: Backward needs a Forward first")
	}
	if len(grad) != len(p.g.theta) {
		return fmt.Errorf("graph: %w: gradient has length %d, want %d", ErrInput, len(grad), len(p.g.theta))
	}
	d := s.diff()
	if d.cot == nil {
		d.cot = s.buffers()
	}
	d.cotValid = false
	if err := s.seed(d.cot, grad, g, nil); err != nil {
		return err
	}
	for i := len(p.steps) - 1; i >= 0; i-- {
		st := p.steps[i]
		if !d.active[st.out] {
			continue
		}
		d.gin, s.ins = d.gin[:0], s.ins[:0]
		for _, j := range st.in {
			s.ins = append(s.ins, s.vals[j])
			d.gin = append(d.gin, d.cot[j])
		}
		st.k.vjp(&s.x, d.gin, s.ins, s.vals[st.out], d.cot[st.out])
	}
	d.cotValid = true
	return nil
}

// seed zeroes the step buffers of ts but those keep marks (nil: none;
// see freshcot.go), points its parameter slots at vec (where the
// parameter cotangents accumulate) and adds the output seeds.
func (s *State) seed(ts []*Tensor, vec []float64, seeds []*Tensor, keep []bool) error {
	p := s.p
	if len(seeds) != len(p.outputs) {
		return fmt.Errorf("graph: %w: %d output cotangents for %d outputs", ErrInput, len(seeds), len(p.outputs))
	}
	for _, i := range p.owners {
		if ts[i] != nil && (keep == nil || !keep[i]) {
			clear(ts[i].F)
		}
	}
	s.bindParams(ts, vec)
	for i, o := range p.outputs {
		if seeds[i] == nil || o.isStatic() || !s.d.active[o.slot] {
			continue
		}
		if len(seeds[i].F) != numel(o.shape) {
			return fmt.Errorf("graph: %w: cotangent %d has shape %v, output has %v", ErrInput, i, errs.Value(seeds[i].Shape), errs.Value(o.shape))
		}
		dst := ts[o.slot].F
		for j, v := range seeds[i].F {
			dst[j] += v
		}
	}
	return nil
}
