#!/usr/bin/python3
"""Train the trust benchmark's models the ordinary way and export them.

Data (seeded, written beside this script in data/): sequences of two
features a, b (a ~ N(0, 1), b ~ N(1, 0.5^2), independent) and a target
y_t = 0.8 y_{t-1} + a_{t-1} - 0.5 b_{t-1} + eps_t, eps_t ~ N(0, 0.3^2)
(rows from 1; y_1 = eps_1): a value depends on the features of the rows
before it, so the model, which sees no y, can forecast row t+1 from rows
1..t up to the unobserved past noise (RMSE about 0.5).
The model forecasts the NEXT value: its output at row t is compared with
row t+1's y, so the correct audit uses --shift 1 (forgetting it is one of
the mistakes the benchmark measures). The two features have different
roles and scales, so taking them in the wrong order is a mistake a model
notices. Files: train.csv (200 sequences of 20 steps), test.csv (200 of
20), test_long.csv (200 of 25: longer than every training sequence).

Models ("trained the ordinary way": mini-batch Adam, float32, mean squared
error over the observed targets, a fixed number of epochs, no polishing),
nn.GRU(2, H, batch_first) + Linear(H, 1) per step, exported with
torch.onnx at the given opset with dynamic batch and time axes:

  gru_wd    H = 12, Adam lr 1e-2, weight_decay 1e-4, 150 epochs, batch 20, opset 13
  gru_wd17  the same with another seed, exported at opset 17
  gru_nowd  H = 12, no weight decay, opset 13

Writes models/<name>.onnx and models.json (the facts each audit needs:
the ridge that weight_decay w means for the summed loss, R = w N with N
the training loss terms, and the final training RMSE as the training log
prints it). Seeds are fixed, so a re-run gives the same data; torch's
CPU kernels make the weights reproducible on one machine.

Run:  /usr/bin/python3 benchmarks/trust/train.py
"""

import json
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
MODELS = os.path.join(HERE, "models")

N_TRAIN, N_TEST, T, T_LONG = 200, 200, 20, 25


def simulate(rng, n, T):
    a = rng.normal(0.0, 1.0, size=(n, T))
    b = rng.normal(1.0, 0.5, size=(n, T))
    y = np.zeros((n, T))
    prev = np.zeros(n)
    for t in range(T):
        drive = 0.0 if t == 0 else a[:, t - 1] - 0.5 * b[:, t - 1]
        prev = 0.8 * prev + drive + rng.normal(0.0, 0.3, size=n)
        y[:, t] = prev
    return a, b, y


def write_long(path, a, b, y):
    lines = ["id,t,a,b,y"]
    for i in range(a.shape[0]):
        for t in range(a.shape[1]):
            lines.append("%d,%d,%.6f,%.6f,%.6f" % (i + 1, t + 1, a[i, t], b[i, t], y[i, t]))
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.rnn = nn.GRU(2, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.head(h)


def train(name, seed, hidden, wd, epochs, opset, a, b, y):
    torch.manual_seed(seed)
    x = torch.tensor(np.stack([a, b], axis=-1), dtype=torch.float32)
    # shift 1: the output at row t forecasts row t+1's y.
    xin, target = x[:, :-1, :], torch.tensor(y[:, 1:, None], dtype=torch.float32)
    net = Net(hidden)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, weight_decay=wd)
    n = x.shape[0]
    start = time.time()
    for _ in range(epochs):
        perm = torch.randperm(n)
        for k in range(0, n, 20):
            idx = perm[k:k + 20]
            opt.zero_grad()
            loss = ((net(xin[idx]) - target[idx]) ** 2).mean()
            loss.backward()
            opt.step()
    secs = time.time() - start
    net.eval()
    with torch.no_grad():
        rmse = float(((net(xin) - target) ** 2).mean().sqrt())
    os.makedirs(MODELS, exist_ok=True)
    path = os.path.join(MODELS, name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (x[:1],), path, opset_version=opset,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}})
    terms = int(target.numel())
    return {"hidden": hidden, "weight_decay": wd, "epochs": epochs, "opset": opset, "seed": seed,
            "loss_terms": terms, "ridge": wd * terms, "train_rmse": rmse, "seconds": round(secs, 1)}


def main():
    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(20261124)
    a, b, y = simulate(rng, N_TRAIN, T)
    write_long(os.path.join(DATA, "train.csv"), a, b, y)
    write_long(os.path.join(DATA, "test.csv"), *simulate(rng, N_TEST, T))
    write_long(os.path.join(DATA, "test_long.csv"), *simulate(rng, N_TEST, T_LONG))
    torch.set_num_threads(1)
    facts = {}
    for name, seed, wd, opset in [("gru_wd", 1, 1e-4, 13), ("gru_wd17", 2, 1e-4, 17), ("gru_nowd", 3, 0.0, 13)]:
        facts[name] = train(name, seed, 12, wd, 150, opset, a, b, y)
        print(name, facts[name], flush=True)
    with open(os.path.join(HERE, "models.json"), "w") as f:
        json.dump(facts, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
