package graph

// Category codes in a float data column: a model that takes its features
// as one float tensor and looks some of them up in an embedding table
// casts them to int64 (x[..., 2].long(): Gather, Cast, then Gather in the
// table). The engine differentiates only in the parameters, so the codes
// are constants of the program, like an integer input: Compile evaluates
// the nodes between such an input and the Cast on the input's values (a
// static shadow of the dynamic computation), and the Cast takes the
// shadow. The input itself stays a dynamic input for every other use.

// codeShadow holds the static values of the nodes between float inputs
// and Casts to integers.
type codeShadow struct {
	nodes map[*Node]bool    // nodes on a path from a float input to an integer Cast
	ins   map[string]bool   // the float inputs that reach an integer Cast
	vals  map[string]*value // static values by name
}

// codeNodes returns the nodes on a path from a graph input to a Cast to an
// integer type, and the inputs they start from (Shape and Size, which
// read only shapes, end a path).
func (g *Graph) codeNodes() (map[*Node]bool, map[string]bool) {
	producer := map[string]*Node{}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				producer[o] = n
			}
		}
	}
	isInput := map[string]bool{}
	for _, in := range g.Inputs {
		isInput[in.Name] = true
	}
	// reaches[v]: v depends on a graph input (memoised).
	reaches := map[string]bool{}
	var dep func(v string) bool
	dep = func(v string) bool {
		if r, ok := reaches[v]; ok {
			return r
		}
		reaches[v] = false
		r := isInput[v]
		if n := producer[v]; n != nil && n.OpType != "Shape" && n.OpType != "Size" {
			for _, in := range n.Inputs {
				r = dep(in) || r
			}
		}
		reaches[v] = r
		return r
	}
	nodes, ins := map[*Node]bool{}, map[string]bool{}
	var mark func(v string)
	mark = func(v string) {
		if !dep(v) {
			return
		}
		if isInput[v] {
			ins[v] = true
			return
		}
		n := producer[v]
		if n == nil || nodes[n] {
			return
		}
		nodes[n] = true
		for _, in := range n.Inputs {
			mark(in)
		}
	}
	for _, n := range g.Nodes {
		if n.OpType != "Cast" || len(n.Inputs) == 0 {
			continue
		}
		if to, err := castTarget(n); err == nil {
			if dt, ok := to.DType(); ok && dt == Int && dep(n.Inputs[0]) {
				nodes[n] = true
				mark(n.Inputs[0])
			}
		}
	}
	return nodes, ins
}

func (g *Graph) newCodeShadow() codeShadow {
	nodes, ins := g.codeNodes()
	return codeShadow{nodes: nodes, ins: ins, vals: map[string]*value{}}
}

// input records the values of a float graph input that reaches an
// integer Cast.
func (s *codeShadow) input(name string, t *Tensor) {
	if s.ins[name] {
		s.vals[name] = staticValue(t)
	}
}

// lowerCodes evaluates node n on the static shadows of its inputs when it
// lies between a float input and an integer Cast. For the Cast itself the
// shadow becomes the node's value and done is true; other nodes are also
// lowered as usual by the caller.
func (c *compiler) lowerCodes(n *Node, lower lowerFunc, in []*value) (done bool, err error) {
	s := &c.codes
	if !s.nodes[n] {
		return false, nil
	}
	shadow := make([]*value, len(in))
	any := false
	for i, name := range n.Inputs {
		shadow[i] = in[i]
		if v, ok := s.vals[name]; ok && name != "" {
			shadow[i], any = v, true
		}
	}
	if !any {
		return false, nil
	}
	for _, v := range shadow {
		if v != nil && !v.isStatic() {
			return false, nil // the codes depend on the parameters too
		}
	}
	outs, err := lower(c, n, shadow)
	if err != nil {
		return false, err
	}
	for i, name := range n.Outputs {
		if name != "" && i < len(outs) && outs[i] != nil && outs[i].isStatic() {
			s.vals[name] = outs[i]
		}
	}
	if n.OpType != "Cast" {
		return false, nil
	}
	for i, name := range n.Outputs {
		if name != "" && i < len(outs) && outs[i] != nil {
			c.vals[name] = outs[i]
		}
	}
	return true, nil
}

// ValueInputs reports, per graph input, whether Compile reads the input's
// values rather than only its shape: integer inputs, and float inputs that
// the model casts to integers. A program compiled for some values there is
// valid only for the same values.
func (g *Graph) ValueInputs() []bool {
	_, codes := g.codeNodes()
	out := make([]bool, len(g.Inputs))
	for i, in := range g.Inputs {
		dt, _ := in.Elem.DType()
		out[i] = dt == Int || codes[in.Name]
	}
	return out
}
