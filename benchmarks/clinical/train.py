#!/usr/bin/python3
"""Prepare the clinical benchmark's data and train its GRUs the way clinical modellers do.

Data: nlme's Quinidine (136 patients, serum quinidine in mg/L, 1-11
measurements each, with dosing and baseline covariates) and Phenobarb (59
neonates, serum phenobarbital, 1-6 measurements), exported by export.R
from Debian's r-cran-nlme. A patient's sequence is their measurement
visits in time order; the model's output at visit k forecasts the
concentration at visit k+1 (audit --shift 1). Features at visit k: the
concentration measured there, the hours to the next visit and the dose
given until then (both known from the dosing schedule), and the baseline
covariates:

  quinidine (11): conc, gap/24, dose/100, Age/10, Weight/10, Height/10,
                  glyco, Creatinine, Heart, Smoke, Ethanol
  phenobarb (5):  conc/10, gap/24, dose/10, Wt, Apgar/10

Patients with at least two visits are split at random (seeded) into
train 50%, calibration 25% and test 25%; a fifth of the training patients
is held out for early stopping and is used for nothing else.

Model: nn.GRU(F, 16, batch_first) + Linear(16, 1) per visit (1,409
parameters for quinidine, as in the issue). Training, as usual in
clinical modelling: Adam (lr 5e-3, weight_decay 1e-4), shuffled
mini-batches of 16 zero-padded sequences with a mask on the loss (mean
squared error over observed next values), at most 400 epochs, early
stopping with patience 30 on the validation loss, best weights restored.

Writes data/<name>_{train,cal,test}.csv (long format: id, t, features,
y), models/<name>.onnx, preds/<name>.json (the trained model's forecasts
of the calibration and test values, for the pooled split-conformal
baseline) and models.json (the training budget and the ridge w N that
weight_decay w means for the summed loss of N terms).

Run:  /usr/bin/python3 benchmarks/clinical/train.py
"""

import csv
import json
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
HIDDEN, LR, WD, BATCH, EPOCHS, PATIENCE = 16, 5e-3, 1e-4, 16, 400, 30


def num(v):
    return float(v) if v not in ("", "NA") else None


def visits(path, feats):
    """Per subject, the visits with a measured concentration and their features."""
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["Subject"], []).append(r)
    out = {}
    for sid, rs in rows.items():
        rs.sort(key=lambda r: float(r["time"]))
        obs = [i for i, r in enumerate(rs) if num(r["conc"]) is not None]
        if len(obs) < 2:
            continue
        seq = []
        for k, i in enumerate(obs):
            r = rs[i]
            if k + 1 < len(obs):
                j = obs[k + 1]
                gap = float(rs[j]["time"]) - float(r["time"])
                dose = sum(num(x["dose"]) or 0.0 for x in rs[i:j])
            else:
                gap, dose = 0.0, 0.0
            seq.append((feats(r, gap, dose), num(r["conc"])))
        out[sid] = seq
    return out


def quinidine(r, gap, dose):
    g = lambda k: num(r[k]) or 0.0
    return [g("conc"), gap / 24, dose / 100, g("Age") / 10, g("Weight") / 10, g("Height") / 10,
            g("glyco"), g("Creatinine"), g("Heart"), g("Smoke"), g("Ethanol")]


def phenobarb(r, gap, dose):
    g = lambda k: num(r[k]) or 0.0
    return [g("conc") / 10, gap / 24, dose / 10, g("Wt"), g("Apgar") / 10]


DATASETS = {"quinidine": (quinidine, ["conc", "gap", "dose", "age", "weight", "height", "glyco", "creatinine", "heart", "smoke", "ethanol"]),
            "phenobarb": (phenobarb, ["conc", "gap", "dose", "wt", "apgar"])}


def write_long(path, names, seqs):
    with open(path, "w", newline="\n") as f:
        f.write("id,t," + ",".join(names) + ",y\n")
        for sid, seq in seqs:
            for t, (x, y) in enumerate(seq):
                f.write("%s,%d,%s,%.6g\n" % (sid, t + 1, ",".join("%.6g" % v for v in x), y))


class Net(nn.Module):
    def __init__(self, nin):
        super().__init__()
        self.rnn = nn.GRU(nin, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.head(h)


def pad(seqs):
    """Inputs (visits 1..T-1 per sequence, zero-padded), next values and mask."""
    T = max(len(s) for _, s in seqs) - 1
    F = len(seqs[0][1][0][0])
    x = np.zeros((len(seqs), T, F), np.float32)
    y = np.zeros((len(seqs), T, 1), np.float32)
    m = np.zeros((len(seqs), T, 1), np.float32)
    for i, (_, s) in enumerate(seqs):
        for t in range(len(s) - 1):
            x[i, t] = s[t][0]
            y[i, t, 0] = s[t + 1][1]
            m[i, t, 0] = 1
    return torch.tensor(x), torch.tensor(y), torch.tensor(m)


def masked(net, x, y, m):
    return (((net(x) - y) ** 2) * m).sum() / m.sum()


def train(name, fit, val, nin, seed):
    torch.manual_seed(seed)
    net = Net(nin)
    opt = torch.optim.Adam(net.parameters(), lr=LR, weight_decay=WD)
    vx, vy, vm = pad(val)
    best, best_state, best_epoch, epoch = float("inf"), None, 0, 0
    rng = np.random.default_rng(seed)
    for epoch in range(1, EPOCHS + 1):
        net.train()
        order = rng.permutation(len(fit))
        for k in range(0, len(fit), BATCH):
            x, y, m = pad([fit[i] for i in order[k:k + BATCH]])
            opt.zero_grad()
            masked(net, x, y, m).backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            v = float(masked(net, vx, vy, vm))
        if v < best:
            best, best_epoch = v, epoch
            best_state = {k: t.clone() for k, t in net.state_dict().items()}
        elif epoch - best_epoch >= PATIENCE:
            break
    net.load_state_dict(best_state)
    net.eval()
    return net, {"best_epoch": best_epoch, "epochs_run": epoch, "val_rmse": best ** 0.5}


def forecasts(net, seqs):
    out = []
    with torch.no_grad():
        for sid, s in seqs:
            x = torch.tensor(np.array([[v for v, _ in s]], np.float32))
            p = net(x)[0, :, 0].numpy()
            for t in range(len(s) - 1):
                out.append([sid, t, float(s[t + 1][1]), float(p[t])])
    return out


def main():
    torch.set_num_threads(1)
    for d in ("data", "models", "preds"):
        os.makedirs(os.path.join(HERE, d), exist_ok=True)
    facts = {}
    for seed, (name, (feats, names)) in enumerate(DATASETS.items(), start=1):
        seqs = visits(os.path.join(DATA, name + "_raw.csv"), feats)
        ids = sorted(seqs, key=lambda s: int(s))
        rng = np.random.default_rng(20261207 + seed)
        ids = [ids[i] for i in rng.permutation(len(ids))]
        n = len(ids)
        ntr, ncal = n // 2, n // 4
        train_ids, cal_ids, test_ids = ids[:ntr], ids[ntr:ntr + ncal], ids[ntr + ncal:]
        nval = max(2, ntr // 5)
        fit_ids, val_ids = train_ids[nval:], train_ids[:nval]
        get = lambda xs: [(i, seqs[i]) for i in xs]
        for part, xs in (("train", fit_ids), ("cal", cal_ids), ("test", test_ids)):
            write_long(os.path.join(DATA, "%s_%s.csv" % (name, part)), names, get(xs))
        net, log = train(name, get(fit_ids), get(val_ids), len(names), seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = torch.zeros((1, 3, len(names)))
            torch.onnx.export(net, (x,), os.path.join(HERE, "models", name + ".onnx"), opset_version=13,
                              input_names=["x"], output_names=["y"],
                              dynamic_axes={"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}})
        terms = sum(len(seqs[i]) - 1 for i in fit_ids)
        with torch.no_grad():
            fx, fy, fm = pad(get(fit_ids))
            train_rmse = float(masked(net, fx, fy, fm)) ** 0.5
        facts[name] = dict(log, patients={"train": len(fit_ids), "validation": len(val_ids), "calibration": len(cal_ids), "test": len(test_ids)},
                           loss_terms=terms, ridge=WD * terms, weight_decay=WD, lr=LR, batch=BATCH, hidden=HIDDEN,
                           parameters=sum(p.numel() for p in net.parameters()), train_rmse=train_rmse)
        with open(os.path.join(HERE, "preds", name + ".json"), "w") as f:
            json.dump({"cal": forecasts(net, get(cal_ids)), "test": forecasts(net, get(test_ids))}, f)
        print(name, facts[name], flush=True)
    with open(os.path.join(HERE, "models.json"), "w") as f:
        json.dump(facts, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
