#!/usr/bin/python3
"""Tables of benchmarks/classification/run_multiclass.sh from the audits'
JSON reports of the 3-class sequence task (multiclass.py).

usage: analyze_multiclass.py WORKDIR TRUTH.csv   (prints Markdown)
"""
import csv
import json
import os
import sys

work, truth_file = sys.argv[1], sys.argv[2]
truth = {r["id"]: [float(r["p0"]), float(r["p1"]), float(r["p2"])] for r in csv.DictReader(open(truth_file))}
times = dict(line.split() for line in open(os.path.join(work, "times.txt")))


def load(name):
    path = os.path.join(work, name + ".json")
    return json.load(open(path)) if os.path.exists(path) else None


def f(x, d=3):
    return "n/a" if x is None else ("%.*f" % (d, x))


def forecasts(r):
    for s in r["sequences"]:
        for st in s["steps"]:
            if "probabilities" in st:
                yield s["id"], st


def truth_cover(r):
    """Share of (forecast, class) pairs whose interval holds the true
    probability, the share of forecasts whose K intervals all hold it, the
    mean width and the mean |p - true p|."""
    n = c = call = 0
    w = err = 0.0
    for sid, st in forecasts(r):
        p = truth[sid]
        inside = [st["prob_lower"][k] <= p[k] <= st["prob_upper"][k] for k in range(3)]
        n += 1
        c += sum(inside)
        call += all(inside)
        w += sum(st["prob_upper"][k] - st["prob_lower"][k] for k in range(3)) / 3
        err += sum(abs(st["probabilities"][k] - p[k]) for k in range(3)) / 3
    return c / (3 * n), call / n, w / n, err / n


lac = load("mc_lac")
split_lac_size = lac["classification"]["split_conformal_sets"]["mean_size"] if lac else None
print("Synthetic 3-class sequence task (multiclass.py): %s; one label per sequence on its last row; "
      "alpha = 0.1. Jackknife+ sets need no calibration set; split conformal uses the 300 calibration "
      "sequences on the same model (its LAC sets are the reference of the size criterion).\n" % open(os.path.join(work, "task.txt")).read().strip())
print("| audit | jackknife+ coverage | mean size | singletons | empty | split coverage | split size "
      "| size vs split LAC | P(true p_k in interval) | all 3 in | interval width | mean abs(p_k - true p_k) "
      "| Brier | log loss | ECE (top label) | seconds |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
checks = []
for name in ["mc_lac", "mc_aps", "mc_raps"]:
    r = load(name)
    if r is None:
        continue
    c = r["classification"]
    jk, sp = c["jackknife_sets"], c["split_conformal_sets"]
    tc, tall, tw, terr = truth_cover(r)
    rel = jk["mean_size"] / split_lac_size - 1
    print("| %s | %s | %s | %s | %s | %s | %s | %+.1f%% | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        name, f(jk["coverage"]), f(jk["mean_size"]), f(jk["singleton_share"]), f(jk["empty_share"]),
        f(sp["coverage"]), f(sp["mean_size"]), 100 * rel, f(tc), f(tall), f(tw), f(terr),
        f(c["brier"]), f(c["log_loss"]), f(c["ece"]), f(float(times[name]), 1)))
    checks.append("- %s: coverage %s, size %s, probability intervals %s" % (
        name, "met" if jk["coverage"] >= 0.88 else "NOT met", "met" if rel < 0.05 else "NOT met",
        "met" if tc >= 0.80 else "NOT met (%.3f)" % tc))
print("\nCriteria (issue 32) per audit: jackknife+ set coverage >= 0.88; mean set size below split LAC's + 5%; "
      "probability intervals hold the true probability for >= 80% of (forecast, class) pairs.\n")
print("\n".join(checks))
if lac:
    jk = lac["classification"]["jackknife_sets"]
    print("\nBy true class (jackknife+ LAC): " + ", ".join(
        "class %d: coverage %s, mean size %s (n = %d)" % (x["key"], f(x["coverage"]), f(x["mean_size"]), x["n"]) for x in jk["by_class"] if x["n"]) + ".")
    print("By set size: " + ", ".join(
        "size %d: coverage %s (n = %d)" % (x["key"], f(x["coverage"]), x["n"]) for x in jk["by_size"] if x["n"]) + ".")
    d = lac["diagnostics"]
    print("\nStationarity of the trained model: the total gradient is %.1f times the median block gradient (early stopping); "
          "estimator %s." % (d["stationarity_ratio"], lac["settings"].get("estimator", "?")))
rows = []
for name, what in [("mc_retrain", "3-class classifier, early-stopped (the audited model)"),
                   ("mc_polished", "3-class classifier carried on to a stationary point by L-BFGS"),
                   ("mc_retrain_regression", "regression (examples/synthetic model_small)")]:
    r = load(name)
    if r is None or "retrain" not in r:
        continue
    x = r["retrain"]
    nr = [v for v in x["norm_ratio"] if v is not None]
    rows.append("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |" % (
        what, x["estimator"], len(x["blocks"]), x["not_converged"], f(x["mean_cosine"]), f(x["min_cosine"]),
        f(sum(nr) / len(nr)) if nr else "n/a", f(x["prediction_change_correlation"]), f(x["exact_coverage"]),
        f(x["influence_coverage"])))
if rows:
    print("\nExact re-training of 4 blocks (`--retrain 4 --retrain-budget 4m`) against the influence estimates "
          "(cosine of the parameter changes, the ratio of their norms influence/exact, the correlation of the "
          "prediction changes at the test points):\n")
    print("| model | estimator | blocks | not converged | mean cosine | min cosine | mean norm ratio "
          "| prediction-change correlation | exact coverage | influence coverage |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for row in rows:
        print(row)
    pol = load("mc_polished")
    if pol:
        c = pol["classification"]
        tc, tall, tw, terr = truth_cover(pol)
        note = open(os.path.join(work, "polished.txt")).read().strip()
        print("\nThe polished model (%s; stationarity ratio %.1f) audited alike: jackknife+ LAC coverage %s, mean size %s "
              "(split LAC %s, %s); P(true p_k in interval) %s, interval width %s, mean abs(p_k - true p_k) %s, Brier %s, log loss %s." % (
                  note, pol["diagnostics"]["stationarity_ratio"], f(c["jackknife_sets"]["coverage"]), f(c["jackknife_sets"]["mean_size"]),
                  f(c["split_conformal_sets"]["coverage"]), f(c["split_conformal_sets"]["mean_size"]), f(tc), f(tw), f(terr),
                  f(c["brier"]), f(c["log_loss"])))
