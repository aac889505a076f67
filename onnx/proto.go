package onnx

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/graph"
)

// This file reads the parts of an ONNX ModelProto that onnx-go drops or
// gets wrong (see doc.go), and at the same time writes the copy of the
// model that onnx-go is given. Field numbers are those of onnx.proto
// (https://github.com/onnx/onnx/blob/main/onnx/onnx.proto). As in every
// protobuf reader, a field seen twice keeps its last value when it is a
// scalar and is merged when it is a message; a field with an unexpected
// wire type is skipped.

// model is what the wire reader takes from a ModelProto.
type model struct {
	irVersion int64
	opsets    []opsetImport
	hasGraph  bool
	graph     graphMsg
	// metadata is ModelProto.metadata_props, key to value (the last value
	// of a key seen twice).
	metadata map[string]string
	// forGo is the model as onnx-go sees it: the file without the graph's
	// initializers and value infos and without the node attributes that
	// onnx-go cannot represent (tensors, graphs and the rarer kinds).
	forGo []byte
}

// opsetImport is one OperatorSetIdProto.
type opsetImport struct {
	domain  string
	version int64
}

// graphMsg is what the wire reader takes from the main GraphProto.
type graphMsg struct {
	nodes   []nodeMsg
	inputs  []valueInfo
	outputs []valueInfo
	inits   []*tensorMsg
	// sparse is the number of sparse initializers, which we cannot use.
	sparse int
}

// nodeMsg is what the wire reader takes from a NodeProto.
type nodeMsg struct {
	name, opType, domain string
	inputs, outputs      []string
	attrs                []attrMsg // every attribute, in file order
}

// attrMsg is the name and type of one AttributeProto, with its tensor for
// the tensor kind. The values of the other kinds are read by onnx-go.
type attrMsg struct {
	name string
	typ  int64 // AttributeProto.AttributeType
	t    *tensorMsg
	msg  field // the whole AttributeProto, read again for subgraphs (subgraph.go)
	// forGoBytes is the attribute as onnx-go is given it: only the fields
	// of the kinds it reads (name, type and the float, int, string and
	// list values), so that a graph or tensor hidden in an int attribute
	// never reaches its recursive decoder.
	forGoBytes []byte
}

// AttributeProto.AttributeType values.
const (
	attrUndefined = 0
	attrFloat     = 1
	attrInt       = 2
	attrString    = 3
	attrTensor    = 4
	attrGraph     = 5
	attrFloats    = 6
	attrInts      = 7
	attrStrings   = 8
	attrGraphs    = 10
)

// forGo reports whether onnx-go reads attributes of this type: exactly
// those it turns into Go values without failing.
func (a attrMsg) forGo() bool {
	switch a.typ {
	case attrFloat, attrInt, attrString, attrFloats, attrInts, attrStrings:
		return true
	}
	return false
}

// valueInfo is a ValueInfoProto: a graph input or output.
type valueInfo struct {
	info graph.ValueInfo
	kind string // "" for a tensor or no type; else "sequence", "map", ...
	// forGo is the value info as onnx-go is given it: its name and the
	// tensor types of its type, without the sequence, map and optional
	// types, which nest without a limit.
	forGo []byte
}

// parseModel reads a serialized ModelProto.
func parseModel(data []byte) (*model, error) {
	m := &model{forGo: make([]byte, 0, 4096)}
	for f, err := range fields(data, 0) {
		if err != nil {
			return nil, err
		}
		switch {
		case f.num == 1 && f.wire == wireVarint:
			m.irVersion = int64(f.val)
		case f.num == 8 && f.wire == wireBytes:
			op, err := parseOpset(f)
			if err != nil {
				return nil, err
			}
			m.opsets = append(m.opsets, op)
		case f.num == 14 && f.wire == wireBytes:
			k, v, err := parseEntry(f)
			if err != nil {
				return nil, err
			}
			if m.metadata == nil {
				m.metadata = map[string]string{}
			}
			m.metadata[k] = v
		case f.num == 7 && f.wire == wireBytes:
			m.hasGraph = true
			g, err := m.graph.merge(f.data, f.at)
			if err != nil {
				return nil, err
			}
			m.forGo = appendBytesField(m.forGo, 7, g)
			continue
		}
		m.forGo = append(m.forGo, f.raw...)
	}
	return m, nil
}

// parseEntry reads a StringStringEntryProto (key 1, value 2).
func parseEntry(msg field) (key, value string, err error) {
	for f, err := range fields(msg.data, msg.at) {
		if err != nil {
			return "", "", err
		}
		if f.wire != wireBytes {
			continue
		}
		switch f.num {
		case 1:
			if key, err = f.str(); err != nil {
				return "", "", err
			}
		case 2:
			if value, err = f.str(); err != nil {
				return "", "", err
			}
		}
	}
	return key, value, nil
}

func parseOpset(msg field) (opsetImport, error) {
	var op opsetImport
	for f, err := range fields(msg.data, msg.at) {
		if err != nil {
			return op, err
		}
		switch {
		case f.num == 1 && f.wire == wireBytes:
			if op.domain, err = f.str(); err != nil {
				return op, err
			}
		case f.num == 2 && f.wire == wireVarint:
			op.version = int64(f.val)
		}
	}
	return op, nil
}

// merge reads one serialized GraphProto into g and returns the copy of it
// that onnx-go is given.
func (g *graphMsg) merge(b []byte, base int) ([]byte, error) {
	out := make([]byte, 0, 1024)
	for f, err := range fields(b, base) {
		if err != nil {
			return nil, err
		}
		if f.wire != wireBytes {
			out = append(out, f.raw...)
			continue
		}
		switch f.num {
		case 1: // node
			n, keep, err := parseNode(f)
			if err != nil {
				return nil, err
			}
			g.nodes = append(g.nodes, n)
			out = appendBytesField(out, 1, keep)
			continue
		case 5: // initializer
			t := new(tensorMsg)
			if err := t.merge(f); err != nil {
				return nil, err
			}
			g.inits = append(g.inits, t)
			continue
		case 11, 12: // input, output
			v, err := parseValueInfo(f)
			if err != nil {
				return nil, err
			}
			if f.num == 11 {
				g.inputs = append(g.inputs, v)
			} else {
				g.outputs = append(g.outputs, v)
			}
			out = appendBytesField(out, f.num, v.forGo)
			continue
		case 13: // value_info: not needed by anyone
			continue
		case 15: // sparse_initializer
			g.sparse++
			continue
		}
		out = append(out, f.raw...)
	}
	return out, nil
}

// parseNode reads a NodeProto. It returns the copy for onnx-go, which
// keeps only the attributes onnx-go can represent.
func parseNode(msg field) (nodeMsg, []byte, error) {
	var n nodeMsg
	out := make([]byte, 0, len(msg.data))
	for f, err := range fields(msg.data, msg.at) {
		if err != nil {
			return n, nil, err
		}
		if f.wire == wireBytes {
			var s string
			switch f.num {
			case 1, 2, 3, 4, 7:
				if s, err = f.str(); err != nil {
					return n, nil, err
				}
			}
			switch f.num {
			case 1:
				n.inputs = append(n.inputs, s)
			case 2:
				n.outputs = append(n.outputs, s)
			case 3:
				n.name = s
			case 4:
				n.opType = s
			case 7:
				n.domain = s
			case 5:
				a, err := parseAttr(f)
				if err != nil {
					return n, nil, err
				}
				n.attrs = append(n.attrs, a)
				if a.forGo() {
					out = appendBytesField(out, 5, a.forGoBytes)
				}
				continue
			}
		}
		out = append(out, f.raw...)
	}
	return n, out, nil
}

// parseAttr reads the name and type of an AttributeProto, and its tensor
// when it holds one.
func parseAttr(msg field) (attrMsg, error) {
	a := attrMsg{msg: msg}
	hasGraph := false
	for f, err := range fields(msg.data, msg.at) {
		if err != nil {
			return a, err
		}
		switch f.num {
		case 1, 2, 3, 4, 7, 8, 9, 20: // name, f, i, s, floats, ints, strings, type
			a.forGoBytes = append(a.forGoBytes, f.raw...)
		}
		switch {
		case f.num == 1 && f.wire == wireBytes:
			if a.name, err = f.str(); err != nil {
				return a, err
			}
		case f.num == 20 && f.wire == wireVarint:
			a.typ = int64(int32(f.val))
		case (f.num == 6 || f.num == 11) && f.wire == wireBytes:
			hasGraph = true
		case f.num == 5 && f.wire == wireBytes:
			if a.t == nil {
				a.t = new(tensorMsg)
			}
			if err := a.t.merge(f); err != nil {
				return a, err
			}
		}
	}
	if hasGraph && a.forGo() {
		// Only graph attributes hold graphs; one hidden in a value
		// attribute can nest without end.
		return a, fmt.Errorf("%w: attribute %q is a value (type %d) but also holds a graph", ErrInvalid, a.name, a.typ)
	}
	return a, nil
}

// parseValueInfo reads a ValueInfoProto.
func parseValueInfo(msg field) (valueInfo, error) {
	var v valueInfo
	for f, err := range fields(msg.data, msg.at) {
		if err != nil {
			return v, err
		}
		switch {
		case f.num == 1 && f.wire == wireBytes:
			if v.info.Name, err = f.str(); err != nil {
				return v, err
			}
		case f.num == 2 && f.wire == wireBytes:
			if err := v.mergeType(f); err != nil {
				return v, err
			}
			var typ []byte
			for tf, err := range fields(f.data, f.at) {
				if err != nil {
					return v, err
				}
				if tf.num == 1 { // tensor_type
					typ = append(typ, tf.raw...)
				}
			}
			v.forGo = appendBytesField(v.forGo, 2, typ)
			continue
		}
		if f.num == 1 {
			v.forGo = append(v.forGo, f.raw...)
		}
	}
	return v, nil
}

// typeKinds names the TypeProto value cases other than tensor_type.
var typeKinds = map[int32]string{4: "sequence", 5: "map", 8: "sparse tensor", 9: "optional"}

// mergeType reads a TypeProto.
func (v *valueInfo) mergeType(msg field) error {
	for f, err := range fields(msg.data, msg.at) {
		if err != nil {
			return err
		}
		if f.wire != wireBytes {
			continue
		}
		if k, ok := typeKinds[f.num]; ok {
			v.kind = k
			if typeDepth(f.data) > maxNesting {
				return fmt.Errorf("%w: the type of graph value %q nests %s types more than %d levels deep (real models nest a few)", ErrInvalid, v.info.Name, k, maxNesting)
			}
			continue
		}
		if f.num != 1 { // tensor_type
			continue
		}
		v.kind = ""
		for f, err := range fields(f.data, f.at) {
			if err != nil {
				return err
			}
			switch {
			case f.num == 1 && f.wire == wireVarint:
				v.info.Elem = graph.ElemType(int32(f.val))
			case f.num == 2 && f.wire == wireBytes:
				if err := v.mergeShape(f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// mergeShape reads a TensorShapeProto. A shape with no dimensions is a
// scalar: Dims is then empty but not nil.
func (v *valueInfo) mergeShape(msg field) error {
	if v.info.Dims == nil {
		v.info.Dims = []graph.Dim{}
	}
	for f, err := range fields(msg.data, msg.at) {
		if err != nil {
			return err
		}
		if f.num != 1 || f.wire != wireBytes {
			continue
		}
		d := graph.Dim{Value: -1}
		for f, err := range fields(f.data, f.at) {
			if err != nil {
				return err
			}
			switch {
			case f.num == 1 && f.wire == wireVarint:
				d = graph.Dim{Value: -1}
				if v := int64(f.val); v >= 0 && v <= maxDim {
					d.Value = int(v)
				}
			case f.num == 2 && f.wire == wireBytes:
				s, err := f.str()
				if err != nil {
					return err
				}
				d = graph.Dim{Value: -1, Name: s}
			}
		}
		v.info.Dims = append(v.info.Dims, d)
	}
	return nil
}

// maxDim bounds a declared dimension; larger sizes are read as unknown.
const maxDim = 1 << 40

// tensorMsg is a TensorProto as read from the wire, not yet checked.
type tensorMsg struct {
	name     string
	dims     []uint64
	dataType int32
	segment  bool
	floats   []uint32 // float_data, as bits
	int32s   []uint64 // int32_data, as varints
	int64s   []uint64 // int64_data
	uint64s  []uint64 // uint64_data
	doubles  []uint64 // double_data, as bits
	raw      []byte   // raw_data
	strings  bool     // string_data is present
	external bool     // external_data is present
	location int64    // data_location: 1 is EXTERNAL
	// ext holds the external_data entries (location, offset, length,
	// checksum), by key; see external.go.
	ext map[string]string
}

// merge reads one serialized TensorProto into t.
func (t *tensorMsg) merge(msg field) error {
	for f, err := range fields(msg.data, msg.at) {
		if err != nil {
			return err
		}
		switch f.num {
		case 1:
			t.dims, _, err = appendVarints(t.dims, f)
		case 2:
			if f.wire == wireVarint {
				t.dataType = int32(f.val)
			}
		case 3:
			t.segment = t.segment || f.wire == wireBytes
		case 4:
			t.floats, _, err = appendFixed32(t.floats, f)
		case 5:
			t.int32s, _, err = appendVarints(t.int32s, f)
		case 6:
			t.strings = t.strings || f.wire == wireBytes
		case 7:
			t.int64s, _, err = appendVarints(t.int64s, f)
		case 8:
			if f.wire == wireBytes {
				t.name, err = f.str()
			}
		case 9:
			if f.wire == wireBytes {
				t.raw = f.data
			}
		case 10:
			t.doubles, _, err = appendFixed64(t.doubles, f)
		case 11:
			t.uint64s, _, err = appendVarints(t.uint64s, f)
		case 13:
			if f.wire == wireBytes {
				t.external = true
				err = t.mergeExternal(f)
			}
		case 14:
			if f.wire == wireVarint {
				t.location = int64(int32(f.val))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseTensor reads a serialized TensorProto.
func parseTensor(data []byte) (*tensorMsg, error) {
	t := new(tensorMsg)
	if err := t.merge(field{data: data}); err != nil {
		return nil, err
	}
	return t, nil
}

// defaultOpset returns the version of the default operator set ("" or
// "ai.onnx"). Models older than IR version 3 have no opset imports and use
// version 1. It returns 0 when the model imports no default operator set.
func (m *model) defaultOpset() (int, error) {
	opset := 0
	for _, op := range m.opsets {
		if op.domain != "" && op.domain != "ai.onnx" {
			continue
		}
		if op.version < 1 || op.version > 1000 {
			return 0, fmt.Errorf("%w: opset version %d", ErrInvalid, op.version)
		}
		if opset != 0 && opset != int(op.version) {
			return 0, fmt.Errorf("%w: the default operator set is imported twice, as versions %d and %d", ErrInvalid, opset, op.version)
		}
		opset = int(op.version)
	}
	if opset == 0 && len(m.opsets) == 0 && m.irVersion < 3 {
		opset = 1
	}
	return opset, nil
}

// typeDepth returns how many levels of types the TypeProto value case
// (a Sequence, Map or Optional type) b nests, following the element or
// value type of each; it walks the chain in a loop, not by recursion.
func typeDepth(b []byte) int {
	depth := 1
	for len(b) > 0 {
		var next []byte
		for f, err := range fields(b, 0) {
			if err != nil {
				return depth
			}
			// Sequence and Optional: elem_type (1); Map: value_type (2).
			if f.wire == wireBytes && (f.num == 1 || f.num == 2) {
				next = f.data
			}
		}
		if next == nil {
			return depth
		}
		// next is a TypeProto: follow its sequence, map or optional type.
		b = nil
		for f, err := range fields(next, 0) {
			if err != nil {
				return depth
			}
			if _, ok := typeKinds[f.num]; ok && f.wire == wireBytes {
				b = f.data
			}
		}
		depth++
		if depth > maxNesting {
			return depth
		}
	}
	return depth
}
