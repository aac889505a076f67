#!/usr/bin/python3
"""Audit the clinical benchmark's GRUs and write RESULTS.md (the paper's Table 2 protocol).

For each data set of models.json (train.py) it runs the audit binary
with the calibration set (--calibration, --shift 1, --ridge w N, the
abnormal-range thresholds) and reads from its JSON report, for every
kind of interval (jackknife+ with the default estimator, conformalized
jackknife+, split conformal, Bonferroni, in-sample, normalised split
conformal), the test coverage,
mean width, unbounded count and the precision and recall of the flags
"next value above HIGH" (upper limit above it) and "below LOW" (lower
limit below it), plus the kind the audit recommends, chosen on the
calibration values. Beside them, the paper's baselines with the same
GRU: CF-RNN, computed here from the trained model's forecasts
(preds/<name>.json): split conformal with one quantile pooled over all
positions, ceil((1 - alpha)(n + 1))-th smallest of the n calibration
|residuals|; MQ-RNN (quantile heads) and DP-RNN (Monte Carlo dropout),
trained by baselines.py (preds/<name>_baselines.json). The table has the
paper's Table 2 layout: RMSE, coverage, width and the precision and
recall of the flags raised by the lower and by the upper limit.

The tolerance on coverage accounts for the number of test patients and
the correlation of values within a patient: the cluster-robust standard
error sqrt(sum_i (c_i - p m_i)^2) / N (c_i covered and m_i values of
patient i, N values, p = 0.9), two of them. Where the audit recommends
a kind, the Done-when criteria of the issue are checked: coverage within
that tolerance of 90%, mean width at most 1.1 times the pooled baseline's,
no unbounded interval, the precision of each flag at least the
baseline's.

Run:  /usr/bin/python3 benchmarks/clinical/run.py --bin /tmp/audit
"""

import argparse
import json
import math
import os
import subprocess

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ALPHA = 0.1
# Abnormal ranges: quinidine's therapeutic range is 2-5 mg/L (above 5:
# toxicity risk); phenobarbital's 15-40 ug/mL in neonates.
# Calibration pooling: the default Mondrian groups of steps (docs/design.md,
# section 6.5); no --calibration-pool is given.
POOLS = [0]
THRESHOLDS = {"quinidine": (2.0, 5.0), "phenobarb": (15.0, 40.0)}


def flags(y, lo, up, low, high):
    out = {}
    for side, thr in (("low", low), ("high", high)):
        real = (y < thr) if side == "low" else (y > thr)
        flag = (lo < thr) if side == "low" else (up > thr)
        tp = int(np.sum(flag & real))
        out[side] = {"precision": tp / flag.sum() if flag.sum() else float("nan"), "recall": tp / real.sum() if real.sum() else float("nan")}
    return out


def baseline(preds, low, high):
    cal = np.array([abs(y - p) for _, _, y, p in preds["cal"]])
    n = len(cal)
    k = math.ceil((1 - ALPHA) * (n + 1))
    q = np.sort(cal)[k - 1] if k <= n else float("inf")
    ids = [s for s, _, _, _ in preds["test"]]
    y = np.array([v for _, _, v, _ in preds["test"]])
    p = np.array([v for _, _, _, v in preds["test"]])
    cov = (np.abs(y - p) <= q)
    out = {"kind": "CF-RNN (split conformal pooled over positions)", "coverage": float(cov.mean()), "width": 2 * q, "unbounded": 0,
           "rmse": float(np.sqrt(np.mean((y - p) ** 2))), "points": len(y), "tolerance": tolerance(ids, cov)}
    out.update(flags(y, p - q, p + q, low, high))
    return out


def model_baselines(path, low, high):
    """MQ-RNN and DP-RNN rows from baselines.py's test forecasts."""
    with open(path) as f:
        b = json.load(f)
    out = []
    for key, kind in (("mq", "MQ-RNN (quantile heads)"), ("dp", "DP-RNN (MC dropout, mean +- z sd)")):
        ids = [r[0] for r in b[key]]
        y, lo, p, up = (np.array([r[i] for r in b[key]]) for i in (2, 3, 4, 5))
        cov = (lo <= y) & (y <= up)
        row = {"kind": kind, "coverage": float(cov.mean()), "width": float(np.mean(up - lo)), "unbounded": 0,
               "rmse": float(np.sqrt(np.mean((y - p) ** 2))), "points": len(y), "tolerance": tolerance(ids, cov)}
        row.update(flags(y, lo, up, low, high))
        out.append(row)
    return out


def tolerance(ids, covered):
    p = 1 - ALPHA
    N = len(covered)
    by = {}
    for i, c in zip(ids, covered):
        by.setdefault(i, []).append(c)
    var = sum((sum(v) - p * len(v)) ** 2 for v in by.values()) / N ** 2
    return 2 * math.sqrt(var), len(by)


def kind_limits(rep, kind):
    """Per labelled test value: (patient, y, lower, upper) under a kind."""
    keys = {"jackknife_plus": ("lower", "upper"), "conformal_jackknife_plus": ("conformal_jackknife_lower", "conformal_jackknife_upper"),
            "split_conformal": ("split_lower", "split_upper"), "in_sample": ("naive_lower", "naive_upper"),
            "split_conformal_bonferroni": ("bonferroni_lower", "bonferroni_upper"),
            "normalised_split_conformal": ("normalised_lower", "normalised_upper")}[kind]
    out = []
    for s in rep["sequences"]:
        for st in s["steps"]:
            if st.get("target") is None:
                continue
            lo, up = st.get(keys[0]), st.get(keys[1])
            out.append((s["id"], st["target"], -math.inf if lo is None else lo, math.inf if up is None else up))
    return out


def audit(binary, name, facts, low, high, pool):
    out = os.path.join(HERE, "runs", "%s_pool%d.json" % (name, pool))
    d = os.path.join(HERE, "data")
    cmd = [binary, "--model", os.path.join(HERE, "models", name + ".onnx"), "--data", os.path.join(d, name + "_train.csv"),
           "--test", os.path.join(d, name + "_test.csv"), "--calibration", os.path.join(d, name + "_cal.csv"),
           "--shift", "1", "--ridge", "%g" % facts["ridge"], "--low", "%g" % low, "--high", "%g" % high, "--json", out, "--quiet"]
    if pool:
        cmd[-3:-3] = ["--calibration-pool", str(pool)]
    subprocess.run(cmd, check=True)
    with open(out) as f:
        return json.load(f), " ".join(["audit"] + [os.path.relpath(c, os.path.join(HERE, "../..")) if os.path.isabs(c) else c for c in cmd[1:]])


def pct(x):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else "%.1f%%" % (100 * x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    os.makedirs(os.path.join(HERE, "runs"), exist_ok=True)
    with open(os.path.join(HERE, "models.json")) as f:
        models = json.load(f)
    lines = ["# benchmarks/clinical: RESULTS", "",
             "Written by `benchmarks/clinical/run.sh` (train.py, then run.py). The paper's Table 2 protocol on nlme's",
             "Quinidine and Phenobarb (Debian r-cran-nlme): patients split into train/calibration/test, a GRU",
             "trained with Adam on padded mini-batches, weight decay and early stopping; 90% intervals",
             "(alpha 0.1) for each patient's next concentration. The paper's Table 2 layout: BJ-RNN is the audit",
             "(jackknife+ with the default Newton estimator, and the kinds a calibration set adds, with the default",
             "Mondrian groups of steps, docs/design.md section 6.5); CF-RNN, MQ-RNN and DP-RNN use the same GRU",
             "(baselines.py). A flag is raised when the interval's lower limit is below the low threshold, or its",
             "upper limit above the high one; precision and recall are over the test values.", ""]
    summary = {}
    for (name, facts), pool in [(nf, p) for nf in models.items() for p in POOLS]:
        low, high = THRESHOLDS[name]
        rep, cmd = audit(args.bin, name, facts, low, high, pool)
        with open(os.path.join(HERE, "preds", name + ".json")) as f:
            base = baseline(json.load(f), low, high)
        c = rep["conformal"]
        rec = (c.get("recommendation") or {}).get("kind")
        pt = facts["patients"]
        lines += ["## %s%s" % (name, ", --calibration-pool %d" % pool if pool else ""), "",
                  "%d training patients (%d loss terms; %d more for early stopping), %d calibration, %d test; GRU of %d parameters, best epoch %d of %d run (patience 30), training RMSE %.3f, test RMSE %.3f." % (
                      pt["train"], facts["loss_terms"], pt["validation"], pt["calibration"], pt["test"], facts["parameters"], facts["best_epoch"], facts["epochs_run"], facts["train_rmse"], rep["summary"]["rmse"]),
                  "", "    " + cmd, "",
                  "| method | RMSE | coverage | tolerance | mean width | unbounded | below %g: precision | recall | above %g: precision | recall |" % (low, high),
                  "|---|---|---|---|---|---|---|---|---|---|"]
        rows = {}
        rmse = rep["summary"]["rmse"]
        for k in c["kinds"]:
            lim = kind_limits(rep, k["kind"])
            ids = [i for i, _, _, _ in lim]
            cov = np.array([lo <= y <= up for _, y, lo, up in lim])
            tol, npat = tolerance(ids, cov)
            a = k["audit"]
            row = {"coverage": k["coverage"], "tolerance": tol, "width": k["mean_length"], "unbounded": k["infinite_intervals"],
                   "low": a.get("low") or {}, "high": a.get("high") or {}, "points": len(lim), "patients": npat}
            rows[k["kind"]] = row
            mark = " (recommended)" if k["kind"] == rec else ""
            lines.append("| BJ-RNN %s%s | %.3f | %s | ±%s | %s | %d of %d | %s | %s | %s | %s |" % (
                k["kind"], mark, rmse, pct(k["coverage"]), pct(tol), "%.3f" % k["mean_length"] if k["mean_length"] is not None else "–",
                k["infinite_intervals"], len(lim), pct(row["low"].get("precision")), pct(row["low"].get("recall")),
                pct(row["high"].get("precision")), pct(row["high"].get("recall"))))
        for b in [base] + model_baselines(os.path.join(HERE, "preds", name + "_baselines.json"), low, high):
            tol, _ = b["tolerance"]
            lines.append("| %s | %.3f | %s | ±%s | %.3f | 0 of %d | %s | %s | %s | %s |" % (b["kind"], b["rmse"], pct(b["coverage"]), pct(tol), b["width"], b["points"],
                         pct(b["low"]["precision"]), pct(b["low"]["recall"]), pct(b["high"]["precision"]), pct(b["high"]["recall"])))
        npat = rows[c["kinds"][0]["kind"]]["patients"]
        binom = 2 * math.sqrt(0.09 / base["points"])
        lines += ["", "Tolerance: two cluster-robust standard errors of the coverage over the %d test patients, "
                  "sqrt(sum_i (c_i - 0.9 m_i)^2) / N with c_i covered of patient i's m_i values (%d values; a patient's values are correlated, "
                  "so it differs from the binomial %s that treats them as independent%s)." % (
                      npat, base["points"], pct(binom),
                      "; for the recommended kind the design effect is %.2f" % ((rows[rec]["tolerance"] / binom) ** 2) if rec else "")]
        bey = rep["summary"].get("beyond") or {}
        if bey.get("labelled"):
            lines += ["The audit's coverage and widths leave out the %d labelled test values forecast past every training patient's last visit "
                      "(docs/design.md, section 5.6: no leave-one-out residual there); the baselines count all %d." % (bey["labelled"], base["points"])]
        lines += ["", "Recommendation: " + ((c.get("recommendation") or {}).get("text") or "none"), ""]
        if rec:
            r = rows[rec]
            def prec_ok(side):
                mine, theirs = r[side].get("precision"), base[side]["precision"]
                if theirs is None or math.isnan(theirs):
                    return True  # the baseline flags nothing: no precision to match
                return mine is not None and not math.isnan(mine) and mine >= theirs - 1e-12
            checks = [("coverage within tolerance of 90%% (%s ±%s)" % (pct(r["coverage"]), pct(r["tolerance"])), abs(r["coverage"] - 0.9) <= r["tolerance"] or r["coverage"] >= 0.9),
                      ("mean width <= 1.1 x pooled baseline (%.3f vs %.3f: %.2fx)" % (r["width"], base["width"], r["width"] / base["width"]), r["width"] <= 1.1 * base["width"]),
                      ("no unbounded interval", r["unbounded"] == 0),
                      ("below-%g flag precision >= baseline's (%s vs %s)" % (low, pct(r["low"].get("precision")), pct(base["low"]["precision"])), prec_ok("low")),
                      ("above-%g flag precision >= baseline's (%s vs %s)" % (high, pct(r["high"].get("precision")), pct(base["high"]["precision"])), prec_ok("high"))]
            lines += ["Done-when checks for the recommended kind (%s):" % rec, ""] + ["- %s: %s" % (t, "met" if ok else "NOT met") for t, ok in checks] + [""]
            summary[name + (" pool %d" % pool if pool else "")] = dict(zip(("coverage", "width", "bounded", "low_precision", "high_precision"), (bool(ok) for _, ok in checks)))
        jk = rows.get("jackknife_plus")
        if jk and rec and rows[rec]["width"]:
            lines += ["Jackknife+ (default estimator) is %.1f times the width of the recommended kind; the audit's damping sensitivity: %s." % (
                jk["width"] / rows[rec]["width"], json.dumps(rep["diagnostics"].get("damping_sensitivity"))), ""]
    with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
