"""export: torch.onnx.export of a recurrent PyTorch module with the axes
the audit needs, checked against the module in float64 by the audit
binary itself."""

import copy
import csv
import json
import math
import os
import tempfile
import warnings

import numpy as np

from . import _head, _onnxwire
from ._binary import AuditError, BinaryNotFoundError, find_binary, run
from ._longcsv import to_long_csv

__all__ = ["ExportError", "Exported", "export"]


class ExportError(RuntimeError):
    """The exported graph does not load in the audit or does not compute
    what the module computes."""


class Exported:
    """What export did.

    path           the ONNX file
    opset          the opset it was exported at
    dynamic_axes   the dynamic axes given to torch.onnx.export
    per_step       True for one output per step ([batch, time, ...]), False
                   for one per sequence ([batch] or [batch, H])
    horizons       the size of the output's horizon axis (1 when none)
    checked        whether the export was run by the audit binary and
                   compared with the module in float64
    max_abs_diff   the largest |binary - module| over the values checked
                   (None when not checked)
    values_checked how many forecasts were compared
    fixed_steps    None, or the number of steps the export is fixed at (a
                   traced Python loop over a cell; see export)
    parameters     the names of the initializers that hold trained values
                   (recorded in the file's metadata_props as
                   "rnnaudit.parameters", a JSON list: the audit takes
                   exactly these as the model's parameters)
    target_scale   None, or (mean, std) as recorded for the target
    head           what the output's last operator is (through operators
                   that only reshape or select): "sigmoid", "softmax",
                   "log-softmax" or "linear"
    loss           the --loss to audit it with: "bce" (a final Sigmoid),
                   "bce-logits" (a head trained with BCEWithLogitsLoss),
                   "softmax-ce" (K logits trained with CrossEntropyLoss, or
                   log-probabilities with NLLLoss), "squared-error"
                   (MSELoss), or None when the export alone cannot tell (a
                   linear head without loss=)
    loss_flags     the keyword flags of rnnaudit.audit/fit that state it
                   ({"loss": "bce-logits", "class_weights": "1,3"}; {} for
                   squared-error, the default)
    loss_note      why loss is None, or what to check ("" when nothing)
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        loss = getattr(self, "loss", None)
        how = "" if not loss or loss == "squared-error" else ", audit with --loss %s" % loss
        if not self.checked:
            return "<rnnaudit.Exported %s (opset %d), not checked%s>" % (self.path, self.opset, how)
        return "<rnnaudit.Exported %s (opset %d), %d forecasts match the module in float64 to %.2g%s>" % (
            self.path, self.opset, self.values_checked, self.max_abs_diff, how)


def _first(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def _call(module, x, batch_first, lengths, static=None):
    """module(x), or module(x, lengths) with every sequence x's full length
    when the module takes its sequences' lengths, with the per-sequence
    values static [batch, S] after them when given."""
    import torch
    args = (x,)
    if lengths:
        t_ax, b_ax = (1, 0) if batch_first else (0, 1)
        args += (torch.full((x.shape[b_ax],), x.shape[t_ax], dtype=torch.int64),)
    if static is not None:
        args += (static,)
    return module(*args)


def _layout(module, example, batch_first, lengths, static=None):
    """Runs module on example and on example three steps longer; returns
    (per_step, horizons, output rank)."""
    import torch
    t_ax, b_ax = (1, 0) if batch_first else (0, 1)
    longer = torch.cat([example, example.narrow(t_ax, 0, 1).expand_as(example.narrow(t_ax, 0, 3))
                        if example.shape[t_ax] < 3 else example.narrow(t_ax, 0, 3)], dim=t_ax)
    with torch.no_grad():
        a = _first(_call(module, example, batch_first, lengths, static))
        b = _first(_call(module, longer, batch_first, lengths, static))
    T = example.shape[t_ax]
    per_step = a.dim() >= 2 and b.dim() == a.dim() and a.shape[t_ax] == T and b.shape[t_ax] == T + 3
    if per_step:
        horizons = 1 if a.dim() == 2 else int(np.prod(a.shape[2:]))
    else:
        if a.shape[0 if batch_first else b_ax] != example.shape[b_ax] and a.dim() > 0:
            raise ExportError("the module's output has shape %s for input %s: neither one value per step "
                              "[batch, time, ...] nor one per sequence [batch] or [batch, H]"
                              % (tuple(a.shape), tuple(example.shape)))
        horizons = 1 if a.dim() <= 1 else int(np.prod(a.shape[1:]))
    return per_step, horizons, a.dim()


def export(module, path, example=None, *, n_features=None, steps=10, opset=14, input_name="x",
           output_name="y", batch_first=True, horizon_axis=False, lengths=None, check=None,
           check_x=None, binary=None, tolerance=1e-6, seed=0, static=None, static_example=None,
           target_scale=None, loss=None, train_budget=None):
    """Exports a PyTorch sequence model to ONNX for the audit, and checks it.

    module takes one float tensor of features, [batch, time, features]
    (batch_first=True, as nn.RNN/LSTM/GRU(batch_first=True)) or
    [time, batch, features], and returns per-step forecasts [batch, time]
    or [batch, time, K], or one forecast per sequence [batch] or
    [batch, H] (a head on the last state), possibly as the first item of a
    tuple (the other outputs are ignored by the audit). example is a sample
    input (default zeros of one sequence of `steps` steps and n_features
    features, in the module's dtype). The export is traced with
    torch.onnx.export at opset (14 by default; 7 to 21 load), in evaluation
    mode, with dynamic axes named "batch" and "time" on the input and the
    first output (only "batch" on a per-sequence output), which is how the
    audit reads the layout; horizon_axis=True names the output's last axis
    "horizon" so that the audit takes its K values as horizons without
    --horizons. A module that is a Python loop over a cell is unrolled for
    example's length: the check then finds the time axis fixed, exports
    again without a dynamic time axis (which the audit takes on sequences of
    exactly that many steps), and warns; script such a module with
    torch.jit.script first for any length.

    lengths names a second input of the sequences' lengths, int64
    [batch], for a module called as module(x, lengths) (one that packs its
    batch with pack_padded_sequence(..., enforce_sorted=False)); the audit
    fills it from the data. The export traces it with example's full
    length, as PyTorch advises.

    static names an input of per-sequence values (static covariates: age,
    sex, baseline labs), [batch, S], for a module called as
    module(x, static) (module(x, lengths, static) with lengths), and
    static_example is a sample of them [batch, S] for example's batch. The
    export fixes S and leaves the batch open, which is how the audit knows
    the input; audit the file with input=["NAME=col1,...,colS"] on the
    columns to_long_csv(static=...) writes. The check gives each of its
    sequences random per-sequence values.

    check (None: when the binary is found, else with a warning that it was
    skipped; True: always; False: never) runs the exported file in the
    audit binary on a few sequences (check_x, an array [n, time, features]
    or a list of [T_i, features] arrays of representative inputs; default
    four random normal sequences of lengths steps, steps+3, steps-3, steps
    for per-step models, so that a time axis fixed by tracing is found) and
    compares its forecasts, computed in float64 from the file's weights,
    with the module's in float64 (a copy converted with .double()): each
    must agree to tolerance * max(1, |value|). Raises ExportError when they
    do not, or when the binary refuses the file (its message included).

    The file records in its metadata (metadata_props "rnnaudit.parameters",
    a JSON list) which initializers hold trained values: those that change
    when every parameter with requires_grad changes (found by exporting a
    perturbed copy once more). The audit takes exactly those as the
    model's parameters; buffers (a scaler's mean and standard deviation,
    running statistics, masks, position tables) and frozen parameters are
    constants.

    target_scale=(mean, std) records that the module was trained on the
    target scaled as (y - mean) / std (metadata_props
    "rnnaudit.target_scale", a JSON list [mean, std], appended after the
    check, which compares the module's own outputs): the audit then reads
    the forecasts as mean + std * output, so that data, intervals and
    reports are in y's units, as with --target-scale.

    loss is the criterion the module was trained with (the loss module,
    such as nn.BCEWithLogitsLoss(pos_weight=w), its class or its class
    name), from which and the export's head (Exported.head) export tells
    the --loss to audit it with (Exported.loss, with its flags
    Exported.loss_flags, including class_weights from pos_weight or
    weight): a final Sigmoid is --loss bce; a head trained with
    BCEWithLogitsLoss, whose output is a logit, --loss bce-logits; K
    logits trained with CrossEntropyLoss --loss softmax-ce. Without loss,
    a final Sigmoid still says bce, a LogSoftmax softmax-ce, and a linear
    head None (regression or a logit: the export cannot tell). When known,
    it is recorded in the file's metadata (metadata_props
    "rnnaudit.loss", a JSON object of the flags) for whoever reads the
    file later; the audit itself is still given --loss. A head that
    contradicts the loss (a final Softmax for CrossEntropyLoss, whose
    input is logits) warns with what to change (Exported.loss_note).

    train_budget is how the module was trained, for the audit's
    early-stopping estimate (docs/design.md, section 4.7.1): a dict such as
    {"epochs": 24, "lr": 5e-3, "batch": 16, "optimizer": "adam"} (epochs:
    those that made the weights kept; batch: sequences per mini-batch) or
    the same as "epochs=24,lr=0.005,batch=16,optimizer=adam", recorded as
    metadata_props "rnnaudit.train_budget"; the audit then uses it as
    --train-budget (which, given, wins).

    Returns an Exported describing the file and the check.
    """
    budget = _budget(train_budget)
    scale = None
    if target_scale is not None:
        scale = tuple(float(v) for v in target_scale)
        if len(scale) != 2 or not (math.isfinite(scale[0]) and math.isfinite(scale[1]) and scale[1] > 0):
            raise ValueError("target_scale=%r: give (mean, std), finite, std > 0" % (target_scale,))
    res = _export(module, path, example, n_features=n_features, steps=steps, opset=opset,
                  input_name=input_name, output_name=output_name, batch_first=batch_first,
                  horizon_axis=horizon_axis, lengths=lengths, check=check, check_x=check_x,
                  binary=binary, tolerance=tolerance, seed=seed, static=static,
                  static_example=static_example)
    if scale is not None:
        _onnxwire.append_metadata(os.fspath(path), _onnxwire.TARGET_SCALE_KEY, json.dumps(list(scale)))
    res.target_scale = scale
    if budget is not None:
        _onnxwire.append_metadata(os.fspath(path), _onnxwire.TRAIN_BUDGET_KEY, budget)
    with open(os.fspath(path), "rb") as f:
        res.head = _head.head_of(f.read(), output_name)
    res.loss, res.loss_flags, res.loss_note = _head.loss_for(res.head, res.horizons, loss)
    if res.loss:
        _head.record(os.fspath(path), res.loss, res.loss_flags)
    if loss is not None or res.head == "softmax":
        _head.warn(res.path, res.loss_note)
    return res


_BUDGET_KEYS = ("epochs", "lr", "batch", "optimizer", "beta1", "beta2", "eps", "damping", "fit")


def _budget(b):
    """train_budget as --train-budget's "key=value,..." (None: none)."""
    if b is None:
        return None
    if isinstance(b, str):
        b = dict(kv.split("=", 1) for kv in b.split(",") if kv.strip()) if all("=" in kv for kv in b.split(",") if kv.strip()) else None
        if b is None:
            raise ValueError("train_budget: give key=value pairs, e.g. epochs=24,lr=0.005,batch=16,optimizer=adam")
    b = {str(k).strip(): v for k, v in dict(b).items()}
    bad = [k for k in b if k not in _BUDGET_KEYS]
    if bad or "epochs" not in b or "lr" not in b:
        raise ValueError("train_budget=%r: give epochs and lr (and batch, optimizer, ...), keys among %s" % (b, ", ".join(_BUDGET_KEYS)))
    if str(b.get("optimizer", "adam")).lower() not in ("adam", "sgd"):
        raise ValueError("train_budget: optimizer %r: give sgd or adam" % (b["optimizer"],))
    return ",".join("%s=%s" % (k, str(b[k]).strip()) for k in _BUDGET_KEYS if k in b)


def _export(module, path, example=None, *, n_features=None, steps=10, opset=14, input_name="x",
            output_name="y", batch_first=True, horizon_axis=False, lengths=None, check=None,
            check_x=None, binary=None, tolerance=1e-6, seed=0, static=None, static_example=None):
    """export without the target scale (see export)."""
    import torch

    path = os.fspath(path)
    params = list(module.parameters())
    dtype = params[0].dtype if params else torch.float32
    device = params[0].device if params else torch.device("cpu")
    if example is None:
        if n_features is None:
            raise ValueError("give example (a sample input tensor) or n_features")
        shape = (1, steps, n_features) if batch_first else (steps, 1, n_features)
        example = torch.zeros(shape, dtype=dtype, device=device)
    if example.dim() != 3:
        raise ValueError("example has shape %s: the audit reads one input [batch, time, features] "
                         "(or [time, batch, features] with batch_first=False)" % (tuple(example.shape),))
    t_ax, b_ax = (1, 0) if batch_first else (0, 1)
    was_training = module.training
    module.eval()
    try:
        stat = None
        if static is not None:
            if static_example is None or static_example.dim() != 2 or static_example.shape[0] != example.shape[b_ax]:
                raise ValueError("static=%r: give static_example, a sample of the per-sequence values "
                                 "[batch, S] with example's batch (%d)" % (static, example.shape[b_ax]))
            stat = (static, static_example.to(dtype=dtype, device=device))
        per_step, horizons, rank = _layout(module, example, batch_first, lengths, stat and stat[1])
        in_axes = {b_ax: "batch", t_ax: "time"}
        if per_step:
            out_axes = {b_ax: "batch", t_ax: "time"}
            if horizon_axis and rank >= 3:
                out_axes[rank - 1] = "horizon"
        else:
            out_axes = {0: "batch"}
            if horizon_axis and rank >= 2:
                out_axes[rank - 1] = "horizon"
        axes = {input_name: in_axes, output_name: out_axes}
        if lengths:
            axes[lengths] = {0: "batch"}
        if stat:
            axes[static] = {0: "batch"}
        res = _export_file(module, example, path, opset, input_name, output_name, axes, per_step, horizons,
                           lengths, batch_first, stat)
        if check is False:
            return res
        try:
            bin_path = find_binary(binary)
        except BinaryNotFoundError as e:
            if check:
                raise
            warnings.warn("rnnaudit.export: %s was not checked against the module: %s" % (path, e),
                          RuntimeWarning, stacklevel=3)
            return res
        try:
            _check(module, res, example, batch_first, check_x, bin_path, tolerance, seed, lengths=lengths,
                   static=stat)
        except _RunError as e:
            if check_x is not None or not per_step:
                raise ExportError(str(e)) from e.__cause__
            # A Python loop over a cell, traced: the graph is unrolled for
            # the example's steps whatever the dynamic axes say. Export it
            # with the time axis fixed, which the audit takes on sequences
            # of exactly that length, and say so.
            T = example.shape[t_ax]
            fixed = {input_name: {b_ax: "batch"}, output_name: {b_ax: "batch"}}
            if lengths:
                fixed[lengths] = {0: "batch"}
            if stat:
                fixed[static] = {0: "batch"}
            res = _export_file(module, example, path, opset, input_name, output_name, fixed, per_step, horizons,
                               lengths, batch_first, stat)
            try:
                _check(module, res, example, batch_first, None, bin_path, tolerance, seed, fixed_steps=T,
                       lengths=lengths, static=stat)
            except _RunError:
                raise ExportError(str(e)) from e.__cause__
            res.fixed_steps = T
            warnings.warn("rnnaudit.export: %s runs only on sequences of exactly %d steps (the export unrolled "
                          "a Python loop for the example's length; the time axis is fixed): the audit takes "
                          "it when every sequence has %d steps. For any length, script the module "
                          "(torch.jit.script) before exporting." % (path, T, T), RuntimeWarning, stacklevel=3)
        return res
    finally:
        module.train(was_training)


class _RunError(ExportError):
    """The binary refused to run the export on the check's sequences."""


def _export_file(module, example, path, opset, input_name, output_name, axes, per_step, horizons, lengths,
                 batch_first, static=None):
    """torch.onnx.export of module (in evaluation mode) to path, then the
    ONNX checker when onnx is installed; returns an unchecked Exported."""
    import torch
    with warnings.catch_warnings():
        # PyTorch warns about every batch_first RNN export with a batch of
        # one, and about shape inference of constants; the dynamic axes
        # and the check make both harmless.
        warnings.filterwarnings("ignore", message=".*batch_size other than 1.*")
        warnings.filterwarnings("ignore", message=".*shape inference of prim::Constant.*")
        args, names = (example,), [input_name]
        if lengths:
            b_ax, t_ax = (0, 1) if batch_first else (1, 0)
            args += (torch.full((example.shape[b_ax],), example.shape[t_ax], dtype=torch.int64),)
            names.append(lengths)
        if static:
            args += (static[1],)
            names.append(static[0])
        torch.onnx.export(module, args, path, opset_version=opset, input_names=names,
                          output_names=[output_name], dynamic_axes=axes)
        trained = _trained_initializers(module, path, args, opset, names, output_name, axes)
    _onnxwire.append_metadata(path, _onnxwire.PARAMETERS_KEY, json.dumps(trained))
    try:
        import onnx
    except ImportError:
        onnx = None
    if onnx is not None:
        onnx.checker.check_model(onnx.load(path))
    return Exported(path=path, opset=opset, dynamic_axes=axes, per_step=per_step, horizons=horizons,
                    checked=False, max_abs_diff=None, values_checked=0, fixed_steps=None, parameters=trained)


# _PERTURB maps each value v of a trained parameter to v * 1.375 + 0.3125,
# exactly in float32 and float64: parameters equal before stay equal, so
# the exporter's de-duplication of equal initializers treats both exports
# alike, and every value changes.
_PERTURB = (1.375, 0.3125)


def _trained_initializers(module, path, args, opset, names, output_name, axes):
    """The names of the initializers of the export at path that hold
    trained values: those that change when every trained parameter
    (named_parameters with requires_grad) changes. torch.onnx.export folds
    parameters into initializers of other names (a GRU's weights, gates
    reordered, become onnx::GRU_57), so the names of named_parameters
    alone do not say which initializers they became; buffers (a scaler's
    mean and standard deviation, running statistics, masks, position
    tables) and frozen parameters do not change. The audit takes exactly
    these as its parameters."""
    import torch
    other = copy.deepcopy(module)
    with torch.no_grad():
        for p in other.parameters():
            if p.requires_grad:
                p.mul_(_PERTURB[0]).add_(_PERTURB[1])
    with open(path, "rb") as f:
        before = _onnxwire.initializers(f.read())
    with tempfile.TemporaryDirectory(prefix="rnnaudit-export-") as tmp:
        moved = os.path.join(tmp, "perturbed.onnx")
        torch.onnx.export(other, args, moved, opset_version=opset, input_names=names,
                          output_names=[output_name], dynamic_axes=axes)
        with open(moved, "rb") as f:
            after = _onnxwire.initializers(f.read())
    named = {n for n, p in module.named_parameters() if p.requires_grad}
    out = []
    for name, t in before.items():
        if name in after:
            if after[name] != t:
                out.append(name)
        elif name in named:
            out.append(name)
    return out


def _check(module, res, example, batch_first, check_x, binary, tolerance, seed, fixed_steps=None, lengths=None,
           static=None):
    """Runs the exported file in the binary on a few sequences and compares
    the forecasts with the module's in float64; fills res. Raises _RunError
    when the binary does not run the file, ExportError when the values
    differ."""
    import torch
    t_ax = 1 if batch_first else 0
    T = example.shape[t_ax]
    d = example.shape[2]
    if check_x is None:
        rng = np.random.default_rng(seed)
        if fixed_steps:
            steps = [fixed_steps] * 4
        elif res.per_step:
            steps = [T, T + 3, max(1, T - 3), T]
        else:
            steps = [T] * 4
        xs = [rng.standard_normal((L, d)) for L in steps]
    elif isinstance(check_x, (list, tuple)):
        xs = [np.asarray(a, dtype=np.float64).reshape(len(a), -1) for a in check_x]
    else:
        a = np.asarray(check_x.detach().cpu() if hasattr(check_x, "detach") else check_x, dtype=np.float64)
        if not batch_first:
            a = a.transpose(1, 0, 2)
        xs = list(a)
    ref = copy.deepcopy(module).double().cpu().eval()
    H = res.horizons
    svals = None  # per sequence: its static values (static covariates)
    if static:
        svals = np.random.default_rng(seed + 1).standard_normal((len(xs), static[1].shape[1]))
    expected = {}  # (sequence index, row index, horizon) -> module value
    rows_of = []   # per sequence: its rows in the CSV (features, and targets)
    for i, x in enumerate(xs):
        inp = torch.from_numpy(x[None] if batch_first else x[:, None])
        with torch.no_grad():
            s = None if svals is None else torch.from_numpy(svals[i:i + 1])
            out = _first(_call(ref, inp, batch_first, lengths, s)).numpy()
        L = len(x)
        if res.per_step:
            out = out[0] if batch_first else out[:, 0]
            out = out.reshape(L, -1)
            for k in range(L):
                for h in range(out.shape[1]):
                    expected[(i, k, h)] = out[k, h]
            rows_of.append(x)
        else:
            out = out.reshape(-1)
            # The audit reads the first T-H+1 rows of a sequence of T rows
            # and compares value h with the target of row T-H+h; so the
            # sequence gets H-1 more rows (features unread) after the L read.
            # Its CSV gives every h the last row read as t.
            for h in range(len(out)):
                expected[(i, L - 1, h)] = out[h]
            rows_of.append(np.vstack([x, np.zeros((len(out) - 1, d))]) if len(out) > 1 else x)
    with tempfile.TemporaryDirectory(prefix="rnnaudit-export-") as tmp:
        data = os.path.join(tmp, "check.csv")
        snames = None if svals is None else ["%s_%d" % (static[0], j + 1) for j in range(svals.shape[1])]
        to_long_csv(data, rows_of, [np.zeros(len(r)) for r in rows_of], first_step=0, static=svals,
                    static_names=snames)
        out_csv = os.path.join(tmp, "out.csv")
        args = ["--model", os.path.abspath(res.path), "--data", data, "--out", out_csv, "--quiet"]
        if snames:
            args += ["--input", "%s=%s" % (static[0], ",".join(snames))]
        if H > 1:
            args += ["--horizons", str(H)]
        try:
            run(args, binary=binary, timeout=600)
        except AuditError as e:
            lens = sorted({len(r) for r in rows_of})
            raise _RunError("%s: the audit binary could not run the export on %d sequences of %s steps: %s"
                            % (res.path, len(rows_of), "/".join(map(str, lens)), e)) from e
        with open(out_csv, newline="") as f:
            got = [(int(r["id"]) - 1, int(float(r["t"])), int(r["horizon"]), float(r["prediction"]))
                   for r in csv.DictReader(f)]
    worst, where = 0.0, None
    seen = 0
    for i, t, h, p in got:
        key = (i, t, h)
        if key not in expected:
            raise ExportError("%s: the audit forecast sequence %d row %d horizon %d, which the module "
                              "does not produce; is the output's layout what export detected (%s)?"
                              % (res.path, i + 1, t, h, "per step" if res.per_step else "per sequence"))
        e = expected[key]
        diff = abs(p - e)
        seen += 1
        if diff > worst:
            worst = diff
        if not diff <= tolerance * max(1.0, abs(e)):
            raise ExportError("%s: the exported graph computes %r at sequence %d, row %d, horizon %d; the "
                              "module in float64 computes %r (difference %.3g, tolerance %.3g): the "
                              "export does not compute what the module does"
                              % (res.path, p, i + 1, t, h, e, diff, tolerance * max(1.0, abs(e))))
    if seen == 0:
        raise ExportError("%s: the audit gave no forecasts to compare" % res.path)
    res.checked = True
    res.max_abs_diff = worst
    res.values_checked = seen
