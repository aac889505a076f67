#!/usr/bin/python3
"""The wall time of an audit on W workers (benchmarks/scale/RESULTS.md,
"The wall time on W workers"), from one measured run.

The low-rank path's three map stages (block pass, test points, limits) are
independent per chunk and divide among W workers of `--cores` cores each; the
driver's part (reading and preparing the data, terms, probes, curvature, the
whole-training-set checks, the reports) does not. With D the driver's CPU
seconds and M the map stages', n training sequences, q test points, rank k,
P parameters, F forecast slots per block record, B the bandwidth between
stages and r one pipeline run's overhead:

    T(1) = (D + M) / cores                                  (in process)
    T(W) = D / cores + 3 r + M / (cores W)
           + (8 k P + 2 n 8 (k + F + 3) + G) / B             (W > 1)

(the factor to every worker; the block table gathered and sent out to the
finalize workers; G the block chunks' partial gradients that travel: at
most W P 32 bytes when the workers combine them (an exact sum is at most
four P-float vectors), --gradient combined, or one P-float vector per block
chunk, --gradient per-chunk).

The CPU seconds come from the run's --json timings (each phase's
cpu_seconds) and GNU time's output (user + system: the CPU outside the
phases, e.g. the reports, counts on the driver); --cpu NAME=SECONDS gives
a phase's CPU where the JSON has none (runs before cpu_seconds existed).
The "test points" phase holds the point chunks (q c_p, --point-cpu) and,
on the in-process path, the fit's checks over the training set: only the
former is a map stage. With --runner, the block pass phase also holds the
driver's encoding of every chunk and its terms (27 of its 154 CPU s at 100k
on prism), counted here as map work. The sizes come from the JSON (settings.
train_sequences, summary.points, diagnostics.rank, model.parameters) unless
given.

    /usr/bin/python3 benchmarks/scale/workers.py --json out/1m.json --time out/1m.time

Only the standard library.
"""

import argparse
import json
import re
import sys

MAP_PHASES = ("block pass", "intervals")
POINTS = "test points"


def parse_time(path):
    """User + system CPU seconds, wall seconds and peak RSS (bytes) of GNU
    time -v's output."""
    cpu, wall, rss = 0.0, None, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith(("User time (seconds):", "System time (seconds):")):
                cpu += float(line.rsplit(":", 1)[1])
            elif line.startswith("Elapsed (wall clock) time"):
                v = line.split("):", 1)[1].strip()
                s = 0.0
                for part in v.split(":"):
                    s = s * 60 + float(part)
                wall = s
            elif line.startswith("Maximum resident set size (kbytes):"):
                rss = int(line.rsplit(":", 1)[1]) * 1024
    return cpu, wall, rss


def human_bytes(b):
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= div:
            return "%.3g %s" % (b / div, unit)
    return "%d B" % b


def seconds(s):
    if s >= 600:
        return "%.1f min" % (s / 60)
    if s >= 10:
        return "%.0f s" % s
    return "%.2g s" % s


def model(a):
    """The model's inputs from the arguments and the run's files: a dict."""
    doc = {}
    if a.json:
        with open(a.json) as f:
            doc = json.load(f)
    phases = {}
    for p in ((doc.get("timings") or {}).get("phases") or []):
        phases[p["name"]] = {"wall": p.get("seconds"), "cpu": p.get("cpu_seconds")}
    for spec in a.cpu:
        name, _, v = spec.rpartition("=")
        if not name:
            sys.exit("workers.py: --cpu %r: want NAME=SECONDS" % spec)
        phases.setdefault(name, {"wall": None, "cpu": None})["cpu"] = float(v)
    missing = [n for n in MAP_PHASES + (POINTS,) if (phases.get(n) or {}).get("cpu") is None]
    if missing:
        sys.exit("workers.py: no CPU seconds for the phase(s) %s: give a --json written by an audit with "
                 "cpu_seconds in its timings, or --cpu NAME=SECONDS" % ", ".join(repr(m) for m in missing))

    total, wall, rss = a.total_cpu, None, None
    if a.time:
        t, wall, rss = parse_time(a.time)
        if total is None:
            total = t
    in_phases = sum(p["cpu"] for p in phases.values() if p["cpu"] is not None)
    if total is None:
        total = in_phases
    if total < in_phases - 1e-9:
        sys.exit("workers.py: the total CPU %.1f s is less than the phases' %.1f s" % (total, in_phases))

    settings, summary, diag = doc.get("settings") or {}, doc.get("summary") or {}, doc.get("diagnostics") or {}

    def size(given, value, what):
        v = given if given is not None else value
        if v is None:
            sys.exit("workers.py: the run's JSON does not give %s: pass it" % what)
        return v

    n = size(a.n, settings.get("train_sequences"), "the training sequences (--n)")
    q = size(a.q, summary.get("points"), "the test points (--q)")
    k = size(a.k, diag.get("rank"), "the rank (--k)")
    P = size(a.P, (doc.get("model") or {}).get("parameters"), "the parameters (--P)")
    F = size(a.F, len(summary.get("points_per_step") or []) or None, "the forecast slots per block record (--F)")

    cb = phases["block pass"]["cpu"]
    cf = phases["intervals"]["cpu"]
    cp = min(phases[POINTS]["cpu"], q * a.point_cpu)
    M = cb + cp + cf
    D = total - M
    return dict(phases=phases, total=total, wall=wall, rss=rss, n=n, q=q, k=k, P=P, F=F,
                cb=cb, cp=cp, cf=cf, M=M, D=D)


def table(m, a):
    cores, B, r = a.cores, a.bandwidth, a.run_overhead
    n, q, k, P, F = m["n"], m["q"], m["k"], m["P"], m["F"]
    rec = 8 * (k + F + 3)
    factor = 8 * k * P
    chunks = -(-n // a.chunk)
    out = []
    w = out.append
    w("Costs in CPU seconds (one core), from the run:\n")
    w("| symbol | what | value |")
    w("|---|---|---|")
    w("| t_drv | the driver: everything but the map stages (read, prepare, terms, probes, curvature, the checks over "
      "the training set, the reports) | %.0f CPU s: %s on %d cores |" % (m["D"], seconds(m["D"] / cores), cores))
    w("| c_b | block chunk, per training sequence | %.3g ms (%.0f CPU s) |" % (1e3 * m["cb"] / n, m["cb"]))
    w("| c_p | point chunk, per test point | %.3g ms (%.1f CPU s) |" % (1e3 * m["cp"] / q, m["cp"]))
    w("| c_f | finalize, per (test point, block) | %.2g s (%.0f CPU s) |" % (m["cf"] / (q * n), m["cf"]))
    w("| r | one pipeline run's overhead | %.2g s |" % r)
    w("")
    w("Sizes that move between stages (8-byte floats), n = %d, q = %d, k = %d, P = %d, F = %d:\n" % (n, q, k, P, F))
    w("| item | size |")
    w("|---|---|")
    w("| factor U (driver to every worker, once) | %s per worker |" % human_bytes(factor))
    w("| block record, 8(k + F + 3) per sequence (block workers to the table) | %s |" % human_bytes(n * rec))
    w("| block table (to every finalize worker) | %s per finalize worker |" % human_bytes(n * rec))
    w("| partial gradients, per block chunk of %d sequences | %d chunks x %s = %s |" % (
        a.chunk, chunks, human_bytes(8 * P), human_bytes(chunks * 8 * P)))
    w("| partial gradients, combined on the workers (exact sums, at most 4 floats a parameter) | at most %s per worker |"
      % human_bytes(32 * P))
    w("| point record, 8(k + 4) per point | %s |" % human_bytes(q * 8 * (k + 4)))
    w("| limits (finalize to driver) | %s |" % human_bytes(q * 3 * 8))
    w("")
    w("With B = %.3g bytes/s and r = %.2g s: n c_b + q c_p + q n c_f = %.0f + %.0f + %.0f = %.0f CPU s.\n"
      % (B, r, m["cb"], m["cp"], m["cf"], m["M"]))
    w("| W | compute over %dW cores | driver (t_drv + 3r) | transfers | T(W) | per-worker memory |" % cores)
    w("|---|---|---|---|---|---|")
    for W in a.workers:
        comp = m["M"] / (cores * W)
        if W == 1:
            drv, tr = m["D"] / cores, 0.0
            mem = ("%s peak RSS measured" % human_bytes(m["rss"])) if m["rss"] else "the whole run's"
            label = "1 (in process)"
        else:
            drv = m["D"] / cores + 3 * r
            grad = W * 32 * P if a.gradient == "combined" else chunks * 8 * P
            tr = (factor + 2 * n * rec + grad) / B
            mem = "finalize: the %s table + its chunk's buffers" % human_bytes(n * rec)
            label = str(W)
        T = comp + drv + tr
        total = ("%.1f min" % (T / 60)) if T >= 60 else seconds(T)
        w("| %s | %s | %s | %s | **%s** | %s |" % (label, seconds(comp), seconds(drv), seconds(tr), total, mem))
    if m["wall"]:
        w("\nThe run itself: %s wall, %.0f CPU s (%.2f cores busy on average)." % (
            seconds(m["wall"]), m["total"], m["total"] / m["wall"]))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="the run's --json output, written with --timings")
    ap.add_argument("--time", help="GNU time -v's output of the run (total CPU, wall, peak RSS)")
    ap.add_argument("--cpu", action="append", default=[], metavar="NAME=SECONDS",
                    help="a phase's CPU seconds (repeatable), where the JSON has none")
    ap.add_argument("--total-cpu", type=float, help="the run's total CPU seconds (default: --time's user + system)")
    ap.add_argument("--n", type=int, help="training sequences")
    ap.add_argument("--q", type=int, help="test points")
    ap.add_argument("--k", type=int, help="the factor's rank")
    ap.add_argument("--P", type=int, help="the model's parameters")
    ap.add_argument("--F", type=int, help="forecast slots per block record")
    ap.add_argument("--point-cpu", type=float, default=0.7e-3,
                    help="CPU seconds per test point of the point chunks (default 0.7e-3, measured at 10k)")
    ap.add_argument("--cores", type=int, default=2, help="cores per worker and on the driver (default 2)")
    ap.add_argument("--bandwidth", type=float, default=1e9, help="bytes/s between stages (default 1e9: 10 GbE)")
    ap.add_argument("--run-overhead", type=float, default=0.17, help="seconds per pipeline run (default 0.17, prism)")
    ap.add_argument("--chunk", type=int, default=64, help="training sequences per block chunk (default 64)")
    ap.add_argument("--gradient", choices=("combined", "per-chunk"), default="combined",
                    help="how the block chunks' partial gradients travel (default combined: cmd/audit-beam sums "
                    "them on the workers)")
    ap.add_argument("--workers", default="1,4,16,64", help="the W to tabulate (default 1,4,16,64)")
    a = ap.parse_args(argv)
    try:
        a.workers = [int(x) for x in re.split(r"[ ,]+", a.workers.strip())]
    except ValueError:
        ap.error("--workers %r: want a comma-separated list of counts" % a.workers)
    print(table(model(a), a))


if __name__ == "__main__":
    main()
