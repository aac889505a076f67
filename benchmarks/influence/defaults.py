"""The default audit (the binary's own estimator, curvature and damping)
on every model of the influence zoo, without re-training: pooled coverage,
worst step and mean width against the test-set oracle, the figures of the
default column of the influence table in docs/method.md. A quick check, for every change to the numerics,
that the audit still holds on models trained the way users train them
(run.sh runs the whole estimator x curvature grid with exact re-fits).

    go build -o /tmp/audit ./cmd/audit
    /usr/bin/python3 benchmarks/influence/defaults.py --bin /tmp/audit

Needs the zoo (models.json, models/, data/: committed). The damping
sensitivity is turned off: it only adds diagnostics, never moves the limits.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  the grid's oracle and metrics, one definition

REGIME = {
    "rnn100": "Adam, n = 100, not converged",
    "rnn1000": "Adam, n = 1000",
    "gru300": "Adam, MLP head",
    "lstm300": "Adam, packed, lengths 3-10",
    "rnn100s": "stationary, ridge 10, n = 100",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", default=os.path.join(run.HERE, "DEFAULTS.md"))
    a = ap.parse_args()
    with open(os.path.join(run.HERE, "models.json")) as f:
        zoo = json.load(f)
    rows = []
    for name, facts in zoo.items():
        out = "/tmp/defaults_%s.json" % name
        args = [a.bin, "--model", facts["model"], "--data", facts["train"], "--test", facts["test"],
                "--quiet", "--seed", "1", "--damping-sensitivity=false", "--json", out]
        if facts.get("ridge"):
            args += ["--ridge", "%g" % facts["ridge"]]
        t0 = time.time()
        p = subprocess.run(args, cwd=run.ROOT, capture_output=True, text=True)
        secs = time.time() - t0
        if p.returncode != 0:
            rows.append((name, None, p.stderr.strip().splitlines()[-1:], secs))
            continue
        with open(out) as f:
            d = json.load(f)
        synthetic = "synthetic" in facts["train"] or "varlen" in facts["train"]
        m = run.metrics(d, {"seconds": secs}, synthetic)
        m["solver"] = d["settings"]["solver"]
        rows.append((name, m, None, secs))
        print(name, "done in %.0f s" % secs, flush=True)
    md = ["# The default audit on the influence zoo", "",
          "`/usr/bin/python3 benchmarks/influence/defaults.py --bin BINARY` (no re-training; "
          "oracle: per step, twice the 0.9 quantile of |y - f| on the test set). Target 0.90, "
          "guarantee with exact re-training 0.80.", "",
          "| model | regime | estimator (solver) | damping | coverage | worst step | width / oracle | unbounded | verdict | seconds |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for name, m, err, secs in rows:
        if m is None:
            md.append("| %s | %s | failed: %s | | | | | | | %.0f |" % (name, REGIME.get(name, ""), err, secs))
            continue
        md.append("| %s | %s | %s | %.2g | %.3f | %.3f (step %d) | %.2f | %d | %s | %.0f |" % (
            name, REGIME.get(name, ""), "%s (%s)" % (m["estimator"], m["solver"]), m["damping"], m["coverage"],
            m["worst_step_coverage"], m["worst_step"], m["width_over_oracle"],
            m["infinite_intervals"] or 0, m["verdict"], secs))
    with open(a.out, "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
