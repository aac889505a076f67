#!/usr/bin/python3
"""Validity benchmark: rnnaudit against MQ-RNN, DP-RNN and split conformal.

Run through run.sh (it builds the audit binary). Steps, each cached in one
file per (data set, n, seed, method) under the cache folder:
  1. training jobs (`bench.py train DATASET N SEED CACHE`, one process each,
     JOBS at a time): data, the vanilla models (on all training sequences
     and on 80% of them), CF-RNN, MQ-RNN, DP-RNN (methods.py);
  2. rnnaudit runs on the vanilla models (default settings; the paper's
     --estimator infinitesimal; --calibration on the 80/20 split), keyed by
     the binary's SHA-256, so a re-run after an rnnaudit change re-runs
     only these;
  3. metrics.measure on every method's per-point limits, the tables, the
     figure and RESULTS.md.
"""

import argparse
import concurrent.futures
import datetime
import hashlib
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

import numpy as np  # noqa: E402

import config  # noqa: E402
from metrics import measure  # noqa: E402

SEEDS = (1, 2, 3)
NS = (100, 300, 1000)
SYNTHETIC = ("static", "linear")

# (method name, extra flags, model trained on): rnnaudit runs
AUDITS = [
    ("rnnaudit", [], "all"),
    ("rnnaudit-infinitesimal", ["--estimator", "infinitesimal"], "all"),
    ("rnnaudit-calibration", ["--calibration", "cal.csv"], "80"),
]

LABELS = {
    "rnnaudit": "rnnaudit (default)",
    "rnnaudit-infinitesimal": "rnnaudit --estimator infinitesimal (paper's BJ-RNN)",
    "rnnaudit-calibration": "rnnaudit --calibration",
    "cf-rnn": "CF-RNN (split conformal, 20% calibration)",
    "mq-rnn": "MQ-RNN (quantile loss)",
    "dp-rnn-0.1": "DP-RNN (dropout 0.1, 100 passes)",
    "dp-rnn-0.45": "DP-RNN (dropout 0.45, 100 passes)",
}
SHORT = {
    "rnnaudit": "rnnaudit", "rnnaudit-infinitesimal": "rnnaudit infinitesimal", "cf-rnn": "CF-RNN",
    "mq-rnn": "MQ-RNN", "dp-rnn-0.1": "DP-RNN 0.1", "dp-rnn-0.45": "DP-RNN 0.45",
}
ORDER = ["rnnaudit", "rnnaudit-infinitesimal", "rnnaudit-calibration", "cf-rnn", "mq-rnn",
         "dp-rnn-0.1", "dp-rnn-0.45"]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def key_of(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:20]


def train_keys(dataset):
    return {m: key_of(config.method_config(dataset, m)) for m in config.TRAIN_METHODS}


def configs(quick):
    seeds = SEEDS[:1] if quick else SEEDS
    ns = NS[:1] if quick else NS
    out = [(ds, n, s) for n in sorted(ns, reverse=True) for ds in SYNTHETIC for s in seeds]
    return out + [("chickweight", 39, s) for s in seeds]


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


# ---------------------------------------------------------------- step 1

def needs_training(cache, ds, n, seed):
    d = config.config_dir(cache, ds, n, seed)
    keys = train_keys(ds)
    if not all(os.path.exists(os.path.join(d, f)) for f in ("vanilla.onnx", "vanilla80.onnx", "cal.csv")):
        return True
    return any(config.stored_key(os.path.join(d, m + ".npz")) != keys[m] for m in config.TRAIN_METHODS)


def train_all(cache, todo, jobs):
    def one(cfg):
        ds, n, seed = cfg
        d = config.config_dir(cache, ds, n, seed)
        os.makedirs(d, exist_ok=True)
        t0 = time.time()
        with open(os.path.join(d, "job.log"), "w") as logf:
            rc = subprocess.call([sys.executable, os.path.abspath(__file__), "train", ds, str(n), str(seed), cache],
                                 stdout=logf, stderr=subprocess.STDOUT,
                                 env=dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"))
        return cfg, rc, time.time() - t0

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for k, fut in enumerate(concurrent.futures.as_completed([pool.submit(one, c) for c in todo])):
            (ds, n, seed), rc, secs = fut.result()
            log("trained %s n=%d seed=%d in %.0f s (%d/%d)%s" % (ds, n, seed, secs, k + 1, len(todo),
                "" if rc == 0 else "  FAILED, see %s/job.log" % config.config_dir(cache, ds, n, seed)))
            if rc != 0:
                raise SystemExit("training failed: %s n=%d seed=%d" % (ds, n, seed))


def train_main(argv):
    import methods  # torch only in the training jobs
    ds, n, seed, cache = argv[0], int(argv[1]), int(argv[2]), argv[3]
    done = methods.run_training(cache, ds, n, seed, train_keys(ds))
    print("trained:", " ".join(done) or "nothing (cached)")


# ---------------------------------------------------------------- step 2

def _limit(v, inf):
    return inf if v is None else v


def calibrated_kinds(step):
    """Interval kinds a --calibration run adds to a JSON step, as
    {name: (lower, upper)}: keys KIND_lower/KIND_upper, objects
    {KIND: {lower, upper}} or lists of {kind|name, lower, upper} (the
    schema is the calibration work's; in-sample (naive) limits are left out)."""
    kinds = {}

    def add(name, iv):
        if "naive" not in name and "sample" not in name:
            kinds[name] = (iv.get("lower"), iv.get("upper"))

    for k, v in step.items():
        if k.endswith("_lower") and k[:-6] + "_upper" in step:
            add(k[:-6], {"lower": v, "upper": step[k[:-6] + "_upper"]})
        elif isinstance(v, dict):
            if "lower" in v and "upper" in v:
                add(k, v)
            for name, iv in v.items():
                if isinstance(iv, dict) and "lower" in iv and "upper" in iv:
                    add(name, iv)
        elif isinstance(v, list):
            for iv in v:
                if isinstance(iv, dict) and "lower" in iv and "upper" in iv:
                    name = iv.get("kind") or iv.get("name") or iv.get("method")
                    if name:
                        add(str(name), iv)
    return kinds


def audit_command(binary, ds, extra, which):
    spec = config.DATASETS[ds]
    model, data = ("vanilla.onnx", "train.csv") if which == "all" else ("vanilla80.onnx", "train80.csv")
    return [binary, "--model", model, "--data", data, "--test", "test.csv", "--ridge", "%g" % spec["ridge"],
            "--low", "%g" % spec["low"], "--high", "%g" % spec["high"], "--json", "audit.json",
            "--quiet"] + extra


def audit_one(binary, binary_sha, cache, ds, n, seed, name, extra, which):
    """Runs one rnnaudit configuration unless its result file is current."""
    d = config.config_dir(cache, ds, n, seed)
    cmd = audit_command(binary, ds, extra, which)
    inputs = [a for a in cmd[1:] if a.endswith((".onnx", ".csv"))]
    key = key_of({"binary": binary_sha, "args": cmd[1:], "inputs": [sha256_file(os.path.join(d, f)) for f in inputs]})
    out = os.path.join(d, name + ".npz")
    if config.stored_key(out) == key:
        return False
    jpath = os.path.join(d, "audit.json")
    if os.path.exists(jpath):
        os.remove(jpath)
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
    secs = time.time() - t0
    meta = {"key": key, "method": name, "command": " ".join(["audit"] + cmd[1:]), "interval_seconds": secs}
    with np.load(os.path.join(d, ("vanilla" if which == "all" else "vanilla80") + ".npz")) as z:
        meta["train_seconds"] = json.loads(str(z["meta"]))["train_seconds"]
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "exit %d" % proc.returncode
        flag = extra[0] if extra else ""
        meta["status"] = ("n/a: this rnnaudit has no %s" % flag) if ("unknown flag" in err and flag in err) \
            else "failed: " + err
        np.savez(out + ".tmp.npz", meta=np.array(json.dumps(meta, sort_keys=True)))
        os.replace(out + ".tmp.npz", out)
        return True
    with open(jpath) as f:
        doc = json.load(f)
    os.remove(jpath)
    seq, step, target, pred, limits = [], [], [], [], {}
    ids = {str(s["id"]): k for k, s in enumerate(doc["sequences"])}
    for s in doc["sequences"]:
        for j, st in enumerate(s["steps"]):
            if st.get("horizon", 0) != 0 or "target" not in st:
                continue
            seq.append(ids[str(s["id"])])
            step.append(j)
            target.append(st["target"])
            pred.append(st["prediction"])
            kinds = {"": (st.get("lower"), st.get("upper"))}
            if which == "80":
                kinds = calibrated_kinds(st)
            for kname, (lo, hi) in kinds.items():
                limits.setdefault(kname, ([], []))
                limits[kname][0].append(_limit(lo, -math.inf))
                limits[kname][1].append(_limit(hi, math.inf))
    arrays = {"seq": np.array(seq), "step": np.array(step), "target": np.array(target), "pred": np.array(pred)}
    if not limits:
        meta["status"] = "n/a: no calibrated limits found in the JSON's sequences[].steps[]"
    for k, kname in enumerate(sorted(limits)):
        arrays["lower%d" % k], arrays["upper%d" % k] = (np.array(v, dtype=np.float64) for v in limits[kname])
    meta["kinds"] = sorted(limits)
    summary = doc.get("summary") or {}
    meta["summary"] = {k: summary.get(k) for k in ("coverage", "joint_coverage", "mean_length", "infinite_intervals",
                                                    "rmse", "audit")}
    meta["warnings"] = [w if isinstance(w, str) else w.get("message") or json.dumps(w, sort_keys=True)
                        for w in (doc.get("diagnostics") or {}).get("warnings") or []]
    meta["settings"] = {k: (doc.get("settings") or {}).get(k) for k in ("solver", "curvature", "damping", "blocks")}
    np.savez(out + ".tmp.npz", meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
    os.replace(out + ".tmp.npz", out)
    return True


# ---------------------------------------------------------------- step 3

def load_rows(cache, ds, n, seed):
    """{row name: (metrics, meta)} for one configuration."""
    d = config.config_dir(cache, ds, n, seed)
    spec = config.DATASETS[ds]
    rows = {}
    for name in ORDER:
        path = os.path.join(d, name + ".npz")
        if not os.path.exists(path):
            continue
        with np.load(path) as z:
            meta = json.loads(str(z["meta"]))
            if "status" in meta and not meta.get("kinds"):
                rows[name] = (None, meta)
                continue
            kinds = meta.get("kinds")
            pairs = [("", z["lower"], z["upper"])] if kinds is None else \
                [(k, z["lower%d" % i], z["upper%d" % i]) for i, k in enumerate(kinds)]
            for kname, lo, hi in pairs:
                oracle = config.oracle_width(ds, np.arange(int(z["step"].max()) + 1))
                m = measure(z["seq"], z["step"], lo, hi, z["target"], z["pred"], spec["low"], spec["high"], oracle)
                rows[name + (": " + kname if kname else "")] = (m, meta)
    return rows


def check_against_summary(m, meta):
    """Differences between our metrics and rnnaudit's own summary (default limits)."""
    s = meta.get("summary") or {}
    out = []
    for ours, theirs in ((m["coverage"], s.get("coverage")), (m["joint_coverage"], s.get("joint_coverage")),
                         (m["mean_width"], s.get("mean_length")), (m["rmse"], s.get("rmse"))):
        if theirs is not None and abs(ours - theirs) > 1e-9 * max(1.0, abs(theirs)):
            out.append((ours, theirs))
    for side in ("low", "high"):
        a = ((s.get("audit") or {}).get(side)) or {}
        for k in ("flagged", "true_positives", "actual"):
            if k in a and a[k] != m[side][k]:
                out.append((m[side][k], a[k]))
    return out


def fmt(v, digits=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float) and math.isinf(v):
        return "∞"
    return ("%." + str(digits) + "f") % v


def mean(vals):
    vals = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(vals)) if vals else math.nan


def table(ds, n, seeds, per_seed):
    """Markdown table: means over seeds of each row's metrics."""
    synth = config.DATASETS[ds]["kind"] == "synthetic"
    names = []
    for s in seeds:
        for k in per_seed[s]:
            if k not in names:
                names.append(k)
    names.sort(key=lambda k: ORDER.index(k.split(":")[0]))
    spec = config.DATASETS[ds]
    head = ["method", "coverage", "worst step (t)", "joint", "mean width"]
    if synth:
        head.append("width / oracle")
    head += ["P low", "R low", "P high", "R high", "RMSE", "train s", "intervals s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in names:
        got = [per_seed[s][k] for s in seeds if k in per_seed[s]]
        label = LABELS.get(k, LABELS.get(k.split(":")[0], k) + (":" + k.split(":", 1)[1] if ":" in k else ""))
        if all(m is None for m, _ in got):
            lines.append("| %s | %s |" % (label, got[0][1]["status"]) + " |" * (len(head) - 2))
            continue
        ms = [m for m, _ in got if m is not None]
        worst = [m["worst_step_coverage"] for m in ms]
        wsteps = sorted({m["worst_step"] + 1 for m in ms})
        cells = [label, fmt(mean([m["coverage"] for m in ms])),
                 "%s (%s)" % (fmt(mean(worst)), ",".join(str(t) for t in wsteps)),
                 fmt(mean([m["joint_coverage"] for m in ms])),
                 (fmt(mean([m["mean_width"] for m in ms])) if any(np.isfinite(m["mean_width"]) for m in ms)
                  else "∞") + (" (%d inf)" % sum(m["infinite"] for m in ms)
                                                              if any(m["infinite"] for m in ms) else "")]
        if synth:
            cells.append(fmt(mean([m["width_ratio"] for m in ms]), 2))
        for side in ("low", "high"):
            cells += [fmt(mean([m[side]["precision"] for m in ms]), 2), fmt(mean([m[side]["recall"] for m in ms]), 2)]
        cells += [fmt(mean([m["rmse"] for m in ms])),
                  fmt(mean([meta["train_seconds"] for _, meta in got]), 1),
                  fmt(mean([meta["interval_seconds"] for _, meta in got]), 2)]
        lines.append("| " + " | ".join(cells) + " |")
    title = "%s, n = %d training sequences" % (ds, n) if synth else "ChickWeight (%d training chicks, 121 test values)" % n
    return title, "\n".join(lines), spec


def overview(results, ns, seeds):
    """One line per method: pooled coverage, worst step and width / oracle
    for every synthetic (noise, n), means over seeds."""
    cols = [(ds, n) for ds in SYNTHETIC for n in ns if (ds, n) in results]
    names = sorted({k for c in cols for s in seeds for k in results[c][s]},
                   key=lambda k: (ORDER.index(k.split(":")[0]), k))
    head = ["method"] + ["%s n=%d" % c for c in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in names:
        cells = [SHORT.get(k, k.replace("rnnaudit-calibration", "rnnaudit --calibration"))]
        for c in cols:
            ms = [results[c][s][k][0] for s in seeds if k in results[c][s] and results[c][s][k][0] is not None]
            cells.append("n/a" if not ms else "%s / %s / %s" % (
                fmt(mean([m["coverage"] for m in ms])), fmt(mean([m["worst_step_coverage"] for m in ms])),
                fmt(mean([m["width_ratio"] for m in ms]), 2)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figure(path, results, ns, seeds):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 8, "svg.hashsalt": "rnnaudit"})
    fig, axes = plt.subplots(4, len(ns), figsize=(3.6 * len(ns), 10), squeeze=False, sharex=True)
    colors = {}
    palette = plt.get_cmap("tab10").colors
    for r, ds in enumerate(SYNTHETIC):
        for c, n in enumerate(ns):
            acov, awid = axes[2 * r][c], axes[2 * r + 1][c]
            names = sorted({k for s in seeds for k in results[(ds, n)][s] if results[(ds, n)][s][k][0] is not None},
                           key=lambda k: (ORDER.index(k.split(":")[0]), k))
            for k in names:
                ms = [results[(ds, n)][s][k][0] for s in seeds if k in results[(ds, n)][s]]
                ms = [m for m in ms if m is not None]
                t = ms[0]["steps"] + 1
                col = colors.setdefault(k, palette[len(colors) % len(palette)])
                lab = SHORT.get(k, k.replace("rnnaudit-calibration", "rnnaudit cal."))
                acov.plot(t, np.mean([m["coverage_per_step"] for m in ms], axis=0), "o-", ms=3, color=col, label=lab)
                awid.plot(t, np.mean([m["width_ratio_per_step"] for m in ms], axis=0), "o-", ms=3, color=col,
                          label=lab)
            acov.axhline(1 - config.ALPHA, color="k", ls="--", lw=0.8)
            acov.axhline(1 - 2 * config.ALPHA, color="k", ls=":", lw=0.8)
            awid.axhline(1.0, color="k", ls="--", lw=0.8)
            acov.set_title("%s noise, n = %d: coverage per step" % (ds, n))
            awid.set_title("%s noise, n = %d: width / oracle width" % (ds, n))
            acov.set_ylim(0.4, 1.02)
            awid.set_ylim(0, 3)
    for a in axes[-1]:
        a.set_xlabel("step t")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)


def write_results(cache, out_md, quick, binary_sha, rev, t0, counts):
    cfgs = configs(quick)
    seeds = sorted({s for _, _, s in cfgs})
    ns = sorted({n for ds, n, _ in cfgs if ds in SYNTHETIC})
    results, checks = {}, []
    for ds, n, seed in cfgs:
        rows = load_rows(cache, ds, n, seed)
        results.setdefault((ds, n), {})[seed] = rows
        if rows.get("rnnaudit", (None,))[0] is not None:
            for ours, theirs in check_against_summary(*rows["rnnaudit"]):
                checks.append("%s n=%d seed=%d: ours %r, rnnaudit's summary %r" % (ds, n, seed, ours, theirs))
    fig_name = os.path.splitext(os.path.basename(out_md))[0].replace("RESULTS", "per_step") + ".png"
    figure(os.path.join(os.path.dirname(out_md), fig_name), results, ns, seeds)
    elapsed = time.time() - t0
    L = []
    L.append("# Validity benchmark: rnnaudit, MQ-RNN, DP-RNN and split conformal (CF-RNN)\n")
    L.append("Written by `bash benchmarks/validity/run.sh`%s on %s, rnnaudit built from commit `%s` "
             "(binary SHA-256 `%s`). This run took %.0f s: %d of %d training jobs and %d of %d rnnaudit runs were not "
             "in the cache (see README.md for the cost of a cold run).\n"
             % (" with QUICK=1" if quick else "", datetime.date.today().isoformat(), rev, binary_sha[:12],
                elapsed, counts[0], len(cfgs), counts[1], len(cfgs) * len(AUDITS)))
    L.append(SETUP % {"seeds": len(seeds), "ns": ", ".join(map(str, ns)), "alpha": config.ALPHA,
                      "nom": 1 - config.ALPHA, "guar": 1 - 2 * config.ALPHA})
    L.append("## Overview (synthetic data)\n")
    L.append("Each cell: pooled coverage / worst step's coverage / mean width over the oracle width; "
             "means over %d seeds; target %.2f, jackknife+ guarantee %.2f.\n"
             % (len(seeds), 1 - config.ALPHA, 1 - 2 * config.ALPHA))
    L.append(overview(results, ns, seeds) + "\n")
    defaults = sorted({json.dumps(meta.get("settings"), sort_keys=True) for per in results.values() for s in per
                       for k, (m, meta) in per[s].items() if k == "rnnaudit" and meta.get("settings")})
    if defaults:
        L.append("rnnaudit's default settings in this binary: %s.\n" % "; ".join(
            ", ".join("%s %s" % kv for kv in sorted(json.loads(d).items())) for d in defaults))
    L.append("![Coverage and width per step](%s)\n" % fig_name)
    L.append("Figure: coverage per step (dashed: 1 - alpha = %.2f, dotted: 1 - 2 alpha = %.2f) and interval "
             "width over the oracle width per step (axis cut at 3), means over %d seeds.\n"
             % (1 - config.ALPHA, 1 - 2 * config.ALPHA, len(seeds)))
    for ds in SYNTHETIC + ("chickweight",):
        for n in (ns if ds in SYNTHETIC else [39]):
            if (ds, n) not in results:
                continue
            title, tab, spec = table(ds, n, seeds, results[(ds, n)])
            L.append("## %s\n" % title)
            L.append("Thresholds: low %g, high %g. Means over %d seeds.\n" % (spec["low"], spec["high"], len(seeds)))
            L.append(tab + "\n")
            if ds == "chickweight":
                L.append(CHICK_NOTE % {"cal": int(round(config.CAL_FRACTION * n)),
                                       "k": math.ceil((1 - config.ALPHA) * (int(round(config.CAL_FRACTION * n)) + 1))})
    L.append("## Checks\n")
    if checks:
        L.append("Our metrics differ from rnnaudit's own summary on the same limits:\n")
        L += ["- " + c for c in checks]
        L.append("")
    else:
        L.append("For every rnnaudit default run, metrics.measure on the JSON's per-point limits gives rnnaudit's "
                 "own summary (coverage, joint coverage, mean width, RMSE, flagged / true positives / actual "
                 "counts) to 1e-9.\n")
    warn = sorted((ds, n, s, w) for (ds, n), per in results.items() for s in per
                  for k, (m, meta) in per[s].items() if k == "rnnaudit" for w in meta.get("warnings", []))
    if warn:
        L.append("Warnings rnnaudit gave (default runs):\n")
        L += ["- %s n=%d seed %d: %s" % (ds, n, s, w.replace("\n", " ")) for ds, n, s, w in warn[:40]]
        L.append("")
    total = sum(meta.get(f, 0) or 0 for per in results.values() for s in per for _, (_, meta) in per[s].items()
                for f in ("train_seconds", "interval_seconds") if not meta.get("method", "").startswith("rnnaudit"))
    audits = sum(meta.get("interval_seconds", 0) for per in results.values() for s in per
                 for k, (_, meta) in per[s].items() if k.startswith("rnnaudit"))
    L.append("Cost held in the cache: %.0f s of training and baseline intervals (the vanilla models counted once "
             "per row that uses them), %.0f s of rnnaudit runs; a re-run after an rnnaudit change repeats only "
             "the latter.\n" % (total, audits))
    with open(out_md, "w") as f:
        f.write("\n".join(L))


CHICK_NOTE = """\
With %(cal)d calibration chicks, split conformal needs the %(k)d-th smallest of %(cal)d residuals at each step:
CF-RNN's intervals are unbounded at alpha = 0.1 (a calibration set of at least 9 sequences is needed). The
vanilla GRU reaches the same optimum of its penalised loss from all three seeds' initial weights, so the
rnnaudit row is one model; only the baselines and the calibration split change with the seed.
"""

SETUP = """\
## Setup

- **Data.** The paper's autoregressive process (`examples/synthetic/generate.py`: x_t ~ N(1, 2²),
  y_t = Σ_j 0.9^(t-j) x_j + ε_t, T = 10) with static noise (sd 1) and time-dependent noise (sd 0.1 t);
  n = %(ns)s training sequences (the first n of a pool of 1000 per seed), 1000 test sequences,
  %(seeds)d seeds. ChickWeight from Debian's `r-base-core` as `examples/chickweight` ships it (39 training
  chicks, 11 test chicks, one-step-ahead weight, variable lengths); its seeds change the models' initial
  weights and the calibration split.
- **Calibration split.** A seeded random 20%% of the training sequences (`cal.csv`); the "80%%" models train on the
  rest (`train80.csv`). CF-RNN and `rnnaudit --calibration` use the same split and the same 80%% model.
- **Vanilla RNN** (what rnnaudit audits): 20 tanh units (ChickWeight: the example's GRU with 8 units),
  inputs and outputs standardised by fixed constants in the graph, trained with `examples/rnnfit.py`'s `fit`
  on the sum of squared errors + ridge/2 |θ|² (ridge 100; ChickWeight 3000, the example's) with
  1000 Adam steps, at most 1000 L-BFGS iterations and 3 Newton steps, exported to ONNX (float32); audited with
  `--ridge` set to that ridge. Ridge 100 rather than the example's 10 because with standardised
  outputs it brings n = 100 to a stationary point within this budget (ridge 10 does not).
- **rnnaudit**: the binary built from the repository, `--json`, default settings; the same with
  `--estimator infinitesimal` (the paper's influence estimator); and on the 80%% model with
  `--calibration cal.csv`. A row reads "n/a" when the binary rejects the flag.
- **CF-RNN**: split conformal per step on the 80%% model: prediction ± the ⌈(1 − α)(m + 1)⌉-th smallest
  absolute calibration residual of that step (Stankeviciute et al. 2021, without the Bonferroni correction).
- **MQ-RNN**: the same network with three outputs (α/2, 1/2, 1 − α/2) trained with the quantile loss; the
  interval is [q_α/2, q_1−α/2] (re-ordered where they cross), the point forecast the median.
- **DP-RNN**: the same network with variational dropout (one mask per sequence on inputs, hidden state and
  outputs; Gal and Ghahramani 2016) at rate 0.1 and at the paper's 0.45, 100 stochastic passes, interval
  mean ± z_(1−α/2) sd of the passes.
- MQ-RNN and DP-RNN train as the paper's Appendix D: Adam, learning rate 0.01, batch 150, 1000 steps. Everything
  in float64 on one thread with fixed seeds; alpha = %(alpha)g (target %(nom)g, jackknife+ guarantee %(guar)g).
- **Metrics** (one function, `metrics.measure`, on every method's per-point limits; rnnaudit's are read from
  its JSON `sequences[].steps[]`): pooled coverage, the worst step's coverage (and which step, 1-based),
  joint coverage (all steps of a sequence covered), mean width of the finite intervals, width over the oracle
  width 2 z_(1−α/2) sd_t (known noise), audit precision P and recall R (a value is flagged low when its
  lower limit is below the low threshold, high when its upper limit is above the high one), RMSE of the
  point forecast, and wall time: training of the model the intervals come from, and computing the intervals
  (for rnnaudit: the whole audit run).
"""


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "train":
        return train_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audit", required=True, help="the rnnaudit binary")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--quick", action="store_true", help="one seed, n = 100 (and ChickWeight)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", required=True, help="the Markdown file to write")
    ap.add_argument("--rev", default="unknown")
    a = ap.parse_args()
    t0 = time.time()
    cache = os.path.abspath(a.cache)
    binary = os.path.abspath(a.audit)
    binary_sha = sha256_file(binary)
    cfgs = configs(a.quick)
    todo = [c for c in cfgs if needs_training(cache, *c)]
    log("%d configurations, %d to train (cache %s)" % (len(cfgs), len(todo), cache))
    train_all(cache, todo, a.jobs)
    ran = 0
    for ds, n, seed in cfgs:
        for name, extra, which in AUDITS:
            t1 = time.time()
            if audit_one(binary, binary_sha, cache, ds, n, seed, name, extra, which):
                ran += 1
                log("%s on %s n=%d seed=%d: %.1f s" % (name, ds, n, seed, time.time() - t1))
    write_results(cache, a.out, a.quick, binary_sha, a.rev, t0, (len(todo), ran))
    log("wrote %s in %.0f s" % (a.out, time.time() - t0))


if __name__ == "__main__":
    main()
