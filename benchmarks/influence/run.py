#!/usr/bin/python3
"""Audit every model of the zoo with every estimator x curvature the audit
binary accepts and tabulate coverage, width against oracles, agreement with
exact re-training and time (RESULTS.md, results.json).

Called by run.sh (which builds the binary and the zoo first):

    /usr/bin/python3 benchmarks/influence/run.py --bin PATH [--retrain N]
        [--retrain-budget D] [--only MODEL,...]

Runs are cached in benchmarks/influence/runs/ (not committed) under a hash
of the binary's bytes, the model, the data and the flags: a re-run with the
same binary reads them back; a new binary re-runs everything.

Configurations, for each estimator the binary knows (--estimator newton /
infinitesimal; a binary without the flag has only the paper's infinitesimal
jackknife): curvature hessian and gauss-newton at the binary's default
damping (with --retrain), and both at damping 1e-6 (today's default, the
paper-scale setting; without re-training) when that is not already the
default.
"""

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time
from statistics import NormalDist

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUNS = os.path.join(HERE, "runs")
LOO = os.path.join(HERE, "loo.json")
NOISE_SD = lambda t: 0.1 * t  # noqa: E731  generate.py's "linear" profile (sd 0.1 t)
ESTIMATORS = ["infinitesimal", "newton"]
# (curvature, damping): None is the binary's default damping; an explicit
# damping that equals the default is skipped, and runs at an explicit damping
# re-train no blocks (the exact re-fits do not depend on it; only the time does).
CURVATURES = [("hessian", None), ("gauss-newton", None), ("hessian", "1e-6"), ("gauss-newton", "1e-6")]
LEGACY_RETRAIN = 3          # blocks re-trained by a binary without --retrain-budget ...
LEGACY_RETRAIN_MAX_N = 100  # ... and only on models with at most this many training sequences


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def help_text(binary):
    p = subprocess.run([binary, "--help"], capture_output=True, text=True)
    return p.stdout + p.stderr


def default_of(help, flag):
    """The '(default X)' of a flag in the usage text, or None."""
    m = re.search(r"--%s\b.*?\(default ([^)\s:]+)" % re.escape(flag), help, re.S)
    return m.group(1) if m else None


def run_audit(binary, bin_hash, name, facts, est, curv, damp, retrain, budget, has_est, has_budget, timeout):
    """Runs (or reads back) one audit; returns (json dict or None, record)."""
    args = ["--model", facts["model"], "--data", facts["train"], "--test", facts["test"],
            "--quiet", "--seed", "1", "--curvature", curv]
    if damp is not None:
        args += ["--damping", damp]
    if has_est:
        args += ["--estimator", est]
    if facts.get("ridge"):
        args += ["--ridge", "%g" % facts["ridge"]]
    if retrain:
        args += ["--retrain", str(retrain)]
        if has_budget and budget:
            args += ["--retrain-budget", budget]
    key = sha(bin_hash, file_bytes(os.path.join(ROOT, facts["model"])),
              file_bytes(os.path.join(ROOT, facts["train"])), file_bytes(os.path.join(ROOT, facts["test"])),
              " ".join(args))
    out = os.path.join(RUNS, "%s_%s_%s_%s_%s.json" % (name, est, curv, damp or "default", key))
    meta = out[:-5] + ".meta"
    rec = {"args": args}
    if os.path.exists(out) and os.path.exists(meta):
        with open(meta) as f:
            rec = json.load(f)
        with open(out) as f:
            return json.load(f), rec
    t0 = time.time()
    print("  %s: %s %s damping %s, retrain %s ..." % (name, est, curv, damp or "default", retrain or 0),
          end="", flush=True)
    try:
        p = subprocess.run([binary] + args + ["--json", out] + timings_flag(binary), cwd=ROOT, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        rec["seconds"] = time.time() - t0
        rec["error"] = ["timed out after %.0f s (run.py --timeout)" % timeout]
        print(" timed out", flush=True)
        return None, rec
    rec["seconds"] = time.time() - t0
    print(" %.0f s" % rec["seconds"], flush=True)
    if p.returncode != 0:
        rec["error"] = (p.stderr.strip() or p.stdout.strip()).splitlines()[-1:] or ["exit status %d" % p.returncode]
        print("    rejected: %s" % rec["error"], flush=True)
        return None, rec
    with open(meta, "w") as f:
        json.dump(rec, f)
    with open(out) as f:
        return json.load(f), rec


def oracles(d, alpha, synthetic):
    """Per-step oracle widths from the test set: twice the (1-alpha) quantile
    of |y - f(x)| at each step, pooled over steps weighted by points; the
    constant-width version (one quantile over all points); and for the
    synthetic process the true-noise width 2 z_{1-alpha/2} sd_t."""
    by_t = {}
    allres = []
    for s in d["sequences"]:
        for st in s["steps"]:
            if st.get("target") is None:
                continue
            r = abs(st["target"] - st["prediction"])
            by_t.setdefault(st["t"], []).append(r)
            allres.append(r)
    n = sum(len(v) for v in by_t.values())
    q = lambda v: float(np.quantile(np.array(v), 1 - alpha, method="higher"))  # noqa: E731
    per_step = sum(2 * q(v) * len(v) for v in by_t.values()) / n
    const = 2 * q(allres)
    z = NormalDist().inv_cdf(1 - alpha / 2)
    noise = sum(2 * z * NOISE_SD(t) * len(v) for t, v in by_t.items()) / n if synthetic else None
    return per_step, const, noise


def metrics(d, rec, synthetic):
    s = d["summary"]
    st = d["settings"]
    diag = d["diagnostics"]
    alpha = st["alpha"]
    per_step = s["coverage_per_step"]
    worst = min(range(len(per_step)), key=lambda i: per_step[i])
    orc, const, noise = oracles(d, alpha, synthetic)
    width = s["mean_length"]
    m = {
        "estimator": st.get("estimator", "infinitesimal"),
        "curvature": st["curvature"],
        "damping": st["damping"],
        "coverage": s["coverage"],
        "worst_step_coverage": per_step[worst],
        "worst_step": worst + 1,
        "coverage_per_step": per_step,
        "joint_coverage": s["joint_coverage"],
        "mean_width": width,
        "infinite_intervals": s["infinite_intervals"],
        "oracle_width": orc,
        "oracle_constant_width": const,
        "noise_oracle_width": noise,
        "width_over_oracle": width / orc if width is not None else None,
        "width_over_noise_oracle": width / noise if (noise and width is not None) else None,
        "in_sample_coverage": s["naive"]["coverage"],
        "in_sample_width": s["naive"]["mean_length"],
        "verdict": s["verdict"]["level"],
        "headline": s["verdict"]["headline"],
        "negative_eigenvalues": diag.get("negative_eigenvalues"),
        "min_eigenvalue": diag.get("min_eigenvalue"),
        "stationarity_ratio": diag.get("stationarity_ratio"),
        "leverage_per_step": diag.get("leverage_per_step"),
        "unbounded_blocks": diag.get("unbounded_blocks"),
        "seconds": rec.get("seconds"),
        "audit_seconds": sum(p["seconds"] for p in phases_of(d) if p["name"] != "exact re-training"),
        "warnings": diag.get("warnings", []),
    }
    r = d.get("retrain")
    if r:
        conv = r.get("converged")
        if conv is None:  # binaries before the convergence field: the Newton re-fit's cap is 200
            conv = [it < 200 for it in r["iterations"]]
        conv = [bool(c) for c in conv]
        m["retrain"] = {
            "blocks": len(r["blocks"]),
            "converged": int(sum(conv)),
            "mean_cosine": r["mean_cosine"],
            "median_norm_ratio": (float(np.median([v for v in r["norm_ratio"] if v is not None]))
                                  if any(v is not None for v in r["norm_ratio"]) else None),
            "prediction_change_correlation": r["prediction_change_correlation"],
            "exact_coverage": r["exact_coverage"],
            "influence_coverage": r["influence_coverage"],
            "exact_mean_width": r.get("exact_mean_length"),
            "influence_mean_width": r.get("influence_mean_length"),
            "seconds": sum(p["seconds"] for p in phases_of(d) if p["name"] == "exact re-training"),
        }
    return m


def timings_flag(binary):
    """--timings where the binary has it (phase times left the JSON's
    deterministic part in version 2)."""
    h = subprocess.run([binary, "--help"], capture_output=True, text=True)
    return ["--timings"] if "--timings" in h.stdout + h.stderr else []


def phases_of(d):
    """The phase timings: diagnostics.phases before JSON version 2, the
    top-level timings object (written with --timings) since."""
    if "timings" in d and d["timings"]:
        return d["timings"]["phases"]
    return d.get("diagnostics", {}).get("phases", [])


def fmt(v, f="%.3f"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f % v


def table(rows):
    head = ("| estimator | curvature (damping) | coverage | worst step | joint | width | / oracle "
            "| / noise oracle | unbounded | cosine | norm ratio | pred. corr. | exact-retrain cov. "
            "| re-fits converged | max leverage | verdict | s (audit + retrain) |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for m in rows:
        r = m.get("retrain") or {}
        lev = m.get("leverage_per_step")
        out.append("| %s | %s (%s)%s | %s | %s (t=%d) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f + %.0f |" % (
            m["estimator"], m["curvature"], "%g" % m["damping"], " **default**" if m.get("default") else "",
            fmt(m["coverage"]), fmt(m["worst_step_coverage"]), m["worst_step"], fmt(m["joint_coverage"]),
            fmt(m["mean_width"], "%.3g"), fmt(m["width_over_oracle"], "%.2f"),
            fmt(m["width_over_noise_oracle"], "%.2f"), m["infinite_intervals"],
            fmt(r.get("mean_cosine"), "%.2f"), fmt(r.get("median_norm_ratio"), "%.2f"),
            fmt(r.get("prediction_change_correlation"), "%.2f"),
            (fmt(r["exact_coverage"]) + ("" if r.get("exact_mean_width") is not None else " (unbounded)"))
            if r and r.get("exact_coverage") is not None else "–",
            ("%d / %d" % (r["converged"], r["blocks"])) if r else "–",
            fmt(max(lev) if lev else None, "%.3f"), m["verdict"],
            m["audit_seconds"], r.get("seconds", 0.0)))
    return "\n".join(out)


HEADER = """# Influence benchmark: the audit's intervals on Adam-trained models

Produced by `bash benchmarks/influence/run.sh`: trains the model
zoo (zoo.py, cached), the from-scratch leave-one-out comparison (loo.py,
cached), builds the audit binary from this tree and audits every model with
every estimator x curvature the binary accepts (run.py; runs cached in
`runs/` under a hash of the binary, model, data and flags). Deterministic
given the seeds; wall times vary. This file and results.json are rewritten
by every run.

Binary: `{binary}` ({bin_hash}); estimators accepted: {estimators}; re-training: {retrain_note}.
Run time of this run: {total:.0f} s with the cache; the audits themselves took
{audits:.0f} s of wall time when they ran (sum over the runs below, on a
shared 2-core machine under heavy load); a cold zoo takes about 1 minute on
a quiet core, loo.py about 10 minutes per model under load.

## Columns

- **coverage**: fraction of the test targets inside their interval (target
  1 - alpha = 0.9, guarantee 1 - 2 alpha = 0.8); **worst step**: the lowest
  per-step coverage and its step t; **joint**: fraction of test sequences
  whose every step is covered.
- **width**: mean interval width over the test points (finite ones);
  **/ oracle**: width over the test-set oracle, per step twice the 0.9
  quantile of |y - f(x)| of the audited model over the test set, pooled over
  steps weighted by points (the narrowest per-step constant width that
  covers 90% of the test set at every step); **/ noise oracle**: width over
  2 z_0.95 sd_t pooled the same way (the true noise, sd_t = 0.1 t; synthetic
  data only). **unbounded**: intervals of infinite width.
- Agreement with exact re-training on a sample of blocks (`--retrain`): **cosine**
  mean cosine between the influence step and the exact leave-block-out
  change of the parameters; **norm ratio** median |influence| / |exact|;
  **pred. corr.** correlation of the prediction changes; **exact-retrain
  cov.** coverage of the intervals built from the re-trained blocks' exact
  parameters (only those blocks; "unbounded" when they are too few for a
  finite jackknife+ quantile, fewer than (1 - alpha)(n + 1) - 1); **re-fits converged** re-fits that reached
  the binary's tolerance (a binary without the convergence field: fewer than
  its 200-iteration cap). Agreement figures of a binary that does not report
  convergence include the re-fits that hit the cap.
- **max leverage**: the largest per-step mean own-block leverage
  (`diagnostics.leverage_per_step`, newton estimator only).
- **verdict**: the audit's own verdict level; **s**: seconds of the audit
  phases + seconds of exact re-training.
"""


def loo_section():
    if not os.path.exists(LOO):
        return ""
    with open(LOO) as f:
        loo = json.load(f)
    out = ["## Own-block leave-one-out residuals: from scratch, warm-started, influence (loo.py)", "",
           loo.get("description", ""), "",
           "| model | block | in-sample | warm-started full re-fit | warm-started exact LOO | from scratch LOO "
           "| scratch / warm | IJ Hessian | IJ Gauss-Newton | Newton GN (linearised) | warm re-fits converged |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, blocks in loo["models"].items():
        for b in blocks:
            out.append("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.2f | %.3f | %.3f | %.3f | %s |" % (
                name, b["block"], b["in_sample"], b["warm_full"], b["warm"], b["scratch"], b["scratch"] / b["warm"],
                b["ij_hessian"], b["ij_gauss_newton"], b["newton_linear"],
                "gradient norm: full %.2g, LOO %.2g (%s)" % (b["warm_full_grad"], b["warm_grad"],
                                                          "converged" if b["warm_converged"] else "not converged")))
        s = loo["summary"][name]
        out.append("| %s | **all** | %.3f | %.3f | %.3f | %.3f | **%.2f** | %.3f | %.3f | %.3f | |" % (
            name, s["in_sample"], s["warm_full"], s["warm"], s["scratch"], s["scratch"] / s["warm"],
            s["ij_hessian"], s["ij_gauss_newton"], s["newton_linear"]))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="the audit binary")
    ap.add_argument("--retrain", type=int, default=40, help="blocks to re-train per run")
    ap.add_argument("--retrain-budget", default="3m", help="--retrain-budget of each run, if the binary has it")
    ap.add_argument("--only", default="", help="comma-separated model names (default all)")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds after which one audit is stopped "
                    "and reported as timed out (not cached)")
    a = ap.parse_args()
    t0 = time.time()
    os.makedirs(RUNS, exist_ok=True)
    with open(os.path.join(HERE, "models.json")) as f:
        zoo = json.load(f)
    binary = os.path.abspath(a.bin)
    bin_hash = sha(file_bytes(binary))
    help = help_text(binary)
    has_est = "--estimator" in help
    has_budget = "--retrain-budget" in help
    default_est = default_of(help, "estimator") if has_est else "infinitesimal"
    default_curv = default_of(help, "curvature")
    if has_budget:
        retrain_note = "%d blocks per run, --retrain-budget %s" % (a.retrain, a.retrain_budget)
    else:
        retrain_note = ("this binary has no --retrain-budget and its re-fits took about a minute each, so "
                        "%d blocks per run and only on models with at most %d training sequences"
                        % (LEGACY_RETRAIN, LEGACY_RETRAIN_MAX_N))
    results = {"binary": os.path.relpath(binary, ROOT) if binary.startswith(ROOT) else binary,
               "binary_hash": bin_hash, "estimators_accepted": [], "retrain": retrain_note,
               "models": {}}
    accepted = set()
    for name, facts in zoo.items():
        if a.only and name not in a.only.split(","):
            continue
        synthetic = "synthetic" in facts["train"] or "varlen" in facts["train"]
        if has_budget:
            retrain = a.retrain
        else:
            retrain = LEGACY_RETRAIN if facts["train_sequences"] <= LEGACY_RETRAIN_MAX_N else 0
        rows, skipped = [], []
        for est in ESTIMATORS if has_est else ["infinitesimal"]:
            seen = set()
            for curv, damp in CURVATURES:
                if damp is not None and (curv, float(damp)) in seen:
                    continue  # already the default damping
                d, rec = run_audit(binary, bin_hash, name, facts, est, curv, damp, retrain if damp is None else 0,
                                   a.retrain_budget, has_est, has_budget, a.timeout)
                if d is None:
                    skipped.append({"estimator": est, "curvature": curv, "damping": damp, "error": rec["error"]})
                    if has_est and "estimator" in " ".join(rec["error"]):
                        break  # the binary rejects this estimator
                    continue
                accepted.add(est)
                m = metrics(d, rec, synthetic)
                seen.add((m["curvature"], m["damping"]))
                m["default"] = damp is None and est == default_est and curv == default_curv
                rows.append(m)
        results["models"][name] = {"facts": facts, "runs": rows, "skipped": skipped}
    results["estimators_accepted"] = sorted(accepted)
    results["seconds"] = time.time() - t0
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
        f.write("\n")
    write_md(results, binary)


def write_md(results, binary):
    md = [HEADER.format(binary=results["binary"], bin_hash=results["binary_hash"],
                        estimators=", ".join(results["estimators_accepted"]),
                        retrain_note=results["retrain"], total=results["seconds"],
                        audits=sum(m["seconds"] or 0 for r in results["models"].values() for m in r["runs"]))]
    md.append("## Models (models.json)\n")
    md.append("| model | architecture | params | train seq. | recipe | train RMSE | test RMSE | gradient norm / median block gradient norm |")
    md.append("|---|---|---|---|---|---|---|---|")
    for name, r in results["models"].items():
        f = r["facts"]
        md.append("| %s | %s | %d | %d | %s | %.3f | %.3f | %.3g |" % (
            name, f["architecture"], f["parameters"], f["train_sequences"], f["recipe"],
            f["train_rmse"], f["test_rmse"], f["stationarity_ratio"]))
    md.append("")
    for name, r in results["models"].items():
        f = r["facts"]
        md.append("## %s: %s, n = %d\n" % (name, f["architecture"], f["train_sequences"]))
        if r["runs"]:
            o = r["runs"][0]
            md.append("Oracle widths: per-step %.3f, constant %.3f%s; in-sample residual intervals: "
                      "width %.3f, coverage %.3f.\n" % (
                          o["oracle_width"], o["oracle_constant_width"],
                          ", true noise %.3f" % o["noise_oracle_width"] if o["noise_oracle_width"] else "",
                          o["in_sample_width"], o["in_sample_coverage"]))
            md.append(table(r["runs"]))
            md.append("")
            md.append("Per-step coverage:\n")
            md.append("| estimator | curvature (damping) | " + " | ".join(
                "t=%d" % (i + 1) for i in range(len(o["coverage_per_step"]))) + " |")
            md.append("|---|---|" + "---|" * len(o["coverage_per_step"]))
            for m in r["runs"]:
                md.append("| %s | %s (%g) | %s |" % (m["estimator"], m["curvature"], m["damping"],
                                                     " | ".join("%.3f" % c for c in m["coverage_per_step"])))
            if any(m.get("leverage_per_step") for m in r["runs"]):
                md.append("\nMean own-block leverage per step (newton):\n")
                for m in r["runs"]:
                    if m.get("leverage_per_step"):
                        md.append("- %s (%g): %s" % (m["curvature"], m["damping"], ", ".join(
                            "%.3f" % v for v in m["leverage_per_step"])))
        for s in r["skipped"]:
            md.append("\nNot run: %s / %s (%s): %s" % (s["estimator"], s["curvature"], s["damping"] or "default",
                                                      " ".join(s["error"])))
        md.append("")
    md.append(loo_section())
    with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    sys.exit(main())
