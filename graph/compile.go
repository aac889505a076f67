package graph

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// value is what the compiler knows about one ONNX value: either its
// contents, known at compile time (static), or the program slot that will
// hold it at run time (dynamic, always Float).
type value struct {
	t     *Tensor // non-nil for a static value
	slot  int     // dynamic: index into Program.slots
	shape []int   // dynamic: shape of the slot
	// seq is set for an ONNX sequence (SequenceEmpty, SequenceInsert, ...):
	// its elements; t is then nil and slot unused.
	seq *sequence
}

func (v *value) isStatic() bool { return v.t != nil }

func (v *value) dims() []int {
	if v.t != nil {
		return v.t.Shape
	}
	return v.shape
}

func (v *value) dtype() DType {
	if v.t != nil {
		return v.t.DType
	}
	return Float
}

func staticValue(t *Tensor) *value { return &value{t: t, slot: -1} }

type slotKind uint8

const (
	slotStep  slotKind = iota // written by a step
	slotParam                 // a parameter tensor, aliasing theta
	slotInput                 // a graph input
	slotConst                 // a constant folded at compile time
	slotView                  // the same data as another slot, another shape
	slotPart                  // written by a step, stored inside another slot (see placeConcats)
)

type slot struct {
	kind  slotKind
	shape []int
	index int     // slotParam: index into Graph.Params; slotInput: index into Graph.Inputs; slotView: root slot; slotPart: container
	off   int     // slotView, slotPart: offset of the first element in the root or container
	c     *Tensor // slotConst
}

// step is one kernel application: slots[out] = k(slots[in...]).
type step struct {
	k    kernel
	in   []int
	out  int
	node string // the ONNX node it came from, for diagnostics
}

// Program is a Graph specialised to one set of input shapes (and values of
// integer inputs): a straight-line list of float kernels over numbered
// slots. All shape arithmetic has been folded away, and recurrent operators
// are unrolled over time. A Program is read-only and safe for concurrent
// use; each goroutine runs it through its own State.
type Program struct {
	g       *Graph
	slots   []slot
	steps   []step
	live    []bool // slots some output needs (after prune)
	owners  []int  // slotStep slots that own storage (step results and containers of parts)
	args    argSlots
	outputs []*value
	inputs  [][]int // the shapes the program was compiled for, per graph input
}

// Graph returns the graph the program was compiled from.
func (p *Program) Graph() *Graph { return p.g }

// NumOutputs returns the number of outputs, as in Graph.Outputs.
func (p *Program) NumOutputs() int { return len(p.outputs) }

// NumSteps returns the number of kernel applications in one forward pass.
func (p *Program) NumSteps() int { return len(p.steps) }

// compiler lowers the nodes of a graph into a Program.
type compiler struct {
	g      *Graph
	p      *Program
	vals   map[string]*value
	consts map[*Tensor]int // slots already made for static tensors
	node   *Node           // the node being lowered
	// codes holds the static values of the category codes that the model
	// casts from float data (see codes.go), by value name.
	codes codeShadow
}

// Compile specialises the graph to the given inputs, one per g.Inputs in
// order. Float inputs contribute only their shapes; integer inputs (such as
// sequence lengths or category codes) and float inputs that the model
// casts to integers (category codes in a data column, see ValueInputs)
// are read, and the program is valid only for those values. It returns an error wrapping ErrInput when an input does not
// match its declaration, and a *NodeError when a node cannot be lowered.
func (g *Graph) Compile(inputs []*Tensor) (p *Program, err error) {
	var c *compiler
	defer func() {
		if r := recover(); r != nil {
			if err = c.recovered(r); err != nil {
				p = nil
				return
			}
			err = fmt.Errorf("graph: internal error while compiling (please report): %v\n%s", r, debug.Stack())
		}
	}()
	if err := g.checkInputs(inputs); err != nil {
		return nil, err
	}
	c = &compiler{
		g:      g,
		p:      &Program{g: g},
		vals:   map[string]*value{"": nil},
		consts: map[*Tensor]int{},
	}
	for name, t := range g.Init {
		if i, ok := g.isParam[name]; ok {
			c.vals[name] = c.newSlot(slot{kind: slotParam, shape: t.Shape, index: i})
		} else {
			c.vals[name] = staticValue(t)
		}
	}
	c.codes = g.newCodeShadow()
	for i, in := range g.Inputs {
		t := inputs[i]
		c.p.inputs = append(c.p.inputs, append([]int(nil), t.Shape...))
		if t.DType == Int {
			c.vals[in.Name] = staticValue(t)
		} else {
			c.vals[in.Name] = c.newSlot(slot{kind: slotInput, shape: t.Shape, index: i})
			c.codes.input(in.Name, t)
		}
	}
	for _, n := range g.Nodes {
		if err := c.lowerNode(n); err != nil {
			return nil, &NodeError{Node: n.Label(), OpType: n.OpType, Err: err}
		}
	}
	for _, o := range g.Outputs {
		v, ok := c.vals[o.Name]
		if !ok || v == nil {
			return nil, fmt.Errorf("graph: output %q is not produced by any node", o.Name)
		}
		if v.seq != nil {
			return nil, fmt.Errorf("graph: output %q is a sequence; only tensor outputs are supported (export a ConcatFromSequence of it)", o.Name)
		}
		c.p.outputs = append(c.p.outputs, v)
	}
	c.p.prune()
	c.p.optimize()
	return c.p, nil
}

// prune drops the steps whose results no output needs (for example Y of a
// recurrent node when only Y_h is used).
func (p *Program) prune() {
	needed := make([]bool, len(p.slots))
	mark := func(s int) {
		needed[s] = true
		if p.slots[s].kind == slotView {
			needed[p.slots[s].index] = true
		}
	}
	for _, v := range p.outputs {
		if !v.isStatic() {
			mark(v.slot)
		}
	}
	keep := make([]bool, len(p.steps))
	for i := len(p.steps) - 1; i >= 0; i-- {
		st := p.steps[i]
		if !needed[st.out] {
			continue
		}
		keep[i] = true
		for _, j := range st.in {
			mark(j)
		}
	}
	steps := p.steps[:0]
	for i, st := range p.steps {
		if keep[i] {
			steps = append(steps, st)
		}
	}
	p.steps = steps
	for i, sl := range p.slots {
		if sl.kind == slotView && !needed[sl.index] {
			needed[i] = false
		}
	}
	p.live = needed
}

func (c *compiler) lowerNode(n *Node) error {
	c.node = n
	lower, ok := lowererFor(n.OpType)
	if !ok || (n.Domain != "" && n.Domain != "ai.onnx") {
		return ErrUnsupportedOp
	}
	in := make([]*value, len(n.Inputs))
	for i, name := range n.Inputs {
		if name == "" {
			continue
		}
		v, ok := c.vals[name]
		if !ok {
			return fmt.Errorf("input %q is not defined", name)
		}
		if v != nil && v.seq != nil && !takesSequences(n.OpType) {
			return fmt.Errorf("%w: input %q is a sequence, which %s does not take", ErrInput, name, n.OpType)
		}
		in[i] = v
	}
	if done, err := c.lowerCodes(n, lower, in); done || err != nil {
		return err
	}
	outs, err := lower(c, n, in)
	if err != nil {
		return err
	}
	for i, name := range n.Outputs {
		if name == "" {
			continue
		}
		if i >= len(outs) || outs[i] == nil {
			return fmt.Errorf("output %d (%q) is not computed by this operator", i, name)
		}
		c.vals[name] = outs[i]
	}
	return nil
}

func (c *compiler) newSlot(s slot) *value {
	c.fit(s.shape)
	s.shape = append([]int(nil), s.shape...)
	c.p.slots = append(c.p.slots, s)
	return &value{slot: len(c.p.slots) - 1, shape: s.shape}
}

// slotOf returns the slot holding v, making a constant slot for a static v.
func (c *compiler) slotOf(v *value) int {
	if !v.isStatic() {
		return v.slot
	}
	t := v.t
	if t.DType != Float {
		t = NewFloat(t.Shape, t.Float64s())
	}
	if s, ok := c.consts[v.t]; ok {
		return s
	}
	s := c.newSlot(slot{kind: slotConst, shape: t.Shape, c: t}).slot
	c.consts[v.t] = s
	return s
}

// emit applies kernel k to the inputs, giving a value of the given shape.
// When every input is static the kernel runs now and the result is static;
// otherwise a step is appended to the program. The result is Float unless
// every input is Int and the kernel keeps integers (keepsInt).
func (c *compiler) emit(k kernel, shape []int, in ...*value) *value {
	c.fit(shape)
	allStatic := true
	allInt := true
	for _, v := range in {
		if !v.isStatic() {
			allStatic = false
		}
		if v.dtype() != Int {
			allInt = false
		}
	}
	if allStatic {
		ts := make([]*Tensor, len(in))
		for i, v := range in {
			ts[i] = v.t
		}
		var out *Tensor
		if allInt && len(in) > 0 && k.keepsInt() {
			out = NewInt(shape, nil)
		} else {
			for i, t := range ts {
				if t.DType != Float {
					ts[i] = NewFloat(t.Shape, t.Float64s())
				}
			}
			out = NewFloat(shape, nil)
		}
		k.forward(nil, out, ts)
		return staticValue(out)
	}
	st := step{k: k, node: c.node.Label()}
	for _, v := range in {
		st.in = append(st.in, c.slotOf(v))
	}
	out := c.newSlot(slot{kind: slotStep, shape: shape})
	st.out = out.slot
	c.p.steps = append(c.p.steps, st)
	return out
}

// view returns v with a new shape of the same number of elements, sharing
// its data (Reshape, Squeeze, Unsqueeze, Flatten, Identity).
func (c *compiler) view(v *value, shape []int) *value {
	if numel(shape) != numel(v.dims()) {
		panic(fmt.Sprintf("graph: view of %v as %v", v.dims(), shape))
	}
	return c.viewAt(v, shape, 0)
}

// viewAt returns the numel(shape) elements of v from offset off, as a
// tensor of that shape sharing v's data.
func (c *compiler) viewAt(v *value, shape []int, off int) *value {
	n := numel(shape)
	if v.isStatic() {
		t := *v.t
		t.Shape = append([]int(nil), shape...)
		if t.DType == Float {
			t.F = t.F[off : off+n]
		} else {
			t.I = t.I[off : off+n]
		}
		return staticValue(&t)
	}
	root := v.slot
	if sl := c.p.slots[root]; sl.kind == slotView {
		root, off = sl.index, off+sl.off
	}
	if off == 0 && sameShape(shape, v.dims()) && root == v.slot {
		return v
	}
	return c.newSlot(slot{kind: slotView, shape: shape, index: root, off: off})
}

// checkInputs validates the values given for the graph inputs against
// their declarations.
func (g *Graph) checkInputs(inputs []*Tensor) error {
	if len(inputs) != len(g.Inputs) {
		return fmt.Errorf("graph: %w: the model has %d inputs (%s), got %d values", ErrInput, len(g.Inputs), g.inputNames(), len(inputs))
	}
	var problems ErrorList
	for i, in := range g.Inputs {
		t := inputs[i]
		if t == nil {
			problems = append(problems, fmt.Errorf("graph: %w: no value for input %q", ErrInput, in.Name))
			continue
		}
		if want, ok := in.Elem.DType(); ok && in.Elem != ElemUndefined && want != t.DType {
			problems = append(problems, fmt.Errorf("graph: %w: input %q is declared %s, got %s values", ErrInput, in.Name, in.Elem, t.DType))
		}
		if t.Len() != len(t.F)+len(t.I) {
			problems = append(problems, fmt.Errorf("graph: %w: input %q has %d values for shape %v", ErrInput, in.Name, len(t.F)+len(t.I), errs.Value(t.Shape)))
		}
		if in.Dims == nil {
			continue
		}
		if len(in.Dims) != len(t.Shape) {
			problems = append(problems, fmt.Errorf("graph: %w: input %q has rank %d %s, got rank %d %v", ErrInput, in.Name, len(in.Dims), errs.Value(in.ShapeString()), len(t.Shape), errs.Value(t.Shape)))
			continue
		}
		for j, d := range in.Dims {
			if d.Value >= 0 && d.Value != t.Shape[j] {
				problems = append(problems, fmt.Errorf("graph: %w: input %q dimension %d is fixed at %d in the model, got %d (shape %v, declared %s)", ErrInput, in.Name, j, d.Value, t.Shape[j], errs.Value(t.Shape), errs.Value(in.ShapeString())))
			}
		}
	}
	return problems.Err()
}

func (g *Graph) inputNames() string {
	s := ""
	for i, in := range g.Inputs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q %s", in.Name, errs.Value(in.ShapeString()))
	}
	return s
}

// Run compiles the graph for inputs and evaluates it with parameters theta
// (nil means the trained values), returning the outputs as new tensors.
// It is the simple, allocating entry point; use Compile and a State to run
// many times.
func (g *Graph) Run(theta []float64, inputs []*Tensor) ([]*Tensor, error) {
	p, err := g.Compile(inputs)
	if err != nil {
		return nil, err
	}
	if theta == nil {
		theta = g.theta
	}
	s := p.NewState()
	outs, err := s.Forward(theta, inputs)
	if err != nil {
		return nil, err
	}
	res := make([]*Tensor, len(outs))
	for i, o := range outs {
		cp := *o
		cp.Shape = append([]int(nil), o.Shape...)
		cp.F = append([]float64(nil), o.F...)
		cp.I = append([]int64(nil), o.I...)
		res[i] = &cp
	}
	return res, nil
}

var errNotStatic = errors.New("must be known before the model runs (a constant, an initializer or an integer input)")
