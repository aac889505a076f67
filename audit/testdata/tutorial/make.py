#!/usr/bin/python3
"""The tutorial workflow, small: one series cut into sliding windows of 24
rows, an LSTM that forecasts the next value from the window's last state
(one label per window), trained with mini-batch Adam and exported as the
PyTorch tutorial does, torch.onnx.export(model, x, path): the example's
batch size (16) and window length (24) are fixed in the file.

Run:  /usr/bin/python3 make.py     (Debian's python3-torch 1.13, python3-onnx)

Writes beside itself (deterministic on one machine):
  fixed.onnx     the tutorial export: x float [16, 24, 1] -> y [16, 1]
                 (the initial state torch.zeros(1, x.size(0), 8) is traced
                 with the batch size as a constant)
  dynamic.onnx   the same weights exported with dynamic batch and time axes
  train.csv      60 windows (not a multiple of 16: the last chunk is padded),
                 the target only on each window's last row (empty cells above)
  test.csv       21 later windows, laid out the same way
  extra.csv      test.csv's windows in the layout that puts the target on a
                 25th row after the window (its feature the target value)
  scaled.onnx    dynamic.onnx with the metadata the Python bridge's
                 export(..., target_scale=(50, 20)) appends: the model was
                 trained on (y - 50) / 20
  fixed.json     the float64 forecasts of test.csv's windows by PyTorch (the
                 float32 weights widened exactly), for the chunked runs
"""

import json
import os

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
W, BATCH, HIDDEN = 24, 16, 8
N_TRAIN, N_TEST = 60, 21


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), HIDDEN, dtype=x.dtype)
        c0 = torch.zeros(1, x.size(0), HIDDEN, dtype=x.dtype)
        out, _ = self.lstm(x, (h0, c0))
        return self.head(out[:, -1, :])


def series(n, rng):
    t = np.arange(n)
    return np.round(np.sin(2 * np.pi * t / 11.0) + 0.5 * np.sin(2 * np.pi * t / 37.0)
                    + 0.2 * rng.standard_normal(n), 6)


def windows(z, start, count):
    """count windows of W rows from z[start:], one step apart; the target of
    a window is the value after it."""
    xs = np.stack([z[start + k: start + k + W] for k in range(count)])
    ys = np.array([z[start + k + W] for k in range(count)])
    return xs, ys


def write(path, xs, ys, extra=False):
    with open(path, "w", newline="") as fh:
        fh.write("id,t,x,y\n")
        for k, (x, y) in enumerate(zip(xs, ys)):
            for t in range(W):
                label = repr(float(y)) if (t == W - 1 and not extra) else ""
                fh.write("w%03d,%d,%r,%s\n" % (k + 1, t, float(x[t]), label))
            if extra:
                fh.write("w%03d,%d,%r,%r\n" % (k + 1, W, float(y), float(y)))


def main():
    torch.manual_seed(35)
    rng = np.random.default_rng(35)
    z = series(N_TRAIN + N_TEST + W + 1, rng)
    xtr, ytr = windows(z, 0, N_TRAIN)
    xte, yte = windows(z, N_TRAIN, N_TEST)
    write(os.path.join(HERE, "train.csv"), xtr, ytr)
    write(os.path.join(HERE, "test.csv"), xte, yte)
    write(os.path.join(HERE, "extra.csv"), xte, yte, extra=True)
    # Read back as written (6 decimals), then train in float32.
    X = torch.tensor(xtr, dtype=torch.float32).unsqueeze(-1)
    Y = torch.tensor(ytr, dtype=torch.float32).unsqueeze(-1)
    model = Forecaster()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for epoch in range(150):
        perm = torch.randperm(N_TRAIN)
        for lo in range(0, N_TRAIN, BATCH):
            idx = perm[lo:lo + BATCH]
            opt.zero_grad()
            loss = ((model(X[idx]) - Y[idx]) ** 2).mean()
            loss.backward()
            opt.step()
    model.eval()
    x = torch.zeros(BATCH, W, 1)
    torch.onnx.export(model, x, os.path.join(HERE, "fixed.onnx"), input_names=["x"],
                      output_names=["y"], opset_version=13)
    torch.onnx.export(model, x, os.path.join(HERE, "dynamic.onnx"), input_names=["x"],
                      output_names=["y"], opset_version=13,
                      dynamic_axes={"x": {0: "batch", 1: "time"}, "y": {0: "batch"}})
    import shutil
    import sys
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
    from rnnaudit import _onnxwire
    shutil.copyfile(os.path.join(HERE, "dynamic.onnx"), os.path.join(HERE, "scaled.onnx"))
    _onnxwire.append_metadata(os.path.join(HERE, "scaled.onnx"), _onnxwire.TARGET_SCALE_KEY, "[50.0, 20.0]")
    m64 = Forecaster().double()
    m64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    with torch.no_grad():
        f = m64(torch.tensor(xte, dtype=torch.float64).unsqueeze(-1))[:, 0]
        loss = float(((m64(X.double()) - Y.double()) ** 2).mean())
    out = {"model": "fixed.onnx", "windows": ["w%03d" % (k + 1) for k in range(N_TEST)],
           "forecasts": [float(v) for v in f], "train_mse": loss}
    with open(os.path.join(HERE, "fixed.json"), "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print("train mse %.4f, test rmse %.4f" % (loss, float(((f - torch.tensor(yte)) ** 2).mean().sqrt())))


if __name__ == "__main__":
    main()
