#!/usr/bin/python3
"""Synthetic classification tasks with known true probabilities, and the
models of benchmarks/classification (written beside this script).

Binary per-step task ("binary"): sequences of T = 12 steps, two features
x_t ~ N(0, 1), a latent z_t = 0.6 z_{t-1} + 1.2 x1_t - 0.8 x2_t (z_0 = 0),
true probability p_t = sigmoid(z_t), label y_t ~ Bernoulli(p_t) at every
step. 600 training, 200 test and 200 calibration sequences (numpy seed
SEED, streams 0, 1, 2; ids from 1, 1001 and 2001).

One GRU (hidden 6) + linear head per step, trained the ordinary way in
float32: Adam (lr 0.02, divided by 10 after 1000 and 2000 of 3000 epochs,
weight_decay 1e-3, full batch) on
nn.BCEWithLogitsLoss (mean over the terms). Exported twice with the same
weights: binary_logits.onnx (the output is the logit) and binary_prob.onnx
(a sigmoid inside: the output is the probability). The ridge the audit
takes is weight_decay times the number of loss terms (RIDGE in
params.txt).

Writes train.csv, test.csv, cal.csv (id,t,x1,x2,y), test_truth.csv and
cal_truth.csv (id,t,p: the true probabilities), the two models,
params.txt and reference.json (PyTorch's probabilities of the first three
test sequences, for internal/cli's test). Run:  /usr/bin/python3 make.py
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20240607
T = 12
SIZES = {"train": 600, "test": 200, "cal": 200}
HIDDEN = 6
LR, WD, EPOCHS = 0.02, 1e-3, 3000


def simulate(rng, n):
    x = rng.standard_normal((n, T, 2))
    z = np.zeros((n, T))
    acc = np.zeros(n)
    for t in range(T):
        acc = 0.6 * acc + 1.2 * x[:, t, 0] - 0.8 * x[:, t, 1]
        z[:, t] = acc
    p = 1 / (1 + np.exp(-z))
    y = (rng.random((n, T)) < p).astype(np.float64)
    return x, p, y


def write(name, x, y, p, first):
    with open(os.path.join(HERE, name + ".csv"), "w") as fh:
        fh.write("id,t,x1,x2,y\n")
        for i in range(x.shape[0]):
            for t in range(T):
                fh.write("%d,%d,%.6f,%.6f,%d\n" % (first + i, t + 1, x[i, t, 0], x[i, t, 1], y[i, t]))
    if name != "train":
        with open(os.path.join(HERE, name + "_truth.csv"), "w") as fh:
            fh.write("id,t,p\n")
            for i in range(x.shape[0]):
                for t in range(T):
                    fh.write("%d,%d,%.9f\n" % (first + i, t + 1, p[i, t]))


class Net(torch.nn.Module):
    def __init__(self, prob=False):
        super().__init__()
        self.rnn = torch.nn.GRU(2, HIDDEN, batch_first=True)
        self.head = torch.nn.Linear(HIDDEN, 1)
        self.prob = prob

    def forward(self, x):
        h, _ = self.rnn(x)
        f = self.head(h)
        return torch.sigmoid(f) if self.prob else f


def export(net, path):
    net.eval()
    torch.onnx.export(net, (torch.zeros(1, T, 2),), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}},
                      opset_version=14)


def main():
    torch.set_num_threads(1)
    ss = np.random.SeedSequence(SEED).spawn(3)
    data = {}
    for k, ((name, n), s) in enumerate(zip(SIZES.items(), ss)):
        x, p, y = simulate(np.random.default_rng(s), n)
        write(name, x, y, p, 1000 * k + 1)
        data[name] = (x, p, y)
    torch.manual_seed(SEED % 2**31)
    net = Net()
    x = torch.tensor(data["train"][0], dtype=torch.float32)
    y = torch.tensor(data["train"][2], dtype=torch.float32).unsqueeze(-1)
    opt = torch.optim.Adam(net.parameters(), lr=LR, weight_decay=WD)
    lossf = torch.nn.BCEWithLogitsLoss()
    # the learning rate steps down by 10 after a third and two thirds
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [EPOCHS // 3, 2 * EPOCHS // 3], gamma=0.1)
    for epoch in range(EPOCHS):
        opt.zero_grad()
        loss = lossf(net(x), y)
        loss.backward()
        opt.step()
        sched.step()
    print("final training loss %.4f" % float(loss), file=sys.stderr)
    export(net, os.path.join(HERE, "binary_logits.onnx"))
    pnet = Net(prob=True)
    pnet.load_state_dict(net.state_dict())
    export(pnet, os.path.join(HERE, "binary_prob.onnx"))
    # PyTorch's probabilities of the first 3 test sequences (float32 model,
    # evaluated in float64): the reference of internal/cli's classifier test.
    net64 = Net(prob=True).double()
    net64.load_state_dict(net.state_dict())
    with torch.no_grad():
        x3 = np.vectorize(lambda v: float("%.6f" % v))(data["test"][0][:3])  # as test.csv holds them
        pr = net64(torch.tensor(x3, dtype=torch.float64))[..., 0]
    with open(os.path.join(HERE, "reference.json"), "w") as fh:
        fh.write('{"ids": [1001, 1002, 1003], "probability": %s}\n' % [[float(v) for v in r] for r in pr])
    n_terms = SIZES["train"] * T
    with open(os.path.join(HERE, "params.txt"), "w") as fh:
        fh.write("RIDGE=%g\n" % (WD * n_terms))


if __name__ == "__main__":
    main()
