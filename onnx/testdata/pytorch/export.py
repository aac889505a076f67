#!/usr/bin/python3
"""Export small PyTorch recurrent models to ONNX and write float64 reference
outputs next to them.

Run:  /usr/bin/python3 export.py          (from anywhere; writes beside itself)

For every model in MODELS this script
  1. seeds torch, builds the model in float32 with PyTorch's default init and
     then perturbs every parameter by 0.3*randn (so no gate/direction/layer is
     symmetric with another),
  2. exports it with torch.onnx.export (batch and time symbolic, input "x",
     output "y", do_constant_folding=True),
  3. checks it with onnx.checker and records the ONNX operator types it uses,
  4. converts a deep copy of the model to float64 (weights are the float32
     values widened exactly) and runs it on float64 inputs: that is the
     reference written to <name>.json,
  5. verifies that the float32 model agrees with the float64 reference.

Inputs are drawn in float32 and widened, so they are exactly representable in
float32 too (a float32 runtime sees the very same inputs).

The script is deterministic: re-running it rewrites byte-identical .json files.
It also regenerates the operator table inside README.md (between the
BEGIN/END OPERATORS markers) and operators.json.
"""

import copy
import io
import json
import os
import re
import sys
import warnings
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

HERE = os.path.dirname(os.path.abspath(__file__))

# Operators the Go engine is planned to support. Anything else is reported.
ALLOWED_OPS = {
    "RNN", "LSTM", "GRU", "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Neg",
    "Tanh", "Sigmoid", "Relu", "LeakyRelu", "Exp", "Log", "Softmax",
    "LogSoftmax", "Transpose", "Squeeze", "Unsqueeze", "Reshape", "Flatten",
    "Concat", "Split", "Slice", "Gather", "Shape", "Constant",
    "ConstantOfShape", "Identity", "Cast", "Expand", "Dropout",
}

PERTURB = 0.3


# --------------------------------------------------------------------------
# Model wrappers
# --------------------------------------------------------------------------

class PerStep(nn.Module):
    """rnn over the whole sequence, Linear head at every time step.

    Optional 'post' activation over the last axis (softmax / log_softmax)."""

    def __init__(self, rnn, head, post=None):
        super().__init__()
        self.rnn = rnn
        self.head = head
        self.post = post

    def forward(self, x):
        out, _ = self.rnn(x)
        y = self.head(out)
        if self.post == "softmax":
            y = torch.softmax(y, dim=-1)
        elif self.post == "log_softmax":
            y = torch.log_softmax(y, dim=-1)
        return y


class LastStep(nn.Module):
    """Many-to-one: Linear head on the output at the last time step."""

    def __init__(self, rnn, head):
        super().__init__()
        self.rnn = rnn
        self.head = head

    def forward(self, x):
        out, _ = self.rnn(x)
        if self.rnn.batch_first:
            last = out[:, -1, :]
        else:
            last = out[-1]
        return self.head(last)


class PackedPerStep(nn.Module):
    """Variable-length batch: pack_padded_sequence -> rnn -> pad_packed_sequence
    -> Linear head at every step. Padded steps of the rnn output are zeros
    (pad_packed_sequence), so y there equals the head bias."""

    def __init__(self, rnn, head):
        super().__init__()
        self.rnn = rnn
        self.head = head

    def forward(self, x, lengths):
        bf = self.rnn.batch_first
        packed = pack_padded_sequence(x, lengths, batch_first=bf,
                                      enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=bf)
        return self.head(out)


class PackedFinalState(nn.Module):
    """Variable-length batch, many-to-one through the final hidden state:
    pack_padded_sequence -> rnn -> h_n of the last layer (the state at each
    sequence's own last valid step) -> Linear head. Output [B, out]."""

    def __init__(self, rnn, head):
        super().__init__()
        self.rnn = rnn
        self.head = head

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=self.rnn.batch_first,
                                      enforce_sorted=False)
        _, h = self.rnn(packed)
        if isinstance(h, tuple):  # LSTM: (h_n, c_n)
            h = h[0]
        return self.head(h[-1])


# --------------------------------------------------------------------------
# Model table
# --------------------------------------------------------------------------

def spec(name, kind, F, H, *, layers=1, bf=True, bidir=False, nonlin="tanh",
         out=1, wrapper="perstep", post=None, opset=14, B=3, T=6,
         lengths=None, desc=""):
    return dict(name=name, kind=kind, F=F, H=H, layers=layers, bf=bf,
                bidir=bidir, nonlin=nonlin, out=out, wrapper=wrapper,
                post=post, opset=opset, B=B, T=T, lengths=lengths, desc=desc)


MODELS = [
    spec("rnn_tanh_1l_bf", "RNN", 3, 5, bf=True,
         desc="nn.RNN(3,5,tanh), 1 layer, batch_first; nn.Linear(5,1) at every step"),
    spec("rnn_relu_2l_tf", "RNN", 2, 4, layers=2, bf=False, nonlin="relu", B=4, T=5,
         desc="nn.RNN(2,4,nonlinearity='relu', num_layers=2), time-first; nn.Linear(4,1) at every step"),
    spec("lstm_1l_bf", "LSTM", 3, 4, bf=True,
         desc="nn.LSTM(3,4), 1 layer, batch_first; nn.Linear(4,1) at every step"),
    spec("lstm_2l_tf", "LSTM", 2, 5, layers=2, bf=False, B=4, T=7,
         desc="nn.LSTM(2,5,num_layers=2), time-first; nn.Linear(5,1) at every step"),
    spec("gru_1l_bf", "GRU", 3, 4, bf=True,
         desc="nn.GRU(3,4), 1 layer, batch_first; nn.Linear(4,1) at every step"),
    spec("gru_2l_tf", "GRU", 2, 5, layers=2, bf=False, B=4, T=7,
         desc="nn.GRU(2,5,num_layers=2), time-first; nn.Linear(5,1) at every step"),
    spec("lstm_bidir_bf", "LSTM", 3, 4, bf=True, bidir=True,
         desc="nn.LSTM(3,4,bidirectional=True), batch_first; nn.Linear(8,1) at every step "
              "(features = [forward h, backward h])"),
    spec("gru_bidir_tf", "GRU", 2, 3, bf=False, bidir=True, B=4, T=5,
         desc="nn.GRU(2,3,bidirectional=True), time-first; nn.Linear(6,1) at every step"),
    spec("rnn_bidir_bf", "RNN", 3, 4, bf=True, bidir=True,
         desc="nn.RNN(3,4,tanh,bidirectional=True), batch_first; nn.Linear(8,1) at every step"),
    spec("gru_horizon3_bf", "GRU", 2, 6, bf=True, out=3, B=4, T=7,
         desc="nn.GRU(2,6), batch_first; nn.Linear(6,3) at every step (three forecast horizons)"),
    spec("lstm_last_bf", "LSTM", 3, 5, bf=True, wrapper="last",
         desc="nn.LSTM(3,5), batch_first; nn.Linear(5,1) on out[:, -1, :] only (many-to-one, y is [B,1])"),
    # --- variable-length batches (pack_padded_sequence, enforce_sorted=False)
    spec("lstm_packed_bf", "LSTM", 2, 4, bf=True, wrapper="packed", B=4, T=6,
         lengths=[4, 6, 2, 5],
         desc="x[B,T,F] + lengths int64[B] -> pack_padded_sequence(enforce_sorted=False) -> "
              "nn.LSTM(2,4) batch_first -> pad_packed_sequence -> nn.Linear(4,1) at every step"),
    spec("gru_packed_bf", "GRU", 2, 4, bf=True, wrapper="packed", B=4, T=6,
         lengths=[3, 6, 6, 1],
         desc="x[B,T,F] + lengths int64[B] -> pack_padded_sequence(enforce_sorted=False) -> "
              "nn.GRU(2,4) batch_first -> pad_packed_sequence -> nn.Linear(4,1) at every step"),
    spec("rnn_packed_tf", "RNN", 3, 4, bf=False, wrapper="packed", B=3, T=5,
         lengths=[2, 5, 4],
         desc="x[T,B,F] + lengths int64[B] -> pack_padded_sequence(enforce_sorted=False) -> "
              "nn.RNN(3,4,tanh) time-first -> pad_packed_sequence -> nn.Linear(4,1) at every step"),
    spec("lstm_bidir_packed_bf", "LSTM", 2, 3, bf=True, bidir=True, wrapper="packed", B=4, T=6,
         lengths=[6, 2, 4, 5],
         desc="x[B,T,F] + lengths int64[B] -> pack_padded_sequence(enforce_sorted=False) -> "
              "nn.LSTM(2,3,bidirectional=True) batch_first -> pad_packed_sequence -> "
              "nn.Linear(6,1) at every step (the backward direction starts at each "
              "sequence's own last valid step)"),
    spec("gru_packed_hn_bf", "GRU", 2, 4, layers=2, bf=True, wrapper="packed_hn", B=4, T=6,
         lengths=[5, 6, 1, 3],
         desc="x[B,T,F] + lengths int64[B] -> pack_padded_sequence(enforce_sorted=False) -> "
              "nn.GRU(2,4,num_layers=2) batch_first -> h_n[-1] (last layer's state at each "
              "sequence's own last valid step) -> nn.Linear(4,1); y is [B,1]"),
    # --- opset variants
    spec("lstm_2l_bf_op9", "LSTM", 3, 4, layers=2, bf=True, opset=9,
         desc="nn.LSTM(3,4,num_layers=2), batch_first; nn.Linear(4,1) at every step; "
              "exported at opset 9 (Unsqueeze/Squeeze axes and Slice starts/ends/axes "
              "as attributes)"),
    spec("lstm_1l_bf_op11", "LSTM", 3, 4, bf=True, opset=11,
         desc="as lstm_1l_bf (different weights) exported at opset 11 "
              "(Unsqueeze/Squeeze axes as attributes)"),
    spec("gru_1l_tf_op17", "GRU", 2, 5, bf=False, opset=17, B=4, T=5,
         desc="nn.GRU(2,5), time-first, nn.Linear(5,1) at every step, exported at opset 17"),
    spec("gru_softmax3_bf_op11", "GRU", 2, 4, bf=True, out=3, post="softmax", opset=11,
         desc="nn.GRU(2,4) batch_first; nn.Linear(4,3) at every step; softmax over the 3 "
              "classes (last axis); opset 11 (pre-13 Softmax semantics: coerce to 2-D at axis)"),
    spec("lstm_logsoftmax3_tf_op17", "LSTM", 2, 4, bf=False, out=3, post="log_softmax",
         opset=17, B=4, T=5,
         desc="nn.LSTM(2,4) time-first; nn.Linear(4,3) at every step; log_softmax over the "
              "3 classes (last axis); opset 17"),
    # --- the paper-size model (also used by the Go benchmark with B=1000, T=10)
    spec("paper_rnn", "RNN", 1, 20, bf=True, B=4, T=10,
         desc="paper-size model: nn.RNN(1,20,tanh), 1 layer, batch_first; nn.Linear(20,1) "
              "at every step. The Go benchmark runs this .onnx with B=1000, T=10."),
]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def seed_of(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def build(s):
    kw = dict(num_layers=s["layers"], batch_first=s["bf"], bidirectional=s["bidir"])
    if s["kind"] == "RNN":
        rnn = nn.RNN(s["F"], s["H"], nonlinearity=s["nonlin"], **kw)
    elif s["kind"] == "LSTM":
        rnn = nn.LSTM(s["F"], s["H"], **kw)
    else:
        rnn = nn.GRU(s["F"], s["H"], **kw)
    dirs = 2 if s["bidir"] else 1
    head = nn.Linear(dirs * s["H"], s["out"])
    w = s["wrapper"]
    if w == "perstep":
        m = PerStep(rnn, head, s["post"])
    elif w == "last":
        m = LastStep(rnn, head)
    elif w == "packed":
        m = PackedPerStep(rnn, head)
    elif w == "packed_hn":
        m = PackedFinalState(rnn, head)
    else:
        raise ValueError(w)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(PERTURB * torch.randn_like(p))
    return m.eval()


def make_inputs(s):
    """float32-representable float64 inputs. Padded steps get non-zero garbage."""
    B, T, F = s["B"], s["T"], s["F"]
    x = torch.randn(B, T, F, dtype=torch.float32)  # batch-first while we build it
    lengths = None
    if s["lengths"] is not None:
        lengths = torch.tensor(s["lengths"], dtype=torch.int64)
        assert lengths.numel() == B and int(lengths.max()) == T, \
            "one sequence must be full length (pad_packed_sequence pads to max(lengths))"
        garbage = 5.0 + 2.0 * torch.randn(B, T, F, dtype=torch.float32)
        for b in range(B):
            x[b, int(lengths[b]):, :] = garbage[b, int(lengths[b]):, :]
    if not s["bf"]:
        x = x.transpose(0, 1).contiguous()
    return x.double(), lengths


def export(s, model, x, lengths):
    bf = s["bf"]
    xdyn = {0: "batch", 1: "time"} if bf else {0: "time", 1: "batch"}
    if s["wrapper"] in ("last", "packed_hn"):
        ydyn = {0: "batch"}
    elif bf:
        ydyn = {0: "batch", 1: "time"}
    else:
        ydyn = {0: "time", 1: "batch"}
    names = ["x"]
    args = (x.float(),)
    dyn = {"x": xdyn, "y": ydyn}
    if lengths is not None:
        # Trace the packed models with a batch of ONE full-length sequence.
        # With a packed input, torch 1.13 builds the zero initial state as a
        # Constant of the traced batch size, then Expand()s it to
        # [dirs*layers, batch, H]; a traced batch of 1 broadcasts to any batch,
        # a traced batch of 4 would only work for batch 4 (or fail). This is
        # what the exporter's own warning recommends.
        names.append("lengths")
        b = int(torch.nonzero(lengths == int(lengths.max()))[0])
        xt = x[b:b + 1] if bf else x[:, b:b + 1]
        args = (xt.float(), lengths[b:b + 1].clone())
        dyn["lengths"] = {0: "batch"}
    f = io.BytesIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.onnx.export(model, args, f, opset_version=s["opset"],
                          input_names=names, output_names=["y"],
                          dynamic_axes=dyn, do_constant_folding=True)
    msgs = sorted({str(w.message).strip().splitlines()[0] for w in caught})
    return f.getvalue(), msgs


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def run(model, x, lengths):
    with torch.no_grad():
        if lengths is None:
            return model(x)
        return model(x, lengths)


def dump_json(obj):
    """Pretty JSON with every numeric array on a single line (deterministic)."""
    text = json.dumps(obj, indent=2)
    # collapse arrays that contain only numbers
    num = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
    pat = re.compile(r"\[\s*(" + num + r"(?:,\s*" + num + r")*)\s*\]")
    return pat.sub(lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]",
                   text) + "\n"


def ops_of(mproto):
    ops = []
    for n in mproto.graph.node:
        if n.op_type not in ops:
            ops.append(n.op_type)
    return sorted(ops)


def foreign_nodes(mproto):
    out = []
    for n in mproto.graph.node:
        if n.op_type not in ALLOWED_OPS:
            attrs = []
            for a in n.attribute:
                v = onnx.helper.get_attribute_value(a)
                if isinstance(v, bytes):
                    v = v.decode()
                if isinstance(v, onnx.TensorProto):
                    v = "<tensor>"
                attrs.append("%s=%s" % (a.name, v))
            out.append("%s %s(%s) -> (%s)%s" % (
                n.op_type, n.name, ", ".join(n.input), ", ".join(n.output),
                (" [" + ", ".join(attrs) + "]") if attrs else ""))
    return out


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def process(s):
    name = s["name"]
    torch.manual_seed(seed_of(name))
    model32 = build(s)
    x, lengths = make_inputs(s)

    onnx_bytes, warns = export(s, model32, x, lengths)
    mproto = onnx.load_from_string(onnx_bytes)
    onnx.checker.check_model(mproto)
    with open(os.path.join(HERE, name + ".onnx"), "wb") as fh:
        fh.write(onnx_bytes)

    model64 = copy.deepcopy(model32).double()
    y64 = run(model64, x, lengths)
    y32 = run(model32, x.float(), lengths)
    diff = float((y32.double() - y64).abs().max())
    scale = max(1.0, float(y64.abs().max()))
    assert diff <= 1e-5 * scale, "%s: float32 vs float64 mismatch %g" % (name, diff)

    if lengths is not None:
        # PyTorch semantics at padded steps: rnn output is 0 -> y = head bias.
        if s["wrapper"] == "packed":
            bias = model64.head.bias.detach()
            for b, L in enumerate(lengths.tolist()):
                pad = y64[b, L:, :] if s["bf"] else y64[L:, b, :]
                assert torch.equal(pad, bias.expand_as(pad)), name
        # and the lengths really matter: the plain (unpacked) rnn disagrees
        with torch.no_grad():
            if s["wrapper"] == "packed":
                plain = PerStep(model64.rnn, model64.head)(x)
            else:
                o, h = model64.rnn(x)
                h = h[0] if isinstance(h, tuple) else h
                plain = model64.head(h[-1])
        assert float((plain - y64).abs().max()) > 1e-3, name + ": lengths have no effect?"

    desc = s["desc"]
    if s["wrapper"] == "packed":
        desc += (". Steps t >= lengths[b] of x hold non-zero garbage (5+2*randn). "
                 "PyTorch: pad_packed_sequence gives 0 there, so y at padded steps is "
                 "exactly the head bias %s; the ONNX graph gets this from the recurrent "
                 "op writing Y = 0 beyond sequence_lens (as onnxruntime does). "
                 "Exported from a traced batch of 1 so the zero initial state "
                 "(Constant [dirs,1,H] -> Expand) works for any batch size." %
                 [float(v) for v in model64.head.bias.tolist()])
    elif s["wrapper"] == "packed_hn":
        desc += (". Steps t >= lengths[b] of x hold non-zero garbage (5+2*randn); "
                 "h_n is the state after step lengths[b]-1 (ONNX: Y_h with "
                 "sequence_lens). Exported from a traced batch of 1 so the zero "
                 "initial state (Constant [1,1,H] -> Expand) works for any batch size.")
    inputs = [{"name": "x", "shape": list(x.shape), "data": flat(x)}]
    if lengths is not None:
        inputs.append({"name": "lengths", "dtype": "int64",
                       "shape": list(lengths.shape),
                       "data": [int(v) for v in lengths.tolist()]})
    obj = {
        "model": name + ".onnx",
        "description": desc,
        "torch": torch.__version__,
        "opset": s["opset"],
        "layout": "batch-first" if s["bf"] else "time-first",
        "inputs": inputs,
        "outputs": [{"name": "y", "shape": list(y64.shape), "data": flat(y64)}],
    }
    with open(os.path.join(HERE, name + ".json"), "w") as fh:
        fh.write(dump_json(obj))

    return dict(name=name, opset=s["opset"], ops=ops_of(mproto),
                foreign=foreign_nodes(mproto), diff32=diff,
                onnx_bytes=len(onnx_bytes), warnings=warns)


def update_readme(results):
    path = os.path.join(HERE, "README.md")
    lines = ["| model | opset | operators | not in the planned list |",
             "| --- | --- | --- | --- |"]
    for r in results:
        extra = sorted({f.split()[0] for f in r["foreign"]})
        lines.append("| %s | %d | %s | %s |" % (
            r["name"], r["opset"], ", ".join(r["ops"]),
            ", ".join(extra) if extra else "-"))
    foreign = [r for r in results if r["foreign"]]
    if foreign:
        lines.append("")
        lines.append("Nodes whose operator is outside the planned list:")
        lines.append("")
        for r in foreign:
            lines.append("* `%s`" % r["name"])
            for f in r["foreign"]:
                lines.append("  * `%s`" % f)
    table = "\n".join(lines)
    begin, end = "<!-- BEGIN OPERATORS -->", "<!-- END OPERATORS -->"
    if os.path.exists(path):
        text = open(path).read()
    else:
        text = "# PyTorch reference fixtures\n\n%s\n%s\n" % (begin, end)
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < 0:
        text += "\n%s\n%s\n" % (begin, end)
        i, j = text.find(begin), text.find(end)
    text = text[:i + len(begin)] + "\n" + table + "\n" + text[j:]
    with open(path, "w") as fh:
        fh.write(text)
    summary = {r["name"]: {"opset": r["opset"], "ops": r["ops"],
                           "outside_planned_list": r["foreign"]} for r in results}
    with open(os.path.join(HERE, "operators.json"), "w") as fh:
        fh.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def main():
    torch.set_num_threads(1)
    only = set(sys.argv[1:])
    results = []
    for s in MODELS:
        if only and s["name"] not in only:
            continue
        r = process(s)
        results.append(r)
        print("%-26s opset %-2d %6d B  f32-vs-f64 %.2e  ops: %s" % (
            r["name"], r["opset"], r["onnx_bytes"], r["diff32"], " ".join(r["ops"])))
        for f in r["foreign"]:
            print("    outside planned list: " + f)
        for w in r["warnings"]:
            print("    exporter warning: " + w[:160])
    if not only:
        update_readme(results)
    print("torch %s, onnx %s, %d models" % (torch.__version__, onnx.__version__, len(results)))


if __name__ == "__main__":
    main()
