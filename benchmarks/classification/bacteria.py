#!/usr/bin/python3
"""The real longitudinal binary task of benchmarks/classification: MASS's
bacteria data (bacteria.csv, written by bacteria.R), the presence of
H. influenzae in 50 children at weeks 0, 2, 4, 6 and 11 of a trial.

usage: bacteria.py WORKDIR [REPEATS]

Every child is one sequence of 5 steps (the 5 scheduled visits); a visit
that was missed is a row with an empty target (no loss term, no forecast
judged). The features of a step: the week / 11, the active drug, the
encouragement to comply (drug+), low compliance, and the last observed
label with a flag saying whether there was one (0.5 and 0 before the
first visit): a one-step-ahead forecast of the next test from the
child's history.

The children are split REPEATS times (default 2) into five folds of 10:
each fold in turn is the test set and the other 40 children are split at
random into 24 training, 6 validation (early stopping) and 10 calibration
children, so that every child is tested once per repeat: 5 x REPEATS
runs, each written to WORKDIR/runNN/ (train.csv, val.csv, cal.csv,
test.csv, model.onnx, model_full.onnx, params.txt, baselines.json).

Per run, trained the way practitioners train a classifier (float32,
nn.BCEWithLogitsLoss, Adam lr 0.01 with weight_decay 1e-3, full batch,
early stopping on the validation children's loss with patience 50 of at
most 2000 epochs, best weights restored):

- the audited model: GRU(6 -> 8) + Linear(8 -> 1), the output a logit,
  exported with a dynamic batch axis only (the time axis fixed at 5);
  the ridge the audit takes is weight_decay times the training loss terms
  (RIDGE in params.txt); and for comparison the same model trained for
  all 2000 epochs without early stopping (model_full.onnx), close to a
  stationary point of the penalised loss, which the audit's influence
  estimates assume;
- split conformal on the same model (PyTorch's probabilities): LAC (score
  1 - p_y) and APS (randomised, Romano et al. 2020) with the calibration
  children, at alpha 0.1;
- MC dropout (Gal and Ghahramani 2016): the same GRU with dropout 0.2 on
  its hidden state before the head, trained the same way, sampled 200
  times at test time with dropout on; its probability is the samples'
  mean, its interval their 5% and 95% quantiles, its set the smallest set
  of labels whose mean probability is at least 1 - alpha (the model's own
  "naive" set: {argmax} when max(p, 1 - p) >= 0.9, else both labels).

baselines.json holds per labelled test forecast (id, t) the label, the
model's probability, the split LAC and APS sets, MC dropout's
probability, interval and set, and the wall seconds of training and of
sampling.
"""
import csv
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20261208
WEEKS = [0, 2, 4, 6, 11]
FEATURES = ["week", "drug", "encouraged", "low_compliance", "last_y", "seen"]
HIDDEN, LR, WD, EPOCHS, PATIENCE, DROPOUT, SAMPLES = 8, 0.01, 1e-3, 2000, 50, 0.2, 200
ALPHA = 0.1


def children():
    """{id: {"rows": [5 feature lists], "y": [5 labels or None]}} from
    bacteria.csv, ids 1..50 in the order of X01..X50."""
    rows = list(csv.DictReader(open(os.path.join(HERE, "bacteria.csv"))))
    names = sorted({r["id"] for r in rows})
    out = {}
    for k, name in enumerate(names):
        mine = {int(r["week"]): r for r in rows if r["id"] == name}
        r0 = next(iter(mine.values()))
        drug, enc, low = int(r0["ap"]), int(r0["trt"] == "drug+"), int(r0["hilo"])
        last, seen = 0.5, 0.0
        feats, ys = [], []
        for w in WEEKS:
            feats.append([w / 11, drug, enc, low, last, seen])
            if w in mine:
                y = int(mine[w]["y"])
                ys.append(y)
                last, seen = float(y), 1.0
            else:
                ys.append(None)
        out[k + 1] = {"rows": feats, "y": ys}
    return out


def write_csv(path, data, ids):
    with open(path, "w") as fh:
        fh.write("id,t," + ",".join(FEATURES) + ",y\n")
        for i in ids:
            for t, (f, y) in enumerate(zip(data[i]["rows"], data[i]["y"])):
                fh.write("%d,%d,%s,%s\n" % (i, t + 1, ",".join("%g" % v for v in f), "" if y is None else y))


def tensors(data, ids):
    x = torch.tensor([data[i]["rows"] for i in ids], dtype=torch.float32)
    y = torch.tensor([[-1 if v is None else v for v in data[i]["y"]] for i in ids], dtype=torch.float32)
    return x, y


class Net(torch.nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.rnn = torch.nn.GRU(len(FEATURES), HIDDEN, batch_first=True)
        self.drop = torch.nn.Dropout(dropout)
        self.head = torch.nn.Linear(HIDDEN, 1)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.head(self.drop(h))[..., 0]


def masked_loss(lossf, logits, y):
    m = y >= 0
    return lossf(logits[m], y[m])


def train(data, fit_ids, val_ids, seed, dropout=0.0, early=True):
    """A model trained with BCEWithLogitsLoss and Adam, early-stopped on
    the validation children (best weights restored), or (early False)
    trained for all EPOCHS; returns it with the epoch it stopped at."""
    torch.manual_seed(seed)
    net = Net(dropout)
    x, y = tensors(data, fit_ids)
    xv, yv = tensors(data, val_ids)
    opt = torch.optim.Adam(net.parameters(), lr=LR, weight_decay=WD)
    lossf = torch.nn.BCEWithLogitsLoss()
    best, best_state, best_epoch = float("inf"), None, 0
    for epoch in range(EPOCHS):
        net.train()
        opt.zero_grad()
        loss = masked_loss(lossf, net(x), y)
        loss.backward()
        opt.step()
        net.eval()
        with torch.no_grad():
            v = float(masked_loss(lossf, net(xv), yv))
        if not early:
            best_state, best_epoch = net.state_dict(), epoch
        elif v < best - 1e-6:
            best, best_state, best_epoch = v, {k: t.clone() for k, t in net.state_dict().items()}, epoch
        elif epoch - best_epoch >= PATIENCE:
            break
    net.load_state_dict(best_state)
    net.eval()
    return net, best_epoch + 1


def export(net, path):
    net.eval()
    torch.onnx.export(net, (torch.zeros(1, len(WEEKS), len(FEATURES)),), path, input_names=["x"],
                      output_names=["logit"], dynamic_axes={"x": {0: "batch"}, "logit": {0: "batch"}},
                      opset_version=14)


def probs(net, data, ids):
    x, y = tensors(data, ids)
    with torch.no_grad():
        p = torch.sigmoid(net(x)).double().numpy()
    return p, y.numpy()


def labelled(ids, p, y):
    """(id, t, label, p) of every labelled forecast."""
    return [(i, t + 1, int(y[k, t]), float(p[k, t])) for k, i in enumerate(ids) for t in range(len(WEEKS)) if y[k, t] >= 0]


def conformal_q(scores, alpha):
    s = np.sort(np.asarray(scores))
    k = int(np.ceil((1 - alpha) * (len(s) + 1)))
    return np.inf if k > len(s) else s[k - 1]


def aps_score(p1, y, u):
    """The randomised APS score of label y of a binary forecast whose
    probability of class 1 is p1: the mass of the labels ranked above y
    plus u times p_y."""
    py = p1 if y == 1 else 1 - p1
    above = 0.0 if py >= 1 - py else 1 - py
    return above + u * py


def split_sets(cal, u_cal, test, u_test):
    """The split-conformal LAC and APS sets of the test forecasts (id, t,
    label, p) from the calibration forecasts, at ALPHA; u_* are the APS
    scores' uniforms."""
    q_lac = conformal_q([1 - (p if y == 1 else 1 - p) for _, _, y, p in cal], ALPHA)
    q_aps = conformal_q([aps_score(p, y, u) for (_, _, y, p), u in zip(cal, u_cal)], ALPHA)
    lac = [[c for c in (0, 1) if 1 - (p if c == 1 else 1 - p) <= q_lac] for _, _, _, p in test]
    aps = [[c for c in (0, 1) if aps_score(p, c, u) <= q_aps] for (_, _, _, p), u in zip(test, u_test)]
    return lac, aps


def run(rep, fold, data, order, work):
    name = "run%02d" % (5 * rep + fold)
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    test_ids = sorted(order[10 * fold:10 * fold + 10])
    rest = [i for i in order if i not in test_ids]
    rng = np.random.default_rng([SEED, rep, fold])
    rest = list(rng.permutation(rest))
    fit_ids, val_ids, cal_ids = sorted(rest[:24]), sorted(rest[24:30]), sorted(rest[30:40])
    for part, ids in [("train", fit_ids), ("val", val_ids), ("cal", cal_ids), ("test", test_ids)]:
        write_csv(os.path.join(d, part + ".csv"), data, ids)
    seed = SEED + 100 * rep + fold
    t0 = time.time()
    net, epochs = train(data, fit_ids, val_ids, seed)
    t_train = time.time() - t0
    export(net, os.path.join(d, "model.onnx"))
    full, _ = train(data, fit_ids, val_ids, seed, early=False)
    export(full, os.path.join(d, "model_full.onnx"))
    n_terms = sum(v is not None for i in fit_ids for v in data[i]["y"])
    with open(os.path.join(d, "params.txt"), "w") as fh:
        fh.write("RIDGE=%g\nEPOCHS=%d\n" % (WD * n_terms, epochs))
    # Split conformal LAC and APS on the same model (each of the two).
    pc, yc = probs(net, data, cal_ids)
    cal = labelled(cal_ids, pc, yc)
    u_cal = rng.random(len(cal))
    pt, yt = probs(net, data, test_ids)
    test = labelled(test_ids, pt, yt)
    u_test = rng.random(len(test))
    split = {"": split_sets(cal, u_cal, test, u_test)}
    pcf, _ = probs(full, data, cal_ids)
    ptf, _ = probs(full, data, test_ids)
    split["full_"] = split_sets(labelled(cal_ids, pcf, yc), u_cal, labelled(test_ids, ptf, yt), u_test)
    # MC dropout: its own model, sampled with dropout on.
    t0 = time.time()
    dnet, depochs = train(data, fit_ids, val_ids, seed + 50, DROPOUT)
    t_dtrain = time.time() - t0
    t0 = time.time()
    x, _ = tensors(data, test_ids)
    dnet.train()
    torch.manual_seed(seed + 77)
    with torch.no_grad():
        samples = torch.stack([torch.sigmoid(dnet(x)) for _ in range(SAMPLES)]).double().numpy()
    t_sample = time.time() - t0
    pos = {(i, t + 1): (k, t) for k, i in enumerate(test_ids) for t in range(len(WEEKS))}
    out = []
    for j, (i, t, y, p) in enumerate(test):
        k, s = pos[(i, t)]
        smp = samples[:, k, s]
        m = float(smp.mean())
        row = {"id": i, "t": t, "y": y, "p": p}
        for pre, sets in split.items():
            row[pre + "split_lac"], row[pre + "split_aps"] = sets[0][j], sets[1][j]
        out.append(dict(row, **{
            "mc_p": m, "mc_lower": float(np.quantile(smp, ALPHA / 2)), "mc_upper": float(np.quantile(smp, 1 - ALPHA / 2)),
            "mc_set": [int(m >= 0.5)] if max(m, 1 - m) >= 1 - ALPHA else [0, 1],
        }))
    json.dump({"run": name, "epochs": epochs, "dropout_epochs": depochs, "train_seconds": t_train,
               "dropout_train_seconds": t_dtrain, "dropout_sample_seconds": t_sample,
               "calibration_labels": len(cal), "forecasts": out},
              open(os.path.join(d, "baselines.json"), "w"), indent=0)
    print("%s: %d training, %d calibration, %d test labels; early stop at epoch %d (dropout %d)" % (
        name, n_terms, len(cal), len(test), epochs, depochs), file=sys.stderr)


def main():
    work = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    torch.set_num_threads(1)
    data = children()
    for rep in range(repeats):
        order = [int(i) for i in np.random.default_rng([SEED, rep]).permutation(sorted(data))]
        for fold in range(5):
            run(rep, fold, data, order, work)


if __name__ == "__main__":
    main()
