"""Sequences (arrays, tensors or DataFrames) to the long CSV format the
audit reads: one row per (sequence, step), columns id, t, the features in
the order the model takes them, then the target."""

import csv
import os

import numpy as np

__all__ = ["to_long_csv"]


def _array(a, what):
    """a as a float64 numpy array; torch tensors are detached and moved to
    the CPU."""
    if hasattr(a, "detach"):  # torch.Tensor
        a = a.detach().cpu().numpy()
    try:
        return np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError("%s: not numbers (%s)" % (what, e)) from None


def _is_frame(a):
    return hasattr(a, "columns") and hasattr(a, "to_numpy")


def _sequences_from_arrays(x, y, lengths, batch_first):
    """Splits padded arrays, or lists of per-sequence arrays, into a list of
    (features [T_i, d], targets [T_i] or None)."""
    if isinstance(x, (list, tuple)):
        xs = [_array(s, "x[%d]" % i) for i, s in enumerate(x)]
        xs = [s[:, None] if s.ndim == 1 else s for s in xs]
        for i, s in enumerate(xs):
            if s.ndim != 2:
                raise ValueError("x[%d] has shape %s: each sequence must be [time] or [time, features]"
                                 % (i, s.shape))
        if y is None:
            ys = [None] * len(xs)
        else:
            if not isinstance(y, (list, tuple)) or len(y) != len(xs):
                raise ValueError("y must be a list of %d sequences, like x" % len(xs))
            ys = [_array(s, "y[%d]" % i).reshape(-1) for i, s in enumerate(y)]
            for i, (a, b) in enumerate(zip(xs, ys)):
                if len(a) != len(b):
                    raise ValueError("sequence %d has %d steps in x and %d in y" % (i, len(a), len(b)))
        if lengths is not None:
            for i, (a, n) in enumerate(zip(xs, list(np.asarray(lengths).reshape(-1)))):
                if int(n) != len(a):
                    raise ValueError("lengths[%d] = %d, but x[%d] has %d steps" % (i, n, i, len(a)))
        return list(zip(xs, ys))
    x = _array(x, "x")
    if x.ndim == 2:
        x = x[:, :, None]
    if x.ndim != 3:
        raise ValueError("x has shape %s: give [sequences, time, features] (or [sequences, time] "
                         "for one feature), or a list of [time, features] arrays" % (x.shape,))
    if not batch_first:
        x = x.transpose(1, 0, 2)
    n, T, _ = x.shape
    if y is not None:
        y = _array(y, "y")
        if not batch_first and y.ndim >= 2:
            y = np.swapaxes(y, 0, 1)
        if y.ndim == 3 and y.shape[2] == 1:
            y = y[:, :, 0]
        if y.shape != (n, T):
            raise ValueError("y has shape %s; with x of %d sequences of %d steps it must be [%d, %d] "
                             "(or [%d, %d, 1]), one target per step"
                             % (y.shape if batch_first else np.swapaxes(y, 0, 1).shape, n, T, n, T, n, T))
    if lengths is None:
        lengths = np.full(n, T)
    else:
        lengths = np.asarray(lengths.detach().cpu() if hasattr(lengths, "detach") else lengths).reshape(-1)
        if len(lengths) != n:
            raise ValueError("lengths has %d values for %d sequences" % (len(lengths), n))
        for i, L in enumerate(lengths):
            if L != int(L) or not 1 <= int(L) <= T:
                raise ValueError("lengths[%d] = %s: a length must be a whole number from 1 to %d "
                                 "(the padded time axis)" % (i, L, T))
    out = []
    for i in range(n):
        L = int(lengths[i])
        out.append((x[i, :L], None if y is None else y[i, :L]))
    return out


def _check_finite(seqs, ids):
    for (xs, ys), sid in zip(seqs, ids):
        for what, a in (("x", xs), ("y", ys)):
            if a is None:
                continue
            # A NaN target is a row without a label (an empty cell).
            bad = np.argwhere(np.isinf(a) if what == "y" else ~np.isfinite(a))
            if len(bad):
                step = int(bad[0][0])
                raise ValueError("sequence %s, step %d (0-based, within its length): %s is %r; the audit "
                                 "refuses NaN features and infinities: drop or fill the value, or shorten "
                                 "the sequence with lengths" % (sid, step, what, float(a[tuple(bad[0])])))


def _write(out, header, rows):
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)


def _num(v):
    """A float as the shortest text that reads back to the same float64;
    whole numbers without a fraction."""
    f = float(v)
    if f.is_integer() and abs(f) < 2 ** 53:
        return str(int(f))
    return repr(f)


def _target(v):
    """A target as text: empty for NaN, a row without a label."""
    return "" if np.isnan(v) else _num(v)


def _long_frame_rows(df, id_col, time_col, target, features):
    cols = list(df.columns)
    for c in (id_col, time_col):
        if c not in cols:
            raise ValueError("the DataFrame has no %r column (columns: %s); name it with %s="
                             % (c, ", ".join(map(str, cols)), "id_col" if c == id_col else "time_col"))
    has_target = target in cols
    if features is None:
        features = [c for c in cols if c not in (id_col, time_col, target)]
    else:
        missing = [c for c in features if c not in cols]
        if missing:
            raise ValueError("features %s are not columns of the DataFrame (columns: %s)"
                             % (", ".join(map(str, missing)), ", ".join(map(str, cols))))
    header = [id_col, time_col] + list(features) + ([target] if has_target else [])
    body = df[header]
    num = body.iloc[:, 1:].to_numpy(dtype=np.float64)
    ok = np.isfinite(num)
    if has_target:
        ok[:, -1] |= np.isnan(num[:, -1])  # a NaN target: no label (an empty cell)
    bad = np.argwhere(~ok)
    if len(bad):
        r, c = bad[0]
        raise ValueError("DataFrame row %d (id %s), column %r: %r; the audit refuses NaN and infinities"
                         % (r, body.iloc[r, 0], header[1 + c], num[r, c]))
    ids = [str(v) for v in body.iloc[:, 0].tolist()]
    if has_target:
        rows = ([sid] + [_num(v) for v in row[:-1]] + [_target(row[-1])] for sid, row in zip(ids, num.tolist()))
    else:
        rows = ([sid] + [_num(v) for v in row] for sid, row in zip(ids, num.tolist()))
    return [str(h) for h in header], rows


def _static(static, names, n):
    """The per-sequence values as text, one list per sequence, and their
    column names."""
    if static is None:
        if names:
            raise ValueError("static_names without static values")
        return [[] for _ in range(n)], []
    a = _array(static, "static")
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] != n:
        raise ValueError("static has shape %s: give [%d, S], one row of per-sequence values per sequence"
                         % (a.shape, n))
    bad = np.argwhere(~np.isfinite(a))
    if len(bad):
        i, j = bad[0]
        raise ValueError("static[%d, %d] is %r; the audit refuses NaN and infinities" % (i, j, float(a[i, j])))
    if names is None:
        names = ["s%d" % (j + 1) for j in range(a.shape[1])]
    names = [str(v) for v in names]
    if len(names) != a.shape[1]:
        raise ValueError("static_names names %d columns, static has %d" % (len(names), a.shape[1]))
    return [[_num(v) for v in row] for row in a.tolist()], names


def to_long_csv(path, x, y=None, lengths=None, *, ids=None, features=None, target="y",
                id_col="id", time_col="t", first_step=1, batch_first=True, static=None,
                static_names=None):
    """Writes sequences to path in the long CSV format of the audit.

    One row per (sequence, step) with the columns id_col, time_col, the
    features in the order the model takes them, and the target (left out
    when y is None: data without labels, for `audit predict`; a NaN in y is
    a row without a label, written as an empty cell, so that one label per
    window needs no filler). The audit
    takes every column other than the id, step and target as a feature in
    file order, so the feature order here is the model's.

    x is one of:
      - padded sequences, an array or tensor [n, time, features] (or
        [n, time] for one feature; [time, n, features] with
        batch_first=False), with y [n, time] (or [n, time, 1]) and lengths
        (n whole numbers; default: every sequence the whole time axis):
        steps beyond a sequence's length are not written;
      - a list of per-sequence arrays [T_i, features] (or [T_i]), with y a
        list of [T_i] arrays;
      - a pandas DataFrame already in long format (with id_col and
        time_col columns): its columns are reordered to id, t, features
        (features, or every other column in order), target, checked and
        written.
    ids name the sequences (default 1..n); they must be unique, and a
    calibration file's ids must differ from the training file's (use
    e.g. ids=range(1001, 1201)). Steps are numbered first_step,
    first_step+1, ... The features are named by features (default x for one
    feature, else x1..xd). Numbers are written in full precision (they read
    back to the same float64). NaN or infinite values are refused with the
    sequence and step.

    static holds per-sequence values (static covariates: age, sex, baseline
    labs), an array or tensor [n, S] (or [n] for one), for a model with a
    second input [batch, S]: each is written as a column after the
    features, its sequence's value repeated on every row, named by
    static_names (default s1..sS). Audit such a model with
    input=["static=" + ",".join(static_names)] (the model input's name,
    then the columns, as --input takes them). Not with a DataFrame x,
    which holds such columns already.

    path may be a file name or an open text file. Returns path.
    """
    if _is_frame(x):
        if y is not None or lengths is not None:
            raise ValueError("x is a long-format DataFrame: its target is the %r column; give neither "
                             "y nor lengths" % target)
        if static is not None:
            raise ValueError("x is a long-format DataFrame: give its per-sequence columns as columns "
                             "of the frame, not static=")
        header, rows = _long_frame_rows(x, id_col, time_col, target, features)
    else:
        seqs = _sequences_from_arrays(x, y, lengths, batch_first)
        n = len(seqs)
        if n == 0:
            raise ValueError("no sequences: the audit needs at least one")
        d = seqs[0][0].shape[1]
        for i, (xs, _) in enumerate(seqs):
            if xs.shape[1] != d:
                raise ValueError("sequence %d has %d features, sequence 0 has %d" % (i, xs.shape[1], d))
        if ids is None:
            ids = list(range(1, n + 1))
        ids = [str(v) for v in ids]
        if len(ids) != n:
            raise ValueError("ids has %d values for %d sequences" % (len(ids), n))
        if len(set(ids)) != n:
            dup = next(v for v in ids if ids.count(v) > 1)
            raise ValueError("ids: %r appears more than once; every sequence needs its own id" % dup)
        if features is None:
            features = ["x"] if d == 1 else ["x%d" % (j + 1) for j in range(d)]
        features = [str(f) for f in features]
        if len(features) != d:
            raise ValueError("features names %d columns, the data have %d features" % (len(features), d))
        st, static_names = _static(static, static_names, n)
        names = [id_col, time_col] + features + static_names + ([target] if y is not None else [])
        if len(set(names)) != len(names):
            raise ValueError("column names repeat: %s; rename the features or target" % ", ".join(names))
        _check_finite(seqs, ids)
        header = names

        def rows():
            for i, (sid, (xs, ys)) in enumerate(zip(ids, seqs)):
                for k, row in enumerate(xs.tolist()):
                    r = [sid, str(first_step + k)] + [_num(v) for v in row] + st[i]
                    if ys is not None:
                        r.append(_target(ys[k]))
                    yield r
        rows = rows()
    if hasattr(path, "write"):
        _write(path, header, rows)
        return path
    with open(os.fspath(path), "w", newline="") as f:
        _write(f, header, rows)
    return path
