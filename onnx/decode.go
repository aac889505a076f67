package onnx

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// Load reads and decodes the ONNX model in the file at path. Its errors are
// those of Decode, with the file name after the package name:
// "onnx: model.onnx: ...".
func Load(path string) (*graph.Graph, error) {
	return load(path, nil)
}

// load is Load, pruned to one output when keep is not nil (LoadOutput).
func load(path string, keep *pruning) (*graph.Graph, error) {
	data, err := readModel(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, errs.Wrapf(err, "onnx: %s: ", path)
	}
	g, err := decode(data, keep, &source{dir: filepath.Dir(path), name: filepath.Base(path)})
	if err != nil {
		return nil, errs.Wrapf(err, "onnx: %s: ", path)
	}
	return g, nil
}

// source is where a model being decoded was read from: the folder and
// name of its file, in which external data are looked for (external.go).
type source struct{ dir, name string }

// Decode decodes a serialized ONNX ModelProto into a graph.
//
// It returns an error, never a panic, for any bytes. The error wraps
// ErrInvalid for malformed or inconsistent bytes ("onnx: not a valid ONNX
// model: ..."), ErrUnsupported or ErrExternalData for features we do not
// read, and otherwise is the error of graph.New (which lists every
// unsupported operator with its node, as an ErrorList of *graph.NodeError
// wrapping graph.ErrUnsupportedOp) with "onnx: " in front. Problems with
// several tensors or nodes are reported together, as a graph.ErrorList.
func Decode(data []byte) (*graph.Graph, error) {
	g, err := decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return g, nil
}

// decode is Decode without the "onnx: " prefix on errors. A non-nil keep
// prunes the model to one output before the graph is built (see
// LoadOutput); src, when not nil, is the model's file, beside which
// external data are read.
func decode(data []byte, keep *pruning, src *source) (g *graph.Graph, err error) {
	defer func() {
		if r := recover(); r != nil {
			g, err = nil, fmt.Errorf("%w: the decoder failed: %v", ErrInvalid, r)
		}
	}()
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrInvalid)
	}
	if err := foreignFormat(data); err != nil {
		return nil, err
	}
	m, err := parseModel(data)
	if err != nil {
		return nil, err
	}
	gm := &m.graph
	if err := m.check(len(data)); err != nil {
		return nil, err
	}
	opset, err := m.defaultOpset()
	if err != nil {
		return nil, err
	}
	var problems graph.ErrorList
	if src == nil {
		src = &source{}
	}
	loadExternal(m, src.dir, src.name, &problems)
	if err := problems.Err(); err != nil {
		return nil, err
	}
	init, order := decodeInitializers(gm.inits, &problems)
	inputs := valueInfos("input", gm.inputs, &problems)
	outputs := valueInfos("output", gm.outputs, &problems)
	if err := problems.Err(); err != nil {
		return nil, err
	}

	if tooDeep(m.forGo, maxNesting) {
		return nil, fmt.Errorf("%w: its messages (types, attributes) nest more than %d levels deep; real models nest about ten", ErrInvalid, maxNesting)
	}
	ops, err := runOnnxGo(m.forGo, edgeBudget(len(data)))
	if err != nil {
		return nil, err
	}
	if len(ops) != len(gm.nodes) {
		return nil, fmt.Errorf("%w: onnx-go read %d nodes, the wire reader %d", ErrInvalid, len(ops), len(gm.nodes))
	}
	nodes := make([]*graph.Node, len(ops))
	for i := range ops {
		n, err := buildNode(&gm.nodes[i], &ops[i])
		if err != nil {
			return nil, err
		}
		if err := readerAttrs(n, &gm.nodes[i]); err != nil {
			problems = append(problems, err)
		}
		nodes[i] = n
	}
	if opset == 0 {
		for _, n := range nodes {
			if n.Domain == "" {
				return nil, fmt.Errorf("%w: node %q (%s) is in the default operator set, which the model does not import",
					ErrInvalid, n.Label(), n.OpType)
			}
		}
	}
	if keep != nil {
		if inputs, outputs, nodes, err = keep.prune(inputs, outputs, nodes, init); err != nil {
			return nil, err
		}
	}
	if err := problems.Err(); err != nil {
		return nil, err
	}
	g, err = graph.New(opset, inputs, outputs, nodes, init, order)
	if err != nil {
		return nil, err
	}
	if g, err = useTrained(g, m.metadata); err != nil {
		return nil, err
	}
	if err := useTargetScale(g, m.metadata); err != nil {
		return nil, err
	}
	g.TrainBudget = m.metadata[graph.TrainBudgetKey] // read by the command line (refit.ParseBudget)
	if err := checkFinite(g); err != nil {
		return nil, err
	}
	return g, nil
}

// edgeBudget bounds the number of edges onnx-go adds for a file of size
// bytes: one per node output and input, so that a small file with a node of
// many inputs and many outputs cannot take seconds and much memory. Real
// models need well under one edge per byte.
func edgeBudget(size int) int { return 1<<16 + 4*size }

// check rejects models that onnx-go would reject with a vaguer message, and
// models whose nodes have more outputs times inputs than edgeBudget.
func (m *model) check(size int) error {
	if !m.hasGraph {
		return fmt.Errorf("%w: the file holds no graph", ErrInvalid)
	}
	g := &m.graph
	if len(g.nodes) == 0 {
		return fmt.Errorf("%w: the graph has no nodes", ErrInvalid)
	}
	if len(g.outputs) == 0 {
		return fmt.Errorf("%w: the graph declares no outputs", ErrInvalid)
	}
	if g.sparse > 0 {
		return fmt.Errorf("sparse initializers are %w", ErrUnsupported)
	}
	edges := 0
	for i := range g.nodes {
		n := &g.nodes[i]
		if n.opType == "" {
			return fmt.Errorf("%w: node %d (%q) has no operator type", ErrInvalid, i, n.name)
		}
		if len(n.outputs) == 0 {
			return fmt.Errorf("%w: node %q (%s) has no outputs", ErrInvalid, n.name, n.opType)
		}
		edges += len(n.outputs) * max(len(n.inputs), 1)
		if edges > edgeBudget(size) {
			return fmt.Errorf("node %q (%s): %d outputs and %d inputs: %w (outputs times inputs, summed over the nodes, may be at most %d in a file of %d bytes)",
				n.name, n.opType, len(n.outputs), len(n.inputs), ErrUnsupported, edgeBudget(size), size)
		}
	}
	return nil
}

// decodeInitializers decodes the initializers, in file order.
func decodeInitializers(inits []*tensorMsg, problems *graph.ErrorList) (map[string]*graph.Tensor, []string) {
	init := make(map[string]*graph.Tensor, len(inits))
	order := make([]string, 0, len(inits))
	for i, tm := range inits {
		if tm.name == "" {
			*problems = append(*problems, fmt.Errorf("%w: initializer %d has no name", ErrInvalid, i))
			continue
		}
		if _, dup := init[tm.name]; dup {
			*problems = append(*problems, fmt.Errorf("%w: initializer %q appears twice", ErrInvalid, tm.name))
			continue
		}
		t, err := tm.decode(fmt.Sprintf("initializer %q", tm.name))
		if err != nil {
			*problems = append(*problems, err)
			continue
		}
		init[tm.name] = t
		order = append(order, tm.name)
	}
	return init, order
}

// valueInfos returns the graph inputs or outputs, checking that they are
// tensors of a type the graph can hold.
func valueInfos(what string, vs []valueInfo, problems *graph.ErrorList) []graph.ValueInfo {
	out := make([]graph.ValueInfo, 0, len(vs))
	for _, v := range vs {
		switch _, ok := v.info.Elem.DType(); {
		case v.info.Name == "":
			*problems = append(*problems, fmt.Errorf("%w: a graph %s has no name", ErrInvalid, what))
		case v.kind != "":
			*problems = append(*problems, fmt.Errorf("graph %s %q: %s values are %w; only tensors are", what, v.info.Name, v.kind, ErrUnsupported))
		case !ok && v.info.Elem != graph.ElemUndefined:
			*problems = append(*problems, fmt.Errorf("graph %s %q: element type %s is %w", what, v.info.Name, elemName(v.info.Elem), ErrUnsupported))
		}
		out = append(out, v.info)
	}
	return out
}

// buildNode makes a graph node from what onnx-go recorded for it (operator,
// inputs, outputs, attributes) and what the wire reader read (name,
// domain, the attributes onnx-go cannot hold). It neutralises two defects of
// onnx-go: absent optional values ("") all share one value node, which is
// named "" and so reads back as absent, and a node without inputs gets a
// made-up input named "<node name>/input", which is dropped. It then checks
// that both readers agree on the operator and the input and output names.
func buildNode(nm *nodeMsg, op *recOp) (*graph.Node, error) {
	n := &graph.Node{
		Name:    nm.name,
		OpType:  op.op.Name,
		Domain:  nm.domain,
		Outputs: make([]string, len(op.outputs)),
		Attrs:   map[string]graph.Attr{},
	}
	if n.Domain == "ai.onnx" {
		n.Domain = ""
	}
	for i, o := range op.outputs {
		n.Outputs[i] = o.name
	}
	disagree := func(what string) error {
		return fmt.Errorf("%w: node %q (%s): the wire reader and onnx-go disagree on the %s", ErrInvalid, nm.name, nm.opType, what)
	}
	if n.OpType != nm.opType {
		return nil, disagree("operator")
	}
	if !slices.Equal(n.Outputs, nm.outputs) {
		return nil, disagree("outputs")
	}

	// onnx-go adds, for each output i and each input j, one edge from the
	// output to the input, weighted j.
	nIn := max(len(nm.inputs), 1)
	if len(op.edges) != len(op.outputs)*nIn {
		return nil, disagree("inputs")
	}
	for k, e := range op.edges {
		if e.from != op.outputs[k/nIn] || e.w != float64(k%nIn) {
			return nil, disagree("inputs")
		}
	}
	if len(nm.inputs) == 0 {
		if op.edges[0].to.name != nm.name+"/input" {
			return nil, disagree("inputs")
		}
	} else {
		n.Inputs = make([]string, nIn)
		for j := range n.Inputs {
			n.Inputs[j] = op.edges[j].to.name
		}
		if !slices.Equal(n.Inputs, nm.inputs) {
			return nil, disagree("inputs")
		}
	}

	// Attributes.
	seen := make(map[string]bool, len(nm.attrs))
	carried := 0
	for _, a := range nm.attrs {
		if seen[a.name] {
			return nil, &graph.NodeError{Node: n.Label(), OpType: n.OpType,
				Err: fmt.Errorf("%w: attribute %q appears twice", ErrInvalid, a.name)}
		}
		seen[a.name] = true
		if a.forGo() {
			carried++
			if _, ok := op.op.Attributes[a.name]; !ok {
				return nil, disagree("attributes")
			}
		}
	}
	if carried != len(op.op.Attributes) {
		return nil, disagree("attributes")
	}
	for name, v := range op.op.Attributes {
		a, ok := goAttr(v)
		if !ok {
			return nil, disagree("attributes")
		}
		n.Attrs[name] = a
	}
	return n, nil
}

// goAttr converts an attribute value made by onnx-go.
func goAttr(v any) (graph.Attr, bool) {
	switch v := v.(type) {
	case float32:
		return graph.Attr{Kind: graph.AttrFloat, F: float64(v)}, true
	case int64:
		return graph.Attr{Kind: graph.AttrInt, I: v}, true
	case string:
		return graph.Attr{Kind: graph.AttrString, S: v}, true
	case []float32:
		f := make([]float64, len(v))
		for i, x := range v {
			f[i] = float64(x)
		}
		return graph.Attr{Kind: graph.AttrFloats, Floats: f}, true
	case []int64:
		return graph.Attr{Kind: graph.AttrInts, Ints: slices.Clone(v)}, true
	case []string:
		return graph.Attr{Kind: graph.AttrStrings, Strings: slices.Clone(v)}, true
	}
	return graph.Attr{}, false
}

// readerAttrs adds to n the attributes that onnx-go does not read:
// tensors, decoded here, graphs (Loop, Scan and If bodies, decoded by
// decodeSubgraph), and the rarer kinds, as AttrOther.
func readerAttrs(n *graph.Node, nm *nodeMsg) error {
	var errs graph.ErrorList
	for _, a := range nm.attrs {
		if a.forGo() {
			continue
		}
		switch a.typ {
		case attrTensor:
			if a.t == nil {
				errs = append(errs, fmt.Errorf("%w: tensor attribute %q has no tensor", ErrInvalid, a.name))
				continue
			}
			t, err := a.t.decode(fmt.Sprintf("attribute %q", a.name))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			n.Attrs[a.name] = graph.Attr{Kind: graph.AttrTensor, T: t}
		case attrGraph:
			sg, err := decodeSubgraph(a)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			n.Attrs[a.name] = graph.Attr{Kind: graph.AttrGraph, G: sg}
		case attrGraphs:
			n.Attrs[a.name] = graph.Attr{Kind: graph.AttrGraph}
		case attrUndefined:
			errs = append(errs, fmt.Errorf("attribute %q has no type; attributes without one (IR version 1) are %w", a.name, ErrUnsupported))
		default:
			n.Attrs[a.name] = graph.Attr{Kind: graph.AttrOther}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &graph.NodeError{Node: n.Label(), OpType: n.OpType, Err: errs.Err()}
}
