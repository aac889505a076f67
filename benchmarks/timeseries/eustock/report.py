#!/usr/bin/python3
"""Writes eustock/RESULTS.md (to stdout) from the audits run.sh made in OUTDIR:

    /usr/bin/python3 report.py OUTDIR REV

Coverage, worst window of 250 and width are the audit's own figures (its JSON
'adaptive.kinds'), over the four indices' 1,484 test forecasts, the worst
window taken within each index; per-index coverage is recomputed here from the
per-forecast limits."""
import json
import os
import sys

ALPHA, W, MAX_UNBOUNDED = 0.1, 250, 0.02
out, rev = sys.argv[1], sys.argv[2]
load = lambda n: json.load(open(os.path.join(out, n + ".json")))
NAMES = {"aci": "ACI", "agaci": "AgACI", "nexcp": "NexCP (rho 0.99)", "rolling_conformal": "rolling split, EnbPI-style (last 250)",
         "jackknife_plus": "jackknife+ (interval blocks, K=12)", "in_sample": "in-sample residuals"}
RUNS = [("adaptive", "split base, last 250 forecasts, label delay 5"),
        ("adaptive_jk", "jackknife base (jackknife+ at alpha_t), label delay 5"),
        ("adaptive_slow", "split base, gamma 0.005 (Gibbs and Candès), label delay 5"),
        ("adaptive_nodelay", "split base, labels fed back at their own row (5 rows too early)")]


def fmt(x, p=3):
    return "–" if x is None else f"{x:.{p}f}"


KEYS = {"aci": "aci_", "agaci": "agaci_", "nexcp": "nexcp_", "rolling_conformal": "rolling_", "jackknife_plus": "",
        "in_sample": "naive_"}


def per_index(doc, kind):
    """Coverage per index from the per-forecast limits (null: unbounded)."""
    pre, res = KEYS[kind], {}
    for s in doc["sequences"]:
        hit = n = 0
        for st in s["steps"]:
            if st.get("target") is None:
                continue
            lo, up = st[pre + "lower"], st[pre + "upper"]
            lo = float("-inf") if lo is None else lo
            up = float("inf") if up is None else up
            empty = kind == "aci" and st.get("aci_empty", False)
            hit += int(not empty and lo <= st["target"] <= up)
            n += 1
        res[s["id"]] = hit / n
    return res


lines = ["# EuStockMarkets: intervals along four long volatility series", "",
         f"Made by `bash benchmarks/timeseries/eustock/run.sh` (make.py trains the GRU; report.py writes this) at revision {rev}, "
         f"alpha = {ALPHA} (target 0.90; 1 − 2α = 0.80). Next-week log volatility of DAX, SMI, CAC and FTSE (R's EuStockMarkets, "
         "1991–1998 daily closes) from daily returns; GRU(8) trained with Adam and weight decay on the first 80% of the days "
         "(1,483 rows per index), tested on the last 20% (371 per index, 1,484 forecasts). The audit runs interval blocks "
         "(K = 12) with residuals pooled across rows. Coverage is long-run over the test period; worst window is the lowest "
         f"coverage of {W} consecutive forecasts of one index; width is the mean over finite intervals; 'covers' marks coverage "
         "at least 0.89 and a worst window above 0.80; 'vs narrowest' is the width over the narrowest kind of the same run that "
         f"covers with at most {MAX_UNBOUNDED:.0%} of its intervals unbounded; the issue's width target (at most 1.3 times that) "
         f"also asks at most {MAX_UNBOUNDED:.0%} unbounded, an unbounded interval being infinitely wide.", ""]
for name, what in (("four", "four indices as four whole sequences"), ("dax", "DAX alone")):
    s = load(name)["summary"]
    ot = s.get("over_time") or {}
    lines.append(f"- Jackknife+ on the {what}: coverage {fmt(s['coverage'])} of {s['points']} values, width {fmt(s['mean_length'])}, "
                 f"{s['infinite_intervals']} unbounded; dependence-aware tolerance ±{fmt(ot.get('tolerance'))} at "
                 f"{ot.get('effective_points', 0):.0f} effective values.")
lines.append("")
for run, what in RUNS:
    doc = load(run)
    kinds = doc["adaptive"]["kinds"]
    n = doc["summary"]["points"]
    ok = lambda k: k["coverage"] >= 1 - ALPHA - 0.01 and k["worst_window"] is not None and k["worst_window"] > 1 - 2 * ALPHA
    narrow = min((k["mean_length"] for k in kinds if ok(k) and k["infinite_intervals"] <= MAX_UNBOUNDED * n), default=None)
    lines += [f"## {what}", "", f"ACI step gamma {doc['adaptive']['gamma']:.4g}.", "",
              "| kind | coverage | worst window | width | unbounded | covers | vs narrowest | DAX | SMI | CAC | FTSE |",
              "|---|--:|--:|--:|--:|:-:|--:|--:|--:|--:|--:|"]
    for k in kinds:
        pi = per_index(doc, k["kind"])
        ratio = k["mean_length"] / narrow if narrow and k["mean_length"] else None
        lines.append(f"| {NAMES.get(k['kind'], k['kind'])} | {fmt(k['coverage'])} | {fmt(k['worst_window'])} | {fmt(k['mean_length'])} | "
                     f"{k['infinite_intervals']} | {'yes' if ok(k) else 'no'} | {fmt(ratio, 2)} | "
                     + " | ".join(fmt(pi.get(i)) for i in ("DAX", "SMI", "CAC", "FTSE")) + " |")
    lines.append("")
    for k in kinds:
        if k["kind"] in ("aci", "agaci"):
            c1 = abs(k["coverage"] - (1 - ALPHA)) <= 0.01
            c2 = ok(k) or (k["worst_window"] is not None and k["worst_window"] > 1 - 2 * ALPHA)
            c3 = narrow is not None and k["mean_length"] <= 1.3 * narrow and k["infinite_intervals"] <= MAX_UNBOUNDED * n  # unbounded: infinitely wide
            lines.append(f"- {NAMES[k['kind']]}: coverage within 1 point of 0.90 {'yes' if c1 else 'no'}, worst window above 0.80 "
                         f"{'yes' if c2 else 'no'}, width at most 1.3 times the narrowest {'yes' if c3 else 'no'}"
                         f"{' (' + str(k['infinite_intervals']) + ' unbounded, ' + format(k['infinite_intervals'] / n, '.1%') + ')' if k['infinite_intervals'] else ''}")
    lines += [""] + ["Note: " + x for x in doc["adaptive"]["notes"]] + [""]
lines += ["## Notes", "",
          "- Labels: the target of row t is the log RMS of the returns of rows t+1..t+5, known at row t+5, so the adaptive "
          "state takes it 5 rows after the forecast (--label-delay 5); the last run feeds it back at row t, 5 rows too "
          "early, as the benchmark did before. ACI's bounds are stated for labels known before the next forecast and hold "
          "only approximately with the delay.",
          "- Each index runs its own adaptive state (371 forecasts): the worst window of 250 is taken within an index; ACI's "
          "long-run bound per index, (0.9 + gamma)/(gamma 371), is loose at these lengths.",
          "- ACI's default step is 1/(alpha W - 2) = 0.0435, the smallest that bounds every window of 250 by 2 alpha with "
          "immediate labels; AgACI aggregates Zaffran et al.'s 30 steps; see ../RESULTS.md's notes for the rest of the "
          "protocol.",
          "- The split base calibrates on each index's own last 250 labelled forecasts, so its first forecasts (before "
          "9 labels) are unbounded; the jackknife base needs no scores (the leave-one-block-out sets of each forecast).",
          "- Wall time is not measured here (the machine is shared; see the load in the report of the run).", ""]
print("\n".join(lines))
