#!/usr/bin/python3
"""Independent cross-check of the fixtures (onnxruntime is not available here).

A small float64 ONNX interpreter written from the ONNX operator spec in numpy
(initializers widened to float64, like the Go engine does) runs

  1. every <name>.onnx on the inputs of <name>.json and compares with the
     stored outputs (PyTorch float64 reference);
  2. every model again at OTHER batch / time sizes than the fixture (and, for
     the packed models, other lengths), against PyTorch float64 computed on
     the spot, to prove that the exported graphs really have symbolic
     batch/time and bake in no traced sizes.

Run:  /usr/bin/python3 check_numpy.py        (exit status 1 on any mismatch)
"""

import copy
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in testdata
sys.path.insert(0, HERE)
import export  # noqa: E402  (the model table and builders)


# --------------------------------------------------------------------------
# A tiny float64 ONNX interpreter
# --------------------------------------------------------------------------

def attrs_of(node):
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [s.decode() for s in v]
        elif isinstance(v, onnx.TensorProto):
            v = widen(numpy_helper.to_array(v))
        out[a.name] = v
    return out


def widen(a):
    a = np.asarray(a)
    if a.dtype in (np.float16, np.float32):
        return a.astype(np.float64)
    return a


ACT = {
    "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "Tanh": np.tanh,
    "Relu": lambda x: np.maximum(x, 0.0),
}


def recurrent(kind, ins, at):
    """RNN / GRU / LSTM per the ONNX spec (ORT convention: Y is 0 at steps
    beyond sequence_lens, Y_h/Y_c hold the state at the last valid step)."""
    def get(i):
        return ins[i] if i < len(ins) and ins[i] is not None else None
    X, W, R = get(0), get(1), get(2)
    Bias, seql, h0 = get(3), get(4), get(5)
    c0 = get(6) if kind == "LSTM" else None
    if kind == "LSTM" and get(7) is not None:
        raise NotImplementedError("peepholes")
    layout = at.get("layout", 0)
    if layout == 1:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, Bn, _ = X.shape
    H = at["hidden_size"]
    direction = at.get("direction", "forward")
    D = 2 if direction == "bidirectional" else 1
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    default_acts = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                    "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    acts = at.get("activations", default_acts * D)
    assert "clip" not in at and not at.get("input_forget", 0), at
    lbr = at.get("linear_before_reset", 0)
    if Bias is None:
        Bias = np.zeros((D, 2 * G * H))
    lens = np.full(Bn, T, dtype=np.int64) if seql is None else seql.astype(np.int64)
    Y = np.zeros((T, D, Bn, H))
    Yh = np.zeros((D, Bn, H))
    Yc = np.zeros((D, Bn, H))
    for d in range(D):
        name = "reverse" if (direction == "reverse" or d == 1) else "forward"
        a = [ACT[n] for n in acts[d * len(default_acts):(d + 1) * len(default_acts)]]
        Wd, Rd = W[d], R[d]
        Wb, Rb = Bias[d, :G * H], Bias[d, G * H:]
        for b in range(Bn):
            L = int(lens[b])
            h = np.zeros(H) if h0 is None else h0[d, b].copy()
            c = np.zeros(H) if c0 is None else c0[d, b].copy()
            steps = range(L) if name == "forward" else range(L - 1, -1, -1)
            for t in steps:
                x = X[t, b]
                if kind == "RNN":
                    h = a[0](Wd @ x + Rd @ h + Wb + Rb)
                elif kind == "GRU":
                    gx = Wd @ x + Wb
                    z = a[0](gx[:H] + Rd[:H] @ h + Rb[:H])
                    r = a[0](gx[H:2 * H] + Rd[H:2 * H] @ h + Rb[H:2 * H])
                    if lbr:
                        n = a[1](gx[2 * H:] + r * (Rd[2 * H:] @ h + Rb[2 * H:]))
                    else:
                        n = a[1](gx[2 * H:] + Rd[2 * H:] @ (r * h) + Rb[2 * H:])
                    h = (1.0 - z) * n + z * h
                else:  # LSTM, gate order i, o, f, c
                    g = Wd @ x + Rd @ h + Wb + Rb
                    i = a[0](g[:H])
                    o = a[0](g[H:2 * H])
                    f = a[0](g[2 * H:3 * H])
                    cc = a[1](g[3 * H:])
                    c = f * c + i * cc
                    h = o * a[2](c)
                Y[t, d, b] = h
            Yh[d, b] = h
            Yc[d, b] = c
    if layout == 1:
        Y = Y.transpose(2, 0, 1, 3)
        Yh = Yh.transpose(1, 0, 2)
        Yc = Yc.transpose(1, 0, 2)
    return [Y, Yh, Yc] if kind == "LSTM" else [Y, Yh]


def axes_arg(ins, at, pos):
    if len(ins) > pos and ins[pos] is not None:
        return [int(v) for v in ins[pos].reshape(-1)]
    return at.get("axes")


def softmax(x, axis, log, opset):
    if opset < 13:  # coerce to 2-D [prod(shape[:axis]), prod(shape[axis:])]
        axis = axis % x.ndim
        shp = x.shape
        x2 = x.reshape(int(np.prod(shp[:axis])), -1)
        m = x2 - x2.max(axis=1, keepdims=True)
        s = np.log(np.exp(m).sum(axis=1, keepdims=True))
        r = (m - s) if log else np.exp(m - s)
        return r.reshape(shp)
    m = x - x.max(axis=axis, keepdims=True)
    s = np.log(np.exp(m).sum(axis=axis, keepdims=True))
    return (m - s) if log else np.exp(m - s)


CAST = {1: np.float64, 11: np.float64, 10: np.float64,  # floats stay float64
        6: np.int32, 7: np.int64, 9: np.bool_}


def run_node(node, ins, opset):
    op, at = node.op_type, attrs_of(node)
    if op in ("RNN", "GRU", "LSTM"):
        return recurrent(op, ins, at)
    x = ins[0] if ins else None
    if op == "Constant":
        return [at["value"]]
    if op == "Identity" or op == "Dropout":
        return [x]
    if op == "Shape":
        return [np.array(x.shape, dtype=np.int64)]
    if op == "Gather":
        return [np.take(x, ins[1].astype(np.int64), axis=at.get("axis", 0))]
    if op == "Unsqueeze":
        out = x
        axes = axes_arg(ins, at, 1)
        r = x.ndim + len(axes)
        for ax in sorted(a % r for a in axes):
            out = np.expand_dims(out, ax)
        return [out]
    if op == "Squeeze":
        axes = axes_arg(ins, at, 1)
        if axes is None:
            return [np.squeeze(x)]
        for ax in axes:
            assert x.shape[ax] == 1
        return [np.squeeze(x, axis=tuple(a % x.ndim for a in axes))]
    if op == "Concat":
        return [np.concatenate(ins, axis=at["axis"])]
    if op == "ConstantOfShape":
        v = at.get("value", np.zeros(1))
        return [np.full([int(s) for s in x], v.reshape(-1)[0], dtype=v.dtype)]
    if op == "Expand":
        shape = np.broadcast_shapes(x.shape, tuple(int(s) for s in ins[1]))
        return [np.broadcast_to(x, shape).copy()]
    if op == "Transpose":
        return [np.transpose(x, at.get("perm"))]
    if op == "Reshape":
        shape = [int(s) for s in ins[1]]
        shape = [x.shape[i] if (s == 0 and not at.get("allowzero", 0)) else s
                 for i, s in enumerate(shape)]
        return [x.reshape(shape)]
    if op == "Slice":
        if opset < 10:
            starts, ends = at["starts"], at["ends"]
            axes = at.get("axes", list(range(len(starts))))
            steps = [1] * len(starts)
        else:
            starts = [int(v) for v in ins[1]]
            ends = [int(v) for v in ins[2]]
            axes = [int(v) for v in ins[3]] if len(ins) > 3 and ins[3] is not None \
                else list(range(len(starts)))
            steps = [int(v) for v in ins[4]] if len(ins) > 4 and ins[4] is not None \
                else [1] * len(starts)
        sl = [slice(None)] * x.ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            sl[a % x.ndim] = slice(s, e, st)
        return [x[tuple(sl)]]
    if op == "MatMul":
        return [np.matmul(x, ins[1])]
    if op == "Gemm":
        A, Bm = ins[0], ins[1]
        if at.get("transA", 0):
            A = A.T
        if at.get("transB", 0):
            Bm = Bm.T
        y = at.get("alpha", 1.0) * (A @ Bm)
        if len(ins) > 2 and ins[2] is not None:
            y = y + at.get("beta", 1.0) * ins[2]
        return [y]
    if op in ("Add", "Sub", "Mul", "Div"):
        f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
        return [f(x, ins[1])]
    if op in ("Tanh", "Sigmoid", "Relu"):
        return [ACT[op](x)]
    if op == "Exp":
        return [np.exp(x)]
    if op == "Log":
        return [np.log(x)]
    if op == "Neg":
        return [-x]
    if op in ("Softmax", "LogSoftmax"):
        return [softmax(x, at.get("axis", -1 if opset >= 13 else 1), op == "LogSoftmax", opset)]
    if op == "Cast":
        return [x.astype(CAST[at["to"]])]
    if op == "TopK":
        k = int(ins[1].reshape(-1)[0])
        axis = at.get("axis", -1)
        assert x.ndim == 1 and axis in (-1, 0)
        largest = at.get("largest", 1)
        # spec: equal values -> lower index first
        idx = np.argsort(-x if largest else x, kind="stable")[:k]
        return [x[idx], idx.astype(np.int64)]
    if op == "ReduceProd":
        axes = at.get("axes")
        return [np.prod(x, axis=None if axes is None else tuple(axes),
                        keepdims=bool(at.get("keepdims", 1))).astype(x.dtype)]
    if op == "Range":
        return [np.arange(ins[0].item(), ins[1].item(), ins[2].item()).astype(ins[0].dtype)]
    if op == "ScatterElements":
        assert at.get("axis", 0) == 0 and x.ndim == 1
        out = x.copy()
        out[ins[1].astype(np.int64)] = ins[2]
        return [out]
    raise NotImplementedError(op)


def run_model(path, feeds):
    m = onnx.load(path)
    opset = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")][0]
    env = {i.name: widen(numpy_helper.to_array(i)) for i in m.graph.initializer}
    env.update(feeds)
    for node in m.graph.node:
        ins = [env[n] if n else None for n in node.input]
        outs = run_node(node, ins, opset)
        for n, v in zip(node.output, outs):
            if n:
                env[n] = v
    return {o.name: env[o.name] for o in m.graph.output}


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------

def check_fixture(s):
    name = s["name"]
    fx = json.load(open(os.path.join(HERE, name + ".json")))
    feeds = {}
    for i in fx["inputs"]:
        dt = np.int64 if i.get("dtype") == "int64" else np.float64
        feeds[i["name"]] = np.array(i["data"], dtype=dt).reshape(i["shape"])
    got = run_model(os.path.join(HERE, fx["model"]), feeds)
    worst = 0.0
    for o in fx["outputs"]:
        want = np.array(o["data"]).reshape(o["shape"])
        g = got[o["name"]]
        assert list(g.shape) == o["shape"], (name, g.shape, o["shape"])
        worst = max(worst, float(np.abs(g - want).max()))
    return worst


def check_other_sizes(s):
    """Batch/time different from the fixture, PyTorch float64 on the spot."""
    name = s["name"]
    torch.manual_seed(export.seed_of(name))
    model64 = copy.deepcopy(export.build(s)).double()
    worst = 0.0
    rng = torch.Generator().manual_seed(1234)
    for B, T in ((1, 1), (2, s["T"] + 3), (5, 2)):
        x = torch.randn(B, T, s["F"], generator=rng, dtype=torch.float64)
        lengths = None
        if s["lengths"] is not None:
            lengths = torch.randint(1, T + 1, (B,), generator=rng)
            lengths[B // 2] = T  # pad_packed_sequence pads to max(lengths)
            for b in range(B):
                x[b, int(lengths[b]):] = 7.0
        if not s["bf"]:
            x = x.transpose(0, 1).contiguous()
        with torch.no_grad():
            ref = model64(x) if lengths is None else model64(x, lengths)
        feeds = {"x": x.numpy()}
        if lengths is not None:
            feeds["lengths"] = lengths.numpy()
        got = run_model(os.path.join(HERE, name + ".onnx"), feeds)["y"]
        assert got.shape == tuple(ref.shape), (name, B, T, got.shape, tuple(ref.shape))
        worst = max(worst, float(np.abs(got - ref.numpy()).max()))
    return worst


def main():
    torch.set_num_threads(1)
    bad = 0
    for s in export.MODELS:
        a = check_fixture(s)
        b = check_other_sizes(s)
        ok = a < 1e-12 and b < 1e-12
        bad += not ok
        print("%-26s fixture max|diff| %.1e   other B/T max|diff| %.1e   %s" % (
            s["name"], a, b, "ok" if ok else "MISMATCH"))
    print("%d passed, %d failed" % (len(export.MODELS) - bad, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
