#!/usr/bin/python3
"""A time-first per-step GRU exported as the tutorial does (batch 4 and 6
steps fixed: x float [6, 4, 2] -> y [6, 4, 1]) and with dynamic axes, for
the test of running a fixed-batch export in chunks when the batch is the
second axis of the input and of the output.

Run:  /usr/bin/python3 make_timefirst.py     (Debian's python3-torch 1.13)

Writes beside itself: tf_fixed.onnx, tf_dynamic.onnx, tf_train.csv (30
sequences of 6 rows), tf_test.csv (9 sequences of 6 rows). The weights are
trained briefly (full-batch Adam): the test compares the two exports'
audits with each other, not with a converged model.
"""

import os

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
T, BATCH, D = 6, 4, 2


class PerStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(D, 5)  # time-first
        self.head = nn.Linear(5, 1)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(1), 5, dtype=x.dtype)
        out, _ = self.rnn(x, h0)
        return self.head(out)


def write(path, xs, ys):
    with open(path, "w", newline="") as fh:
        fh.write("id,t,x1,x2,y\n")
        for k in range(xs.shape[0]):
            for t in range(T):
                fh.write("s%02d,%d,%r,%r,%r\n" % (k + 1, t, float(xs[k, t, 0]), float(xs[k, t, 1]), float(ys[k, t])))


def main():
    torch.manual_seed(36)
    rng = np.random.default_rng(36)
    xs = np.round(rng.standard_normal((39, T, D)), 6)
    ys = np.round(np.cumsum(xs[..., 0], axis=1) * 0.5 + xs[..., 1] + 0.3 * rng.standard_normal((39, T)), 6)
    write(os.path.join(HERE, "tf_train.csv"), xs[:30], ys[:30])
    write(os.path.join(HERE, "tf_test.csv"), xs[30:], ys[30:])
    model = PerStep()
    X = torch.tensor(xs[:30], dtype=torch.float32).transpose(0, 1)
    Y = torch.tensor(ys[:30], dtype=torch.float32).transpose(0, 1).unsqueeze(-1)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(200):
        opt.zero_grad()
        loss = ((model(X) - Y) ** 2).mean()
        loss.backward()
        opt.step()
    model.eval()
    x = torch.zeros(T, BATCH, D)
    torch.onnx.export(model, x, os.path.join(HERE, "tf_fixed.onnx"), input_names=["x"], output_names=["y"],
                      opset_version=13)
    torch.onnx.export(model, x, os.path.join(HERE, "tf_dynamic.onnx"), input_names=["x"], output_names=["y"],
                      opset_version=13, dynamic_axes={"x": {0: "time", 1: "batch"}, "y": {0: "time", 1: "batch"}})
    print("train mse %.4f" % float(loss))


if __name__ == "__main__":
    main()
