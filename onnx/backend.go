package onnx

import (
	"fmt"

	onnxgo "github.com/owulveryck/onnx-go"
	gg "gonum.org/v1/gonum/graph"
)

// recorder is the onnx-go Backend. It keeps a log of what onnx-go does
// rather than a graph: every value node it creates, with its name, and for
// every ApplyOperation the operation, its output nodes and all the edges
// added since the previous ApplyOperation. A gonum simple graph would keep
// one edge per pair of nodes and so lose the second input of Mul(x, x).
//
// The gonum query methods answer as for an empty graph: onnx-go never
// calls them while decoding.
type recorder struct {
	nodes []*recNode
	edges []recEdge // edges since the last ApplyOperation
	ops   []recOp
	// budget is how many more edges onnx-go may add; beyond it the
	// recorder stops storing and reports an error.
	budget int
	err    error
}

// recOp is one ApplyOperation call.
type recOp struct {
	op      onnxgo.Operation
	outputs []*recNode
	edges   []recEdge
}

// recNode is a value node: a graph input or output, an initializer, or a
// node input or output. onnx-go names it after the value; all absent
// optional values ("") share one node.
type recNode struct {
	id   int64
	name string
}

// recEdge is an edge from a node output to one of the node's inputs,
// weighted by the input's index.
type recEdge struct {
	from, to *recNode
	w        float64
}

var (
	_ onnxgo.Backend  = (*recorder)(nil)
	_ onnxgo.Namer    = (*recNode)(nil)
	_ gg.WeightedEdge = recEdge{}
)

// ID returns the node's index in the recorder.
func (n *recNode) ID() int64 { return n.id }

// SetName sets the name of the value.
func (n *recNode) SetName(s string) { n.name = s }

// GetName returns the name of the value.
func (n *recNode) GetName() string { return n.name }

// From returns the node output the edge starts at.
func (e recEdge) From() gg.Node { return e.from }

// To returns the node input the edge ends at.
func (e recEdge) To() gg.Node { return e.to }

// ReversedEdge returns the edge with its ends swapped.
func (e recEdge) ReversedEdge() gg.Edge { return recEdge{from: e.to, to: e.from, w: e.w} }

// Weight returns the index of the input.
func (e recEdge) Weight() float64 { return e.w }

// NewNode returns a new value node with the next ID.
func (r *recorder) NewNode() gg.Node { return &recNode{id: int64(len(r.nodes))} }

// AddNode records a node made by NewNode.
func (r *recorder) AddNode(n gg.Node) {
	rn, ok := n.(*recNode)
	if !ok || rn.id != int64(len(r.nodes)) {
		r.fail("onnx-go added a node the backend did not make")
		return
	}
	r.nodes = append(r.nodes, rn)
}

// NewWeightedEdge returns an edge from one node to another.
func (r *recorder) NewWeightedEdge(from, to gg.Node, w float64) gg.WeightedEdge {
	f, _ := from.(*recNode)
	t, _ := to.(*recNode)
	return recEdge{from: f, to: t, w: w}
}

// SetWeightedEdge records an edge, even one between two nodes already
// joined.
func (r *recorder) SetWeightedEdge(e gg.WeightedEdge) {
	re, ok := e.(recEdge)
	if !ok || re.from == nil || re.to == nil {
		r.fail("onnx-go added an edge the backend did not make")
		return
	}
	if r.budget <= 0 {
		r.fail("too many node inputs")
		return
	}
	r.budget--
	r.edges = append(r.edges, re)
}

// ApplyOperation records an operation with its outputs and the edges added
// since the previous one.
func (r *recorder) ApplyOperation(op onnxgo.Operation, outputs ...gg.Node) error {
	if r.err != nil {
		return r.err
	}
	rec := recOp{op: op, edges: r.edges}
	for _, o := range outputs {
		rn, ok := o.(*recNode)
		if !ok {
			r.fail("onnx-go gave an output the backend did not make")
			return r.err
		}
		rec.outputs = append(rec.outputs, rn)
	}
	r.ops = append(r.ops, rec)
	r.edges = nil
	return nil
}

func (r *recorder) fail(msg string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrInvalid, msg)
	}
}

// Node returns the node with the given ID, or nil.
func (r *recorder) Node(id int64) gg.Node {
	if id < 0 || id >= int64(len(r.nodes)) {
		return nil
	}
	return r.nodes[id]
}

// Nodes returns no nodes.
func (r *recorder) Nodes() gg.Nodes { return gg.Empty }

// From returns no nodes.
func (r *recorder) From(int64) gg.Nodes { return gg.Empty }

// To returns no nodes.
func (r *recorder) To(int64) gg.Nodes { return gg.Empty }

// HasEdgeBetween returns false.
func (r *recorder) HasEdgeBetween(int64, int64) bool { return false }

// HasEdgeFromTo returns false.
func (r *recorder) HasEdgeFromTo(int64, int64) bool { return false }

// Edge returns nil.
func (r *recorder) Edge(int64, int64) gg.Edge { return nil }

// runOnnxGo decodes the bytes with onnx-go into a recorder. budget bounds
// the number of edges onnx-go may add.
func runOnnxGo(data []byte, budget int) ([]recOp, error) {
	r := &recorder{budget: budget}
	if err := onnxgo.NewModel(r).UnmarshalBinary(data); err != nil {
		if r.err != nil {
			return nil, r.err
		}
		return nil, fmt.Errorf("%w: onnx-go: %v", ErrInvalid, err)
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.ops, nil
}
