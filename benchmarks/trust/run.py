#!/usr/bin/python3
"""Audit the trust benchmark's models correctly and with each usual mistake.

For every model of models.json (train.py) it runs the audit binary on
data/train.csv and data/test.csv with the right flags (--shift 1, --ridge
w N) and with each mistake: swapped features, a forgotten --shift, PyTorch's
weight_decay passed straight through as --ridge, no ridge, a ridge 100
times too large; and once on data/test_long.csv (test sequences longer
than every training sequence). From each JSON report it takes the
verdict, the pooled coverage and mean width, the oracle width (twice the
90% quantile of the test |errors| per step, averaged: the narrowest
interval that covers 90% at every step), the stationarity ratio, the
column check (training RMSE as given and the best alternative), the ridge
check and the damping sensitivity, and writes RESULTS.md.

Run:  /usr/bin/python3 benchmarks/trust/run.py --bin /tmp/audit
"""

import argparse
import collections
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def cases(facts):
    R = facts["ridge"]
    w = facts["weight_decay"]
    out = [("correct", ["--shift", "1", "--ridge", "%g" % R]),
           ("swapped features", ["--shift", "1", "--ridge", "%g" % R, "--features", "b,a"]),
           ("forgotten --shift", ["--ridge", "%g" % R])]
    if w > 0:
        out.append(("weight_decay as --ridge", ["--shift", "1", "--ridge", "%g" % w]))
        out.append(("no --ridge", ["--shift", "1"]))
    out.append(("ridge x100", ["--shift", "1", "--ridge", "%g" % (100 * max(R, 0.38))]))
    return out


def oracle(rep):
    res = collections.defaultdict(list)
    for q in rep["sequences"]:
        for st in q["steps"]:
            if st.get("target") is not None and st.get("lower") is not None and st.get("upper") is not None:
                res[st["t"]].append(abs(st["target"] - st["prediction"]))
    return float(np.mean([2 * np.quantile(v, 0.9) for v in res.values()]))


def run(binary, model, test, flags, out):
    if os.path.exists(out) and os.path.getmtime(out) > os.path.getmtime(binary):
        with open(out) as f:  # cached: made by this binary
            return json.load(f)
    cmd = [binary, "--model", model, "--data", os.path.join(HERE, "data", "train.csv"),
           "--test", test, "--json", out, "--quiet"] + flags
    subprocess.run(cmd, check=True)
    with open(out) as f:
        return json.load(f)


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    with open(os.path.join(HERE, "models.json")) as f:
        facts = json.load(f)
    os.makedirs(os.path.join(HERE, "runs"), exist_ok=True)
    rows = []
    for name in sorted(facts):
        if args.only and name not in args.only.split(","):
            continue
        model = os.path.join(HERE, "models", name + ".onnx")
        runs = [(c, fl, os.path.join(HERE, "data", "test.csv")) for c, fl in cases(facts[name])]
        runs.append(("test longer than training", ["--shift", "1", "--ridge", "%g" % facts[name]["ridge"]],
                     os.path.join(HERE, "data", "test_long.csv")))
        for case, flags, test in runs:
            out = os.path.join(HERE, "runs", "%s_%s.json" % (name, case.replace(" ", "_").replace("-", "")))
            rep = run(args.bin, model, test, flags, out)
            s, d = rep["summary"], rep["diagnostics"]
            fit, ds = d.get("fit") or {}, d.get("damping_sensitivity") or {}
            alts = fit.get("alternatives") or []
            best = min(alts, key=lambda a: a["rmse"]) if alts else None
            beyond = s.get("beyond") or {}
            row = {
                "model": name, "case": case, "flags": " ".join(flags),
                "verdict": rep["verdict"]["level"],
                "reasons": ",".join(r["code"] for r in rep["verdict"]["reasons"]),
                "coverage": s["coverage"], "width": s["mean_length"], "oracle": oracle(rep),
                "stationarity": d["stationarity_ratio"], "damping": rep["settings"]["damping"],
                "rmse_given": fit.get("rmse"), "rmse_best_alt": best["rmse"] if best else None,
                "best_alt": best["flags"] if best else "",
                "fitted_ridge": fit.get("fitted_ridge"), "ridge_gain": (fit["fitted_gradient_norm"] / fit["gradient_norm"]) if fit.get("gradient_norm") else None,
                "width_low": (ds.get("low") or {}).get("mean_length"), "width_high": (ds.get("high") or {}).get("mean_length"),
                "beyond": beyond.get("labelled", 0),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    lines = ["| model | case | verdict | coverage | width / oracle | stationarity | damping ρ | train RMSE given / best other (flags) | ridge fit (gradient ×) | width at ρ/10, ρ×10 | beyond training |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        sens = "n/a"
        if r["width_low"] is not None:
            sens = "%+.0f%%, %+.0f%%" % (100 * (r["width_low"] / r["width"] - 1), 100 * (r["width_high"] / r["width"] - 1))
        lines.append("| %s | %s | %s | %.1f%% | %.3f / %.3f | %.3g | %.3g | %s / %s (%s) | %s (%s) | %s | %d |" % (
            r["model"], r["case"], r["verdict"], 100 * r["coverage"], r["width"], r["oracle"], r["stationarity"], r["damping"],
            fmt(r["rmse_given"], ".3f"), fmt(r["rmse_best_alt"], ".3f"), r["best_alt"],
            fmt(r["fitted_ridge"], ".3g"), fmt(r["ridge_gain"], ".2f"), sens, r["beyond"]))
    with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
        f.write("# Trust benchmark\n\nMade by `benchmarks/trust/run.sh` (see README.md).\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
