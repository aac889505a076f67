#!/usr/bin/python3
"""Tables of benchmarks/classification/run.sh from the audits' JSON reports.

usage: analyze.py WORKDIR TRUTH.csv   (prints Markdown)
"""
import csv
import json
import os
import sys

work, truth_file = sys.argv[1], sys.argv[2]
truth = {(r["id"], int(r["t"])): float(r["p"]) for r in csv.DictReader(open(truth_file))}
times = dict(line.split() for line in open(os.path.join(work, "times.txt")))


def load(name):
    path = os.path.join(work, name + ".json")
    return json.load(open(path)) if os.path.exists(path) else None


def f(x, d=3):
    return "n/a" if x is None else ("%.*f" % (d, x))


def truth_cover(r):
    n = c = 0
    w = err = 0.0
    for s in r["sequences"]:
        for st in s["steps"]:
            p = truth[(s["id"], int(st["t"]))]
            n += 1
            c += st["prob_lower"] <= p <= st["prob_upper"]
            w += st["prob_upper"] - st["prob_lower"]
            err += abs(st["probability"] - p)
    return c / n, w / n, err / n


print("Synthetic per-step binary task (make.py): 600 training sequences of 12 steps, "
      "2,400 test labels, 200 calibration sequences; a GRU trained with Adam in float32; "
      "alpha = 0.1. Jackknife+ sets need no calibration set; split conformal LAC uses the "
      "calibration set on the same model.\n")
print("| audit | jackknife+ coverage | mean size | singletons | empty | split LAC coverage | split LAC size "
      "| size vs split LAC | P(true p in interval) | interval width | mean abs(p - true p) | Brier | ECE | AUROC "
      "| flag >0.7 precision / recall | seconds |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|")
checks = []
for name in ["logits_lac", "logits_aps", "logits_raps", "prob_lac"]:
    r = load(name)
    if r is None:
        continue
    c = r["classification"]
    jk, sp = c["jackknife_sets"], c["split_conformal_sets"]
    tc, tw, te = truth_cover(r)
    fa = c["flag_above"]
    ratio = jk["mean_size"] / sp["mean_size"]
    print("| %s | %s | %s | %s | %s | %s | %s | %+.1f%% | %s | %s | %s | %s | %s | %s | %s / %s | %s |" % (
        name, f(jk["coverage"]), f(jk["mean_size"]), f(jk["singleton_share"]), f(jk["empty_share"]),
        f(sp["coverage"]), f(sp["mean_size"]), 100 * (ratio - 1), f(tc), f(tw), f(te), f(c["brier"]),
        f(c["ece"]), f(c["auroc"]), f(fa["precision"]), f(fa["recall"]), f(float(times[name]), 1)))
    checks.append((name, jk["coverage"] >= 0.88, ratio <= 1.05, tc >= 0.80))
print()
print("Criteria per audit: jackknife+ set coverage >= 0.88; mean set size <= split "
      "LAC's + 5%; probability intervals hold the true probability for >= 80% of forecasts.\n")
for name, a, b, c in checks:
    print("- %s: coverage %s, size %s, probability intervals %s" % (
        name, "met" if a else "NOT met", "met" if b else "NOT met", "met" if c else "NOT met"))
print()
r = load("logits_lac")
if r is not None:
    c = r["classification"]
    print("By true class (jackknife+ LAC, bce-logits): " + ", ".join(
        "class %d: coverage %s, mean size %s (n = %d)" % (x["key"], f(x["coverage"]), f(x["mean_size"]), x["n"])
        for x in c["jackknife_sets"]["by_class"]) + ".")
    print("By set size: " + ", ".join(
        "size %d: coverage %s (n = %d)" % (x["key"], f(x["coverage"]), x["n"])
        for x in c["jackknife_sets"]["by_size"] if x["n"]) + ".\n")
rows = []
for name, what in [("retrain_class", "classifier (bce-logits)"), ("retrain_regression", "regression (examples/synthetic model_small)")]:
    r = load(name)
    if r is None or "retrain" not in r:
        continue
    x = r["retrain"]
    rows.append("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
        what, len(x["blocks"]), x["not_converged"], f(x["mean_cosine"]), f(x["min_cosine"]),
        f(x["prediction_change_correlation"]), f(x["exact_coverage"]), f(x["influence_coverage"]),
        f(x["exact_mean_length"]), f(x["influence_mean_length"])))
if rows:
    print("Exact re-training of 4 blocks (`--retrain 4 --retrain-budget 4m`) against the Newton estimates:\n")
    print("| model | blocks | not converged | mean cosine | min cosine | prediction-change correlation "
          "| exact coverage | influence coverage | exact mean length | influence mean length |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for row in rows:
        print(row)
    print()
print("The 3-class sequence task (softmax-ce) has its own script and results: run_multiclass.sh, MULTICLASS.md.")
