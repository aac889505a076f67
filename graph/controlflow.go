package graph

import (
	"fmt"
	"maps"
	"slices"
)

// Control flow is unrolled at compile time. A Program is already
// specialised to the input shapes, so the trip count of a Loop whose count
// is the time dimension (Shape, Gather), the number of slices of a Scan and
// the condition of an If folded from constants are known: the compiler
// lowers the body once per iteration, binding the body's inputs to the
// values of that iteration, and the result is the same straight-line list
// of differentiable kernels as for any other node. A loop count or
// condition computed from the parameters or the float data cannot be
// unrolled and is reported with the node.

// maxIterations bounds the iterations of one Loop, so that a loop with
// neither a trip count nor a condition that turns false ends with an error.
const maxIterations = 1 << 16

// sequence is an ONNX sequence of tensors, known element by element at
// compile time.
type sequence struct {
	elems []*value
}

func seqValue(elems []*value) *value { return &value{slot: -1, seq: &sequence{elems: elems}} }

// checkBodies checks the subgraphs of the graph's nodes (see
// checkSubgraphs); every name of the main graph is visible in them.
func (g *Graph) checkBodies(opset int) ErrorList {
	outer := map[string]bool{}
	addNames(outer, g.Inputs, g.Init, g.Nodes)
	var errs ErrorList
	for _, n := range g.Nodes {
		if err := checkSubgraphs(n, opset, outer); err != nil {
			errs = append(errs, &NodeError{Node: n.Label(), OpType: n.OpType, Err: err})
		}
	}
	return errs
}

// body returns the subgraph attribute name of n.
func body(n *Node, name string) (*Subgraph, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return nil, attrErr("%s needs the subgraph attribute %q", n.OpType, name)
	}
	if a.Kind != AttrGraph || a.G == nil {
		return nil, attrErr("attribute %q must be one subgraph", name)
	}
	return a.G, nil
}

// bodyScope returns the values visible in sg: the enclosing scope's and the
// subgraph's own initializers, as constants.
func (c *compiler) bodyScope(sg *Subgraph) map[string]*value {
	vals := maps.Clone(c.vals)
	for name, t := range sg.Init {
		vals[name] = staticValue(t)
	}
	return vals
}

// runBody lowers one iteration of sg in the scope vals (made by bodyScope
// and kept from one iteration to the next), with args bound to the
// subgraph's inputs, and returns the values of its outputs.
func (c *compiler) runBody(sg *Subgraph, vals map[string]*value, args []*value) ([]*value, error) {
	if len(args) != len(sg.Inputs) {
		return nil, fmt.Errorf("%w: subgraph %q has %d inputs, the operator gives it %d", ErrInput, sg.Name, len(sg.Inputs), len(args))
	}
	saved, node := c.vals, c.node
	c.vals = vals
	defer func() { c.vals, c.node = saved, node }()
	for i, in := range sg.Inputs {
		vals[in.Name] = args[i]
	}
	for _, m := range sg.Nodes {
		if err := c.lowerNode(m); err != nil {
			return nil, &NodeError{Node: m.Label(), OpType: m.OpType, Err: err}
		}
	}
	outs := make([]*value, len(sg.Outputs))
	for i, o := range sg.Outputs {
		v, ok := vals[o.Name]
		if !ok || v == nil {
			return nil, fmt.Errorf("subgraph %q: output %q is not computed", sg.Name, o.Name)
		}
		outs[i] = v
	}
	return outs, nil
}

// staticBool reads a condition that must be known at compile time.
func staticBool(v *value, what string) (bool, error) {
	if v.seq != nil || !v.isStatic() {
		return false, fmt.Errorf("%w: the %s depends on the parameters or the float inputs; rnnaudit unrolls control flow at compile time, so it must fold to a constant (a shape, a length or a constant)", ErrNotDifferentiable, what)
	}
	if v.t.Len() != 1 {
		return false, shapeErr("the %s must hold one value, it has shape %v", what, v.t.Shape)
	}
	return v.t.Float64s()[0] != 0, nil
}

// unsqueezeAt views v with a new axis of size 1 at axis.
func (c *compiler) unsqueezeAt(v *value, axis int) *value {
	d := v.dims()
	shape := make([]int, 0, len(d)+1)
	shape = append(shape, d[:axis]...)
	shape = append(shape, 1)
	shape = append(shape, d[axis:]...)
	return c.view(v, shape)
}

// stack joins values of equal shape along a new axis.
func (c *compiler) stack(axis int, vs []*value) (*value, error) {
	if len(vs) == 0 {
		return nil, shapeErr("nothing to stack (the loop ran no iterations)")
	}
	ax, err := normAxis(int64(axis), len(vs[0].dims())+1)
	if err != nil {
		return nil, err
	}
	parts := make([]*value, len(vs))
	for i, v := range vs {
		if v.seq != nil {
			return nil, fmt.Errorf("%w: a scan output is a sequence", ErrInput)
		}
		if !sameShape(v.dims(), vs[0].dims()) {
			return nil, shapeErr("iteration %d gives shape %v, iteration 0 gave %v", i, v.dims(), vs[0].dims())
		}
		parts[i] = c.unsqueezeAt(v, ax)
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return c.concat(ax, parts...)
}

// lowerLoop unrolls a Loop (opsets 1 to 21): inputs M (trip count), cond
// and N loop-carried values; the body takes (iteration, cond, N values) and
// gives (cond, N values, K scan outputs); the outputs are the N final values
// and the K scan outputs stacked along a new first axis.
func lowerLoop(c *compiler, n *Node, in []*value) ([]*value, error) {
	sg, err := body(n, "body")
	if err != nil {
		return nil, err
	}
	if len(in) < 2 {
		return nil, fmt.Errorf("%w: Loop takes a trip count and a condition (either may be empty), it has %d inputs", ErrInput, len(in))
	}
	nCarried := len(in) - 2
	if len(sg.Inputs) != nCarried+2 {
		return nil, fmt.Errorf("%w: the body has %d inputs, Loop with %d loop-carried values needs %d", ErrInput, len(sg.Inputs), nCarried, nCarried+2)
	}
	nScan := len(sg.Outputs) - 1 - nCarried
	if nScan < 0 {
		return nil, fmt.Errorf("%w: the body has %d outputs, Loop with %d loop-carried values needs at least %d", ErrInput, len(sg.Outputs), nCarried, nCarried+1)
	}
	trip := int64(-1)
	if in[0] != nil {
		if !in[0].isStatic() || in[0].seq != nil {
			return nil, fmt.Errorf("%w: the trip count depends on the parameters or the float inputs; rnnaudit unrolls loops whose trip count is a shape (such as the time dimension) or a constant", ErrNotDifferentiable)
		}
		m, err := staticInts(in[0], "trip count")
		if err != nil {
			return nil, err
		}
		if len(m) != 1 || m[0] < 0 {
			return nil, shapeErr("the trip count must be one non-negative number, it is %v", m)
		}
		if m[0] > maxIterations {
			return nil, fmt.Errorf("%w: the trip count is %d; rnnaudit unrolls at most %d iterations", ErrShape, m[0], maxIterations)
		}
		trip = m[0]
	}
	cond := true
	if in[1] != nil {
		if cond, err = staticBool(in[1], "loop condition"); err != nil {
			return nil, err
		}
	}
	if trip < 0 && in[1] == nil {
		return nil, fmt.Errorf("%w: Loop has neither a trip count nor a condition", ErrInput)
	}
	carried := slices.Clone(in[2:])
	for i, v := range carried {
		if v == nil {
			return nil, fmt.Errorf("%w: loop-carried value %d is missing", ErrInput, i)
		}
	}
	scans := make([][]*value, nScan)
	vals := c.bodyScope(sg)
	truth := staticValue(NewInt(nil, []int64{1}))
	for it := int64(0); cond && (trip < 0 || it < trip); it++ {
		if it >= maxIterations {
			return nil, fmt.Errorf("%w: the loop runs more than %d iterations", ErrShape, maxIterations)
		}
		args := append([]*value{staticValue(NewInt(nil, []int64{it})), truth}, carried...)
		outs, err := c.runBody(sg, vals, args)
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", it, err)
		}
		if cond, err = staticBool(outs[0], "condition the body computes"); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", it, err)
		}
		copy(carried, outs[1:1+nCarried])
		for k := range scans {
			scans[k] = append(scans[k], outs[1+nCarried+k])
		}
	}
	res := carried
	for k, s := range scans {
		if k+nCarried >= len(n.Outputs) || n.Outputs[k+nCarried] == "" {
			res = append(res, nil)
			continue
		}
		v, err := c.stack(0, s)
		if err != nil {
			return nil, fmt.Errorf("scan output %d: %w", k, err)
		}
		res = append(res, v)
	}
	return res, nil
}

// lowerScan unrolls a Scan. From opset 9: inputs are N initial states and
// M scan inputs, sliced along scan_input_axes (forward or backward per
// scan_input_directions); the body takes (N states, M slices) and gives
// (N states, K scan output slices), stacked along scan_output_axes. Opset 8
// has a leading batch axis on every input and output and an optional
// sequence_lens first input, which must be absent or all full length: each
// batch entry is scanned on its own along axis 0 (directions).
func lowerScan(c *compiler, n *Node, in []*value) ([]*value, error) {
	sg, err := body(n, "body")
	if err != nil {
		return nil, err
	}
	v8 := c.g.Opset < 9
	if v8 {
		if len(in) == 0 {
			return nil, fmt.Errorf("%w: Scan has no inputs", ErrInput)
		}
		if lens := in[0]; lens != nil {
			if err := fullLengths(in[1:], lens); err != nil {
				return nil, err
			}
		}
		in = in[1:]
	}
	m, err := n.attrInt("num_scan_inputs", -1)
	if err != nil {
		return nil, err
	}
	if m < 1 || int(m) > len(in) {
		return nil, attrErr("num_scan_inputs is %d; it must be between 1 and the number of inputs (%d)", m, len(in))
	}
	nState := len(in) - int(m)
	nOut := len(sg.Outputs) - nState
	if len(sg.Inputs) != len(in) || nOut < 0 {
		return nil, fmt.Errorf("%w: the body has %d inputs and %d outputs; Scan with %d states and %d scan inputs needs %d inputs and at least %d outputs",
			ErrInput, len(sg.Inputs), len(sg.Outputs), nState, m, len(in), nState)
	}
	list := func(name string, count int) ([]int64, error) {
		v, ok, err := n.attrInts(name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return make([]int64, count), nil
		}
		if len(v) != count {
			return nil, attrErr("%s has %d entries, Scan has %d of those", name, len(v), count)
		}
		return v, nil
	}
	sp := scanPlan{sg: sg, nState: nState}
	if v8 {
		sp.inAxes, sp.outAxes, sp.outDirs = make([]int64, m), make([]int64, nOut), make([]int64, nOut)
		if sp.inDirs, err = list("directions", int(m)); err != nil {
			return nil, err
		}
		return c.scanBatch(sp, in)
	}
	if sp.inAxes, err = list("scan_input_axes", int(m)); err != nil {
		return nil, err
	}
	if sp.inDirs, err = list("scan_input_directions", int(m)); err != nil {
		return nil, err
	}
	if sp.outAxes, err = list("scan_output_axes", nOut); err != nil {
		return nil, err
	}
	if sp.outDirs, err = list("scan_output_directions", nOut); err != nil {
		return nil, err
	}
	return c.scan(sp, in)
}

// scanPlan is a Scan's body and attributes.
type scanPlan struct {
	sg                               *Subgraph
	nState                           int
	inAxes, inDirs, outAxes, outDirs []int64
}

// fullLengths checks that the sequence_lens of an opset-8 Scan are known
// and all equal to the scan inputs' length (axis 1).
func fullLengths(in []*value, lens *value) error {
	l, err := staticInts(lens, "sequence_lens")
	if err != nil {
		return err
	}
	for _, x := range in {
		if x == nil || len(x.dims()) < 2 {
			continue
		}
		for b, v := range l {
			if int(v) != x.dims()[1] {
				return fmt.Errorf("%w: sequence_lens[%d] is %d, shorter than the scan inputs (%d): Scan with sequences of several lengths is not supported", ErrShape, b, v, x.dims()[1])
			}
		}
	}
	return nil
}

// scanBatch runs an opset-8 Scan: one scan per entry of the leading batch
// axis, whose results are stacked along that axis.
func (c *compiler) scanBatch(sp scanPlan, in []*value) ([]*value, error) {
	if in[0] == nil || len(in[0].dims()) == 0 {
		return nil, fmt.Errorf("%w: the first input of an opset-8 Scan must have a batch axis", ErrInput)
	}
	batch := in[0].dims()[0]
	var per [][]*value
	for b := range batch {
		args := make([]*value, len(in))
		for i, x := range in {
			if x == nil || x.seq != nil || len(x.dims()) == 0 || x.dims()[0] != batch {
				return nil, shapeErr("input %d of an opset-8 Scan must have the batch axis of size %d", i, batch)
			}
			s := c.sliceAxis(x, 0, b, b+1)
			args[i] = c.view(s, x.dims()[1:])
		}
		outs, err := c.scan(sp, args)
		if err != nil {
			return nil, fmt.Errorf("batch entry %d: %w", b, err)
		}
		per = append(per, outs)
	}
	res := make([]*value, len(per[0]))
	for k := range res {
		col := make([]*value, batch)
		for b := range batch {
			col[b] = per[b][k]
		}
		v, err := c.stack(0, col)
		if err != nil {
			return nil, err
		}
		res[k] = v
	}
	return res, nil
}

// scan unrolls the scan of one set of states and scan inputs.
func (c *compiler) scan(sp scanPlan, in []*value) ([]*value, error) {
	xs := in[sp.nState:]
	axes := make([]int, len(xs))
	steps := -1
	for j, x := range xs {
		if x == nil || x.seq != nil {
			return nil, fmt.Errorf("%w: scan input %d must be a tensor", ErrInput, j)
		}
		a, err := normAxis(sp.inAxes[j], len(x.dims()))
		if err != nil {
			return nil, fmt.Errorf("scan input %d: %w", j, err)
		}
		axes[j] = a
		if d := x.dims()[a]; steps < 0 {
			steps = d
		} else if d != steps {
			return nil, shapeErr("scan input %d has %d positions along axis %d, scan input 0 has %d", j, d, a, steps)
		}
	}
	state := slices.Clone(in[:sp.nState])
	scans := make([][]*value, len(sp.outAxes))
	vals := c.bodyScope(sp.sg)
	for t := 0; t < steps; t++ {
		args := slices.Clone(state)
		for j, x := range xs {
			pos := t
			if sp.inDirs[j] != 0 {
				pos = steps - 1 - t
			}
			d := x.dims()
			s := c.sliceAxis(x, axes[j], pos, pos+1)
			args = append(args, c.view(s, slices.Delete(slices.Clone(d), axes[j], axes[j]+1)))
		}
		outs, err := c.runBody(sp.sg, vals, args)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", t, err)
		}
		copy(state, outs[:sp.nState])
		for k := range scans {
			scans[k] = append(scans[k], outs[sp.nState+k])
		}
	}
	res := state
	for k, s := range scans {
		if sp.outDirs[k] != 0 {
			slices.Reverse(s)
		}
		v, err := c.stack(int(sp.outAxes[k]), s)
		if err != nil {
			return nil, fmt.Errorf("scan output %d: %w", k, err)
		}
		res = append(res, v)
	}
	return res, nil
}

// lowerIf lowers the branch its condition selects, which must fold to a
// constant.
func lowerIf(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "cond")
	if err != nil {
		return nil, err
	}
	cond, err := staticBool(x, "condition")
	if err != nil {
		return nil, err
	}
	name := "else_branch"
	if cond {
		name = "then_branch"
	}
	sg, err := body(n, name)
	if err != nil {
		return nil, err
	}
	outs, err := c.runBody(sg, c.bodyScope(sg), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return outs, nil
}

func lowerSequenceEmpty(c *compiler, n *Node, in []*value) ([]*value, error) {
	return []*value{seqValue(nil)}, nil
}

func lowerSequenceConstruct(c *compiler, n *Node, in []*value) ([]*value, error) {
	for i, v := range in {
		if v == nil || v.seq != nil {
			return nil, fmt.Errorf("%w: input %d must be a tensor", ErrInput, i)
		}
	}
	return []*value{seqValue(slices.Clone(in))}, nil
}

// seqArg returns input i, which must be a sequence.
func seqArg(in []*value, i int) (*sequence, error) {
	if i >= len(in) || in[i] == nil || in[i].seq == nil {
		return nil, fmt.Errorf("%w: input %d must be a sequence", ErrInput, i)
	}
	return in[i].seq, nil
}

// seqPos reads an optional position argument: a static integer in
// [-n, n) (or [-n, n] when end is true), default n when end else error.
func seqPos(in []*value, i, n int, end bool) (int, error) {
	if i >= len(in) || in[i] == nil {
		if end {
			return n, nil
		}
		return 0, fmt.Errorf("%w: the position is missing", ErrInput)
	}
	p, err := staticInts(in[i], "position")
	if err != nil {
		return 0, err
	}
	if len(p) != 1 {
		return 0, shapeErr("the position must be one number, it is %v", p)
	}
	pos := int(p[0])
	if pos < 0 {
		pos += n
	}
	hi := n - 1
	if end {
		hi = n
	}
	if pos < 0 || pos > hi {
		return 0, shapeErr("position %d is out of range for a sequence of %d tensors", p[0], n)
	}
	return pos, nil
}

func lowerSequenceInsert(c *compiler, n *Node, in []*value) ([]*value, error) {
	s, err := seqArg(in, 0)
	if err != nil {
		return nil, err
	}
	t, err := need(in, 1, "tensor")
	if err != nil {
		return nil, err
	}
	if t.seq != nil {
		return nil, fmt.Errorf("%w: the inserted value is a sequence", ErrInput)
	}
	pos, err := seqPos(in, 2, len(s.elems), true)
	if err != nil {
		return nil, err
	}
	return []*value{seqValue(slices.Insert(slices.Clone(s.elems), pos, t))}, nil
}

func lowerSequenceAt(c *compiler, n *Node, in []*value) ([]*value, error) {
	s, err := seqArg(in, 0)
	if err != nil {
		return nil, err
	}
	pos, err := seqPos(in, 1, len(s.elems), false)
	if err != nil {
		return nil, err
	}
	return []*value{s.elems[pos]}, nil
}

func lowerSequenceLength(c *compiler, n *Node, in []*value) ([]*value, error) {
	s, err := seqArg(in, 0)
	if err != nil {
		return nil, err
	}
	return []*value{staticValue(NewInt(nil, []int64{int64(len(s.elems))}))}, nil
}

func lowerConcatFromSequence(c *compiler, n *Node, in []*value) ([]*value, error) {
	s, err := seqArg(in, 0)
	if err != nil {
		return nil, err
	}
	axis, err := n.attrInt("axis", 0)
	if _, ok := n.Attrs["axis"]; err != nil || !ok {
		return nil, attrErr("ConcatFromSequence needs the attribute \"axis\"")
	}
	newAxis, err := n.attrInt("new_axis", 0)
	if err != nil {
		return nil, err
	}
	if len(s.elems) == 0 {
		return nil, shapeErr("the sequence is empty")
	}
	if newAxis != 0 {
		v, err := c.stack(int(axis), s.elems)
		return []*value{v}, err
	}
	ax, err := normAxis(axis, len(s.elems[0].dims()))
	if err != nil {
		return nil, err
	}
	v, err := c.concat(ax, s.elems...)
	return []*value{v}, err
}
