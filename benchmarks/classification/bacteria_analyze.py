#!/usr/bin/python3
"""The bacteria part of benchmarks/classification/RESULTS.md, from the
runs bacteria.py wrote and the audits run.sh ran on them.

usage: bacteria_analyze.py WORKDIR   (prints Markdown)

WORKDIR/runNN/ holds baselines.json (bacteria.py) and the audits' JSON
reports: lac.json and aps.json (jackknife+ sets of the early-stopped
model, --set-score lac and aps), full_lac.json (the model trained
without early stopping); WORKDIR/times.txt the audits' wall seconds.
Every figure pools the test forecasts of all runs (each child is tested
once per repeat).
"""
import csv
import glob
import json
import os
import sys

import numpy as np

ALPHA = 0.1
work = sys.argv[1]
runs = sorted(glob.glob(os.path.join(work, "run[0-9][0-9]")))
times = {}
for line in open(os.path.join(work, "times.txt")):
    name, sec = line.split()
    times[name] = float(sec)


def f(x, d=3):
    return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else "%.*f" % (d, x)


def ece(p, y):
    """Expected calibration error over 10 equal bins of the probability of
    class 1 (audit/classify's definition)."""
    p, y = np.asarray(p), np.asarray(y)
    b = np.clip((p * 10).astype(int), 0, 9)
    return sum(abs(p[b == k].mean() - y[b == k].mean()) * (b == k).sum() for k in range(10) if (b == k).any()) / len(p)


def flag(lower, upper, y, t, above):
    on = np.asarray(lower) > t if above else np.asarray(upper) < t
    hit = np.asarray(y) == (1 if above else 0)
    prec = hit[on].mean() if on.any() else float("nan")
    return prec, (on & hit).sum() / max(hit.sum(), 1), int(on.sum())


class Method:
    def __init__(self, name):
        self.name, self.y, self.p, self.sets, self.lo, self.up, self.t, self.seconds = name, [], [], [], [], [], [], 0.0

    def add(self, y, p, s, lo, up, t):
        self.y.append(y)
        self.p.append(p)
        self.sets.append(s)
        self.lo.append(lo)
        self.up.append(up)
        self.t.append(t)

    def row(self, ref_size):
        y = np.array(self.y)
        cov = np.array([yy in s for yy, s in zip(self.y, self.sets)])
        size = np.array([len(s) for s in self.sets])
        p = np.array(self.p)
        fa = flag(self.lo, self.up, y, 0.7, True)
        cells = [self.name, f(cov.mean()), f(size.mean()), "%+.1f%%" % (100 * (size.mean() / ref_size - 1)),
                 f((size == 1).mean()), f(cov[y == 0].mean()), f(cov[y == 1].mean()),
                 f(np.mean((p - y) ** 2)), f(ece(p, y)),
                 "%s / %s (%d)" % (f(fa[0]), f(fa[1]), fa[2]),
                 f(self.seconds, 1)]
        return cells, cov.mean(), size.mean()


methods = {k: Method(k) for k in [
    "jackknife+ LAC (audit)", "jackknife+ APS (audit)", "split LAC", "split APS", "MC dropout",
    "jackknife+ LAC, no early stopping (audit)", "split LAC, no early stopping"]}
epochs = []
n_cal = 0
stat, infl = {}, {}
for d in runs:
    base = json.load(open(os.path.join(d, "baselines.json")))
    name = os.path.basename(d)
    epochs.append(base["epochs"])
    n_cal += base["calibration_labels"]
    aud = {}
    for kind in ["lac", "aps", "full_lac"]:
        r = json.load(open(os.path.join(d, kind + ".json")))
        if kind != "aps":
            stat.setdefault(kind, []).append(r["diagnostics"]["stationarity_ratio"])
            infl.setdefault(kind, []).append(np.median(r["diagnostics"]["influence_norms"]))
        aud[kind] = {(s["id"], st["t"]): st for s in r["sequences"] for st in s["steps"]}
    for kind, m in [("lac", "jackknife+ LAC (audit)"), ("aps", "jackknife+ APS (audit)"),
                    ("full_lac", "jackknife+ LAC, no early stopping (audit)")]:
        methods[m].seconds += times["%s_%s" % (name, kind)]
    methods["MC dropout"].seconds += base["dropout_train_seconds"] + base["dropout_sample_seconds"]
    for fc in base["forecasts"]:
        key = (str(fc["id"]), fc["t"])
        y = fc["y"]
        for kind, m in [("lac", "jackknife+ LAC (audit)"), ("aps", "jackknife+ APS (audit)"),
                        ("full_lac", "jackknife+ LAC, no early stopping (audit)")]:
            st = aud[kind][key]
            assert st["target"] == y, (d, key)
            methods[m].add(y, st["probability"], st["set"], st["prob_lower"], st["prob_upper"], fc["t"])
        st, sf = aud["lac"][key], aud["full_lac"][key]
        methods["split LAC"].add(y, st["probability"], fc["split_lac"], st["prob_lower"], st["prob_upper"], fc["t"])
        methods["split APS"].add(y, st["probability"], fc["split_aps"], st["prob_lower"], st["prob_upper"], fc["t"])
        methods["split LAC, no early stopping"].add(y, sf["probability"], fc["full_split_lac"], sf["prob_lower"],
                                                   sf["prob_upper"], fc["t"])
        methods["MC dropout"].add(y, fc["mc_p"], fc["mc_set"], fc["mc_lower"], fc["mc_upper"], fc["t"])
        # The split kinds' probability agrees with the audit's (PyTorch float32 against the audit's float64).
        assert abs(st["probability"] - fc["p"]) < 1e-4, (d, key, st["probability"], fc["p"])

n_test = len(methods["split LAC"].y)
prev = np.mean(methods["split LAC"].y)
print("MASS's `bacteria` (bacteria.csv, exported by bacteria.R; bacteria.py): H. influenzae present (1) or not "
      "(0) at weeks 0, 2, 4, 6 and 11 in 50 children, 220 tests (%.0f%% positive), a missed visit a row with an "
      "empty target. Features per step: week, drug, encouragement, low compliance, the last observed label. "
      "%d runs: each fold of 10 children is the test set once per repeat, the other 40 split at random into 24 "
      "training, 6 validation (early stopping) and 10 calibration children; %d test forecasts pooled, "
      "%d calibration labels in all. GRU(8) + linear head, a logit trained with BCEWithLogitsLoss, Adam "
      "(lr 0.01, weight_decay 1e-3), float32, full batch, early stopping (patience 50; stopped at epochs %d to %d, "
      "median %d), exported with a dynamic batch axis only; audited with `--loss bce-logits --ridge "
      "weight_decay x N`. Split conformal on the same model's PyTorch probabilities; MC dropout: the same GRU with "
      "dropout 0.2 before the head, 200 samples at test time, its set the smallest whose mean probability is "
      ">= 0.9, its interval the samples' 5-95%% quantiles. alpha = 0.1.\n" % (
          100 * prev, len(runs), n_test, n_cal, min(epochs), max(epochs), int(np.median(epochs)))) 

print("| sets | coverage | mean size | size vs split LAC | singletons | coverage, label 0 | coverage, label 1 "
      "| Brier | ECE | flag >0.7 precision / recall (flagged) | seconds, all runs |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|")
summary = {}
for key, ref in [("jackknife+ LAC (audit)", "split LAC"), ("jackknife+ APS (audit)", "split LAC"),
                 ("split LAC", "split LAC"), ("split APS", "split LAC"), ("MC dropout", "split LAC"),
                 ("jackknife+ LAC, no early stopping (audit)", "split LAC, no early stopping"),
                 ("split LAC, no early stopping", "split LAC, no early stopping")]:
    ref_size = np.mean([len(s) for s in methods[ref].sets])
    cells, cov, size = methods[key].row(ref_size)
    summary[key] = (cov, size, ref_size)
    print("| " + " | ".join(cells) + " |")
print()


def records(path):
    """{id: the steps and features of the sequence} of a long CSV."""
    out = {}
    for r in csv.DictReader(open(path)):
        out.setdefault(r["id"], []).append(tuple(v for k, v in r.items() if k not in ("id", "y")))
    return {k: tuple(v) for k, v in out.items()}


repeats = []
for d in runs:
    train_recs = set(records(os.path.join(d, "train.csv")).values())
    repeats.append(sum(v in train_recs for v in records(os.path.join(d, "cal.csv")).values()))
print("Split conformal is computed here, not by the audit's --calibration: children with the same treatment, "
      "compliance and test results have identical records, and the audit refuses a calibration sequence whose "
      "steps and features repeat a training sequence's (a guard against a calibration set copied from the "
      "training data), which %d to %d of the 10 calibration children do in each run.\n" % (min(repeats), max(repeats)))
print("Size vs split LAC compares with split LAC on the same model (the early-stopped one, or the one trained "
      "without early stopping for the last two rows). Split conformal's seconds are not counted (a quantile of "
      "the calibration scores); MC dropout's are its training and sampling; the audits' their wall time under "
      "the machine's load. Brier and ECE of the split rows are the same model's as the audit's.\n")
cov, size, ref = summary["jackknife+ LAC (audit)"]
print("Criterion on this task, jackknife+ LAC of the early-stopped model: coverage %s >= 0.88: %s; "
      "mean size %s <= split LAC's %s + 5%%: %s." % (
          f(cov), "met" if cov >= 0.88 else "NOT met", f(size), f(ref), "met" if size <= 1.05 * ref else "NOT met"))
cov, size, ref = summary["jackknife+ LAC, no early stopping (audit)"]
print("Without early stopping: coverage %s (%s), mean size %s against split LAC's %s (%s).\n" % (
    f(cov), "met" if cov >= 0.88 else "NOT met", f(size), f(ref), "met" if size <= 1.05 * ref else "NOT met"))

# Coverage per step of the jackknife+ LAC sets and of split LAC.
print("Coverage per visit (jackknife+ LAC of the early-stopped model / split LAC / MC dropout):\n")
print("| visit | week | forecasts | jackknife+ LAC | split LAC | MC dropout |")
print("|--:|--:|--:|--:|--:|--:|")
for t, w in zip(range(1, 6), [0, 2, 4, 6, 11]):
    cells = []
    for key in ["jackknife+ LAC (audit)", "split LAC", "MC dropout"]:
        m = methods[key]
        c = [yy in s for yy, s, tt in zip(m.y, m.sets, m.t) if tt == t]
        cells.append(f(np.mean(c)))
    print("| %d | %d | %d | %s |" % (t, w, sum(1 for tt in methods["split LAC"].t if tt == t), " | ".join(cells)))
print()
# Probability intervals: width (no true probability on real data).
for key in ["jackknife+ LAC (audit)", "jackknife+ LAC, no early stopping (audit)", "MC dropout"]:
    m = methods[key]
    w = np.mean(np.array(m.up) - np.array(m.lo))
    print("- %s: mean width of the 90%% probability intervals %s." % (key.replace(" LAC", "").replace(" (audit)", ""), f(w)))
print()
print("Stationarity ratio |grad L| / median |g_b| (docs/design.md, section 4.4), median over the runs: %s for "
      "the early-stopped models, %s trained without early stopping; median influence norm |theta_-b - theta| "
      "%s against %s. Early stopping leaves the model far from a stationary point of the penalised loss, in "
      "directions of small curvature that only the ridge bounds: the Newton estimates of the leave-one-child-out "
      "models move too far along them, the jackknife+ sets grow and over-cover (compare the last two rows of the "
      "table: the same architecture trained to a stationary point).\n" % (
          f(np.median(stat["lac"]), 2), f(np.median(stat["full_lac"]), 2),
          f(np.median(infl["lac"]), 2), f(np.median(infl["full_lac"]), 2)))
