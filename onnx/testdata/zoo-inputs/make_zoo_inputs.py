#!/usr/bin/python3
"""Build the zoo of what practitioners' exports carry besides weights: static
covariates, a Transformer encoder with a causal mask, weights stored as
external data, and a decoder whose H values are the last H rows of the window
it reads; with float64 PyTorch references.

Run from anywhere with Debian's PyTorch 1.13 and python3-onnx 1.12:

    /usr/bin/python3 make_zoo_inputs.py

It rewrites every <name>.onnx (and external_gru_op14.weights), <name>.json,
train_static.csv and MODELS.md. For every entry of ZOO it
  1. builds the model in float32 (torch.manual_seed(crc32(name))) and trains
     it briefly as practitioners do: mini-batch Adam (lr 0.01, batches of 10,
     40 epochs) on train_static.csv, a synthetic autoregressive process of 40
     sequences of 12 steps with two per-sequence covariates, age and sex,
     repeated on every row of their sequence (written by this script);
  2. exports it with torch.onnx.export (input "x" [batch, time, 2] and, for
     the static entries, "static" [batch, 2]; batch and time dynamic);
  3. runs the same module in float64 (weights widened exactly; the
     Transformer's in training mode with dropout 0, which keeps PyTorch off
     its fused inference path, and with LayerNorm's eps the float32 value the
     export holds) on float32 inputs widened to float64, and writes
     <name>.json in the format of ../zoo: inputs, outputs and the gradient of
     0.5*sum(y^2) with respect to every ONNX initializer that is a PyTorch
     parameter or its transpose, plus "flags": the audit flags the entry
     needs (the input of static covariates, the alignment of the decoder).

The data: x1, x2 ~ N(0, 1); age ~ U(20, 80) rounded, sex in {0, 1}, drawn once
per sequence; y_t = 0.6 y_{t-1} + x1_t - 0.4 x2_t + 0.01 (age - 50) + 0.3 sex
+ noise. The decoder entry is trained on the last 3 targets of each window it
reads (all 12 rows), the others on every row's target.
"""

import copy
import json
import os
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
N_SEQ, T_LEN, F, S, H = 40, 12, 2, 2, 5
EPS = float(np.float32(1e-5))


def f32(p):
    return p.detach().numpy().astype(np.float32)


def make_data():
    rng = np.random.default_rng(33)
    x = np.round(rng.normal(size=(N_SEQ, T_LEN, F)), 4).astype(np.float32)
    age = np.round(rng.uniform(20, 80, size=N_SEQ)).astype(np.float32)
    sex = rng.integers(0, 2, size=N_SEQ).astype(np.float32)
    st = np.stack([age, sex], 1)
    y = np.zeros((N_SEQ, T_LEN), np.float32)
    prev = np.zeros(N_SEQ, np.float32)
    for t in range(T_LEN):
        prev = 0.6 * prev + x[:, t, 0] - 0.4 * x[:, t, 1] + 0.01 * (age - 50) + 0.3 * sex \
            + 0.1 * rng.normal(size=N_SEQ).astype(np.float32)
        y[:, t] = prev
    y = np.round(y, 4).astype(np.float32)
    with open(os.path.join(HERE, "train_static.csv"), "w") as f:
        f.write("id,t,x1,x2,age,sex,y\n")
        for i in range(N_SEQ):
            for t in range(T_LEN):
                f.write("s%02d,%d,%r,%r,%d,%d,%r\n" % (i, t, float(x[i, t, 0]), float(x[i, t, 1]),
                                                       int(age[i]), int(sex[i]), float(y[i, t])))
    return x, st, y


class GRUStatic(nn.Module):
    """Static covariates repeated along time and concatenated with x, GRU, Linear per step."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(S, S)  # the covariates' scale is learnt (age is in years)
        self.rnn = nn.GRU(F + S, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x, static):
        s = torch.tanh(self.scale(static)).unsqueeze(1).expand(-1, x.shape[1], -1)
        out, _ = self.rnn(torch.cat([x, s], -1))
        return self.head(out)


class GRUStaticTimeFirst(nn.Module):
    """Time-first (x [time, batch, 2], nn.GRU's default layout) with static covariates [batch, 2] repeated along time and concatenated, GRU, Linear per step."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(S, S)
        self.rnn = nn.GRU(F + S, H)
        self.head = nn.Linear(H, 1)

    def forward(self, x, static):
        s = torch.tanh(self.scale(static)).unsqueeze(0).expand(x.shape[0], -1, -1)
        out, _ = self.rnn(torch.cat([x, s], -1))
        return self.head(out)


class LSTMStaticInit(nn.Module):
    """Static covariates set the LSTM's initial state (h0, c0 = tanh(Linear(static))), Linear per step."""

    def __init__(self):
        super().__init__()
        self.h0 = nn.Linear(S, H)
        self.c0 = nn.Linear(S, H)
        self.rnn = nn.LSTM(F, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x, static):
        s = static * torch.tensor([0.02, 1.0])  # years to about unit scale, as practitioners do in forward
        h0 = torch.tanh(self.h0(s)).unsqueeze(0)
        c0 = torch.tanh(self.c0(s)).unsqueeze(0)
        out, _ = self.rnn(x, (h0, c0))
        return self.head(out)


class CausalEncoder(nn.Module):
    """Linear embedding, TransformerEncoder (1 layer, width 8, 2 heads) with torch's causal mask, Linear per step."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(F, 8)
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, layer_norm_eps=EPS)
        self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        h = self.emb(x)
        T = x.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=h.dtype), diagonal=1)
        return self.head(self.enc(h, mask=mask))


class PlainGRU(nn.Module):
    """nn.GRU(2,5) + Linear per step, saved with its weights as external data."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(F, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


class LastRows(nn.Module):
    """GRU over the whole window, Linear on its last 3 steps: [batch, 3], the estimates of the last 3 rows read."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(F, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -3:, :]).squeeze(-1)


def entry(name, make, desc, opset, static=False, target="perstep", external=False, flags=None, time_first=False):
    return dict(name=name, make=make, desc=desc, opset=opset, static=static, target=target,
                external=external, flags=flags or [], time_first=time_first)


ZOO = [
    entry("gru_static_op14", GRUStatic, GRUStatic.__doc__, 14, static=True, flags=["--input", "static=age,sex"]),
    entry("gru_static_op17", GRUStatic, GRUStatic.__doc__, 17, static=True, flags=["--input", "static=age,sex"]),
    entry("gru_static_timefirst_op14", GRUStaticTimeFirst, GRUStaticTimeFirst.__doc__, 14, static=True,
          flags=["--input", "static=age,sex"], time_first=True),
    entry("lstm_static_init_op14", LSTMStaticInit, LSTMStaticInit.__doc__, 14, static=True,
          flags=["--input", "static=age,sex"]),
    entry("transformer_causal_op14", CausalEncoder, CausalEncoder.__doc__, 14, flags=["--features", "x1,x2"]),
    entry("transformer_causal_op17", CausalEncoder, CausalEncoder.__doc__, 17, flags=["--features", "x1,x2"]),
    entry("external_gru_op14", PlainGRU, PlainGRU.__doc__, 14, external=True, flags=["--features", "x1,x2"]),
    entry("decoder_last3_op14", LastRows, LastRows.__doc__, 14, target="last3",
          flags=["--features", "x1,x2", "--align", "last"]),
]


def call(e, m, x, st):
    """m on batch-first x [batch, time, 2], output batch-first."""
    if e["time_first"]:
        return m(x.transpose(0, 1), st).transpose(0, 1)
    return m(x, st) if e["static"] else m(x)


def targets(e, y):
    if e["target"] == "last3":
        return y[:, -3:]
    return y[:, :, None]


def train(e, m, x, st, y):
    g = torch.Generator().manual_seed(zlib.crc32(e["name"].encode()))
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    X, ST, Y = torch.from_numpy(x), torch.from_numpy(st), torch.from_numpy(targets(e, y))
    m.train()
    for _ in range(40):
        perm = torch.randperm(N_SEQ, generator=g)
        for k in range(0, N_SEQ, 10):
            idx = perm[k:k + 10]
            loss = ((call(e, m, X[idx], ST[idx]) - Y[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    m.eval()


def grads_by_initializer(proto, m64, e, ins64):
    """Gradient of 0.5*sum(y^2) for every ONNX initializer that equals a
    parameter or its transpose."""
    out = m64(*ins64) if e["time_first"] else call(e, m64, *ins64)
    (0.5 * (out ** 2).sum()).backward()
    params = [(p, f32(p)) for p in m64.parameters() if p.grad is not None]
    res = {}
    for init in proto.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype != np.float32 or a.size < 2:
            continue
        for p, pv in params:
            if pv.shape == a.shape and np.array_equal(pv, a):
                res[init.name] = p.grad.numpy().ravel().tolist()
                break
            if pv.ndim == 2 and pv.T.shape == a.shape and np.array_equal(pv.T, a):
                res[init.name] = p.grad.numpy().T.ravel().tolist()
                break
    return res


def build(e, x, st, y):
    torch.manual_seed(zlib.crc32(e["name"].encode()))
    m = e["make"]()
    train(e, m, x, st, y)
    path = os.path.join(HERE, e["name"] + ".onnx")
    B, T = 3, 9
    rng = np.random.default_rng(zlib.crc32(e["name"].encode()))
    xin = rng.normal(size=(B, T, F)).astype(np.float32)
    sin = np.stack([np.round(rng.uniform(20, 80, size=B)), rng.integers(0, 2, size=B)], 1).astype(np.float32)
    in_names = ["x", "static"] if e["static"] else ["x"]
    if e["time_first"]:
        xin = np.ascontiguousarray(xin.transpose(1, 0, 2))  # [time, batch, 2]
    args = (torch.from_numpy(xin), torch.from_numpy(sin)) if e["static"] else (torch.from_numpy(xin),)
    dyn = {"x": {0: "batch", 1: "time"}, "y": {0: "batch"} if e["target"] == "last3" else {0: "batch", 1: "time"}}
    if e["time_first"]:
        dyn = {"x": {0: "time", 1: "batch"}, "y": {0: "time", 1: "batch"}}
    if e["static"]:
        dyn["static"] = {0: "batch"}
    torch.onnx.export(m, args, path, opset_version=e["opset"], input_names=in_names, output_names=["y"],
                      dynamic_axes=dyn, do_constant_folding=True)
    proto = onnx.load(path)
    if e["external"]:
        for stale in (path, os.path.join(HERE, e["name"] + ".weights")):
            if os.path.exists(stale):
                os.remove(stale)
        onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=e["name"] + ".weights", size_threshold=0)
        proto = onnx.load(path)
    onnx.checker.check_model(path)
    m64 = copy.deepcopy(m).double()
    if isinstance(m64, CausalEncoder):
        m64.train()
    ins64 = [torch.from_numpy(xin.astype(np.float64)), torch.from_numpy(sin.astype(np.float64))]
    run = (lambda a, b: m64(a, b)) if e["time_first"] else (lambda a, b: call(e, m64, a, b))
    with torch.no_grad():
        out = run(*ins64)
    grad = grads_by_initializer(proto, m64, e, ins64)
    inputs = [{"name": "x", "shape": list(xin.shape), "data": xin.astype(np.float64).ravel().tolist()}]
    if e["static"]:
        inputs.append({"name": "static", "shape": list(sin.shape), "data": sin.astype(np.float64).ravel().tolist()})
    doc = {
        "model": e["name"] + ".onnx", "description": " ".join(e["desc"].split()), "torch": torch.__version__,
        "opset": e["opset"], "train": "train_static.csv", "flags": e["flags"],
        "ops": sorted({n.op_type for n in proto.graph.node}),
        "inputs": inputs,
        "outputs": [{"name": "y", "shape": list(out.shape), "data": out.detach().numpy().ravel().tolist()}],
        "grad": grad,
    }
    with open(os.path.join(HERE, e["name"] + ".json"), "w") as f:
        json.dump(doc, f, indent=None)
        f.write("\n")
    return doc


def main():
    x, st, y = make_data()
    rows = []
    for e in ZOO:
        d = build(e, x, st, y)
        size = os.path.getsize(os.path.join(HERE, e["name"] + ".onnx"))
        rows.append("| %s | %s | %s | %s | %d B | %d |" % (e["name"], " ".join(e["desc"].split()), " ".join(e["flags"]),
                                                       ", ".join(d["ops"]), size, len(d["grad"])))
        print(rows[-1])
    with open(os.path.join(HERE, "MODELS.md"), "w") as f:
        f.write("| name | what | audit flags | ONNX operators | size | gradients in the reference |\n|---|---|---|---|---|---|\n")
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
