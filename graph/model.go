package graph

import (
	"fmt"
	"sort"
	"strings"
)

// ElemType is an ONNX TensorProto.DataType code (1 float, 7 int64, 11
// double, ...). The graph keeps the code so that messages and the inspect
// report can name the type the file declared; values are always held as
// Float or Int.
type ElemType int32

// ONNX element type codes.
const (
	ElemUndefined  ElemType = 0
	ElemFloat      ElemType = 1
	ElemUint8      ElemType = 2
	ElemInt8       ElemType = 3
	ElemUint16     ElemType = 4
	ElemInt16      ElemType = 5
	ElemInt32      ElemType = 6
	ElemInt64      ElemType = 7
	ElemString     ElemType = 8
	ElemBool       ElemType = 9
	ElemFloat16    ElemType = 10
	ElemDouble     ElemType = 11
	ElemUint32     ElemType = 12
	ElemUint64     ElemType = 13
	ElemComplex64  ElemType = 14
	ElemComplex128 ElemType = 15
	ElemBfloat16   ElemType = 16
)

var elemNames = map[ElemType]string{
	ElemUndefined: "undefined", ElemFloat: "float", ElemUint8: "uint8", ElemInt8: "int8",
	ElemUint16: "uint16", ElemInt16: "int16", ElemInt32: "int32", ElemInt64: "int64",
	ElemString: "string", ElemBool: "bool", ElemFloat16: "float16", ElemDouble: "double",
	ElemUint32: "uint32", ElemUint64: "uint64", ElemComplex64: "complex64",
	ElemComplex128: "complex128", ElemBfloat16: "bfloat16",
}

func (e ElemType) String() string {
	if s, ok := elemNames[e]; ok {
		return s
	}
	return fmt.Sprintf("elem(%d)", int32(e))
}

// DType returns how values of this element type are held, and false for
// types the graph cannot hold (string, complex, undefined).
func (e ElemType) DType() (DType, bool) {
	switch e {
	case ElemFloat, ElemDouble, ElemFloat16, ElemBfloat16:
		return Float, true
	case ElemUint8, ElemInt8, ElemUint16, ElemInt16, ElemInt32, ElemInt64, ElemBool, ElemUint32, ElemUint64:
		return Int, true
	}
	return 0, false
}

// Dim is one dimension of a declared shape: a fixed size, or a symbolic
// name such as "batch" (Value -1), or unknown (Value -1, Name "").
type Dim struct {
	Value int
	Name  string
}

func (d Dim) String() string {
	switch {
	case d.Value >= 0:
		return fmt.Sprint(d.Value)
	case d.Name != "":
		return d.Name
	}
	return "?"
}

// ValueInfo describes a graph input or output as the file declares it.
// Dims is nil when the file gives no shape.
type ValueInfo struct {
	Name string
	Elem ElemType
	Dims []Dim
}

// ShapeString formats the declared shape, such as "[batch time 2]".
func (v ValueInfo) ShapeString() string {
	if v.Dims == nil {
		return "(shape not declared)"
	}
	parts := make([]string, len(v.Dims))
	for i, d := range v.Dims {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// AttrKind is the type of a node attribute.
type AttrKind uint8

// Attribute kinds, as in ONNX AttributeProto.
const (
	AttrFloat AttrKind = iota + 1
	AttrInt
	AttrString
	AttrTensor
	AttrFloats
	AttrInts
	AttrStrings
	AttrGraph // a subgraph (Loop, Scan, If bodies), in G; G is nil for a list of graphs
	AttrOther // sparse tensors, type protos and other kinds we do not use
)

// Attr is one node attribute. Only the field that matches Kind is set.
type Attr struct {
	Kind    AttrKind
	F       float64
	I       int64
	S       string
	T       *Tensor
	Floats  []float64
	Ints    []int64
	Strings []string
	G       *Subgraph
}

// Node is one operator application. An empty string in Inputs or Outputs
// means that optional value is absent.
type Node struct {
	Name    string
	OpType  string
	Domain  string // "" for the default ONNX domain
	Inputs  []string
	Outputs []string
	Attrs   map[string]Attr
}

// Label is the node's name for messages: its name, or else its first
// output, or else its operator type.
func (n *Node) Label() string {
	if n.Name != "" {
		return n.Name
	}
	for _, o := range n.Outputs {
		if o != "" {
			return o
		}
	}
	return n.OpType
}

// Param is one parameter tensor: an initializer that the model's outputs
// depend on, occupying Data[Offset:Offset+Size] of the flat vector.
type Param struct {
	Name   string
	Shape  []int
	Offset int
	Size   int
}

// Graph is a decoded model: the declared inputs and outputs, the nodes in
// topological order, the initializers and the parameters drawn from them.
//
// Build a Graph with New; a Graph is read-only afterwards and safe for
// concurrent use.
type Graph struct {
	// Opset is the version of the default ONNX operator set.
	Opset int
	// Inputs are the graph inputs that are not initializers.
	Inputs []ValueInfo
	// Outputs are the graph outputs.
	Outputs []ValueInfo
	// Nodes are in topological order.
	Nodes []*Node
	// Init holds the initializers (and nothing else) by name.
	Init map[string]*Tensor
	// InitOrder is the order of initializers in the file.
	InitOrder []string
	// TargetScale is {mean, std} when the file records that the model
	// was trained on the target scaled as (y - mean) / std (metadata
	// TargetScaleKey, which the Python bridge's export writes), else nil.
	TargetScale []float64
	// TrainBudget is the training budget the file records
	// (TrainBudgetKey, "epochs=24,lr=0.005,batch=16,optimizer=adam"),
	// or "".
	TrainBudget string

	params  []Param
	theta   []float64
	isParam map[string]int
	// trained, when not nil, is the exporter's record of the initializers
	// that hold trained values (WithTrained): exactly those are
	// parameters.
	trained map[string]bool
}

// New checks the model description and returns a Graph. Nodes are sorted
// topologically when the file did not list them in order. Every problem found
// (an unsupported operator, a value used but never produced, a cycle) is
// reported, as an ErrorList.
func New(opset int, inputs, outputs []ValueInfo, nodes []*Node, init map[string]*Tensor, initOrder []string) (*Graph, error) {
	if init == nil {
		init = map[string]*Tensor{}
	}
	initOrder = hoistBodyInits(inputs, nodes, init, initOrder)
	g := &Graph{Opset: opset, Outputs: outputs, Init: init, InitOrder: initOrder}
	for _, in := range inputs {
		if _, ok := init[in.Name]; !ok {
			g.Inputs = append(g.Inputs, in)
		}
	}
	var errs ErrorList
	sorted, err := toposort(nodes, g.Inputs, init)
	if err != nil {
		errs = append(errs, err)
	}
	g.Nodes = sorted
	for _, n := range g.Nodes {
		if err := checkNode(n, opset); err != nil {
			errs = append(errs, &NodeError{Node: n.Label(), OpType: n.OpType, Err: err})
		}
	}
	errs = append(errs, g.checkBodies(opset)...)
	if len(g.Outputs) == 0 {
		errs = append(errs, fmt.Errorf("graph: the model declares no outputs"))
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	g.collectParams()
	return g, nil
}

// toposort orders nodes so that every input is produced before it is
// used (Kahn's algorithm, keeping the file order among ready nodes).
func toposort(nodes []*Node, inputs []ValueInfo, init map[string]*Tensor) ([]*Node, error) {
	avail := map[string]bool{"": true}
	for _, in := range inputs {
		avail[in.Name] = true
	}
	for name := range init {
		avail[name] = true
	}
	producer := map[string]bool{}
	for _, n := range nodes {
		for _, o := range n.Outputs {
			producer[o] = true
		}
	}
	waiting := make([]int, len(nodes)) // inputs not yet available, per node
	users := map[string][]int{}        // nodes waiting for a value
	var ready []int
	for i, n := range nodes {
		seen := map[string]bool{}
		for _, in := range nodeInputs(n) {
			if !avail[in] && !seen[in] {
				seen[in] = true
				waiting[i]++
				users[in] = append(users[in], i)
			}
		}
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	out := make([]*Node, 0, len(nodes))
	for len(ready) > 0 {
		// Take the earliest ready node in file order.
		k := 0
		for j := range ready {
			if ready[j] < ready[k] {
				k = j
			}
		}
		i := ready[k]
		ready = append(ready[:k], ready[k+1:]...)
		out = append(out, nodes[i])
		for _, o := range nodes[i].Outputs {
			if o == "" || avail[o] {
				continue
			}
			avail[o] = true
			for _, u := range users[o] {
				if waiting[u]--; waiting[u] == 0 {
					ready = append(ready, u)
				}
			}
		}
	}
	if len(out) == len(nodes) {
		return out, nil
	}
	var errs ErrorList
	for i, n := range nodes {
		if waiting[i] == 0 {
			continue
		}
		for _, in := range nodeInputs(n) {
			if !avail[in] && !producer[in] {
				errs = append(errs, &NodeError{Node: n.Label(), OpType: n.OpType,
					Err: fmt.Errorf("input %q is not a graph input, an initializer or any node's output", in)})
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, fmt.Errorf("graph: the nodes form a cycle"))
	}
	return out, errs.Err()
}

// collectParams makes every Float initializer that some output depends on
// a parameter, in file order. Dependence through Shape (which reads only
// the shape of its input) and through inputs that are constants by rule
// (constantInput: BatchNormalization's running statistics) does not count.
func (g *Graph) collectParams() {
	need := map[string]bool{}
	for _, o := range g.Outputs {
		need[o.Name] = true
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		used := false
		for _, o := range n.Outputs {
			if need[o] {
				used = true
			}
		}
		if !used || n.OpType == "Shape" || n.OpType == "Size" {
			continue
		}
		for i, in := range nodeInputs(n) {
			if !constantInput(n, i) {
				need[in] = true
			}
		}
	}
	g.isParam = map[string]int{}
	off := 0
	rule := g.ruleConstants() // constants by rule (constants.go)
	for _, name := range g.InitOrder {
		t := g.Init[name]
		if t == nil || t.DType != Float || !need[name] {
			continue
		}
		if g.trained != nil && !g.trained[name] || g.trained == nil && rule[name] != "" {
			continue
		}
		g.isParam[name] = len(g.params)
		g.params = append(g.params, Param{Name: name, Shape: append([]int(nil), t.Shape...), Offset: off, Size: t.Len()})
		g.theta = append(g.theta, t.F...)
		off += t.Len()
	}
}

// Params returns the parameter table in the order of the flat vector.
// The caller must not modify it.
func (g *Graph) Params() []Param { return g.params }

// NumParams returns P, the length of the flat parameter vector.
func (g *Graph) NumParams() int { return len(g.theta) }

// Theta returns a copy of the trained parameter vector read from the file.
func (g *Graph) Theta() []float64 { return append([]float64(nil), g.theta...) }

// OpTypes returns the distinct operator types of the graph with their
// counts, sorted by name.
func (g *Graph) OpTypes() []OpCount {
	m := map[string]int{}
	for _, n := range g.Nodes {
		m[n.OpType]++
	}
	out := make([]OpCount, 0, len(m))
	for k, v := range m {
		out = append(out, OpCount{OpType: k, Count: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OpType < out[j].OpType })
	return out
}

// OpCount is an operator type and how many nodes use it.
type OpCount struct {
	OpType string
	Count  int
}
