"""Long series for the audit's pooled-residual and continuation tests.

Makes, deterministically (seed 23):

- four long series (ids A-D) of an AR(1) process whose noise switches
  between a calm (sd 0.5) and a volatile (sd 1.5) regime by a Markov chain
  (stay probability 0.98): y_t = 0.7 y_{t-1} + sd_t e_t. The feature of
  row t is y_{t-1} (x = 0 at the first row); the target is y_t.
  Rows 0-399 of each series are training data (train.csv), rows 400-519
  the test period (test.csv: the same ids, steps 400-519, which continue
  the training rows in time).
- model.onnx: nn.RNN(1, 5, tanh, batch_first) + Linear(5, 1), trained in
  float64 with Adam (lr 0.02, 400 full-batch steps, no weight decay) on
  train.csv, stopped there (not at a stationary point, as users train).
- continued.csv: PyTorch's float64 outputs of the model run over each
  series' training rows followed by its test rows, at the test rows: the
  reference for a test file that continues a training sequence's state.

Run with Debian's python3 (torch 1.13):

    /usr/bin/python3 make.py
"""
import csv
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN, TEST = 400, 120
rng = np.random.default_rng(23)
torch.manual_seed(23)


def series():
    n = TRAIN + TEST
    y = np.zeros(n)
    vol = False
    prev = 0.0
    for t in range(n):
        if rng.random() > 0.98:
            vol = not vol
        sd = 1.5 if vol else 0.5
        y[t] = 0.7 * prev + sd * rng.standard_normal()
        prev = y[t]
    x = np.concatenate([[0.0], y[:-1]])
    return x, y


ids = ["A", "B", "C", "D"]
data = {i: series() for i in ids}


def write(name, lo, hi):
    with open(os.path.join(HERE, name), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "t", "x", "y"])
        for i in ids:
            x, y = data[i]
            for t in range(lo, hi):
                w.writerow([i, t, repr(float(x[t])), repr(float(y[t]))])


write("train.csv", 0, TRAIN)
write("test.csv", TRAIN, TRAIN + TEST)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.RNN(1, 5, batch_first=True)
        self.out = torch.nn.Linear(5, 1)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(h).squeeze(-1)


net = Net().double()
X = torch.tensor(np.stack([data[i][0][:TRAIN] for i in ids]))[..., None]
Y = torch.tensor(np.stack([data[i][1][:TRAIN] for i in ids]))
opt = torch.optim.Adam(net.parameters(), lr=0.02)
for step in range(400):
    opt.zero_grad()
    loss = ((net(X) - Y) ** 2).mean()
    loss.backward()
    opt.step()
print("training mse", float(loss))

net.eval()
torch.onnx.export(net, (X[:1],), os.path.join(HERE, "model.onnx"), opset_version=14,
                  input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}})

with torch.no_grad():
    full = torch.tensor(np.stack([data[i][0] for i in ids]))[..., None]
    out = net(full).numpy()
with open(os.path.join(HERE, "continued.csv"), "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["id", "t", "prediction"])
    for k, i in enumerate(ids):
        for t in range(TRAIN, TRAIN + TEST):
            w.writerow([i, t, repr(float(out[k, t]))])
