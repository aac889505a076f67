#!/usr/bin/python3
"""A small float64 ONNX interpreter in torch ops, differentiable in the
model's flat parameter vector theta.

Written from the ONNX operator spec (it follows
onnx/testdata/pytorch/check_numpy.py, the numpy evaluator, op for op), but
every value is a torch tensor so torch.autograd can differentiate through the
whole graph, to any order:

  * Every floating-point initializer that some graph output depends on (the
    "parameters") is a view into ONE flat float64 tensor theta, in the order
    of model.graph.initializer, each flattened row-major. Dependence through
    the data input of a Shape node does not count (only the shape is read).
  * RNN / GRU / LSTM are written out as cell equations in torch ops (no
    nn.RNN / nn.LSTM / nn.GRU modules, whose cached flat weights would break
    differentiation in theta): ONNX gate orders (LSTM i,o,f,c; GRU z,r,h),
    W [D,G*H,F], R [D,G*H,H], B [D,2*G*H] = [Wb ; Rb], linear_before_reset,
    forward / reverse / bidirectional, layout 0/1, sequence_lens with the
    onnxruntime convention: steps t >= sequence_lens[b] write 0 to Y and
    leave the state unchanged (so Y_h / Y_c hold the state at the last valid
    step), and the reverse direction starts at each sequence's own last
    valid step.

Use with /usr/bin/python3 (Debian torch 1.13, onnx 1.12):

    m = OnnxTorch("model.onnx")
    theta = m.theta0.clone().requires_grad_(True)
    outs = m.run(theta, {"x": x_float64_tensor, "lengths": int64_tensor})
    y = outs["y"]     # float64, differentiable in theta
"""

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}

# ONNX TensorProto data type -> torch dtype for Cast (floats become float64)
CAST = {1: torch.float64, 10: torch.float64, 11: torch.float64, 16: torch.float64,
        2: torch.uint8, 3: torch.int8, 5: torch.int16, 6: torch.int32,
        7: torch.int64, 9: torch.bool}


def to_torch(a):
    """numpy array -> torch tensor; floating types widened to float64."""
    a = np.asarray(a)
    # np.array(copy=True) keeps 0-d arrays 0-d (ascontiguousarray would not)
    if a.dtype.kind == "f":
        return torch.from_numpy(np.array(a, dtype=np.float64, copy=True))
    return torch.from_numpy(np.array(a, copy=True))


def attrs_of(node):
    out = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            raise NotImplementedError("subgraphs (%s)" % node.op_type)
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [s.decode() for s in v]
        elif isinstance(v, onnx.TensorProto):
            v = to_torch(numpy_helper.to_array(v))
        out[a.name] = v
    return out


# When RELU_MIN_ABS is a list, every Relu appends min|input| to it (used by
# make_reference.py to check that no ReLU sits exactly at its kink).
RELU_MIN_ABS = None


def _relu(x):
    if RELU_MIN_ABS is not None:
        RELU_MIN_ABS.append(float(x.detach().abs().min()))
    return torch.relu(x)


ACT = {
    "Sigmoid": torch.sigmoid,
    "Tanh": torch.tanh,
    "Relu": _relu,
}


def ints(t):
    return [int(v) for v in t.reshape(-1).tolist()]


# --------------------------------------------------------------------------
# Recurrent operators
# --------------------------------------------------------------------------

def recurrent(kind, ins, at):
    """RNN / GRU / LSTM per the ONNX spec, batched over the batch axis."""
    def get(i):
        return ins[i] if i < len(ins) and ins[i] is not None else None
    X, W, R = get(0), get(1), get(2)
    Bias, seql, h0 = get(3), get(4), get(5)
    c0 = get(6) if kind == "LSTM" else None
    if kind == "LSTM" and get(7) is not None:
        raise NotImplementedError("LSTM peepholes")
    if "clip" in at or at.get("input_forget", 0):
        raise NotImplementedError("clip / input_forget")
    layout = at.get("layout", 0)
    if layout == 1:
        X = X.transpose(0, 1)
        h0 = None if h0 is None else h0.transpose(0, 1)
        c0 = None if c0 is None else c0.transpose(0, 1)
    T, Bn, _ = X.shape
    H = at["hidden_size"]
    direction = at.get("direction", "forward")
    D = 2 if direction == "bidirectional" else 1
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    default_acts = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                    "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    acts = at.get("activations", default_acts * D)
    if "activation_alpha" in at or "activation_beta" in at:
        raise NotImplementedError("activation_alpha/beta")
    lbr = at.get("linear_before_reset", 0)
    dt = X.dtype
    if Bias is None:
        Bias = torch.zeros(D, 2 * G * H, dtype=dt)
    if seql is None:
        lens = None
    else:
        lens = seql.to(torch.int64).reshape(Bn)
    Ys, Yhs, Ycs = [], [], []
    for d in range(D):
        reverse = direction == "reverse" or d == 1
        a = [ACT[n] for n in acts[d * len(default_acts):(d + 1) * len(default_acts)]]
        Wd, Rd = W[d], R[d]                      # [G*H, F], [G*H, H]
        Wb, Rb = Bias[d, :G * H], Bias[d, G * H:]
        h = torch.zeros(Bn, H, dtype=dt) if h0 is None else h0[d]
        c = torch.zeros(Bn, H, dtype=dt) if c0 is None else c0[d]
        xw = torch.matmul(X, Wd.t()) + Wb        # [T, B, G*H]
        out = [None] * T
        steps = range(T - 1, -1, -1) if reverse else range(T)
        for t in steps:
            gx = xw[t]
            if kind == "RNN":
                hn = a[0](gx + h @ Rd.t() + Rb)
                cn = c
            elif kind == "GRU":
                # gate order z, r, h
                hz = h @ Rd[:H].t() + Rb[:H]
                hr = h @ Rd[H:2 * H].t() + Rb[H:2 * H]
                z = a[0](gx[:, :H] + hz)
                r = a[0](gx[:, H:2 * H] + hr)
                if lbr:
                    n = a[1](gx[:, 2 * H:] + r * (h @ Rd[2 * H:].t() + Rb[2 * H:]))
                else:
                    n = a[1](gx[:, 2 * H:] + (r * h) @ Rd[2 * H:].t() + Rb[2 * H:])
                hn = (1.0 - z) * n + z * h
                cn = c
            else:
                # LSTM, gate order i, o, f, c
                g = gx + h @ Rd.t() + Rb
                i = a[0](g[:, :H])
                o = a[0](g[:, H:2 * H])
                f = a[0](g[:, 2 * H:3 * H])
                cc = a[1](g[:, 3 * H:])
                cn = f * c + i * cc
                hn = o * a[2](cn)
            if lens is None:
                h, c = hn, cn
                out[t] = hn
            else:
                m = (lens > t).reshape(Bn, 1)
                h = torch.where(m, hn, h)
                c = torch.where(m, cn, c)
                out[t] = torch.where(m, hn, torch.zeros_like(hn))
        Ys.append(torch.stack(out, 0))           # [T, B, H]
        Yhs.append(h)
        Ycs.append(c)
    Y = torch.stack(Ys, 1)                       # [T, D, B, H]
    Yh = torch.stack(Yhs, 0)                     # [D, B, H]
    Yc = torch.stack(Ycs, 0)
    if layout == 1:
        Y = Y.permute(2, 0, 1, 3)
        Yh = Yh.transpose(0, 1)
        Yc = Yc.transpose(0, 1)
    return [Y, Yh, Yc] if kind == "LSTM" else [Y, Yh]


# --------------------------------------------------------------------------
# Other operators
# --------------------------------------------------------------------------

def axes_arg(ins, at, pos):
    if len(ins) > pos and ins[pos] is not None:
        return ints(ins[pos])
    return at.get("axes")


def softmax(x, axis, log, opset):
    if opset < 13:  # coerce to 2-D [prod(shape[:axis]), prod(shape[axis:])]
        axis = axis % x.dim()
        shp = x.shape
        x2 = x.reshape(int(np.prod(shp[:axis], dtype=np.int64)), -1)
        r = torch.log_softmax(x2, 1) if log else torch.softmax(x2, 1)
        return r.reshape(shp)
    return torch.log_softmax(x, axis) if log else torch.softmax(x, axis)


def gather(x, idx, axis):
    axis = axis % x.dim()
    idx = idx.to(torch.int64)
    n = x.shape[axis]
    flat = torch.where(idx < 0, idx + n, idx).reshape(-1)
    out = x.index_select(axis, flat)
    return out.reshape(tuple(x.shape[:axis]) + tuple(idx.shape) + tuple(x.shape[axis + 1:]))


def slice_op(x, starts, ends, axes, steps):
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = a % x.dim()
        n = x.shape[a]
        # ONNX clamping agrees with Python's slice semantics
        s = max(min(s, 2 ** 62), -2 ** 62)
        e = max(min(e, 2 ** 62), -2 ** 62)
        idx = list(range(*slice(s, e, st).indices(n)))
        x = x.index_select(a, torch.tensor(idx, dtype=torch.int64))
    return x


def binary(op, a, b):
    if op == "Add":
        return a + b
    if op == "Sub":
        return a - b
    if op == "Mul":
        return a * b
    if a.dtype.is_floating_point:
        return a / b
    return torch.div(a, b, rounding_mode="trunc")


def run_node(node, ins, opset):
    op, at = node.op_type, attrs_of(node)
    if op in ("RNN", "GRU", "LSTM"):
        return recurrent(op, ins, at)
    x = ins[0] if ins else None
    if op == "Constant":
        if "value" in at:
            return [at["value"]]
        if "value_float" in at:
            return [torch.tensor(float(at["value_float"]), dtype=torch.float64)]
        if "value_floats" in at:
            return [torch.tensor([float(v) for v in at["value_floats"]], dtype=torch.float64)]
        if "value_int" in at:
            return [torch.tensor(int(at["value_int"]), dtype=torch.int64)]
        if "value_ints" in at:
            return [torch.tensor([int(v) for v in at["value_ints"]], dtype=torch.int64)]
        raise NotImplementedError("Constant %s" % list(at))
    if op in ("Identity", "Dropout"):
        return [x]
    if op == "Shape":
        return [torch.tensor(list(x.shape), dtype=torch.int64)]
    if op == "Gather":
        return [gather(x, ins[1], at.get("axis", 0))]
    if op == "Unsqueeze":
        axes = axes_arg(ins, at, 1)
        r = x.dim() + len(axes)
        out = x
        for ax in sorted(a % r for a in axes):
            out = out.unsqueeze(ax)
        return [out]
    if op == "Squeeze":
        axes = axes_arg(ins, at, 1)
        if axes is None:
            return [x.squeeze()]
        out = x
        for ax in sorted((a % x.dim() for a in axes), reverse=True):
            assert out.shape[ax] == 1
            out = out.squeeze(ax)
        return [out]
    if op == "Concat":
        return [torch.cat(ins, at["axis"])]
    if op == "ConstantOfShape":
        v = at.get("value", torch.zeros(1, dtype=torch.float64))
        return [torch.full([int(s) for s in ints(x)], v.reshape(-1)[0].item(), dtype=v.dtype)]
    if op == "Expand":
        shape = torch.broadcast_shapes(tuple(x.shape), tuple(ints(ins[1])))
        return [x.expand(shape)]
    if op == "Transpose":
        perm = at.get("perm", list(range(x.dim()))[::-1])
        return [x.permute(*perm)]
    if op == "Reshape":
        shape = ints(ins[1])
        shape = [x.shape[i] if (s == 0 and not at.get("allowzero", 0)) else s
                 for i, s in enumerate(shape)]
        return [x.reshape(shape)]
    if op == "Flatten":
        ax = at.get("axis", 1) % (x.dim() + 1) if x.dim() else 0
        lead = int(np.prod(x.shape[:ax], dtype=np.int64))
        return [x.reshape(lead, -1)]
    if op == "Slice":
        if opset < 10:
            starts, ends = at["starts"], at["ends"]
            axes = at.get("axes", list(range(len(starts))))
            steps = [1] * len(starts)
        else:
            starts, ends = ints(ins[1]), ints(ins[2])
            axes = ints(ins[3]) if len(ins) > 3 and ins[3] is not None \
                else list(range(len(starts)))
            steps = ints(ins[4]) if len(ins) > 4 and ins[4] is not None \
                else [1] * len(starts)
        return [slice_op(x, starts, ends, axes, steps)]
    if op == "MatMul":
        return [torch.matmul(x, ins[1])]
    if op == "Gemm":
        A, Bm = ins[0], ins[1]
        if at.get("transA", 0):
            A = A.t()
        if at.get("transB", 0):
            Bm = Bm.t()
        y = at.get("alpha", 1.0) * (A @ Bm)
        if len(ins) > 2 and ins[2] is not None:
            y = y + at.get("beta", 1.0) * ins[2]
        return [y]
    if op in ("Add", "Sub", "Mul", "Div"):
        return [binary(op, x, ins[1])]
    if op in ("Tanh", "Sigmoid", "Relu"):
        return [ACT[op](x)]
    if op == "LeakyRelu":
        return [torch.where(x >= 0, x, at.get("alpha", 0.01) * x)]
    if op == "Exp":
        return [torch.exp(x)]
    if op == "Log":
        return [torch.log(x)]
    if op == "Neg":
        return [-x]
    if op in ("Softmax", "LogSoftmax"):
        return [softmax(x, at.get("axis", -1 if opset >= 13 else 1),
                        op == "LogSoftmax", opset)]
    if op == "Cast":
        return [x.to(CAST[at["to"]])]
    if op == "TopK":
        k = int(ins[1].reshape(-1)[0])
        axis = at.get("axis", -1)
        assert x.dim() == 1 and axis in (-1, 0)
        largest = at.get("largest", 1)
        # spec: equal values -> lower index first (stable sort)
        _, idx = torch.sort(x, descending=bool(largest), stable=True)
        idx = idx[:k]
        return [x[idx], idx.to(torch.int64)]
    if op == "ReduceProd":
        axes = at.get("axes")
        keep = bool(at.get("keepdims", 1))
        if axes is None:
            out = torch.prod(x)
            if keep:
                out = out.reshape([1] * x.dim())
            return [out.to(x.dtype)]
        out = x
        for ax in sorted((a % x.dim() for a in axes), reverse=True):
            out = torch.prod(out, ax, keepdim=keep)
        return [out.to(x.dtype)]
    if op == "Range":
        s, e, d = ins[0].item(), ins[1].item(), ins[2].item()
        return [torch.arange(s, e, d, dtype=ins[0].dtype)]
    if op == "ScatterElements":
        if at.get("reduction", "none") != "none":
            raise NotImplementedError("ScatterElements reduction")
        axis = at.get("axis", 0) % x.dim()
        idx = ins[1].to(torch.int64)
        idx = torch.where(idx < 0, idx + x.shape[axis], idx)
        return [torch.scatter(x, axis, idx, ins[2])]
    raise NotImplementedError(op)


# --------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------

def parameter_names(graph):
    """Names of the floating-point initializers some graph output depends on,
    in initializer order. Edges into a Shape node's data input are not
    followed (Shape reads only the shape)."""
    producer = {}
    for node in graph.node:
        attrs_of(node)  # rejects subgraphs
        for o in node.output:
            if o:
                producer[o] = node
    inits = {i.name: i for i in graph.initializer}
    seen, needed = set(), set()
    stack = [o.name for o in graph.output]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in inits:
            needed.add(name)
        node = producer.get(name)
        if node is None:
            continue
        for k, i in enumerate(node.input):
            if not i:
                continue
            if node.op_type == "Shape" and k == 0:
                continue
            stack.append(i)
    return [i.name for i in graph.initializer
            if i.name in needed and i.data_type in FLOAT_TYPES]


class OnnxTorch:
    def __init__(self, path):
        self.proto = onnx.load(path)
        g = self.proto.graph
        self.opset = [o.version for o in self.proto.opset_import
                      if o.domain in ("", "ai.onnx")][0]
        self.consts = {i.name: to_torch(numpy_helper.to_array(i)) for i in g.initializer}
        names = parameter_names(g)
        self.params = []
        off = 0
        for n in names:
            t = self.consts.pop(n)
            size = int(t.numel())
            self.params.append({"name": n, "shape": list(t.shape), "offset": off, "size": size})
            off += size
        self.P = off
        theta = torch.zeros(self.P, dtype=torch.float64)
        for p in self.params:
            theta[p["offset"]:p["offset"] + p["size"]] = \
                to_torch(numpy_helper.to_array(
                    [i for i in g.initializer if i.name == p["name"]][0])).reshape(-1)
        self.theta0 = theta
        self.input_names = [i.name for i in g.input if i.name not in
                            {x.name for x in g.initializer}]
        self.output_names = [o.name for o in g.output]

    def run(self, theta, feeds):
        """Evaluate the graph. theta: float64 [P]; feeds: name -> tensor
        (floating feeds are converted to float64). Returns name -> tensor."""
        assert theta.shape == (self.P,) and theta.dtype == torch.float64
        env = dict(self.consts)
        for p in self.params:
            env[p["name"]] = theta[p["offset"]:p["offset"] + p["size"]].view(p["shape"])
        for k, v in feeds.items():
            v = torch.as_tensor(v)
            env[k] = v.to(torch.float64) if v.dtype.is_floating_point else v
        for node in self.proto.graph.node:
            ins = [env[n] if n else None for n in node.input]
            outs = run_node(node, ins, self.opset)
            for n, v in zip(node.output, outs):
                if n:
                    env[n] = v
        return {o: env[o] for o in self.output_names}
