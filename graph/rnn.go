package graph

import "fmt"

// Lowering of the ONNX recurrent operators RNN, LSTM and GRU (opsets 7 to
// 21: every attribute, both layouts, all three directions, sequence_lens,
// initial states, peepholes, clip, input_forget and linear_before_reset).
//
// Each operator is unrolled over the time steps of the compiled input into
// matrix products and elementwise kernels. The input projection X W^T of
// all steps is one matrix product. Where ONNX leaves details open, these
// follow ONNX Runtime: clip limits every gate pre-activation after the
// biases and peepholes are added; activation_alpha and activation_beta are
// consumed in order by the activations that take them; steps past a
// sequence's length give zeros in Y and leave the state unchanged, so Y_h
// (Y_c) holds the state at the last valid step (for the reverse direction,
// after step 0).

type rnnKind uint8

const (
	kindRNN rnnKind = iota
	kindLSTM
	kindGRU
)

func (k rnnKind) gates() int     { return [...]int{1, 4, 3}[k] }
func (k rnnKind) numActs() int   { return [...]int{1, 3, 2}[k] }
func (k rnnKind) String() string { return [...]string{"RNN", "LSTM", "GRU"}[k] }

func (k rnnKind) defaultActs() []string {
	return [...][]string{{"Tanh"}, {"Sigmoid", "Tanh", "Tanh"}, {"Sigmoid", "Tanh"}}[k]
}

func lowerRNN(c *compiler, n *Node, in []*value) ([]*value, error) {
	return lowerRecurrent(c, n, in, kindRNN)
}

func lowerLSTM(c *compiler, n *Node, in []*value) ([]*value, error) {
	return lowerRecurrent(c, n, in, kindLSTM)
}

func lowerGRU(c *compiler, n *Node, in []*value) ([]*value, error) {
	return lowerRecurrent(c, n, in, kindGRU)
}

// rnnAttrs are a recurrent node's attributes, checked.
type rnnAttrs struct {
	dirs         []bool // per direction: true for reverse
	hidden       int
	layout       int64
	clip         float64 // 0: none
	acts         [][]*activation
	inputForget  bool
	linBeforeRst bool
}

func parseRNNAttrs(n *Node, kind rnnKind) (*rnnAttrs, error) {
	a := &rnnAttrs{}
	dir, err := n.attrString("direction", "forward")
	if err != nil {
		return nil, err
	}
	switch dir {
	case "forward":
		a.dirs = []bool{false}
	case "reverse":
		a.dirs = []bool{true}
	case "bidirectional":
		a.dirs = []bool{false, true}
	default:
		return nil, attrErr("direction %q is not forward, reverse or bidirectional", dir)
	}
	h, err := n.attrInt("hidden_size", -1)
	if err != nil {
		return nil, err
	}
	a.hidden = int(h)
	if a.layout, err = n.attrInt("layout", 0); err != nil {
		return nil, err
	}
	if a.layout != 0 && a.layout != 1 {
		return nil, attrErr("layout %d is not 0 or 1", a.layout)
	}
	if _, ok := n.Attrs["clip"]; ok {
		if a.clip, err = n.attrFloat("clip", 0); err != nil {
			return nil, err
		}
		if a.clip <= 0 {
			return nil, attrErr("clip %g is not positive", a.clip)
		}
	}
	names, ok, err := n.attrStrings("activations")
	if err != nil {
		return nil, err
	}
	na := kind.numActs()
	if !ok {
		for range a.dirs {
			names = append(names, kind.defaultActs()...)
		}
	}
	if len(names) != na*len(a.dirs) {
		return nil, attrErr("%d activations given, %s %s needs %d", len(names), dir, kind, na*len(a.dirs))
	}
	alphas, _, err := n.attrFloats("activation_alpha")
	if err != nil {
		return nil, err
	}
	betas, _, err := n.attrFloats("activation_beta")
	if err != nil {
		return nil, err
	}
	var ai, bi int
	for d := range a.dirs {
		var acts []*activation
		for j := 0; j < na; j++ {
			f, err := recurrentActivation(names[d*na+j], alphas, betas, &ai, &bi)
			if err != nil {
				return nil, err
			}
			acts = append(acts, f)
		}
		a.acts = append(a.acts, acts)
	}
	if kind == kindLSTM {
		f, err := n.attrInt("input_forget", 0)
		if err != nil {
			return nil, err
		}
		a.inputForget = f != 0
	}
	if kind == kindGRU {
		l, err := n.attrInt("linear_before_reset", 0)
		if err != nil {
			return nil, err
		}
		a.linBeforeRst = l != 0
	}
	return a, nil
}

// rnnLowering holds what one recurrent node's unrolling shares.
type rnnLowering struct {
	c     *compiler
	kind  rnnKind
	a     *rnnAttrs
	T, B  int
	I, H  int
	lens  []int // per batch entry; nil when every sequence has all T steps
	masks map[int]*value
}

func lowerRecurrent(c *compiler, n *Node, in []*value, kind rnnKind) ([]*value, error) {
	a, err := parseRNNAttrs(n, kind)
	if err != nil {
		return nil, err
	}
	get := func(i int) *value {
		if i < len(in) {
			return in[i]
		}
		return nil
	}
	x, w, r := get(0), get(1), get(2)
	if x == nil || w == nil || r == nil {
		return nil, fmt.Errorf("%w: %s needs the inputs X, W and R", ErrInput, kind)
	}
	D, G := len(a.dirs), kind.gates()
	xd, wd, rd := x.dims(), w.dims(), r.dims()
	if len(xd) != 3 {
		return nil, shapeErr("input X has shape %v; %s needs rank 3 (%s)", xd, kind, layoutWords(a.layout))
	}
	if len(wd) != 3 || len(rd) != 3 {
		return nil, shapeErr("W %v and R %v must have rank 3", wd, rd)
	}
	H := rd[2]
	if a.hidden >= 0 && a.hidden != H {
		return nil, shapeErr("hidden_size is %d but R has shape %v", a.hidden, rd)
	}
	T, B, I := xd[0], xd[1], xd[2]
	if a.layout == 1 {
		T, B = xd[1], xd[0]
	}
	if !sameShape(wd, []int{D, G * H, I}) {
		return nil, shapeErr("W has shape %v, expected [%d %d %d] (directions, %d×hidden, input size %d of X %v)", wd, D, G*H, I, G, I, xd)
	}
	if !sameShape(rd, []int{D, G * H, H}) {
		return nil, shapeErr("R has shape %v, expected [%d %d %d]", rd, D, G*H, H)
	}
	l := &rnnLowering{c: c, kind: kind, a: a, T: T, B: B, I: I, H: H, masks: map[int]*value{}}
	if b := get(3); b != nil && !sameShape(b.dims(), []int{D, 2 * G * H}) {
		return nil, shapeErr("B has shape %v, expected [%d %d]", b.dims(), D, 2*G*H)
	}
	if sl := get(4); sl != nil {
		lens, err := staticInts(sl, "sequence_lens")
		if err != nil {
			return nil, err
		}
		if len(lens) != B {
			return nil, shapeErr("sequence_lens has %d entries for a batch of %d", len(lens), B)
		}
		full := true
		for _, v := range lens {
			if v < 0 || int(v) > T {
				return nil, shapeErr("sequence length %d is outside 0..%d", v, T)
			}
			full = full && int(v) == T
		}
		if !full {
			l.lens = toInts(lens)
		}
	}
	stateShape := []int{D, B, H}
	if a.layout == 1 {
		stateShape = []int{B, D, H}
	}
	var h0, c0, p *value
	if h0 = get(5); h0 != nil && !sameShape(h0.dims(), stateShape) {
		return nil, shapeErr("initial_h has shape %v, expected %v", h0.dims(), stateShape)
	}
	if kind == kindLSTM {
		if c0 = get(6); c0 != nil && !sameShape(c0.dims(), stateShape) {
			return nil, shapeErr("initial_c has shape %v, expected %v", c0.dims(), stateShape)
		}
		if p = get(7); p != nil && !sameShape(p.dims(), []int{D, 3 * H}) {
			return nil, shapeErr("P has shape %v, expected [%d %d]", p.dims(), D, 3*H)
		}
	}
	// Time-major input, flattened to [T*B, I] for one projection.
	xt := x
	if a.layout == 1 {
		xt = c.transpose(x, []int{1, 0, 2})
	}
	xflat := c.view(xt, []int{T * B, I})

	var ys [][]*value // per direction, per time step: [B, H]
	var hs, cs []*value
	for d, rev := range a.dirs {
		dir := &rnnDir{l: l, d: d, rev: rev, acts: a.acts[d]}
		dir.weights(w, r, get(3), p)
		dir.h = l.initialState(h0, d)
		if kind == kindLSTM {
			dir.cell = l.initialState(c0, d)
		}
		var xw *value
		if dir.xBias != nil {
			xw, err = c.matmulAdd(xflat, dir.wT, dir.xBias)
		} else {
			xw, err = c.matmul(xflat, dir.wT)
		}
		if err != nil {
			return nil, err
		}
		y := make([]*value, T)
		for s := 0; s < T; s++ {
			t := s
			if rev {
				t = T - 1 - s
			}
			y[t] = dir.step(c.sliceAxis(xw, 0, t*B, (t+1)*B), t)
		}
		ys = append(ys, y)
		hs = append(hs, dir.h)
		cs = append(cs, dir.cell)
	}
	// Y: [T, D, B, H] (layout 0) or [B, T, D, H] (layout 1).
	var pieces []*value
	for t := 0; t < T; t++ {
		for d := range a.dirs {
			pieces = append(pieces, c.view(ys[d][t], []int{1, B, H}))
		}
	}
	var Y *value
	if len(pieces) == 0 {
		Y = staticValue(NewFloat([]int{0, D, B, H}, nil))
	} else {
		cat, err := c.concat(0, pieces...)
		if err != nil {
			return nil, err
		}
		Y = c.view(cat, []int{T, D, B, H})
	}
	if a.layout == 1 {
		Y = c.transpose(Y, []int{2, 0, 1, 3})
	}
	outs := []*value{Y, l.stackState(hs)}
	if kind == kindLSTM {
		outs = append(outs, l.stackState(cs))
	}
	return outs, nil
}

func layoutWords(layout int64) string {
	if layout == 1 {
		return "batch, time, features"
	}
	return "time, batch, features"
}

// initialState returns direction d's [B, H] slice of an initial state, or
// a static zero state when none is given.
func (l *rnnLowering) initialState(s *value, d int) *value {
	if s == nil {
		return staticValue(NewFloat([]int{l.B, l.H}, nil))
	}
	axis := 0
	if l.a.layout == 1 {
		axis = 1
	}
	return l.c.view(l.c.sliceAxis(s, axis, d, d+1), []int{l.B, l.H})
}

// stackState joins the directions' final [B, H] states into [D, B, H]
// (layout 0) or [B, D, H] (layout 1).
func (l *rnnLowering) stackState(states []*value) *value {
	var pieces []*value
	for _, s := range states {
		pieces = append(pieces, l.c.view(s, []int{1, l.B, l.H}))
	}
	v, err := l.c.concat(0, pieces...)
	if err != nil {
		panic(err)
	}
	if l.a.layout == 1 {
		v = l.c.transpose(v, []int{1, 0, 2})
	}
	return v
}

// mask returns the [B, 1] indicator of the batch entries that have step t,
// or nil when all of them do.
func (l *rnnLowering) mask(t int) *value {
	if l.lens == nil {
		return nil
	}
	if m, ok := l.masks[t]; ok {
		return m
	}
	m := NewFloat([]int{l.B, 1}, nil)
	all := true
	for b, n := range l.lens {
		if t < n {
			m.F[b] = 1
		} else {
			all = false
		}
	}
	var v *value
	if !all {
		v = staticValue(m)
	}
	l.masks[t] = v
	return v
}

// rnnDir is the unrolling of one direction.
type rnnDir struct {
	l    *rnnLowering
	d    int
	rev  bool
	acts []*activation

	wT    *value   // [I, G*H]
	rT    *value   // [H, G*H]; for GRU only the z and r gates
	rhT   *value   // GRU: [H, H] for the h gate
	xBias *value   // [G*H] biases added to the input projection
	rb    *value   // GRU with linear_before_reset: Rbh [H]
	peep  []*value // LSTM: Pi, Po, Pf, each [H]

	h, cell *value // current state, [B, H]
}

func (dr *rnnDir) weights(w, r, b, p *value) {
	c, l := dr.l.c, dr.l
	H, G, I := l.H, l.kind.gates(), l.I
	wd := c.view(c.sliceAxis(w, 0, dr.d, dr.d+1), []int{G * H, I})
	dr.wT = c.transpose(wd, []int{1, 0})
	rd := c.view(c.sliceAxis(r, 0, dr.d, dr.d+1), []int{G * H, H})
	if l.kind == kindGRU {
		dr.rT = c.transpose(c.sliceAxis(rd, 0, 0, 2*H), []int{1, 0})
		dr.rhT = c.transpose(c.sliceAxis(rd, 0, 2*H, 3*H), []int{1, 0})
	} else {
		dr.rT = c.transpose(rd, []int{1, 0})
	}
	if b != nil {
		bd := c.view(c.sliceAxis(b, 0, dr.d, dr.d+1), []int{2 * G * H})
		wb := c.sliceAxis(bd, 0, 0, G*H)
		rb := c.sliceAxis(bd, 0, G*H, 2*G*H)
		if l.kind == kindGRU && l.a.linBeforeRst {
			// Rbh stays inside r ⊙ (H Rh^T + Rbh).
			zero := staticValue(NewFloat([]int{H}, nil))
			rbzr, err := c.concat(0, c.sliceAxis(rb, 0, 0, 2*H), zero)
			if err != nil {
				panic(err)
			}
			dr.xBias = c.mustBinary(opAdd, wb, rbzr)
			dr.rb = c.sliceAxis(rb, 0, 2*H, 3*H)
		} else {
			dr.xBias = c.mustBinary(opAdd, wb, rb)
		}
	}
	if p != nil {
		pd := c.view(c.sliceAxis(p, 0, dr.d, dr.d+1), []int{3 * H})
		for g := 0; g < 3; g++ {
			dr.peep = append(dr.peep, c.sliceAxis(pd, 0, g*H, (g+1)*H))
		}
	}
}

// isZero reports whether v is a static all-zero tensor.
func isZero(v *value) bool {
	if v == nil || !v.isStatic() || v.t.DType != Float {
		return false
	}
	for _, x := range v.t.F {
		if x != 0 {
			return false
		}
	}
	return true
}

// project returns xw + h rT, skipping the product while h is a static zero.
func (dr *rnnDir) project(xw, h, rT *value) *value {
	c := dr.l.c
	if isZero(h) {
		return xw
	}
	v, err := c.matmulAdd(h, rT, xw)
	if err != nil {
		panic(err)
	}
	return v
}

// activate clips a pre-activation when clip is set, then applies f.
func (dr *rnnDir) activate(f *activation, v *value) *value {
	c := dr.l.c
	if dr.l.a.clip > 0 {
		v = c.unary(actClip(-dr.l.a.clip, dr.l.a.clip), v)
	}
	return c.unary(f, v)
}

// step advances the state by time step t given its input projection xw
// ([B, G*H]) and returns the Y entry of that step.
func (dr *rnnDir) step(xw *value, t int) *value {
	c, l := dr.l.c, dr.l
	H := l.H
	gate := func(v *value, g int) *value { return c.sliceAxis(v, 1, g*H, (g+1)*H) }
	var h, cell *value
	switch l.kind {
	case kindRNN:
		h = dr.activate(dr.acts[0], dr.project(xw, dr.h, dr.rT))
	case kindLSTM:
		f, g, hf := dr.acts[0], dr.acts[1], dr.acts[2]
		pre := dr.project(xw, dr.h, dr.rT)
		pi, po, pf, pc := gate(pre, 0), gate(pre, 1), gate(pre, 2), gate(pre, 3)
		if dr.peep != nil && !isZero(dr.cell) {
			pi = c.mustBinary(opAdd, pi, c.mustBinary(opMul, dr.cell, dr.peep[0]))
			pf = c.mustBinary(opAdd, pf, c.mustBinary(opMul, dr.cell, dr.peep[2]))
		}
		ig := dr.activate(f, pi)
		var fg *value
		if l.a.inputForget {
			fg = c.mustBinary(opSub, c.scalar(1), ig)
		} else {
			fg = dr.activate(f, pf)
		}
		cand := dr.activate(g, pc)
		cell = c.mustBinary(opMul, ig, cand)
		if !isZero(dr.cell) {
			cell = c.mustBinary(opAdd, c.mustBinary(opMul, fg, dr.cell), cell)
		}
		if dr.peep != nil {
			po = c.mustBinary(opAdd, po, c.mustBinary(opMul, cell, dr.peep[1]))
		}
		og := dr.activate(f, po)
		h = c.mustBinary(opMul, og, c.unary(hf, cell))
	case kindGRU:
		f, g := dr.acts[0], dr.acts[1]
		zr := dr.project(c.sliceAxis(xw, 1, 0, 2*H), dr.h, dr.rT)
		z := dr.activate(f, gate(zr, 0))
		r := dr.activate(f, gate(zr, 1))
		pre := gate(xw, 2)
		if !isZero(dr.h) {
			if l.a.linBeforeRst {
				hr, err := c.matmul(dr.h, dr.rhT)
				if err != nil {
					panic(err)
				}
				if dr.rb != nil {
					hr = c.mustBinary(opAdd, hr, dr.rb)
				}
				pre = c.mustBinary(opAdd, pre, c.mustBinary(opMul, r, hr))
			} else {
				rh, err := c.matmul(c.mustBinary(opMul, r, dr.h), dr.rhT)
				if err != nil {
					panic(err)
				}
				pre = c.mustBinary(opAdd, pre, rh)
			}
		} else if l.a.linBeforeRst && dr.rb != nil {
			pre = c.mustBinary(opAdd, pre, c.mustBinary(opMul, r, dr.rb))
		}
		hc := dr.activate(g, pre)
		// h = (1 - z) ⊙ hc + z ⊙ h_prev = hc + z ⊙ (h_prev - hc)
		if isZero(dr.h) {
			h = c.mustBinary(opSub, hc, c.mustBinary(opMul, z, hc))
		} else {
			h = c.mustBinary(opAdd, hc, c.mustBinary(opMul, z, c.mustBinary(opSub, dr.h, hc)))
		}
	}
	m := l.mask(t)
	if m == nil {
		dr.h, dr.cell = h, cell
		return h
	}
	// Entries without step t keep their state and output zero.
	keep := func(prev, next *value) *value {
		return c.mustBinary(opAdd, prev, c.mustBinary(opMul, m, c.mustBinary(opSub, next, prev)))
	}
	dr.h = keep(dr.h, h)
	if cell != nil {
		dr.cell = keep(dr.cell, cell)
	}
	return c.mustBinary(opMul, m, h)
}
