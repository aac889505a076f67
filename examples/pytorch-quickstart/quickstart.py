#!/usr/bin/python3
"""From a PyTorch model to an audit report, with the rnnaudit Python bridge.

Notebook-style: each numbered block is a cell. It makes a small data set of
sequences of different lengths (two features on their own scales, a target
around 10), trains a GRU the ordinary way (mini-batch Adam with
weight_decay on the mean squared error of standardised targets), exports it
to ONNX (checked against the module in float64 by the audit binary), writes
the long CSVs, audits it with the matching --ridge, writes report.html,
then fits the audit once and predicts intervals for new, unlabelled
sequences.

Run from anywhere (Debian's /usr/bin/python3 has torch, numpy and pandas):

    go build -o /tmp/audit ./cmd/audit            # from the repository root
    /usr/bin/python3 examples/pytorch-quickstart/quickstart.py --bin /tmp/audit --outdir /tmp/quickstart

Without --bin the binary is looked up as rnnaudit.find_binary does
(RNNAUDIT_BIN, audit on PATH, ~/go/bin). Outputs go to --outdir
(default ./quickstart-out). About a minute on one thread.
"""

import argparse
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn

try:
    import rnnaudit
    BRIDGE = "the installed Python bridge"
except ImportError:  # not installed (docs/pytorch.md): use the repository's copy
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import rnnaudit
    BRIDGE = "the clone's python/ (not installed)"

SEED = 11


# 1. Data: sequences of 12 to 24 steps. Features u (a seasonal driver
#    around 10) and v (a nuisance around 100); the target follows
#    y_t = 0.7 y_{t-1} + 0.3 u_t + 0.01 (v_t - 100) + noise, so the model
#    must carry the past in its state.
def make_sequences(rng, n):
    lengths = rng.integers(12, 25, size=n)
    T = lengths.max()
    t = np.arange(T)
    phase = rng.uniform(0, 2 * np.pi, size=(n, 1))
    u = 10 + 5 * np.sin(2 * np.pi * t / 12 + phase) + 0.5 * rng.standard_normal((n, T))
    v = 100 + 20 * rng.standard_normal((n, T))
    y = np.zeros((n, T))
    prev = np.full(n, 10.0)
    for k in range(T):
        prev = 0.7 * prev + 0.3 * u[:, k] + 0.01 * (v[:, k] - 100) + 0.5 * rng.standard_normal(n)
        y[:, k] = prev
    x = np.stack([u, v], axis=2)
    mask = t[None, :] < lengths[:, None]
    return x, y, lengths, mask


# 2. The model scales its inputs and its output itself, with fixed numbers
#    (Python floats, exported as constants, not parameters): the CSVs hold
#    raw values and the intervals come in the target's units.
class Forecaster(nn.Module):
    def __init__(self, x_mean, x_sd, y_mean, y_sd, hidden=8):
        super().__init__()
        self.rnn = nn.GRU(2, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)
        f32 = lambda v: [float(np.float32(a)) for a in np.atleast_1d(v)]  # noqa: E731
        self.x_mean, self.x_sd = f32(x_mean), f32(x_sd)
        self.y_mean, self.y_sd = f32(y_mean)[0], f32(y_sd)[0]

    def forward(self, x):
        z = (x - torch.tensor(self.x_mean, dtype=x.dtype)) / torch.tensor(self.x_sd, dtype=x.dtype)
        h, _ = self.rnn(z)
        return self.head(h)[..., 0] * self.y_sd + self.y_mean  # [batch, time]: one forecast per step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", help="the rnnaudit binary (default: rnnaudit.find_binary())")
    ap.add_argument("--outdir", default="quickstart-out")
    ap.add_argument("--epochs", type=int, default=40)
    args = ap.parse_args()
    print("rnnaudit bridge: %s, %s" % (BRIDGE, os.path.dirname(os.path.abspath(rnnaudit.__file__))))
    os.makedirs(args.outdir, exist_ok=True)
    out = lambda name: os.path.join(args.outdir, name)  # noqa: E731

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    rng = np.random.default_rng(SEED)
    x_tr, y_tr, len_tr, m_tr = make_sequences(rng, 300)
    x_cal, y_cal, len_cal, _ = make_sequences(rng, 100)
    x_te, y_te, len_te, _ = make_sequences(rng, 200)
    x_new, _, len_new, _ = make_sequences(rng, 5)

    # 3. Train: mini-batch Adam, weight_decay 1e-4, on the mean squared error
    #    of the standardised target over the observed (unpadded) steps.
    obs = m_tr.astype(bool)
    model = Forecaster(x_tr[obs].mean(0), x_tr[obs].std(0), y_tr[obs].mean(), y_tr[obs].std())
    y_sd = model.y_sd
    weight_decay = 1e-4
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=weight_decay)
    X = torch.tensor(x_tr, dtype=torch.float32)
    Y = torch.tensor(y_tr, dtype=torch.float32)
    M = torch.tensor(m_tr, dtype=torch.float32)
    for epoch in range(args.epochs):
        order = torch.randperm(len(X))
        for k in range(0, len(X), 32):
            b = order[k:k + 32]
            opt.zero_grad()
            err = (model(X[b]) - Y[b]) / y_sd
            loss = (err ** 2 * M[b]).sum() / M[b].sum()  # the mean over the batch's observed steps
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        rmse = float(torch.sqrt(((model(X) - Y) ** 2 * M).sum() / M.sum()))
    print("trained %d epochs: training RMSE %.3f (noise sd 0.5)" % (args.epochs, rmse))

    # 4. Export, checked against the module in float64 by the binary. (The
    #    tracer warns that torch.tensor(...) in forward becomes a constant:
    #    that is the intent here, and the check would catch a wrong trace.)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        exported = rnnaudit.export(model, out("model.onnx"), n_features=2, binary=args.bin)
    print(exported)

    # 5. Long CSVs: id, t, u, v, y; the calibration and test ids differ
    #    from the training ids; the new sequences have no target.
    feats = ["u", "v"]
    rnnaudit.to_long_csv(out("train.csv"), x_tr, y_tr, lengths=len_tr, features=feats)
    rnnaudit.to_long_csv(out("cal.csv"), x_cal, y_cal, lengths=len_cal, features=feats,
                         ids=range(1001, 1101))
    rnnaudit.to_long_csv(out("test.csv"), x_te, y_te, lengths=len_te, features=feats,
                         ids=range(2001, 2201))
    rnnaudit.to_long_csv(out("new.csv"), x_new, lengths=len_new, features=feats, ids=range(9001, 9006))

    # 6. --ridge: Adam's weight_decay w on a mean over N terms is R = w N in
    #    the audit's summed loss, times y_sd^2 because the loss was on
    #    standardised targets while the exported model and the CSVs are in
    #    the target's units.
    n_terms = int(len_tr.sum())
    ridge = rnnaudit.ridge_from_optimizer(opt, n_terms, target_scale=y_sd)
    print("--ridge %.6g (= %g x %d terms x %.4f^2)" % (ridge, weight_decay, n_terms, y_sd))

    # 7. The audit: intervals for the test sequences, with the calibration
    #    set's conformal intervals beside them, and a report.
    res = rnnaudit.audit(out("model.onnx"), out("train.csv"), out("test.csv"), calibration=out("cal.csv"),
                         ridge=ridge, out=out("report.html"), binary=args.bin)
    print(res.text)
    print("coverage %.3f, verdict %s" % (res.summary["coverage"], res.verdict["level"]))
    show = ["id", "t", "prediction", "lower", "upper", "target", "recommended", "recommended_lower",
            "recommended_upper"]
    print(res.intervals[[c for c in show if c in res.intervals.columns]].head().to_string())

    # 8. Fit once, then predict for new sequences without targets.
    art = rnnaudit.fit(out("model.onnx"), out("train.csv"), out("audit.rna"), calibration=out("cal.csv"),
                       ridge=ridge, binary=args.bin)
    new = rnnaudit.predict(art, out("new.csv"), binary=args.bin)
    show = ["id", "t", "prediction", "lower", "upper", "split_lower", "split_upper",
            "conformal_jackknife_lower", "conformal_jackknife_upper"]
    print(new.intervals[[c for c in show if c in new.intervals.columns]].head(8).to_string())


if __name__ == "__main__":
    main()
