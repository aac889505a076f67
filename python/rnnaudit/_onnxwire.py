"""The few protobuf operations the export needs on an ONNX file, without
the onnx package: the graph's initializers as serialized messages, and one
more metadata_props entry appended to the ModelProto.

Field numbers are those of onnx.proto: ModelProto.graph 7,
ModelProto.metadata_props 14, GraphProto.node 1, GraphProto.initializer 5,
GraphProto.output 12, NodeProto.input 1, output 2 and op_type 4,
ValueInfoProto.name 1, TensorProto.name 8, StringStringEntryProto key 1 and
value 2."""

PARAMETERS_KEY = "rnnaudit.parameters"
TARGET_SCALE_KEY = "rnnaudit.target_scale"
TRAIN_BUDGET_KEY = "rnnaudit.train_budget"
LOSS_KEY = "rnnaudit.loss"


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def _fields(b):
    """(field number, wire type, value) of each field of the message b: an
    int for varints and fixed fields, the bytes for length-delimited."""
    i = 0
    while i < len(b):
        tag, i = _varint(b, i)
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wire == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        elif wire == 2:
            n, i = _varint(b, i)
            v, i = bytes(b[i:i + n]), i + n
        else:
            raise ValueError("unsupported protobuf wire type %d" % wire)
        yield num, wire, v


def _encode_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def _bytes_field(num, data):
    return _encode_varint(num << 3 | 2) + _encode_varint(len(data)) + data


def initializers(data):
    """{name: serialized TensorProto} of the graph's initializers, from
    the bytes of an ONNX file."""
    out = {}
    for num, wire, graph in _fields(data):
        if num != 7 or wire != 2:
            continue
        for gnum, gwire, t in _fields(graph):
            if gnum != 5 or gwire != 2:
                continue
            name = ""
            for tnum, twire, v in _fields(t):
                if tnum == 8 and twire == 2:
                    name = v.decode("utf-8")
            out[name] = t
    return out


def nodes(data):
    """(nodes, outputs) of the graph of the ONNX file's bytes data: each
    node as (op_type, [inputs], [outputs]) in the file's order, and the
    names of the graph's outputs."""
    out_nodes, outputs = [], []
    for num, wire, graph in _fields(data):
        if num != 7 or wire != 2:
            continue
        for gnum, gwire, v in _fields(graph):
            if gwire != 2:
                continue
            if gnum == 1:
                op, ins, outs = "", [], []
                for nnum, nwire, f in _fields(v):
                    if nwire != 2:
                        continue
                    if nnum == 1:
                        ins.append(f.decode("utf-8"))
                    elif nnum == 2:
                        outs.append(f.decode("utf-8"))
                    elif nnum == 4:
                        op = f.decode("utf-8")
                out_nodes.append((op, ins, outs))
            elif gnum == 12:
                for vnum, vwire, f in _fields(v):
                    if vnum == 1 and vwire == 2:
                        outputs.append(f.decode("utf-8"))
    return out_nodes, outputs


def append_metadata(path, key, value):
    """Appends metadata_props entry key: value to the ONNX file at path (a
    repeated field may follow the others: readers merge it)."""
    entry = _bytes_field(1, key.encode("utf-8")) + _bytes_field(2, value.encode("utf-8"))
    with open(path, "ab") as f:
        f.write(_bytes_field(14, entry))
