package graph

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Subgraph is the body of a control-flow node (Loop, Scan, If): a graph
// attribute. Its nodes may read values of the enclosing graphs by name
// (outer-scope references). New moves its float initializers into the main
// graph when their names are not used elsewhere, so that weights a body
// keeps as its own initializers are parameters like any other; the others
// stay constants of the body.
type Subgraph struct {
	Name    string
	Inputs  []ValueInfo
	Outputs []ValueInfo
	// Nodes are in topological order once New has checked the graph.
	Nodes []*Node
	Init  map[string]*Tensor
}

// subgraphs returns the node's graph attributes, sorted by name.
func subgraphs(n *Node) []*Subgraph {
	names := make([]string, 0, len(n.Attrs))
	for name, a := range n.Attrs {
		if a.Kind == AttrGraph && a.G != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]*Subgraph, len(names))
	for i, name := range names {
		out[i] = n.Attrs[name].G
	}
	return out
}

// nodeInputs returns the values a node reads: its inputs and the
// outer-scope values its subgraphs read, so that sorting the nodes and
// finding the parameters see the dependencies of a loop body.
func nodeInputs(n *Node) []string {
	sgs := subgraphs(n)
	if len(sgs) == 0 {
		return n.Inputs
	}
	in := slices.Clone(n.Inputs)
	for _, sg := range sgs {
		in = append(in, sg.outerRefs()...)
	}
	return in
}

// outerRefs returns the names the subgraph reads that it does not define
// (neither an input, an initializer nor a node output), in order of first
// use.
func (sg *Subgraph) outerRefs() []string {
	defined := map[string]bool{"": true}
	addNames(defined, sg.Inputs, sg.Init, sg.Nodes)
	var out []string
	seen := map[string]bool{}
	for _, n := range sg.Nodes {
		for _, in := range nodeInputs(n) {
			if !defined[in] && !seen[in] {
				seen[in] = true
				out = append(out, in)
			}
		}
	}
	return out
}

// hoistBodyInits moves the float initializers of the subgraphs of nodes
// (at any depth) into init, appending their names to order, when no other
// value of the model has the same name. It returns the new order.
func hoistBodyInits(inputs []ValueInfo, nodes []*Node, init map[string]*Tensor, order []string) []string {
	uses := map[string]int{}
	var count func(inputs []ValueInfo, init map[string]*Tensor, nodes []*Node)
	count = func(inputs []ValueInfo, init map[string]*Tensor, nodes []*Node) {
		set := map[string]bool{}
		addNames(set, inputs, init, nodes)
		for name := range set {
			uses[name]++
		}
		for _, n := range nodes {
			for _, sg := range subgraphs(n) {
				count(sg.Inputs, sg.Init, sg.Nodes)
			}
		}
	}
	count(inputs, init, nodes)
	var hoist func(nodes []*Node)
	hoist = func(nodes []*Node) {
		for _, n := range nodes {
			for _, sg := range subgraphs(n) {
				names := slices.Sorted(maps.Keys(sg.Init))
				for _, name := range names {
					if t := sg.Init[name]; t.DType == Float && uses[name] == 1 {
						init[name] = t
						order = append(order, name)
						delete(sg.Init, name)
					}
				}
				hoist(sg.Nodes)
			}
		}
	}
	hoist(nodes)
	return order
}

// addNames adds to set the names a graph or subgraph defines: its inputs,
// initializers and node outputs.
func addNames(set map[string]bool, inputs []ValueInfo, init map[string]*Tensor, nodes []*Node) {
	for _, in := range inputs {
		set[in.Name] = true
	}
	for name := range init {
		set[name] = true
	}
	for _, n := range nodes {
		for _, o := range n.Outputs {
			set[o] = true
		}
	}
}

// checkSubgraphs sorts the nodes of every subgraph of n topologically and
// checks them as New checks the main graph; outer holds the names visible
// from the enclosing scopes. Problems name the node and the body.
func checkSubgraphs(n *Node, opset int, outer map[string]bool) error {
	var errs ErrorList
	for name, a := range n.Attrs {
		if a.Kind != AttrGraph {
			continue
		}
		if a.G == nil {
			errs = append(errs, fmt.Errorf("%w: attribute %q is a list of subgraphs, which no supported operator takes", ErrUnsupportedOp, name))
			continue
		}
		if err := a.G.check(opset, outer); err != nil {
			errs = append(errs, fmt.Errorf("subgraph %q: %w", name, err))
		}
	}
	return errs.Err()
}

// check sorts the subgraph's nodes and checks each of them.
func (sg *Subgraph) check(opset int, outer map[string]bool) error {
	init := make(map[string]*Tensor, len(sg.Init))
	for name, t := range sg.Init {
		init[name] = t
	}
	var inputs []ValueInfo
	inputs = append(inputs, sg.Inputs...)
	for name := range outer {
		if _, ok := init[name]; !ok {
			inputs = append(inputs, ValueInfo{Name: name})
		}
	}
	// Outer names shadowed by the body's own definitions are not visible.
	sorted, err := toposort(sg.Nodes, inputs, init)
	if err != nil {
		return err
	}
	sg.Nodes = sorted
	inner := maps.Clone(outer)
	addNames(inner, sg.Inputs, sg.Init, sg.Nodes)
	var errs ErrorList
	for _, m := range sg.Nodes {
		if err := checkNode(m, opset); err != nil {
			errs = append(errs, &NodeError{Node: m.Label(), OpType: m.OpType, Err: err})
			continue
		}
		if err := checkSubgraphs(m, opset, inner); err != nil {
			errs = append(errs, &NodeError{Node: m.Label(), OpType: m.OpType, Err: err})
		}
	}
	for _, o := range sg.Outputs {
		if !inner[o.Name] {
			errs = append(errs, fmt.Errorf("output %q is not produced in the body or its enclosing graphs", o.Name))
		}
	}
	return errs.Err()
}
