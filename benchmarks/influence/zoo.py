#!/usr/bin/python3
"""Train the influence benchmark's model zoo (cached) and export it to ONNX.

Models (all trained in float64, exported with float32 weights, dynamic
"batch" and "time" axes), on the paper's synthetic process of
examples/synthetic/generate.py (x_t ~ N(1, 2^2), y_t = sum 0.9^(t-j) x_j +
eps_t, sd(eps_t) = 0.1 t, T = 10; the same seed, so the first n training
sequences are those of examples/synthetic/train.csv), 1000 test sequences:

  rnn100    nn.RNN(1, 20, tanh) + Linear(20, 1) per step, n = 100
  rnn1000   the same, n = 1000
  gru300    nn.GRU(1, 16) + Linear(16, 16)-ReLU-Linear(16, 1) per step, n = 300
  lstm300   nn.LSTM(1, 12) + Linear(12, 1), variable lengths 3..10, trained
            with pack_padded_sequence and exported with a "lengths" input, n = 300
  rnn100s   rnn100 polished to a stationary point of the sum loss + 10/2
            |theta|^2 (L-BFGS, then damped Newton: rnnfit.fit), for contrast;
            the audit is run with --ridge 10

"Trained the way users do": minibatch Adam (batch 32, PyTorch's default learning rate 0.001,
a fixed number of epochs, mean squared error over the observed targets,
no ridge, no polishing). Seeds are fixed and everything runs in float64 on
one thread, so a re-run gives the same weights.

Writes beside this script: data/*.csv (long format id,t,x,y),
models/<name>.onnx and models.json (training facts: losses, gradient norms
of the sum loss at the exported float32 weights, train/test RMSE, seconds).
Only models missing from models.json (or whose .onnx is missing) are
trained; --force retrains everything.

Run:  /usr/bin/python3 benchmarks/influence/zoo.py [--force] [--only NAME,...]
"""

import argparse
import copy
import io
import json
import os
import sys
import time
import warnings

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "examples", "synthetic"))
import generate  # noqa: E402
import rnnfit  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402

DATA = os.path.join(HERE, "data")
MODELS = os.path.join(HERE, "models")
FACTS = os.path.join(HERE, "models.json")
DATA_SEED = 20200713  # generate.py's default: the examples' data
NOISE = "linear"      # sd 0.1 t, generate.py's default
N_TEST = 1000
MIN_LEN, MAX_LEN = 3, generate.T

RIDGE_S = 10.0  # rnn100s: examples/synthetic's ridge

# Adam recipe shared by every model (and by the from-scratch re-training of loo.py).
BATCH = 32
LR = 0.001  # PyTorch's default


def write_long(path, x, y, lengths=None):
    """Long CSV id,t,x,y; sequence i keeps its first lengths[i] steps."""
    lines = ["id,t,x,y"]
    for i in range(x.shape[0]):
        for k in range(x.shape[1] if lengths is None else lengths[i]):
            lines.append("%d,%d,%.6f,%.6f" % (i + 1, k + 1, x[i, k], y[i, k]))
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def make_data():
    """Writes the data files (cheap, always rewritten byte-identically)."""
    os.makedirs(DATA, exist_ok=True)
    streams = np.random.SeedSequence(DATA_SEED).spawn(4)
    # Streams 0 and 1 are generate.py's: train.csv and test.csv of examples/synthetic.
    xtr, ytr = generate.simulate(np.random.default_rng(streams[0]), 1000, NOISE)
    xte, yte = generate.simulate(np.random.default_rng(streams[1]), N_TEST, NOISE)
    for n in (100, 300, 1000):
        write_long(os.path.join(DATA, "synthetic_train_%d.csv" % n), xtr[:n], ytr[:n])
    write_long(os.path.join(DATA, "synthetic_test.csv"), xte, yte)
    # Variable lengths: fresh sequences (streams 2 and 3) cut at a uniform length.
    for name, s, n in (("varlen_train_300.csv", streams[2], 300), ("varlen_test.csv", streams[3], N_TEST)):
        rng = np.random.default_rng(s)
        x, y = generate.simulate(rng, n, NOISE)
        lengths = rng.integers(MIN_LEN, MAX_LEN + 1, size=n)
        write_long(os.path.join(DATA, name), x, y, lengths)


class Packed(rnnfit.PerStep):
    """PerStep whose recurrent layer runs on a PackedSequence when lengths
    are given (training, and the exported graph); without lengths it runs on
    the padded batch, which gives the same outputs at observed steps."""

    def forward(self, x, lengths=None):
        if lengths is None:
            return super().forward(x)
        p = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        # An explicit zero state sized from the batch: with the default
        # (None), torch 1.13's exporter writes the export batch size into the
        # graph (Expand to [1, 2, H]) and the model fails on other batches.
        h0 = x.new_zeros(1, x.shape[0], self.rnn.hidden_size)
        h, _ = self.rnn(p, (h0, h0) if isinstance(self.rnn, nn.LSTM) else h0)
        h, _ = pad_packed_sequence(h, batch_first=True, total_length=x.shape[1])
        return self.head(h)


def build(name):
    """The untrained model of a zoo entry (init drawn from the current seed)."""
    if name.startswith("rnn"):
        return rnnfit.PerStep(nn.RNN(1, 20, nonlinearity="tanh", batch_first=True), 20)
    if name == "gru300":
        m = rnnfit.PerStep(nn.GRU(1, 16, batch_first=True), 16)
        m.head = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
        return m
    if name == "lstm300":
        return Packed(nn.LSTM(1, 12, batch_first=True), 12)
    raise ValueError(name)


# name -> (train file, test file, epochs, init seed, packed)
ZOO = {
    "rnn100": ("synthetic_train_100.csv", "synthetic_test.csv", 1000, 1, False),
    "rnn1000": ("synthetic_train_1000.csv", "synthetic_test.csv", 150, 1, False),
    "gru300": ("synthetic_train_300.csv", "synthetic_test.csv", 400, 1, False),
    "lstm300": ("varlen_train_300.csv", "varlen_test.csv", 400, 1, True),
    "rnn100s": ("synthetic_train_100.csv", "synthetic_test.csv", None, 1, False),
}


def load(fname):
    _, feats, X, Y, M = rnnfit.read_long_csv(os.path.join(DATA, fname))
    assert feats == ["x"], feats
    return tuple(torch.from_numpy(v) for v in (X, Y, M))


def adam_train(model, X, Y, M, epochs, seed, packed=False, keep=None):
    """Minibatch Adam, the benchmark's user recipe: batches of BATCH sequences
    reshuffled every epoch (numpy generator seeded with seed), loss = mean
    squared error over the batch's observed targets. keep (optional): the
    indices of the sequences to train on (leave-out re-training). Returns
    seconds."""
    t0 = time.time()
    idx_all = np.arange(X.shape[0]) if keep is None else np.asarray(keep)
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    lengths = M.sum(1).long()
    for _ in range(epochs):
        perm = idx_all[rng.permutation(len(idx_all))]
        for s in range(0, len(perm), BATCH):
            b = torch.from_numpy(perm[s:s + BATCH])
            opt.zero_grad()
            pred = (model(X[b], lengths[b]) if packed else model(X[b]))[..., 0]
            loss = (((pred - Y[b]) ** 2) * M[b]).sum() / M[b].sum()
            loss.backward()
            opt.step()
    return time.time() - t0


def export_packed(model, path):
    """Exports model(x, lengths) in float32 (opset 14, inputs "x" [batch,
    time, 1] and "lengths" [batch] int64, output "y"), as a user of
    pack_padded_sequence would; returns the float64 copy of the exported
    weights."""
    m32 = copy.deepcopy(model).float().eval()
    x = torch.zeros(2, 3, 1, dtype=torch.float32)
    lengths = torch.tensor([3, 2])
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m32, (x, lengths), f, opset_version=14,
                          input_names=["x", "lengths"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch", 1: "time"}, "lengths": {0: "batch"},
                                        "y": {0: "batch", 1: "time"}})
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    with open(path, "wb") as out:
        out.write(data)
    return m32.double()


def fit_model(name, keep=None):
    """Trains zoo entry name (float64) on its training set, or on the
    sequences keep of it (leave-out re-training from scratch, same init
    seed and recipe). Returns (model, recipe, seconds)."""
    train, _, epochs, seed, packed = ZOO[name]
    Xtr, Ytr, Mtr = load(train)
    rnnfit.setup(seed)
    model = build(name)
    t0 = time.time()
    if name == "rnn100s":
        # Start from rnn100's recipe, then polish to a stationary point.
        adam_train(model, Xtr, Ytr, Mtr, ZOO["rnn100"][2], seed, keep=keep)
        if keep is not None:
            k = torch.from_numpy(np.asarray(keep))
            Xtr, Ytr, Mtr = Xtr[k], Ytr[k], Mtr[k]
        recipe = ("rnn100's Adam recipe, then rnnfit.fit (L-BFGS, damped Newton) on the sum loss "
                  "+ %g/2 |theta|^2 (the examples' ridge; without it the polished model overfits: "
                  "test RMSE 1.41)" % RIDGE_S)
        rnnfit.fit(model, Xtr, Ytr, Mtr, ridge=RIDGE_S, adam_steps=0, lbfgs_iters=3000, max_newton=30)
    else:
        adam_train(model, Xtr, Ytr, Mtr, epochs, seed, packed, keep)
        recipe = "Adam lr %g, batch %d, %d epochs, mean squared error" % (LR, BATCH, epochs)
    return model, recipe, time.time() - t0


def train_one(name):
    train, test, _, seed, packed = ZOO[name]
    Xtr, Ytr, Mtr = load(train)
    Xte, Yte, Mte = load(test)
    model, recipe, seconds = fit_model(name)
    path = os.path.join(MODELS, name + ".onnx")
    os.makedirs(MODELS, exist_ok=True)
    m = export_packed(model, path) if packed else rnnfit.export_onnx(model, path, 1)
    ridge = RIDGE_S if name == "rnn100s" else 0.0
    loss, g = rnnfit.grad_norm(m, Xtr, Ytr, Mtr, ridge)
    seq = rnnfit.per_sequence_grad_norms(m, Xtr, Ytr, Mtr)
    facts = {
        "model": os.path.relpath(path, ROOT),
        "train": os.path.relpath(os.path.join(DATA, train), ROOT),
        "test": os.path.relpath(os.path.join(DATA, test), ROOT),
        "architecture": describe(name),
        "parameters": rnnfit.n_params(model),
        "train_sequences": int(Xtr.shape[0]),
        "train_targets": int(Mtr.sum().item()),
        "test_sequences": int(Xte.shape[0]),
        "recipe": recipe,
        "init_seed": seed,
        "ridge": ridge,
        "objective": loss,
        "grad_norm": g,  # of the objective (sum loss + ridge/2 |theta|^2) at the exported weights
        "block_grad_median": float(np.median(seq)),
        "stationarity_ratio": g / float(np.median(seq)),
        "train_rmse": rnnfit.rmse(m, Xtr, Ytr, Mtr),
        "test_rmse": rnnfit.rmse(m, Xte, Yte, Mte),
        "seconds": round(seconds, 1),
    }
    print("%-8s %4d params  train RMSE %.4f  test RMSE %.4f  |grad| %.3g (%.3g x median block gradient)  %.0f s"
          % (name, facts["parameters"], facts["train_rmse"], facts["test_rmse"], g,
             facts["stationarity_ratio"], seconds), flush=True)
    return facts


def describe(name):
    return {
        "rnn100": "RNN(1, 20, tanh) + Linear(20, 1)",
        "rnn1000": "RNN(1, 20, tanh) + Linear(20, 1)",
        "rnn100s": "RNN(1, 20, tanh) + Linear(20, 1), stationary",
        "gru300": "GRU(1, 16) + Linear(16, 16)-ReLU-Linear(16, 1)",
        "lstm300": "LSTM(1, 12) + Linear(12, 1), packed, lengths 3-10",
    }[name]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="retrain the models selected (default all) even if cached")
    ap.add_argument("--only", default="", help="comma-separated model names (default all)")
    a = ap.parse_args()
    make_data()
    facts = {}
    if os.path.exists(FACTS):
        with open(FACTS) as f:
            facts = json.load(f)
    names = [n for n in ZOO if not a.only or n in a.only.split(",")]
    for name in names:
        if not a.force and name in facts and os.path.exists(os.path.join(MODELS, name + ".onnx")):
            continue
        facts[name] = train_one(name)
        with open(FACTS, "w") as f:
            json.dump({k: facts[k] for k in ZOO if k in facts}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
