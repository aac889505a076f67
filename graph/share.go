package graph

import "fmt"

// This file: derivative buffers shared by the States of one Program.
//
// A caller that keeps many States of one Program at one point (a dense
// Hessian over many batches: each batch's forward values and first-order
// cotangents are kept, and every column runs a tangent and a second-order
// pass on each batch in turn) needs their tangent and second-order
// buffers only while one pass runs. ShareBuffers lets such States use one
// set, which keeps both the memory and the working set of the passes to
// one batch's worth.

// sharedBuffers records which of the States sharing a set of buffers last
// wrote its tangents and its cotangents: only that State may read them.
type sharedBuffers struct {
	tan, cot *diffState
}

// ShareBuffers makes s use the tangent and second-order buffers of o, a
// State of the same Program, instead of buffers of its own, and with
// cotangents also its cotangent buffers (for States that run Backward
// only as scratch, such as Gauss-Newton products; a State that keeps its
// cotangents for SecondOrder must have its own). States sharing buffers
// must run on one goroutine, and a pass of one of them overwrites what
// the others' passes left there: a Tangent of one makes SecondOrder of
// the others fail until they run their own Tangent, and the tensors
// Tangent returned are overwritten by the next Tangent of any of them.
func (s *State) ShareBuffers(o *State, cotangents bool) error {
	if s.p != o.p {
		return fmt.Errorf("graph: ShareBuffers needs two States of the same Program")
	}
	if s == o {
		return nil
	}
	od := o.diff()
	if od.share == nil {
		od.share = &sharedBuffers{}
	}
	if od.tan == nil {
		od.tan = o.buffers()
	}
	if od.dcot == nil {
		od.dcot = o.buffers()
	}
	d := s.diff()
	d.share = od.share
	d.tan, d.dcot, d.tanValid = od.tan, od.dcot, false
	if cotangents {
		if od.cot == nil {
			od.cot = o.buffers()
		}
		d.cot, d.cotValid = od.cot, false
		d.shareCot, od.shareCot = true, true
	}
	return nil
}

// wroteTangents records that d's State is writing the tangent buffers.
func (d *diffState) wroteTangents() {
	if d.share != nil {
		d.share.tan = d
	}
}

// wroteCotangents records that d's State is writing the cotangent buffers.
func (d *diffState) wroteCotangents() {
	if d.shareCot {
		d.share.cot = d
	}
}

// tangentsValid reports whether the tangent buffers hold the tangents of
// d's State's last Tangent.
func (d *diffState) tangentsValid() bool {
	return d.tanValid && (d.share == nil || d.share.tan == d)
}

// cotangentsValid reports whether the cotangent buffers hold the
// cotangents of d's State's last Backward.
func (d *diffState) cotangentsValid() bool {
	return d.cotValid && (!d.shareCot || d.share.cot == d)
}
