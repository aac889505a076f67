package onnx

import (
	"fmt"
	"math"

	"github.com/rnnaudit/rnnaudit/graph"
)

// The bodies of Loop, Scan and If are GraphProto attributes, which onnx-go
// rejects; the wire reader decodes them whole, attributes included.

// maxDepth bounds the nesting of subgraphs.
const maxDepth = 32

// decodeSubgraph decodes the GraphProto held by the graph attribute a.
func decodeSubgraph(a attrMsg) (*graph.Subgraph, error) {
	return decodeSubgraphAt(a, 1)
}

func decodeSubgraphAt(a attrMsg, depth int) (*graph.Subgraph, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("subgraph %q: more than %d nested subgraphs are %w", a.name, maxDepth, ErrUnsupported)
	}
	var gm graphMsg
	found := false
	for f, err := range fields(a.msg.data, a.msg.at) {
		if err != nil {
			return nil, err
		}
		if f.num == 6 && f.wire == wireBytes {
			found = true
			if _, err := gm.merge(f.data, f.at); err != nil {
				return nil, err
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("%w: graph attribute %q holds no graph", ErrInvalid, a.name)
	}
	var problems graph.ErrorList
	init, _ := decodeInitializers(gm.inits, &problems)
	sg := &graph.Subgraph{
		Name:    a.name,
		Inputs:  subgraphValues("input", gm.inputs, &problems),
		Outputs: subgraphValues("output", gm.outputs, &problems),
		Init:    init,
	}
	for i := range gm.nodes {
		n, err := wireNode(&gm.nodes[i], depth)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		sg.Nodes = append(sg.Nodes, n)
	}
	if err := problems.Err(); err != nil {
		return nil, fmt.Errorf("subgraph %q: %w", a.name, err)
	}
	return sg, nil
}

// subgraphValues returns the inputs or outputs of a subgraph. Unlike the
// main graph's, they may be sequences (the loop-carried lists of a Loop
// body); their declared shapes are not used.
func subgraphValues(what string, vs []valueInfo, problems *graph.ErrorList) []graph.ValueInfo {
	out := make([]graph.ValueInfo, 0, len(vs))
	for _, v := range vs {
		if v.info.Name == "" {
			*problems = append(*problems, fmt.Errorf("%w: a subgraph %s has no name", ErrInvalid, what))
		}
		out = append(out, v.info)
	}
	return out
}

// wireNode makes a graph node of a subgraph from the wire reader alone.
func wireNode(nm *nodeMsg, depth int) (*graph.Node, error) {
	n := &graph.Node{
		Name:    nm.name,
		OpType:  nm.opType,
		Domain:  nm.domain,
		Inputs:  nm.inputs,
		Outputs: nm.outputs,
		Attrs:   make(map[string]graph.Attr, len(nm.attrs)),
	}
	if n.Domain == "ai.onnx" {
		n.Domain = ""
	}
	if n.OpType == "" {
		return nil, fmt.Errorf("%w: node %q has no operator type", ErrInvalid, nm.name)
	}
	var errs graph.ErrorList
	for _, a := range nm.attrs {
		if _, dup := n.Attrs[a.name]; dup {
			errs = append(errs, fmt.Errorf("%w: attribute %q appears twice", ErrInvalid, a.name))
			continue
		}
		v, err := wireAttr(a, depth)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n.Attrs[a.name] = v
	}
	if err := errs.Err(); err != nil {
		return nil, &graph.NodeError{Node: n.Label(), OpType: n.OpType, Err: err}
	}
	return n, nil
}

// wireAttr decodes an attribute of a subgraph's node.
func wireAttr(a attrMsg, depth int) (graph.Attr, error) {
	var out graph.Attr
	var f32 []uint32
	var ints []uint64
	var strs []string
	for f, err := range fields(a.msg.data, a.msg.at) {
		if err != nil {
			return out, err
		}
		switch f.num {
		case 2:
			if f.wire == wireFixed32 {
				out.F = float64(math.Float32frombits(uint32(f.val)))
			}
		case 3:
			if f.wire == wireVarint {
				out.I = int64(f.val)
			}
		case 4:
			if f.wire == wireBytes {
				out.S = string(f.data)
			}
		case 7:
			f32, _, err = appendFixed32(f32, f)
		case 8:
			ints, _, err = appendVarints(ints, f)
		case 9:
			if f.wire == wireBytes {
				strs = append(strs, string(f.data))
			}
		}
		if err != nil {
			return out, err
		}
	}
	switch a.typ {
	case attrFloat:
		out.Kind = graph.AttrFloat
	case attrInt:
		out.Kind = graph.AttrInt
	case attrString:
		out.Kind = graph.AttrString
	case attrFloats:
		out.Kind = graph.AttrFloats
		out.Floats = make([]float64, len(f32))
		for i, b := range f32 {
			out.Floats[i] = float64(math.Float32frombits(b))
		}
	case attrInts:
		out.Kind = graph.AttrInts
		out.Ints = make([]int64, len(ints))
		for i, v := range ints {
			out.Ints[i] = int64(v)
		}
	case attrStrings:
		out.Kind = graph.AttrStrings
		out.Strings = strs
	case attrTensor:
		if a.t == nil {
			return out, fmt.Errorf("%w: tensor attribute %q has no tensor", ErrInvalid, a.name)
		}
		t, err := a.t.decode(fmt.Sprintf("attribute %q", a.name))
		if err != nil {
			return out, err
		}
		out = graph.Attr{Kind: graph.AttrTensor, T: t}
	case attrGraph:
		sg, err := decodeSubgraphAt(a, depth+1)
		if err != nil {
			return out, err
		}
		out = graph.Attr{Kind: graph.AttrGraph, G: sg}
	case attrGraphs:
		out = graph.Attr{Kind: graph.AttrGraph}
	case attrUndefined:
		return out, fmt.Errorf("attribute %q has no type; attributes without one (IR version 1) are %w", a.name, ErrUnsupported)
	default:
		out = graph.Attr{Kind: graph.AttrOther}
	}
	return out, nil
}
