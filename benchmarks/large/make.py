#!/usr/bin/python3
"""Make the large-model benchmark's model and data (issue 37: "models of a
million parameters").

The model is built the way practitioners build one: a PyTorch 2-layer
LSTM with 256 units and a linear head at every step (794,881 parameters),
trained in float32 with Adam on minibatches and early stopping on a
validation set, exported with torch.onnx.export (opset 14) with dynamic
batch and time axes.

Data (a known generating process, 4 features, T = 20 steps):

    x_t   ~ N(0, I_4)                          i.i.d., t = 1..T
    s_t   = 0.9 s_{t-1} + w . x_t,   s_0 = 0,  w = (1, -0.5, 0.25, 0.5)
    y_t   = s_t + 0.5 tanh(s_t) + eps_t,  eps_t ~ N(0, (0.05 t)^2)

written in the long CSV format (id,t,x1,x2,x3,x4,y) to data/ (a cache,
gitignored; re-running rewrites the same bytes):

    data/train_20000.csv   20,000 training sequences (stream 0 of SEED)
    data/train_2000.csv    its first 2,000
    data/train_200.csv     its first 200
    data/test_1000.csv     1,000 test sequences (stream 1)
    data/lstm256x2.onnx    the trained model (3.2 MB; not committed)

Validation sequences (stream 2, 2,000) only steer early stopping.
Training is short on purpose (at most --epochs epochs, patience 1, on one
thread): the benchmark measures the audit's cost and coverage, not the
model's accuracy.

Run:  nice -n 10 /usr/bin/python3 benchmarks/large/make.py [--epochs 3]
"""

import argparse
import copy
import io
import os
import time
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 37
T = 20
D = 4
W = np.array([1.0, -0.5, 0.25, 0.5])


def simulate(rng, n):
    """Returns x [n, T, D] and y [n, T]."""
    x = rng.normal(0.0, 1.0, size=(n, T, D))
    eps = rng.normal(0.0, 1.0, size=(n, T)) * 0.05 * np.arange(1, T + 1)
    s = np.zeros((n, T))
    acc = np.zeros(n)
    for k in range(T):
        acc = 0.9 * acc + x[:, k] @ W
        s[:, k] = acc
    return x, s + 0.5 * np.tanh(s) + eps


def write_csv(path, x, y):
    lines = ["id,t," + ",".join("x%d" % (j + 1) for j in range(D)) + ",y"]
    for i in range(x.shape[0]):
        for k in range(T):
            lines.append("%d,%d,%s,%.6f" % (i + 1, k + 1, ",".join("%.6f" % v for v in x[i, k]), y[i, k]))
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


class Net(nn.Module):
    """2-layer LSTM (batch_first) -> Linear(256, 1) at every step."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(D, 256, num_layers=2, batch_first=True)
        self.head = nn.Linear(256, 1)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.head(h)


def mse(model, X, Y):
    with torch.no_grad():
        return float(((model(X)[..., 0] - Y) ** 2).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3, help="most epochs (early stopping may stop sooner)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    streams = np.random.SeedSequence(SEED).spawn(3)
    xtr, ytr = simulate(np.random.default_rng(streams[0]), 20_000)
    xte, yte = simulate(np.random.default_rng(streams[1]), 1000)
    xva, yva = simulate(np.random.default_rng(streams[2]), 2000)
    os.makedirs(a.data, exist_ok=True)
    for n in (200, 2000, 20_000):
        write_csv(os.path.join(a.data, "train_%d.csv" % n), xtr[:n], ytr[:n])
    write_csv(os.path.join(a.data, "test_1000.csv"), xte, yte)
    print("data written to", a.data, flush=True)

    # Training reads the 6-decimal values the CSVs hold, in float32.
    def tensors(x, y):
        return (torch.from_numpy(np.round(x, 6)).float(), torch.from_numpy(np.round(y, 6)).float())

    X, Y = tensors(xtr, ytr)
    Xva, Yva = tensors(xva, yva)
    Xte, Yte = tensors(xte, yte)
    model = Net()
    print("model: %d parameters" % sum(p.numel() for p in model.parameters()), flush=True)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    gen = torch.Generator().manual_seed(SEED)
    best, best_state, bad = float("inf"), None, 0
    for epoch in range(a.epochs):
        t0 = time.time()
        model.train()
        for idx in torch.randperm(len(X), generator=gen).split(a.batch):
            opt.zero_grad()
            loss = ((model(X[idx])[..., 0] - Y[idx]) ** 2).mean()
            loss.backward()
            opt.step()
        model.eval()
        val = mse(model, Xva, Yva)
        print("  epoch %d: train MSE %.4f, validation MSE %.4f (%.0f s)" % (
            epoch + 1, mse(model, X[:2000], Y[:2000]), val, time.time() - t0), flush=True)
        if val < best:
            best, best_state, bad = val, copy.deepcopy(model.state_dict()), 0
        else:
            bad += 1
            if bad >= 1:  # early stopping, patience 1: keep the best epoch
                print("  early stop", flush=True)
                break
    model.load_state_dict(best_state)
    model.eval()
    dummy = torch.zeros(2, 3, D)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (dummy,), f, opset_version=14, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}})
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    path = os.path.join(a.data, "lstm256x2.onnx")
    with open(path, "wb") as out:
        out.write(data)
    print("exported %s: validation MSE %.4f, test MSE %.4f (noise variance %.4f)" % (
        path, best, mse(model, Xte, Yte), float(np.mean((0.05 * np.arange(1, T + 1)) ** 2))), flush=True)


if __name__ == "__main__":
    main()
