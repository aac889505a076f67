#!/usr/bin/python3
"""Windows benchmark: sliding windows of long series, audited as independent
sequences against the windowed mode (--window).

Data: the 4-channel EEG recording that matplotlib ships with its sample
data (Debian's python-matplotlib-data:
/usr/share/matplotlib/mpl-data/sample_data/eeg.dat, 800 samples per
channel; R's sunspots, which the issue used, are not installed on this
machine). Each channel is a series, standardised with the mean and standard
deviation of its first 480 samples. Rows 0-479 of each series are the
training period (the windows the weights are fitted to), rows 480-559 the
validation period (early stopping only), rows 560-799 the later test
period.

Model, trained the ordinary way (float32, seed 0): LSTM(1, 30) + Linear(30,
1) on the last hidden state (3,991 parameters) reading 24-step windows of
one series and forecasting the next value; Adam (lr 3e-3, weight decay
1e-4, coupled), mini-batches of 64 shuffled windows, MSE, at most 150
epochs, early stopping with patience 10 on the validation windows' MSE,
best weights restored; exported like the PyTorch tutorial
(torch.onnx.export with a dynamic batch axis, opset 17). The audit's ridge
is weight decay x windows fitted (w N, python/rnnaudit ridge_from_optimizer).

Three audits (rnnaudit, --alpha 0.1, solver auto), same model, same windows:
  independent: the training windows and the test windows as a file of
               sequences, one id per window, 24 rows each with the next
               value as the target of every row (the layout the issue
               describes): sequence blocks, one window each.
  windowed:    the series themselves in long format, --features y --shift 1
               --window 24: the audit cuts the same windows and uses window
               blocks over stretches of time, of the length it chooses from
               the residuals' autocorrelation and at least the window's.
  windowed-L1: the same with --block-length 1, the length the residuals'
               autocorrelation alone gives here (each block evaluates 1
               window and leaves out 25).
All give the same forecasts (checked to 1e-9). For each, on the test
period (rows 560-799 of the 4 series, 960 forecasts; the windows of rows
480-559 are evaluated too but not counted, as the model was stopped on
them), from the audit's CSV: coverage of the 90% jackknife+ intervals, mean
width, and the dependence-aware tolerance: 1.96 sqrt(0.9 x 0.1 / n_eff),
n_eff the effective number of coverage indicators (Newey-West, lag
floor(4 (n/100)^(2/9)) per series, pooled); coverage within the tolerance
of 90% passes, below 90% minus it fails. Wall time is the audit run's.

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


def write_windows(data, path, first, last):
    """One sequence per window, 24 rows, the next value as every row's target."""
    with open(path, "w") as f:
        f.write("id,t,x,target\n")
        for c, y in enumerate(data):
            for r in range(first, last):
                for k in range(W):
                    row = r - W + 1 + k
                    f.write(f"ch{c + 1}w{r + 1},{row + 1},{y[row]:.9g},{y[row + 1]:.9g}\n")


def audit(binary, out, name, args):
    cmd = [binary, "--model", "model.onnx", "--alpha", str(ALPHA), "--out", f"{name}.json", "--out", f"{name}.csv"] + args
    t0 = time.time()
    p = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"audit {name} failed:\n{' '.join(cmd)}\n{p.stderr}")
    with open(os.path.join(out, f"{name}.json")) as f:
        doc = json.load(f)
    rows = list(csv.DictReader(open(os.path.join(out, f"{name}.csv"))))
    return doc, rows, wall, p.stdout, cmd


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


def judge(rows, ids_of):
    """Coverage, width and tolerance over the test period (rows 561-800 by t)."""
    by = {}
    for r in rows:
        ch, t = ids_of(r)
        if t <= VAL or r["target"] == "":
            continue
        lo, up, y = float(r["lower"]), float(r["upper"]), float(r["target"])
        by.setdefault(ch, []).append((t, lo <= y <= up, up - lo, float(r["prediction"])))
    hits, widths, neff = [], [], 0.0
    for ch in sorted(by):
        v = sorted(by[ch])
        h = [float(a[1]) for a in v]
        hits += h
        widths += [a[2] for a in v if np.isfinite(a[2])]
        neff += nw_neff(h)
    cov = float(np.mean(hits))
    tol = 1.96 * np.sqrt((1 - ALPHA) * ALPHA / neff)
    preds = {(ch, a[0]): a[3] for ch in by for a in by[ch]}
    return {"n": len(hits), "coverage": cov, "width": float(np.mean(widths)) if widths else float("nan"),
            "unbounded": len(hits) - len(widths), "neff": neff, "tol": tol,
            "pass": cov >= 1 - ALPHA - tol}, preds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", required=True)
    ap.add_argument("--rev", default="unknown")
    ap.add_argument("--keep-data", action="store_true")
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
        write_series(data, os.path.join(out, "series_test.csv"), TRAIN, ROWS)
        write_windows(data, os.path.join(out, "windows_train.csv"), W - 1, TRAIN - 1)
        write_windows(data, os.path.join(out, "windows_test.csv"), TRAIN - 1, ROWS - 1)
    ridge = DECAY * info["windows"]
    runs = {
        "independent": ["--data", "windows_train.csv", "--test", "windows_test.csv", "--features", "x",
                        "--target", "target", "--ridge", f"{ridge:g}"],
        "windowed": ["--data", "series_train.csv", "--test", "series_test.csv", "--features", "y",
                     "--shift", "1", "--window", str(W), "--ridge", f"{ridge:g}"],
        "windowed-L1": ["--data", "series_train.csv", "--test", "series_test.csv", "--features", "y",
                        "--shift", "1", "--window", str(W), "--block-length", "1", "--ridge", f"{ridge:g}"],
    }
    res, preds = {}, {}
    for name, args in runs.items():
        doc, rows, wall, stdout, cmd = audit(a.audit, out, name, args)
        if name == "independent":
            # id ch2w561: channel 2, last row read 561 (1-based), target row 562.
            key = lambda r: (r["id"].split("w")[0], int(r["id"].split("w")[1]) + 1)
        else:
            key = lambda r: (r["id"].split("@")[0], int(r["t"]) + 1)  # id ch2@561: the last row read
        j, preds[name] = judge(rows, key)
        st = doc["settings"]
        j.update(wall=wall, solver=st.get("solver"), blocks=st.get("blocks"), nblocks=st.get("num_blocks"),
                 block_length=st.get("block_length"), cmd=" ".join(["audit"] + cmd[1:]),
                 summary=stdout.strip().splitlines()[0] if stdout.strip() else "",
                 windows_line=next((l for l in stdout.splitlines() if l.startswith("Windows:")), ""))
        res[name] = j
    p1, diff = preds["independent"], 0.0
    for name, p2 in preds.items():
        same = sorted(p1) == sorted(p2)
        diff = max(diff, max(abs(p1[k] - p2[k]) for k in p1) if same else float("nan"))
        if not same or not diff <= 1e-9:
            sys.exit(f"{name} forecasts other windows than independent (same keys {same}, largest difference {diff})")
    write_results(a, info, res, diff)


def write_results(a, info, res, diff):
    load = os.getloadavg()
    lines = [
        "# Windows benchmark: overlapping windows as independent sequences against `--window`",
        "",
        f"Written by `bash benchmarks/windows/run.sh` (benchmarks/windows/bench.py) at commit {a.rev} on "
        f"{platform.machine()} with {os.cpu_count()} cores, load average {load[0]:.2f} after the run. "
        "The script's docstring says what is measured and how.",
        "",
        f"Data: the 4-channel EEG of matplotlib's sample data ({EEG}), a real series; 480 training, "
        "80 validation and 240 test rows per channel.",
        f"Model: LSTM(1, 30) + Linear, {info['params']:,} parameters, Adam with mini-batches of 64, weight decay "
        f"1e-4, early stopping after {info['epochs']} epochs (validation MSE {info['best_val_mse']:.4f}, training MSE "
        f"{info['train_mse']:.4f}), trained in {info['train_seconds']:.0f} s on {info['windows']:,} windows of 24 steps; "
        "exported with a dynamic batch axis.",
        "",
        "| audit | blocks | solver | coverage (90% target) | tolerance (n_eff) | within | mean width | unbounded | wall |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res.items():
        blocks = f"{r['blocks']}, {r['nblocks']:,}"
        if r["block_length"]:
            blocks += f" of {r['block_length']} rows"
        lines.append(f"| {name} | {blocks} | {r['solver']} | {100 * r['coverage']:.1f}% of {r['n']} | "
                     f"±{100 * r['tol']:.1f} points ({r['neff']:.0f}) | {'yes' if r['pass'] else 'no'} | "
                     f"{r['width']:.3f} | {r['unbounded']} | {r['wall']:.0f} s |")
    lines += ["", f"The audits forecast the same {res['windowed']['n']} test values (largest difference {diff:.1e}).", ""]
    for name, r in res.items():
        lines += [f"- {name}: `{r['cmd']}` (in benchmarks/windows/data)", f"  - {r['summary']}"]
        if r["windows_line"]:
            lines.append(f"  - {r['windows_line']}")
    with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
