#!/usr/bin/env python3
"""Cut held-out calibration sets for `audit --calibration` from the bundled
test files (standard library only; any python3).

    python3 examples/make_calibration.py

writes
  synthetic/cal_small.csv      sequences 201..400 of synthetic/test.csv (not in
                               test_small.csv, which holds 1..200), ids renamed
                               cal201..cal400: the training ids are 1..1000 too
                               (other sequences), and a calibration id must not
                               be a training id.
  chickweight/cal.csv          test chicks 1, 13, 27, 38, 41 (one or two per
                               diet), ids kept (no chick is in train.csv).
  chickweight/test_rest.csv    the other six test chicks: test data disjoint
                               from cal.csv.

Rows are copied byte for byte, in file order; the script is deterministic.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def split(src, keep, rename=None):
    """Rows of src whose id is in keep (a predicate), with the header."""
    with open(os.path.join(HERE, src), newline="") as f:
        lines = f.read().splitlines(keepends=True)
    out = [lines[0]]
    for line in lines[1:]:
        ident, rest = line.split(",", 1)
        if keep(ident):
            out.append((rename(ident) if rename else ident) + "," + rest)
    return out


def write(dst, lines):
    with open(os.path.join(HERE, dst), "w", newline="") as f:
        f.writelines(lines)
    print(f"{dst}: {len(lines) - 1} rows")


write("synthetic/cal_small.csv",
      split("synthetic/test.csv", lambda i: 201 <= int(i) <= 400, lambda i: "cal" + i))
CAL_CHICKS = {"1", "13", "27", "38", "41"}
write("chickweight/cal.csv", split("chickweight/test.csv", lambda i: i in CAL_CHICKS))
write("chickweight/test_rest.csv", split("chickweight/test.csv", lambda i: i not in CAL_CHICKS))
