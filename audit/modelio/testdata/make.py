#!/usr/bin/python3
"""Small models exported the way practitioners export them, for the tests of
the audit's model IO: several inputs, several
outputs, many-to-one multi-horizon heads and output-rescaling buffers.

Run:  /usr/bin/python3 make.py     (Debian's python3-torch 1.13, python3-onnx)

For every model this script
  1. seeds torch and numpy from the model's name and draws a small data set
     (long CSV: id, t, features, y; 24 training and 12 test sequences of 5 to
     8 rows; 120 training windows of 8 rows for the many-to-one models),
  2. trains the model in float32 for a few hundred full-batch Adam steps
     (an audit needs a trained model, not a converged one),
  3. exports it with torch.onnx.export (opset 13 or 17, dynamic batch and
     time axes, do_constant_folding=True) to <name>.onnx,
  4. runs a float64 copy (the float32 weights widened exactly) on the first
     4 test sequences of equal length and writes the inputs and outputs to
     <name>.json in the format of onnx/onnxtest (model, layout, inputs,
     outputs).

The script is deterministic on one machine.
"""

import copy
import io
import json
import os
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
N_TRAIN, N_TEST = 24, 12


def seed_of(name):
    return zlib.crc32(name.encode()) % (2 ** 31)


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------

class EmbedInput(nn.Module):
    """Item 4: a second integer input x_cat [batch, time, 2] (store, day of
    week), each through its own nn.Embedding, concatenated with the float
    features, GRU, Linear at every step."""

    def __init__(self):
        super().__init__()
        self.store = nn.Embedding(4, 2)
        self.dow = nn.Embedding(7, 2)
        self.rnn = nn.GRU(2 + 4, 5, batch_first=True)
        self.head = nn.Linear(5, 1)

    def forward(self, x, x_cat):
        e = torch.cat([x, self.store(x_cat[..., 0]), self.dow(x_cat[..., 1])], -1)
        h, _ = self.rnn(e)
        return self.head(h)


class EmbedNamed(nn.Module):
    """Item 4: an integer input named after its CSV column (store [batch,
    time]), filled without a flag."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(4, 3)
        self.rnn = nn.GRU(2 + 3, 5, batch_first=True)
        self.head = nn.Linear(5, 1)

    def forward(self, x, store):
        h, _ = self.rnn(torch.cat([x, self.emb(store)], -1))
        return self.head(h)


class EmbedCast(nn.Module):
    """Item 4: the category is a float data column, cast to int64 inside the
    model and looked up (Cast then Gather)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(4, 3)
        self.rnn = nn.GRU(2 + 3, 5, batch_first=True)
        self.head = nn.Linear(5, 1)

    def forward(self, x):
        cat = x[..., 2].long()
        h, _ = self.rnn(torch.cat([x[..., :2], self.emb(cat)], -1))
        return self.head(h)


class GaussTwo(nn.Module):
    """Item 5: a Gaussian head with two outputs, the mean y and a clamped
    log-variance (Clip, which the engine need not support: the forecast
    does not depend on it)."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(2, 5, batch_first=True)
        self.mu = nn.Linear(5, 1)
        self.logvar = nn.Linear(5, 1)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.mu(h), torch.clamp(self.logvar(h), -6.0, 6.0)

    def loss(self, x, y):
        mu, lv = self(x)
        return (0.5 * lv + 0.5 * (y - mu) ** 2 / lv.exp()).mean()


class GaussCat(nn.Module):
    """Item 5: a Gaussian head returning cat([mu, logvar], -1), [batch,
    time, 2]: its last axis is not two horizons."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(2, 5, batch_first=True)
        self.head = nn.Linear(5, 2)

    def forward(self, x):
        h, _ = self.rnn(x)
        o = self.head(h)
        return torch.cat([o[..., :1], torch.tanh(o[..., 1:]) * 3], -1)

    def loss(self, x, y):
        o = self(x)
        mu, lv = o[..., :1], o[..., 1:]
        return (0.5 * lv + 0.5 * (y - mu) ** 2 / lv.exp()).mean()


H = 3


class LinearHorizons(nn.Module):
    """Item 6: many-to-one, Linear(hidden, H) on the last hidden state:
    [batch, H]."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(2, 4, batch_first=True)
        self.head = nn.Linear(4, H)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.head(h[:, -1, :])


class Seq2Seq(nn.Module):
    """Item 6: a GRU encoder and a GRUCell decoder fed its own output for H
    steps, [batch, H] (time-first input, as nn.GRU's default)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.GRU(2, 4)
        self.dec = nn.GRUCell(1, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        _, h = self.enc(x)
        h = h[0]
        y = self.out(h)
        ys = [y]
        for _ in range(H - 1):
            h = self.dec(y, h)
            y = self.out(h)
            ys.append(y)
        return torch.cat(ys, -1)


class Rescaled(nn.Module):
    """Item 7: the forecast rescaled by buffers, y * std + mean (targets
    standardised for training)."""

    def __init__(self, mean, std):
        super().__init__()
        self.rnn = nn.GRU(2, 5, batch_first=True)
        self.head = nn.Linear(5, 1)
        self.register_buffer("y_mean", torch.tensor([mean]))
        self.register_buffer("y_std", torch.tensor([std]))

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.head(h) * self.y_std + self.y_mean


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

def draw(rng, n, kind):
    """Sequences of 5 to 8 rows: x1, x2 (AR-ish), store 0..3, dow 0..6, y.
    The many-to-one models get windows of 8 rows (6 read, 3 horizons), as
    they are trained in practice: their intervals pool the forecasts made
    at one row."""
    seqs = []
    for i in range(n):
        T = int(rng.integers(5, 9))
        if kind in ("linear_horizons", "seq2seq"):
            T = 8
        store = int(rng.integers(0, 4))
        x = np.zeros((T, 2))
        y = np.zeros(T)
        level = [0.0, 1.0, -1.0, 0.5][store]
        for t in range(T):
            x[t, 0] = rng.normal()
            x[t, 1] = np.sin(t / 2.0) + 0.3 * rng.normal()
            prev = y[t - 1] if t > 0 else 0.0
            y[t] = 0.5 * prev + 0.8 * x[t, 0] + 0.4 * x[t, 1] + level + 0.3 * rng.normal()
        dow = [(i + t) % 7 for t in range(T)]
        seqs.append({"x": x.astype(np.float32).astype(np.float64), "y": np.round(y, 6),
                     "store": [store] * T, "dow": dow})
    return seqs


def write_csv(path, seqs, kind, first_id):
    cols = ["id", "t", "x1", "x2"]
    if kind in ("embed_input",):
        cols += ["store", "dow"]
    elif kind in ("embed_named", "embed_cast"):
        cols += ["store"]
    cols += ["y"]
    with open(path, "w") as f:
        f.write(",".join(cols) + "\n")
        for k, s in enumerate(seqs):
            for t in range(len(s["y"])):
                row = [str(first_id + k), str(t), repr(float(s["x"][t, 0])), repr(float(s["x"][t, 1]))]
                if "store" in cols:
                    row.append(str(s["store"][t]))
                if "dow" in cols:
                    row.append(str(s["dow"][t]))
                row.append(repr(float(s["y"][t])))
                f.write(",".join(row) + "\n")


def tensors(seqs, kind, dtype=torch.float32):
    """Model inputs for sequences of equal length (batch-first)."""
    x = torch.tensor(np.stack([s["x"] for s in seqs]), dtype=dtype)
    store = torch.tensor([s["store"] for s in seqs], dtype=torch.int64)
    dow = torch.tensor([s["dow"] for s in seqs], dtype=torch.int64)
    if kind == "embed_input":
        return (x, torch.stack([store, dow], -1))
    if kind == "embed_named":
        return (x, store)
    if kind == "embed_cast":
        return (torch.cat([x, store.unsqueeze(-1).to(dtype)], -1),)
    if kind == "seq2seq":
        return (x.transpose(0, 1),)
    return (x,)


def train(model, seqs, kind, steps=300):
    """Full-batch Adam on squared error (Gaussian NLL for the Gaussian
    heads), one batch per sequence length."""
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    by_len = {}
    for s in seqs:
        by_len.setdefault(len(s["y"]), []).append(s)
    for _ in range(steps):
        opt.zero_grad()
        loss = 0.0
        for T, ss in by_len.items():
            args = tensors(ss, kind)
            y = torch.tensor(np.stack([s["y"] for s in ss]), dtype=torch.float32)
            if kind in ("linear_horizons", "seq2seq"):
                # The model reads the first T-H+1 rows; value h is the
                # target of row T-H+h.
                args = tuple(a[:, : T - H + 1] if kind != "seq2seq" else a[: T - H + 1] for a in args)
                loss = loss + ((model(*args) - y[:, T - H:]) ** 2).sum()
            elif hasattr(model, "loss"):
                loss = loss + model.loss(*args, y.unsqueeze(-1)) * y.numel()
            else:
                loss = loss + ((model(*args) - y.unsqueeze(-1)) ** 2).sum()
        loss.backward()
        opt.step()


MODELS = [
    # name, kind, opset, input names, output names, layout
    ("embed_input", 13, ["x", "x_cat"], ["y"]),
    ("embed_named", 17, ["x", "store"], ["y"]),
    ("embed_cast", 17, ["x"], ["y"]),
    ("gauss_two", 17, ["x"], ["y", "logvar"]),
    ("gauss_cat", 13, ["x"], ["y"]),
    ("linear_horizons", 13, ["x"], ["y"]),
    ("seq2seq", 17, ["x"], ["y"]),
    ("rescaled", 13, ["x"], ["y"]),
]


def build(name, seqs):
    if name == "embed_input":
        return EmbedInput()
    if name == "embed_named":
        return EmbedNamed()
    if name == "embed_cast":
        return EmbedCast()
    if name == "gauss_two":
        return GaussTwo()
    if name == "gauss_cat":
        return GaussCat()
    if name == "linear_horizons":
        return LinearHorizons()
    if name == "seq2seq":
        return Seq2Seq()
    ys = np.concatenate([s["y"] for s in seqs])
    return Rescaled(float(np.float32(ys.mean())), float(np.float32(ys.std())))


def dynamic_axes(name, inputs, outputs):
    dyn = {}
    for n in inputs:
        dyn[n] = {0: "time", 1: "batch"} if name == "seq2seq" else {0: "batch", 1: "time"}
    for n in outputs:
        dyn[n] = {0: "batch"} if name in ("linear_horizons", "seq2seq") else {0: "batch", 1: "time"}
    return dyn


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def process(name, opset, inputs, outputs):
    seed = seed_of(name)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    many = name in ("linear_horizons", "seq2seq")
    # The many-to-one models have 3 loss terms a sequence: 120 windows
    # give more terms than parameters.
    tr, te = draw(rng, 120 if many else N_TRAIN, name), draw(rng, N_TEST, name)
    write_csv(os.path.join(HERE, name + "_train.csv"), tr, name, 1)
    write_csv(os.path.join(HERE, name + "_test.csv"), te, name, 1001)
    model = build(name, tr)
    if isinstance(model, Rescaled):
        # Trained on standardised targets: only the head's output is
        # rescaled, so train the unscaled network, then export with the
        # buffers.
        pass
    train(model, tr, name, 1000 if many else 300)
    model.eval()

    # Export with a batch of one sequence of 6 steps.
    ex = [s for s in tr if len(s["y"]) == 6][:1] or tr[:1]
    args = tensors(ex, name)
    f = io.BytesIO()
    torch.onnx.export(model, args, f, opset_version=opset, input_names=inputs,
                      output_names=outputs, dynamic_axes=dynamic_axes(name, inputs, outputs),
                      do_constant_folding=True)
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    with open(os.path.join(HERE, name + ".onnx"), "wb") as fh:
        fh.write(data)

    # float64 reference on 4 test sequences of one length.
    by_len = {}
    for s in te:
        by_len.setdefault(len(s["y"]), []).append(s)
    T = max(by_len, key=lambda k: (len(by_len[k]), k))
    ss = by_len[T][:4]
    m64 = copy.deepcopy(model).double()
    args64 = tensors(ss, name, torch.float64)
    with torch.no_grad():
        outs = m64(*args64)
        outs32 = model(*tensors(ss, name))
    if not isinstance(outs, tuple):
        outs, outs32 = (outs,), (outs32,)
    for a, b in zip(outs, outs32):
        assert float((a - b.double()).abs().max()) < 1e-4, name
    fx = {
        "model": name + ".onnx",
        "layout": "time-first" if name == "seq2seq" else "batch-first",
        "inputs": [{"name": n, "shape": list(a.shape), "data": flat(a),
                    "dtype": "int64" if a.dtype == torch.int64 else "float64"}
                   for n, a in zip(inputs, args64)],
        "outputs": [{"name": n, "shape": list(o.shape), "data": flat(o), "dtype": "float64"}
                    for n, o in zip(outputs, outs)],
    }
    with open(os.path.join(HERE, name + ".json"), "w") as fh:
        json.dump(fx, fh, indent=1)
        fh.write("\n")
    ops = sorted({n.op_type for n in onnx.load_from_string(data).graph.node})
    print(name, "opset", opset, "ops", " ".join(ops))


def main():
    for name, opset, inputs, outputs in MODELS:
        process(name, opset, inputs, outputs)


if __name__ == "__main__":
    main()
