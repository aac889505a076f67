"""Solver benchmark: the wall time of one audit with --solver exact, dual,
lowrank and auto on the bundled examples, the PyTorch quickstart's GRU and
a windowed LSTM of about 4k parameters, so that the automatic choice can
be judged against the fastest of the three (the target: within 1.5x).

Each audit runs once, alone, under `nice -n 10`, with its outputs written
to a scratch folder and its phases timed (--timings); the solvers of a
case run one after another, so that they share the machine's load. Each
row records the wall seconds and the CPU seconds (user and system, from
the child's resource usage), the phases' wall and CPU seconds, and the
low-rank path's refinement; a solver that refuses the problem (the dual form
with more loss terms than parameters, the low-rank path with blocks other
than sequences) is recorded as n/a with its message. The times are wall
clock on a shared machine (the load average is recorded): compare the
rows of one run, not runs of different days.

An audit that runs longer than --timeout seconds (300) is stopped and
recorded as slower than that (the dual form with more loss terms than
parameters factors an N×N kernel: hours at N = 10,000).

usage: bench.py --audit BIN [--quickstart DIR] [--windows DIR] [--only NAME,...]
  --quickstart DIR  the output folder of examples/pytorch-quickstart/quickstart.py
                    (model.onnx, train.csv, test.csv, cal.csv); skipped when absent
  --windows DIR     benchmarks/windows/data (model.onnx, windows_train.csv,
                    windows_test.csv); skipped when absent
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOLVERS = ["exact", "dual", "lowrank", "auto"]


def subset(src, dst, n):
    """Writes the first n sequences (ids) of the long CSV src to dst."""
    ids = set()
    with open(src) as f, open(dst, "w") as g:
        g.write(f.readline())
        for line in f:
            i = line.split(",", 1)[0]
            if i not in ids:
                if len(ids) == n:
                    continue
                ids.add(i)
            g.write(line)


def cases(args):
    s, c = "examples/synthetic", "examples/chickweight"
    out = [
        ("synthetic", [f"--model={s}/model.onnx", f"--data={s}/train.csv", f"--test={s}/test.csv", "--ridge=10"]),
        ("synthetic small", [f"--model={s}/model_small.onnx", f"--data={s}/train_small.csv",
                             f"--test={s}/test_small.csv", "--ridge=10"]),
        ("chickweight", [f"--model={c}/model.onnx", f"--data={c}/train.csv", f"--test={c}/test.csv", "--ridge=3000"]),
    ]
    q = args.quickstart
    if q and os.path.exists(os.path.join(q, "model.onnx")):
        ridge = args.quickstart_ridge
        out.append(("quickstart GRU", [f"--model={q}/model.onnx", f"--data={q}/train.csv", f"--test={q}/test.csv",
                                       f"--calibration={q}/cal.csv", f"--ridge={ridge}"]))
    w = args.windows
    if w and os.path.exists(os.path.join(w, "windows_train.csv")):
        base = [f"--model={w}/model.onnx", "--features=x", "--target=target", "--ridge=0.1824"]
        if args.windows_subset:
            # The first 600 training and 200 test windows.
            subset(os.path.join(w, "windows_train.csv"), os.path.join(w, "w_train.csv"), 600)
            subset(os.path.join(w, "windows_test.csv"), os.path.join(w, "w_test.csv"), 200)
            out.append(("windowed LSTM 600 windows", base + [f"--data={w}/w_train.csv", f"--test={w}/w_test.csv"]))
        out.append(("windowed LSTM 1824 windows", base + [f"--data={w}/windows_train.csv", f"--test={w}/windows_test.csv"]))
    return out


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(bin_, flags, solver, tmp, timeout):
    js = os.path.join(tmp, "out.json")
    cmd = ["nice", "-n", "10", bin_] + flags + [f"--solver={solver}", f"--out={js}", "--quiet", "--timings"]
    t0, c0 = time.monotonic(), children_cpu()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"solver": solver, "error": "stopped after %.0f s" % timeout, "wall": timeout, "timeout": True}
    wall, cpu = time.monotonic() - t0, children_cpu() - c0
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[0]
        return {"solver": solver, "error": msg, "wall": wall}
    with open(js) as f:
        doc = json.load(f)
    st, dg = doc["settings"], doc.get("diagnostics", {})
    phases = {ph["name"]: [ph["seconds"], ph.get("cpu_seconds", 0)] for ph in doc.get("timings", {}).get("phases", [])}
    return {"solver": solver, "wall": wall, "cpu": cpu, "used": st["solver"], "reason": st["solver_reason"],
            "prediction": st.get("solver_prediction", ""), "phases": phases,
            "refined_blocks": dg.get("refined_blocks", 0), "refine_products": dg.get("refine_products", 0)}


def table(paths, out, rev, args_qs=("/nonexistent/", "/nonexistent/")):
    """Writes RESULTS.md from the rows of the results JSONs paths (later
    files' rows replace earlier ones of the same case and solver)."""
    rows, order, load = {}, [], None
    for path in paths:
        d = json.load(open(path))
        load = d.get("load", load)
        for r in d["rows"]:
            key = (r["case"], r["solver"])
            if r["case"] not in order:
                order.append(r["case"])
            rows[key] = r
    lines = ["# Solver benchmark: exact, dual, low-rank and the automatic choice", "",
             "Written by `bash benchmarks/solver/run.sh` (benchmarks/solver/bench.py, whose docstring says what is "
             "measured) at commit %s on x86_64 with 2 cores shared with other jobs (load average %s after the run): "
             "wall seconds of one audit each (the fastest of %d rounds over the solvers for the cases that ran "
             "several), and in parentheses its CPU seconds (user and system, both cores; the least of the rounds). "
             "Under that load a wall time is inflated several times over, unevenly from one run to the next; the "
             "CPU seconds are the work done, much less affected, and the ratio that judges the automatic choice "
             "is given for both." % (rev, ", ".join("%.1f" % x for x in (load or [])[:3]) or "n/a",
                                     max([r.get("rounds", 1) for r in rows.values()] or [1])), "",
             "QS is the quickstart's output folder, WINDOWS benchmarks/windows/data (the 600-window case: its "
             "first 600 training and 200 test windows).", "",
             "| case | exact | dual | lowrank | auto (its choice) | auto / fastest, wall | auto / fastest, CPU |",
             "|---|---|---|---|---|---|---|"]

    def ok(r):
        return r is not None and "error" not in r

    def cell(r):
        if r is None:
            return "not run"
        if r.get("timeout"):
            return "> %.0f%s" % (r["wall"], " †" if r.get("reused") else "")
        if "error" in r:
            return "n/a"
        mark = " †" if r.get("reused") else ""
        if r.get("cpu"):
            return "%.1f (%.1f)%s" % (r["wall"], r["cpu"], mark)
        return "%.1f%s" % (r["wall"], mark)
    for case in order:
        got = {s: rows.get((case, s)) for s in SOLVERS}
        a = got["auto"]
        ratios = []
        for key in ("wall", "cpu"):
            times = [got[s][key] for s in SOLVERS[:3] if ok(got[s]) and got[s].get(key)]
            ratios.append("%.2f" % (a[key] / min(times)) if ok(a) and a.get(key) and times else "n/a")
        auto = "%s (%s, %s)" % (cell(a), a.get("used"), a.get("reason")) if ok(a) else cell(a)
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (case, cell(got["exact"]), cell(got["dual"]), cell(got["lowrank"]),
                                                           auto, ratios[0], ratios[1]))
    if any(r.get("reused") for r in rows.values()):
        lines += ["", "† not re-run: taken from the earlier results file given as --prior (runs of many minutes, "
                  "or the dual form's N×N kernel with N > P, which does not finish)."]
    lines += ["", "Predictions stated by the automatic choice (the summary's Solver line, the JSON's solver_prediction), "
              "where the prediction mattered:", ""]
    for case in order:
        a = rows.get((case, "auto"))
        if a and a.get("prediction"):
            lines.append("- %s: %s" % (case, a["prediction"]))
    refined = [(c, s) for c in order for s in SOLVERS if ok(rows.get((c, s))) and rows[(c, s)].get("refined_blocks")]
    if refined:
        lines += ["", "Low-rank runs that refined blocks of high leverage by conjugate gradients (blocks, products, "
                  "CPU seconds of the refinement phase):", ""]
        for c, s in refined:
            r = rows[(c, s)]
            lines.append("- %s, %s: %d blocks, %d products, %.1f s" % (c, s, r["refined_blocks"], r["refine_products"],
                                                                       r.get("phases", {}).get("refinement", [0, 0])[1]))
    notes = [r for r in rows.values() if r.get("note")]
    if notes:
        lines += ["", "Rows measured by a separate run of the same binary and flags (`/usr/bin/time`), not by bench.py:", ""]
        for r in notes:
            lines.append("- %s, %s: %.1f s (%s)" % (r["case"], r["solver"], r["wall"], r["note"]))
    lines += ["", "Commands (from the repository root; the quickstart's files from examples/pytorch-quickstart/quickstart.py, "
              "the windowed LSTM's from benchmarks/windows/run.sh; `--solver S --out out.json --quiet --timings` added):", ""]
    for case in order:
        r = next((rows[(case, s)] for s in SOLVERS if (case, s) in rows and rows[(case, s)].get("flags")), None)
        if r:
            flags = " ".join(r["flags"]).replace(args_qs[0], "QS").replace(args_qs[1], "WINDOWS")
            lines.append("- %s: `audit %s`" % (case, flags))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit")
    ap.add_argument("--quickstart")
    ap.add_argument("--quickstart-ridge", type=float, default=0.0)
    ap.add_argument("--windows")
    ap.add_argument("--windows-subset", action="store_true", help="also the first 600 windows (w_train.csv, w_test.csv)")
    ap.add_argument("--only", default="")
    ap.add_argument("--timeout", type=float, default=300, help="seconds after which an audit is stopped and recorded as such")
    ap.add_argument("--repeat", type=int, default=1, help="rounds over the solvers for the cases of --repeat-cases")
    ap.add_argument("--repeat-cases", default="synthetic,synthetic small,chickweight,quickstart GRU",
                    help="the cases run --repeat times (comma-separated)")
    ap.add_argument("--skip", default="", help="case:solver pairs not to run (taken from --prior), comma-separated")
    ap.add_argument("--prior", help="a results JSON whose rows fill the skipped pairs")
    ap.add_argument("--json", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--table", help="write RESULTS.md from these results JSONs (comma-separated) and stop")
    ap.add_argument("--rev", default="unknown")
    args = ap.parse_args()
    if args.table:
        return table(args.table.split(","), os.path.join(HERE, "RESULTS.md"), args.rev,
                     (args.quickstart or "/nonexistent/", args.windows or "/nonexistent/"))
    only = [o for o in args.only.split(",") if o]
    skip = {tuple(x.split(":")) for x in args.skip.split(",") if x}
    prior = {}
    if args.prior and os.path.exists(args.prior):
        for row in json.load(open(args.prior))["rows"]:
            prior[(row["case"], row["solver"])] = row
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in cases(args):
            if only and name not in only:
                continue
            # Rounds over the solvers, one after another, so that each
            # solver's runs meet the same load; the row keeps the run of
            # least wall time and the least CPU time of the rounds.
            best = {}
            for rnd in range(args.repeat if name in args.repeat_cases.split(",") else 1):
                for solver in SOLVERS:
                    if (name, solver) in skip and (name, solver) in prior:
                        if rnd > 0:
                            continue
                        r = dict(prior[(name, solver)])
                        r["reused"] = True
                    else:
                        r = run(args.audit, flags, solver, tmp, args.timeout)
                    r["case"], r["flags"] = name, flags
                    print(json.dumps(r), flush=True)
                    b = best.get(solver)
                    if b is None or ("error" in b and "error" not in r):
                        best[solver] = r
                    elif "error" not in r:
                        cpu = min(b.get("cpu", 0), r.get("cpu", 0))
                        if r["wall"] < b["wall"]:
                            best[solver] = r
                        best[solver]["cpu"], best[solver]["rounds"] = cpu, rnd + 1
            rows += [best[s] for s in SOLVERS if s in best]
    with open(args.json, "w") as f:
        json.dump({"load": os.getloadavg(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
