"""The one measurement applied to every method's per-point limits."""

import math

import numpy as np


def _ratio(a, b):
    return a / b if b else math.nan


def measure(seq, step, lower, upper, target, pred, low, high, oracle=None):
    """Metrics of intervals [lower, upper] (±inf for unbounded limits) on
    labelled points (seq, step = row index, target, point prediction pred).

    coverage: fraction with lower <= target <= upper; per step (row) and
    the worst step; joint: fraction of sequences with every point covered.
    width: mean upper - lower over finite intervals (infinite ones counted
    apart), per step, and against the oracle width per row (`oracle`, an
    array indexed by row, or None). Audit flags (docs/design.md,
    section 8.5): a point is flagged low when lower < low (high: upper > high);
    precision = flagged points whose target is beyond the threshold /
    flagged, recall = the same / points whose target is beyond it."""
    seq, step = np.asarray(seq), np.asarray(step)
    lower, upper, target, pred = (np.asarray(v, dtype=np.float64) for v in (lower, upper, target, pred))
    covered = (lower <= target) & (target <= upper)
    width = upper - lower
    finite = np.isfinite(width)
    steps = np.unique(step)
    cov_step = np.array([covered[step == t].mean() for t in steps])
    width_step = np.array([width[(step == t) & finite].mean() if ((step == t) & finite).any() else math.nan
                           for t in steps])
    _, inverse = np.unique(seq, return_inverse=True)
    missed = np.bincount(inverse, weights=~covered)
    out = {
        "points": int(len(target)),
        "coverage": float(covered.mean()),
        "coverage_per_step": cov_step,
        "worst_step_coverage": float(cov_step.min()),
        "worst_step": int(steps[cov_step.argmin()]),
        "joint_coverage": float((missed == 0).mean()),
        "mean_width": float(width[finite].mean()) if finite.any() else math.nan,
        "width_per_step": width_step,
        "infinite": int((~finite).sum()),
        "rmse": float(np.sqrt(np.mean((pred - target) ** 2))),
        "steps": steps,
    }
    if oracle is not None:
        ow = np.asarray(oracle)[step]
        out["oracle_width"] = float(ow.mean())
        out["width_ratio"] = float(width[finite].mean() / ow[finite].mean()) if finite.any() else math.nan
        out["width_ratio_per_step"] = width_step / np.asarray(oracle)[steps]
    for name, flag, actual in (("low", lower < low, target < low), ("high", upper > high, target > high)):
        tp = int((flag & actual).sum())
        out[name] = {"threshold": low if name == "low" else high, "flagged": int(flag.sum()),
                     "actual": int(actual.sum()), "true_positives": tp,
                     "precision": _ratio(tp, int(flag.sum())), "recall": _ratio(tp, int(actual.sum()))}
    return out
