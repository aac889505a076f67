#!/usr/bin/python3
"""Windows benchmark: sliding windows of long series, audited as independent
sequences against the windowed mode (--window), every kind of interval
against the dependence-aware tolerance on a later test period.

Data: the 4-channel EEG recording that matplotlib ships with its sample
data (Debian's python-matplotlib-data:
/usr/share/matplotlib/mpl-data/sample_data/eeg.dat, 800 samples per
channel; R's sunspots, which the issue used, are not installed on this
machine). Each channel is a series, standardised with the mean and standard
deviation of its first 480 samples. Rows 0-479 of each series are the
training period (the windows the weights are fitted to), rows 480-559 the
validation period (early stopping only; the audits' calibration stretch),
rows 560-799 the later test period.

Model, trained the ordinary way (float32, seed 0): LSTM(1, 30) + Linear(30,
1) on the last hidden state (3,991 parameters) reading 24-step windows of
one series and forecasting the next value; Adam (lr 3e-3, weight decay
1e-4, coupled), mini-batches of 64 shuffled windows, MSE, at most 150
epochs, early stopping with patience 10 on the validation windows' MSE,
best weights restored; exported like the PyTorch tutorial
(torch.onnx.export with a dynamic batch axis, opset 17). The audit's ridge
is weight decay x windows fitted (w N, python/rnnaudit ridge_from_optimizer).

Two audits (rnnaudit, --alpha 0.1, solver auto, --adaptive), same model,
same windows:
  independent: the windows as a file of sequences, one id per window, 24
               rows each with the next value as the target of every row
               (the layout the issue describes): training windows (targets
               in rows 24-479), calibration windows (targets in rows
               480-559, ids of their own) and test windows (targets in
               rows 560-799); sequence blocks, one window each; each
               window is its own one-point series for the adaptive kinds.
  windowed:    the series themselves in long format, --features y --shift 1
               --window 24, the calibration file the same series' rows
               480-559 and the test file rows 560-799: the audit cuts the
               same windows (the first calibration and test windows from
               the end of the series before them), uses window blocks over
               stretches of time, and runs the adaptive kinds along each
               series' time.
Both give the same 960 test forecasts (checked to 1e-9) and 320
calibration values. For each audit and kind of interval (the CSV's
columns: jackknife+, in-sample, split conformal, conformalized jackknife+,
the recommended kind, and the adaptive kinds), on the test period: coverage
of the 90% intervals, mean width of the bounded ones, unbounded intervals,
and the dependence-aware tolerance 1.96 sqrt(0.9 x 0.1 / n_eff), n_eff the
effective number of that kind's coverage indicators (Newey-West, lag
floor(4 (n/100)^(2/9)) per series, pooled); a kind is within when its
coverage is at least 90% minus the tolerance. Wall time is the audit run's.

Run: bash benchmarks/windows/run.sh (writes RESULTS.md beside this file).
"""

import argparse
import copy
import csv
import io
import json
import os
import platform
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EEG = "/usr/share/matplotlib/mpl-data/sample_data/eeg.dat"
W, TRAIN, VAL, ROWS = 24, 480, 560, 800
DECAY, ALPHA = 1e-4, 0.1


def series():
    x = np.fromfile(EEG, dtype=float).reshape(800, 4).T  # 4 channels x 800 samples
    mu = x[:, :TRAIN].mean(axis=1, keepdims=True)
    sd = x[:, :TRAIN].std(axis=1, keepdims=True)
    return (x - mu) / sd


def windows(y, first, last):
    """Windows of W rows of y whose last row read r is in [first, last): inputs
    y[r-W+1..r], target y[r+1]."""
    xs = [y[r - W + 1:r + 1] for r in range(first, last)]
    return np.array(xs), np.array([y[r + 1] for r in range(first, last)])


def train(data, out):
    import onnx
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(1, 30, batch_first=True)
            self.head = torch.nn.Linear(30, 1)

        def forward(self, x):
            h, _ = self.lstm(x)
            return self.head(h[:, -1, :])

    torch.manual_seed(0)
    tr = [windows(y, W - 1, TRAIN - 1) for y in data]  # targets in the training rows
    va = [windows(y, TRAIN - 1, VAL - 1) for y in data]
    xt = torch.tensor(np.concatenate([a for a, _ in tr])[:, :, None], dtype=torch.float32)
    yt = torch.tensor(np.concatenate([b for _, b in tr])[:, None], dtype=torch.float32)
    xv = torch.tensor(np.concatenate([a for a, _ in va])[:, :, None], dtype=torch.float32)
    yv = torch.tensor(np.concatenate([b for _, b in va])[:, None], dtype=torch.float32)
    model = Net()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=DECAY)
    loss = torch.nn.MSELoss()
    best, best_state, wait, epochs = float("inf"), None, 0, 0
    for epoch in range(150):
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            b = perm[i:i + 64]
            opt.zero_grad()
            loss(model(xt[b]), yt[b]).backward()
            opt.step()
        with torch.no_grad():
            v = loss(model(xv), yv).item()
        epochs = epoch + 1
        if v < best - 1e-6:
            best, best_state, wait = v, copy.deepcopy(model.state_dict()), 0
        else:
            wait += 1
            if wait >= 10:
                break
    model.load_state_dict(best_state)
    with torch.no_grad():
        fit = loss(model(xt), yt).item()
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.zeros(1, W, 1), f, opset_version=17,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch_size"}, "output": {0: "batch_size"}})
    onnx.checker.check_model(onnx.load_from_string(f.getvalue()))
    with open(os.path.join(out, "model.onnx"), "wb") as fh:
        fh.write(f.getvalue())
    return {"params": params, "epochs": epochs, "best_val_mse": best, "train_mse": fit, "windows": len(xt)}


def write_series(data, path, lo, hi):
    with open(path, "w") as f:
        f.write("id,t,y\n")
        for c, y in enumerate(data):
            for r in range(lo, hi):
                f.write(f"ch{c + 1},{r + 1},{y[r]:.9g}\n")


def write_windows(data, path, first, last, tag=""):
    """One sequence per window, 24 rows, the next value as every row's target
    (ids ch2w561: channel 2, last row read 561, 1-based; tag before the w)."""
    with open(path, "w") as f:
        f.write("id,t,x,target\n")
        for c, y in enumerate(data):
            for r in range(first, last):
                for k in range(W):
                    row = r - W + 1 + k
                    f.write(f"ch{c + 1}{tag}w{r + 1},{row + 1},{y[row]:.9g},{y[row + 1]:.9g}\n")


def audit(binary, out, name, args, reuse=False):
    """Runs one audit in out (or with reuse takes an earlier run's outputs,
    summary and wall time) and returns its JSON, CSV rows, wall time, summary
    and command."""
    cmd = [binary, "--model", "model.onnx", "--alpha", str(ALPHA), "--out", f"{name}.json", "--out", f"{name}.csv"] + args
    saved = os.path.join(out, f"{name}.run.json")
    if reuse and os.path.exists(saved):
        run = json.load(open(saved))
        wall, stdout = run["wall"], run["stdout"]
    else:
        t0 = time.time()
        p = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
        wall = time.time() - t0
        if p.returncode != 0:
            sys.exit(f"audit {name} failed:\n{' '.join(cmd)}\n{p.stderr}")
        stdout = p.stdout
        json.dump({"wall": wall, "stdout": stdout, "cmd": cmd[1:]}, open(saved, "w"))
    with open(os.path.join(out, f"{name}.json")) as f:
        doc = json.load(f)
    rows = list(csv.DictReader(open(os.path.join(out, f"{name}.csv"))))
    return doc, rows, wall, stdout, cmd


def nw_neff(hits):
    """Effective sample size of one series' coverage indicators (Newey-West)."""
    n = len(hits)
    h = np.asarray(hits, float) - np.mean(hits)
    var = h @ h / n
    if var == 0:
        return float(n)
    lag = int(4 * (n / 100) ** (2 / 9))
    s = var
    for k in range(1, lag + 1):
        s += 2 * (1 - k / (lag + 1)) * (h[k:] @ h[:-k]) / n
    return n * var / max(s, var / n)


# The kinds of interval of the CSV (reports.CSVHeader): name, lower and
# upper columns.
KINDS = [
    ("jackknife+", "lower", "upper"),
    ("in-sample residuals", "naive_lower", "naive_upper"),
    ("split conformal", "split_lower", "split_upper"),
    ("conformalized jackknife+", "conformal_jackknife_lower", "conformal_jackknife_upper"),
    ("ACI", "aci_lower", "aci_upper"),
    ("AgACI", "agaci_lower", "agaci_upper"),
    ("NexCP", "nexcp_lower", "nexcp_upper"),
    ("rolling split conformal", "rolling_lower", "rolling_upper"),
    ("ACI clipped", "aci_clipped_lower", "aci_clipped_upper"),
    ("quantile tracking", "qt_lower", "qt_upper"),
    ("conformal PID", "pid_lower", "pid_upper"),
    ("recommended", "recommended_lower", "recommended_upper"),
]


def limit(v, inf):
    return inf if v in ("", "Inf", "+Inf", "-Inf", "inf") else float(v)


def judge(rows, ids_of):
    """Per kind: coverage, width and tolerance over the test period (target rows
    561-800, 1-based), and the forecasts by (series, target row)."""
    by = {}
    for r in rows:
        ch, t = ids_of(r)
        if t <= VAL or r["target"] == "":
            continue
        by.setdefault(ch, []).append((t, r))
    out = {}
    for kind, lo_col, up_col in KINDS:
        if lo_col not in rows[0]:
            continue
        hits, widths, neff, n = [], [], 0.0, 0
        for ch in sorted(by):
            v = sorted(by[ch], key=lambda a: a[0])
            h = []
            for _, r in v:
                lo, up, y = limit(r[lo_col], -np.inf), limit(r[up_col], np.inf), float(r["target"])
                h.append(float(lo <= y <= up))
                if np.isfinite(up - lo):
                    widths.append(up - lo)
            hits += h
            neff += nw_neff(h)
        cov = float(np.mean(hits))
        tol = 1.96 * np.sqrt((1 - ALPHA) * ALPHA / neff)
        out[kind] = {"n": len(hits), "coverage": cov, "width": float(np.mean(widths)) if widths else float("nan"),
                     "unbounded": len(hits) - len(widths), "neff": neff, "tol": tol, "pass": cov >= 1 - ALPHA - tol}
    preds = {(ch, t): float(r["prediction"]) for ch in by for t, r in by[ch]}
    return out, preds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", required=True)
    ap.add_argument("--rev", default="unknown")
    ap.add_argument("--keep-data", action="store_true")
    ap.add_argument("--reuse", nargs="*", default=[], help="audits whose earlier outputs to reuse (with --keep-data)")
    a = ap.parse_args()
    out = os.path.join(HERE, "data")
    os.makedirs(out, exist_ok=True)
    data = series()
    info_path = os.path.join(out, "info.json")
    if a.keep_data and os.path.exists(info_path):
        info = json.load(open(info_path))
    else:
        t0 = time.time()
        info = train(data, out)
        info["train_seconds"] = time.time() - t0
        json.dump(info, open(info_path, "w"), indent=1)
    write_series(data, os.path.join(out, "series_train.csv"), 0, TRAIN)
    write_series(data, os.path.join(out, "series_cal.csv"), TRAIN, VAL)
    write_series(data, os.path.join(out, "series_test.csv"), VAL, ROWS)
    write_windows(data, os.path.join(out, "windows_train.csv"), W - 1, TRAIN - 1)
    write_windows(data, os.path.join(out, "windows_cal.csv"), TRAIN - 1, VAL - 1, "c")
    write_windows(data, os.path.join(out, "windows_test.csv"), VAL - 1, ROWS - 1)
    ridge = DECAY * info["windows"]
    runs = {
        "independent": ["--data", "windows_train.csv", "--calibration", "windows_cal.csv", "--test", "windows_test.csv",
                        "--features", "x", "--target", "target", "--ridge", f"{ridge:g}", "--adaptive"],
        "windowed": ["--data", "series_train.csv", "--calibration", "series_cal.csv", "--test", "series_test.csv",
                     "--features", "y", "--shift", "1", "--window", str(W), "--ridge", f"{ridge:g}", "--adaptive"],
    }
    res, preds = {}, {}
    for name, args in runs.items():
        doc, rows, wall, stdout, cmd = audit(a.audit, out, name, args, a.keep_data and name in a.reuse)
        if name == "independent":
            # id ch2w561: channel 2, last row read 561 (1-based), target row 562.
            key = lambda r: (r["id"].split("w")[0], int(r["id"].split("w")[1]) + 1)
        else:
            key = lambda r: (r["id"].split("@")[0], int(r["t"]) + 1)  # id ch2@561: the last row read
        kinds, preds[name] = judge(rows, key)
        st = doc["settings"]
        rec = (doc.get("conformal") or {}).get("recommendation") or {}
        ad = doc.get("adaptive") or {}
        res[name] = dict(kinds=kinds, wall=wall, solver=st.get("solver"), blocks=st.get("blocks"), nblocks=st.get("num_blocks"),
                         block_length=st.get("block_length"), cmd=" ".join(["audit"] + cmd[1:]),
                         recommended=rec.get("kind", ""), rec_text=rec.get("text", ""),
                         adaptive_recommended=ad.get("recommended", ""), chains=ad.get("chains"), longest=ad.get("longest"),
                         cal_values=(doc.get("conformal") or {}).get("values"),
                         summary=stdout.strip().splitlines()[0] if stdout.strip() else "",
                         windows_line=next((l for l in stdout.splitlines() if l.startswith("Windows:")), ""))
    p1 = preds["independent"]
    p2 = preds["windowed"]
    same = sorted(p1) == sorted(p2)
    diff = max(abs(p1[k] - p2[k]) for k in p1) if same else float("nan")
    if not same or not diff <= 1e-9:
        sys.exit(f"windowed forecasts other windows than independent (same keys {same}, largest difference {diff})")
    write_results(a, info, res, diff)


KIND_NAMES = {"jackknife_plus": "jackknife+", "split_conformal": "split conformal",
              "conformalized_jackknife_plus": "conformalized jackknife+"}


def write_results(a, info, res, diff):
    load = os.getloadavg()
    ind, win = res["independent"], res["windowed"]
    lines = [
        "# Windows benchmark: overlapping windows as independent sequences against `--window`",
        "",
        f"Written by `bash benchmarks/windows/run.sh` (benchmarks/windows/bench.py) at commit {a.rev} on "
        f"{platform.machine()} with {os.cpu_count()} cores, load average {load[0]:.2f} after the run. "
        "The script's docstring says what is measured and how.",
        "",
        f"Data: the 4-channel EEG of matplotlib's sample data ({EEG}), a real series; 480 training, "
        "80 validation (early stopping, then the audits' calibration stretch) and 240 test rows per channel.",
        f"Model: LSTM(1, 30) + Linear, {info['params']:,} parameters, Adam with mini-batches of 64, weight decay "
        f"1e-4, early stopping after {info['epochs']} epochs (validation MSE {info['best_val_mse']:.4f}, training MSE "
        f"{info['train_mse']:.4f}), trained in {info['train_seconds']:.0f} s on {info['windows']:,} windows of 24 steps; "
        "exported with a dynamic batch axis.",
        "",
        f"Both audits forecast the same {win['kinds']['jackknife+']['n']} test values (largest difference {diff:.1e}) "
        f"and calibrate on the same {win['cal_values']} values. Coverage of the 90% intervals on the test period, "
        "mean width of the bounded ones, and whether coverage is within the dependence-aware tolerance "
        "(90% minus 1.96 sqrt(0.09 / n_eff), n_eff in brackets):",
        "",
        "| kind | independent: coverage | width | within (tolerance, n_eff) | windowed: coverage | width | within (tolerance, n_eff) |",
        "|---|---|---|---|---|---|---|",
    ]

    def cell(r):
        w = f"{r['width']:.3f}" if np.isfinite(r["width"]) else "n/a"
        if r["unbounded"]:
            w += f" ({r['unbounded']} unbounded)"
        return (f"{100 * r['coverage']:.1f}% | {w} | {'yes' if r['pass'] else 'no'} "
                f"(±{100 * r['tol']:.1f}, {r['neff']:.0f})")

    for kind, _, _ in KINDS:
        if kind not in ind["kinds"] or kind not in win["kinds"]:
            continue
        name = kind
        if kind == "recommended":
            name = (f"recommended (independent: {KIND_NAMES.get(ind['recommended'], ind['recommended'])}; "
                    f"windowed: {KIND_NAMES.get(win['recommended'], win['recommended'])})")
        lines.append(f"| {name} | {cell(ind['kinds'][kind])} | {cell(win['kinds'][kind])} |")
    lines += [
        "",
        "| audit | blocks | solver | adaptive chains (longest) | recommended over time | wall |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in res.items():
        blocks = f"{r['blocks']}, {r['nblocks']:,}"
        if r["block_length"]:
            blocks += f" of {r['block_length']} rows"
        lines.append(f"| {name} | {blocks} | {r['solver']} | {r['chains']} ({r['longest']}) | "
                     f"{r['adaptive_recommended'] or 'none'} | {r['wall']:.0f} s |")
    lines.append("")
    for name, r in res.items():
        lines += [f"- {name}: `{r['cmd']}` (in benchmarks/windows/data)", f"  - {r['summary']}"]
        if r["rec_text"]:
            lines.append(f"  - {r['rec_text']}")
        if r["windows_line"]:
            lines.append(f"  - {r['windows_line']}")
    with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
