#!/usr/bin/python3
"""The synthetic 3-class sequence task of benchmarks/classification, with
known true probabilities, and its model (written beside this script).

Task: sequences of T = 10 steps, two features x_t ~ N(0, 1); two latent
sums a_t = 0.7 a_{t-1} + x1_t, b_t = 0.7 b_{t-1} + x2_t (a_0 = b_0 = 0);
at the last step the true class probabilities are p = softmax(0.9 a_T,
0.9 b_T, 0) and the sequence's one label is y ~ Categorical(p), on its
last row (the other rows' target cells are empty). 1000 training, 1000
test and 300 calibration sequences (numpy seed SEED, streams 0, 1, 2;
ids from 1, 1001 and 2001); 300 validation sequences (stream 3) for early
stopping only.

Model, trained the way practitioners train a sequence classifier: a GRU
(hidden 6) whose last hidden state feeds a linear head of 3 logits,
nn.CrossEntropyLoss (mean), Adam (lr 0.005, weight_decay 1e-3, minibatches
of 50, shuffled), float32, at most 300 epochs with early stopping on the
validation loss (patience 30, the best epoch's weights kept), exported
with a dynamic batch axis (multiclass.onnx, output [batch, 3]).

Also multiclass_polished.onnx, the same model carried on by full-batch
L-BFGS to a stationary point of its training objective (polish), for the
comparison of exact re-training with the influence estimates.

Writes multiclass_train.csv, multiclass_test.csv, multiclass_cal.csv
(id,t,x1,x2,y), multiclass_truth.csv (id,p0,p1,p2: the test sequences'
true probabilities), multiclass.onnx and multiclass_params.txt (RIDGE:
weight_decay times the number of loss terms, as for regression), and
internal/cli's test data (internal/cli/testdata/multiclass: the model,
the first 60 training, 20 test and 40 calibration sequences, and
reference.json, PyTorch's softmax of the float32 model's logits evaluated
in float64 on those 20 test sequences).
Run:  /usr/bin/python3 multiclass.py
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20261208
T = 10
SIZES = {"train": 1000, "test": 1000, "cal": 300, "val": 300}
HIDDEN = 6
LR, WD, EPOCHS, PATIENCE, BATCH = 0.005, 1e-3, 300, 30, 50


def simulate(rng, n):
    x = rng.standard_normal((n, T, 2))
    a = np.zeros(n)
    b = np.zeros(n)
    for t in range(T):
        a = 0.7 * a + x[:, t, 0]
        b = 0.7 * b + x[:, t, 1]
    z = np.stack([0.9 * a, 0.9 * b, np.zeros(n)], axis=1)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    u = rng.random(n)
    y = (u[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return x, p, y


def write(name, x, y, p, first):
    with open(os.path.join(HERE, "multiclass_" + name + ".csv"), "w") as fh:
        fh.write("id,t,x1,x2,y\n")
        for i in range(x.shape[0]):
            for t in range(T):
                lab = "%d" % y[i] if t == T - 1 else ""
                fh.write("%d,%d,%.6f,%.6f,%s\n" % (first + i, t + 1, x[i, t, 0], x[i, t, 1], lab))
    if name == "test":
        with open(os.path.join(HERE, "multiclass_truth.csv"), "w") as fh:
            fh.write("id,p0,p1,p2\n")
            for i in range(x.shape[0]):
                fh.write("%d,%.9f,%.9f,%.9f\n" % (first + i, p[i, 0], p[i, 1], p[i, 2]))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(2, HIDDEN, batch_first=True)
        self.head = torch.nn.Linear(HIDDEN, 3)

    def forward(self, x):
        _, h = self.rnn(x)
        return self.head(h[-1])


def rounded(x):
    return np.vectorize(lambda v: float("%.6f" % v))(x)  # as the CSV holds them


def main():
    torch.set_num_threads(1)
    ss = np.random.SeedSequence(SEED).spawn(4)
    data = {}
    for k, ((name, n), s) in enumerate(zip(SIZES.items(), ss)):
        x, p, y = simulate(np.random.default_rng(s), n)
        if name != "val":
            write(name, x, y, p, 1000 * k + 1)
        data[name] = (rounded(x), p, y)
    torch.manual_seed(SEED % 2**31)
    net = Net()
    x = torch.tensor(data["train"][0], dtype=torch.float32)
    y = torch.tensor(data["train"][2], dtype=torch.long)
    xv = torch.tensor(data["val"][0], dtype=torch.float32)
    yv = torch.tensor(data["val"][2], dtype=torch.long)
    opt = torch.optim.Adam(net.parameters(), lr=LR, weight_decay=WD)
    lossf = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED % 2**31)
    best, best_state, best_epoch, waited = float("inf"), None, -1, 0
    for epoch in range(EPOCHS):
        net.train()
        perm = torch.randperm(len(y), generator=gen)
        for lo in range(0, len(y), BATCH):
            idx = perm[lo:lo + BATCH]
            opt.zero_grad()
            loss = lossf(net(x[idx]), y[idx])
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            v = float(lossf(net(xv), yv))
        if v < best - 1e-5:
            best, best_epoch, waited = v, epoch, 0
            best_state = {k: t.clone() for k, t in net.state_dict().items()}
        else:
            waited += 1
            if waited >= PATIENCE:
                break
    net.load_state_dict(best_state)
    with torch.no_grad():
        tl = float(lossf(net(x), y))
    print("stopped at epoch %d, best epoch %d, validation loss %.4f, training loss %.4f" % (epoch, best_epoch, best, tl), file=sys.stderr)
    net.eval()
    torch.onnx.export(net, (torch.zeros(1, T, 2),), os.path.join(HERE, "multiclass.onnx"), input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=14)
    with open(os.path.join(HERE, "multiclass_params.txt"), "w") as fh:
        fh.write("RIDGE=%g\nEPOCH=%d\n" % (WD * SIZES["train"], best_epoch))
    testdata(net, data)
    polish(net, x, y, lossf)


def polish(net, x, y, lossf):
    """multiclass_polished.onnx: the early-stopped model carried on to a
    stationary point of its training objective (the mean loss plus
    weight_decay/2 |theta|^2, what Adam's weight_decay minimises) by
    full-batch L-BFGS: the model for which the influence estimates are
    made, to compare exact re-training with them."""
    lb = torch.optim.LBFGS(net.parameters(), lr=1, max_iter=500, tolerance_grad=1e-10, tolerance_change=1e-14,
                           history_size=50, line_search_fn="strong_wolfe")

    def closure():
        lb.zero_grad()
        loss = lossf(net(x), y) + WD / 2 * sum((q * q).sum() for q in net.parameters())
        loss.backward()
        return loss

    for _ in range(6):
        lb.step(closure)
    g = torch.cat([q.grad.flatten() for q in net.parameters()])
    print("polished: gradient norm %.3g of the mean loss" % float(g.norm()), file=sys.stderr)
    net.eval()
    torch.onnx.export(net, (torch.zeros(1, T, 2),), os.path.join(HERE, "multiclass_polished.onnx"), input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=14)


def testdata(net, data):
    out = os.path.join(HERE, "..", "..", "internal", "cli", "testdata", "multiclass")
    os.makedirs(out, exist_ok=True)
    for name, n in [("train", 60), ("test", 20), ("cal", 40)]:
        lines = open(os.path.join(HERE, "multiclass_%s.csv" % name)).read().splitlines()
        with open(os.path.join(out, name + ".csv"), "w") as fh:
            fh.write("\n".join(lines[:1 + n * T]) + "\n")
    with open(os.path.join(HERE, "multiclass.onnx"), "rb") as src, open(os.path.join(out, "multiclass.onnx"), "wb") as dst:
        dst.write(src.read())
    net64 = Net().double()
    net64.load_state_dict({k: v.double() for k, v in net.state_dict().items()})
    with torch.no_grad():
        p = torch.softmax(net64(torch.tensor(data["test"][0][:20], dtype=torch.float64)), dim=-1)
    with open(os.path.join(out, "reference.json"), "w") as fh:
        fh.write('{"ids": %s, "probabilities": %s}\n' % (list(range(1001, 1021)), [[float(v) for v in r] for r in p]))


if __name__ == "__main__":
    main()
