package onnx_test

import (
	"encoding/binary"
	"math"
)

// pb builds protobuf messages by hand, so that tests can make ONNX models
// and tensors with exactly the encoding they need.
type pb []byte

func (b pb) tag(num, wire int) pb { return binary.AppendUvarint(b, uint64(num)<<3|uint64(wire)) }

func (b pb) varint(num int, v uint64) pb { return binary.AppendUvarint(b.tag(num, 0), v) }

func (b pb) bytes(num int, data []byte) pb {
	b = binary.AppendUvarint(b.tag(num, 2), uint64(len(data)))
	return append(b, data...)
}

func (b pb) str(num int, s string) pb { return b.bytes(num, []byte(s)) }

func (b pb) fixed32(num int, v uint32) pb { return binary.LittleEndian.AppendUint32(b.tag(num, 5), v) }

// packed appends a packed repeated varint field.
func (b pb) packed(num int, vs ...int64) pb {
	var p []byte
	for _, v := range vs {
		p = binary.AppendUvarint(p, uint64(v))
	}
	return b.bytes(num, p)
}

// modelPB is a ModelProto with IR version 8, the default opset and graph g.
func modelPB(opset int, g pb) pb {
	return pb{}.varint(1, 8).bytes(8, pb{}.str(1, "").varint(2, uint64(opset))).str(2, "test").bytes(7, g)
}

// nodePB is a NodeProto.
func nodePB(op, name string, ins, outs []string, attrs ...pb) pb {
	var b pb
	for _, s := range ins {
		b = b.str(1, s)
	}
	for _, s := range outs {
		b = b.str(2, s)
	}
	b = b.str(3, name).str(4, op)
	for _, a := range attrs {
		b = b.bytes(5, a)
	}
	return b
}

// valueInfoPB is a ValueInfoProto for a tensor; dims are ints (sizes) or
// strings (names).
func valueInfoPB(name string, elem int, dims ...any) pb {
	var shape pb
	for _, d := range dims {
		switch d := d.(type) {
		case int:
			shape = shape.bytes(1, pb{}.varint(1, uint64(d)))
		case string:
			shape = shape.bytes(1, pb{}.str(2, d))
		}
	}
	tt := pb{}.varint(1, uint64(elem)).bytes(2, shape)
	return pb{}.str(1, name).bytes(2, pb{}.bytes(1, tt))
}

// tensorPB is a TensorProto with raw data.
func tensorPB(name string, elem int, dims []int64, raw []byte) pb {
	return pb{}.packed(1, dims...).varint(2, uint64(elem)).str(8, name).bytes(9, raw)
}

// floatsPB is a float TensorProto with its values in float_data.
func floatsPB(name string, dims []int64, vals ...float32) pb {
	var p []byte
	for _, v := range vals {
		p = binary.LittleEndian.AppendUint32(p, math.Float32bits(v))
	}
	return pb{}.packed(1, dims...).varint(2, 1).bytes(4, p).str(8, name)
}

// Attribute protos.
func attrInt(name string, v int64) pb { return pb{}.str(1, name).varint(3, uint64(v)).varint(20, 2) }
func attrFloat(name string, v float32) pb {
	return pb{}.str(1, name).fixed32(2, math.Float32bits(v)).varint(20, 1)
}
func attrInts(name string, vs ...int64) pb { return pb{}.str(1, name).packed(8, vs...).varint(20, 7) }
func attrString(name, s string) pb         { return pb{}.str(1, name).str(4, s).varint(20, 3) }
func attrTensor(name string, t pb) pb      { return pb{}.str(1, name).bytes(5, t).varint(20, 4) }
func attrGraph(name string, g pb) pb       { return pb{}.str(1, name).bytes(6, g).varint(20, 5) }
func attrStrings(name string, ss ...string) pb {
	b := pb{}.str(1, name)
	for _, s := range ss {
		b = b.str(9, s)
	}
	return b.varint(20, 8)
}

// graphPB assembles a GraphProto from nodes, inputs, outputs and
// initializers, each given as encoded messages.
func graphPB(nodes, inputs, outputs, inits []pb) pb {
	b := pb{}
	for _, n := range nodes {
		b = b.bytes(1, n)
	}
	b = b.str(2, "g")
	for _, t := range inits {
		b = b.bytes(5, t)
	}
	for _, v := range inputs {
		b = b.bytes(11, v)
	}
	for _, v := range outputs {
		b = b.bytes(12, v)
	}
	return b
}

func f32raw(vals ...float32) []byte {
	var p []byte
	for _, v := range vals {
		p = binary.LittleEndian.AppendUint32(p, math.Float32bits(v))
	}
	return p
}

func list(s ...string) []string { return s }

func pbs(ms ...pb) []pb { return ms }
