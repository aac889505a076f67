"""audit, fit and predict: run the binary and read its CSV and JSON output."""

import csv
import json
import math
import os
import tempfile

import numpy as np

from ._binary import run
from ._longcsv import _is_frame, to_long_csv

__all__ = ["Result", "audit", "fit", "predict", "read_intervals", "flag_args"]

# Flags that may be given several times: a list value repeats the flag
# rather than joining the items with commas.
_REPEATABLE = {"input", "out"}


def flag_args(flags):
    """Turns keyword arguments into command-line flags: block_length=5 ->
    --block-length 5; True -> the bare flag; False and None -> nothing; a
    list or tuple -> comma-joined (features=["a", "b"] -> --features a,b),
    or the flag repeated for input= and out=."""
    args = []
    for key, value in flags.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            if key in _REPEATABLE:
                for v in value:
                    args += [flag, os.fspath(v) if key == "out" else str(v)]
            else:
                args += [flag, ",".join(str(v) for v in value)]
        elif isinstance(value, float):
            args += [flag, repr(value)]
        else:
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return args


def _float(s):
    if s == "":
        return math.nan
    return float(s)  # Go writes -Inf and +Inf, which float() reads


def _ids(vals):
    """The id column: integers when every id is the decimal text of one
    (so that "007" stays text), else text."""
    try:
        ints = [int(v) for v in vals]
    except ValueError:
        return np.array(vals, dtype=object)
    if all(str(i) == v for i, v in zip(ints, vals)):
        return np.array(ints, dtype=np.int64)
    return np.array(vals, dtype=object)


# Columns read as int64 when every value is a whole number: the step, the
# horizon and the counts of residuals behind a forecast's limits.
_WHOLE = ("t", "horizon", "m", "m_calibration")


def _steps(t):
    """The step column as int64 when every value is a whole number."""
    t = np.asarray(t, dtype=np.float64)
    if len(t) and np.isfinite(t).all() and (t == np.round(t)).all() and (np.abs(t) < 2 ** 53).all():
        return t.astype(np.int64)
    return t


def read_intervals(path, frame=None):
    """Reads an intervals CSV written by `audit --out x.csv` or
    `audit predict --out x.csv`, whatever interval columns it has.

    Returns a pandas DataFrame when pandas is installed (frame=None) or
    frame=True, else a dict of numpy arrays (column name -> array). The id column (the first) is
    integers when every id is the decimal text of one, else text; t,
    horizon, m and m_calibration are int64 when all whole numbers; every other numeric column is
    float64, with an empty cell (such as the target of data without labels)
    NaN and unbounded limits -inf / +inf; a text column stays text. Numbers
    read back to exactly the float64 the binary wrote.
    """
    path = os.fspath(path)
    pd = None
    if frame or frame is None:
        try:
            import pandas as pd
        except ImportError:
            if frame:
                raise
    
    if pd is not None:
        with open(path, newline="") as f:
            header = next(csv.reader(f))
        df = pd.read_csv(path, float_precision="round_trip", dtype={header[0]: str}, keep_default_na=False,
                         na_values=[""])
        df[header[0]] = _ids(df[header[0]].tolist())
        for name in _WHOLE:
            if name in df.columns and df[name].dtype.kind in "fi":
                df[name] = _steps(df[name].to_numpy())
        return df
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        rows = list(r)
    cols = {}
    for j, name in enumerate(header):
        vals = [row[j] for row in rows]
        if j == 0:
            cols[name] = _ids(vals)
            continue
        try:
            cols[name] = np.array([_float(v) for v in vals], dtype=np.float64)
        except ValueError:
            cols[name] = np.array(vals, dtype=object)  # a text column (e.g. a kind's name)
            continue
        if name in _WHOLE:
            cols[name] = _steps(cols[name])
    return cols


class Result:
    """What an audit or a predict returns.

    intervals  every forecast with its intervals, as the binary's CSV output
               (`--out x.csv`) has them: id, t, horizon, prediction, lower,
               upper (jackknife+), target, naive_lower, naive_upper, m and,
               from binaries that write them, split_*, bonferroni_*,
               conformal_jackknife_* (with a calibration set),
               m_calibration, and recommended (the kind the audit
               recommends) with recommended_lower and recommended_upper;
               every column the binary writes is kept (reports/csv.go in
               the repository documents them); a pandas DataFrame (a dict
               of numpy arrays without pandas)
    report     the JSON report (`--out x.json`) as a dict, without its
               "sequences" list (the same numbers as intervals): model,
               settings, summary, calibration, diagnostics, conformal,
               verdict; reports/doc.go in the repository documents it
    summary    report["summary"]: coverage, widths, RMSE, ... (None when the
               data had no targets)
    verdict    report["verdict"]: level ("good", "fair", "poor", "none"),
               text and reasons
    text       the summary the binary printed
    command    the command line that was run
    """

    def __init__(self, intervals, report, text, command):
        self.intervals = intervals
        self.report = report
        self.text = text
        self.command = command

    @property
    def summary(self):
        return self.report.get("summary")

    @property
    def verdict(self):
        return self.report.get("verdict")

    def __repr__(self):
        n = len(self.intervals["id"]) if self.intervals is not None else 0
        v = (self.verdict or {}).get("level")
        return "<rnnaudit.Result: %d forecasts, verdict %s>" % (n, v)


def _data_path(data, tmp, name, what, flags=None):
    """A path the binary can read: data itself when it is a path, else the
    long-format DataFrame written to tmp/name (with the column names of the
    id_col, time_col and target flags, when given)."""
    if data is None:
        return None
    if _is_frame(data):
        flags = flags or {}
        cols = {k: flags[k] for k in ("id_col", "time_col", "target") if flags.get(k) is not None}
        if flags.get("features"):
            f = flags["features"]
            cols["features"] = f.split(",") if isinstance(f, str) else list(f)
        return to_long_csv(os.path.join(tmp, name), data, **cols)
    if isinstance(data, (str, os.PathLike)):
        return os.path.abspath(os.fspath(data))
    raise TypeError("%s must be a CSV path or a long-format pandas DataFrame (see to_long_csv), not %s"
                    % (what, type(data).__name__))


def _outs(out):
    if out is None:
        return []
    if isinstance(out, (str, os.PathLike)):
        out = [out]
    return [os.path.abspath(os.fspath(o)) for o in out]


def _run_and_read(args, tmp, binary, timeout, progress):
    csv_path = os.path.join(tmp, "intervals.csv")
    json_path = os.path.join(tmp, "report.json")
    text = run(args + ["--out", csv_path, "--out", json_path], binary=binary, timeout=timeout,
               progress=progress)
    # The binary names every report it wrote; the two temporary ones are
    # gone when this returns, so the line names only the caller's.
    lines = []
    for line in text.splitlines():
        if line.startswith("Report written to "):
            line = line.replace(", %s" % csv_path, "").replace(", %s" % json_path, "")
            line = line.replace("%s, " % csv_path, "").replace(csv_path, "")
            if line.strip() in ("Report written to .", "Report written to"):
                continue
        lines.append(line)
    text = "\n".join(lines) + ("\n" if lines else "")
    with open(json_path) as f:
        report = json.load(f)
    report.pop("sequences", None)
    return Result(read_intervals(csv_path), report, text, args)


def audit(model, data, test=None, *, calibration=None, out=None, binary=None, timeout=None, progress=False,
          **flags):
    """Runs a full audit (`audit --model MODEL --data DATA ...`) and returns
    a Result.

    model is the ONNX file; data, test and calibration are long CSV files
    or long-format pandas DataFrames (see to_long_csv). Without test the
    training data are audited, leaving one sequence out. Every other
    command-line flag is a keyword argument with - written _ : ridge=10,
    alpha=0.1, low=0, high=10, blocks="interval", block_length=5,
    features=["a", "b"], input=["x_cat=store,dow"], shift=1, retrain=20...
    (`audit --help` lists them). out names report files to keep (.html,
    .md, .json, .csv), one path or a list. binary is the rnnaudit binary
    (default: see find_binary); timeout in seconds; progress=True shows the
    binary's progress lines on sys.stderr while it runs.

    Raises AuditError with the binary's message when the audit fails, e.g.
    a missing column (naming the file, line and column) or a model that does
    not load.
    """
    with tempfile.TemporaryDirectory(prefix="rnnaudit-") as tmp:
        args = ["--model", os.path.abspath(os.fspath(model)),
                "--data", _data_path(data, tmp, "train.csv", "data", flags)]
        if test is not None:
            args += ["--test", _data_path(test, tmp, "test.csv", "test", flags)]
        if calibration is not None:
            args += ["--calibration", _data_path(calibration, tmp, "calibration.csv", "calibration", flags)]
        args += flag_args(flags)
        for o in _outs(out):
            args += ["--out", o]
        return _run_and_read(args, tmp, binary, timeout, progress)


def fit(model, data, save, *, calibration=None, binary=None, timeout=None, progress=False, **flags):
    """Fits an audit once (`audit fit ... --save SAVE`) for predict to use.

    Takes the audit's arguments except test (flags as keyword arguments,
    as in audit); save is the artifact's path (conventionally .rna). The
    model's absolute path is recorded in the artifact, so predict finds it
    from any working directory. Returns the absolute path of the artifact.
    Raises AuditError with the binary's message on failure.
    """
    save = os.path.abspath(os.fspath(save))
    with tempfile.TemporaryDirectory(prefix="rnnaudit-") as tmp:
        args = ["fit", "--model", os.path.abspath(os.fspath(model)),
                "--data", _data_path(data, tmp, "train.csv", "data", flags)]
        if calibration is not None:
            args += ["--calibration", _data_path(calibration, tmp, "calibration.csv", "calibration", flags)]
        args += flag_args(flags) + ["--save", save]
        run(args, binary=binary, timeout=timeout, progress=progress)
    return save


def predict(load, data, *, model=None, out=None, binary=None, timeout=None, progress=False, **flags):
    """Intervals for new sequences from a fitted audit (`audit predict
    --load LOAD --data DATA`); returns a Result.

    load is the artifact fit saved; data a long CSV file or long-format
    DataFrame with the training file's columns (the target is optional:
    without it the intervals come without coverage, and Result.summary is
    None). model overrides the model path recorded by fit (the binary
    refuses a model whose SHA-256 differs from the fitted one). out names
    report files to keep; other keyword arguments are predict's flags
    (as in audit). Raises AuditError with the binary's message on failure
    (another model, other feature columns, another format version).
    """
    with tempfile.TemporaryDirectory(prefix="rnnaudit-") as tmp:
        args = ["predict", "--load", os.path.abspath(os.fspath(load)),
                "--data", _data_path(data, tmp, "new.csv", "data")]
        if model is not None:
            args += ["--model", os.path.abspath(os.fspath(model))]
        args += flag_args(flags)
        for o in _outs(out):
            args += ["--out", o]
        return _run_and_read(args, tmp, binary, timeout, progress)
