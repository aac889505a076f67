#!/usr/bin/python3
"""Brute-force PyTorch reference of the rnnaudit audit procedure
(docs/design.md, sections 1 to 5 and 8: sequence blocks, dense curvature, damped Newton
step, leave-one-block-out residuals, jackknife+ intervals, metrics).

Run:  /usr/bin/python3 make_reference.py            (all cases)
      /usr/bin/python3 make_reference.py rnn_bf     (only the named cases)

Writes beside itself, deterministically (byte-identical on re-run):
  <data>_train.csv, <data>_test.csv  synthetic data sets (long format)
  <case>.json                        intervals, metrics, diagnostics
and exits 1 if a verification fails. See README.md.

Everything is float64. The model is evaluated with the ONNX interpreter
hvp/testdata/onnx_torch.py (every parameter initializer a view of one flat
theta), each sequence on its own (batch of 1, lengths = its length when the
model has a lengths input). The CSVs are written first and then read back,
so the reference runs on exactly the numbers in the files.
"""

import os
import sys

# Single-threaded BLAS/LAPACK and torch: bit-for-bit reproducible output.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"
sys.dont_write_bytecode = True  # no __pycache__ anywhere in the tree

import csv  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "hvp", "testdata"))
import onnx_torch  # noqa: E402

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

NOISE = 0.3      # y = f(x; theta_hat) + NOISE * N(0,1)
DECIMALS = 6     # features and targets are rounded to 6 decimals in the CSV
TOL = 1e-9       # rank tolerance (docs/design.md, section 5.3)

# --------------------------------------------------------------------------
# Data sets and cases
# --------------------------------------------------------------------------

# Data set -> model and sequence lengths (train, test). Feature counts come
# from the model's input. Lengths are fixed here (not drawn) so the residual
# counts m per row are known in advance (see README).
DATASETS = {
    # (a) every sequence 6 steps.
    "rnn_bf": {
        "model": "onnx/testdata/pytorch/rnn_tanh_1l_bf.onnx",
        "train": [6] * 20,
        "test": [6] * 15,
        "reverse_rows": False,
    },
    # (b) variable lengths 3..7 in train; test has 8-step sequences (row 7:
    # m = 0) and 7-step ones (row 6: m = 6 < 9, infinite limits).
    # train: 4 x 3, 4 x 4, 5 x 5, 5 x 6, 6 x 7 (interleaved); m per row =
    # 24 24 24 20 16 11 6 0.
    "gru_tf_varlen": {
        "model": "onnx/testdata/pytorch/gru_2l_tf.onnx",
        "train": [3, 7, 5, 4, 6, 7, 3, 5, 6, 4, 7, 5, 3, 6, 4, 7, 5, 6, 3, 7, 4, 5, 6, 7],
        "test": [3, 8, 5, 7, 4, 6, 8, 5, 7, 3, 6, 4, 7, 5, 8, 6],
        "reverse_rows": False,
    },
    # (c) packed LSTM (inputs x and lengths), lengths 2..6. train: 3 x 2,
    # 4 x 3, 5 x 4, 5 x 5, 5 x 6; m per row = 22 22 19 15 10 5.
    # The CSV rows of each sequence are written in DESCENDING t (the reader
    # must sort them); ids stay contiguous.
    "lstm_packed": {
        "model": "onnx/testdata/pytorch/lstm_packed_bf.onnx",
        "train": [4, 6, 2, 5, 3, 6, 4, 5, 2, 6, 3, 4, 5, 6, 3, 4, 2, 5, 6, 3, 4, 5],
        "test": [2, 6, 4, 3, 5, 6, 2, 4, 5, 3, 6, 4],
        "reverse_rows": True,
    },
    # (e) rnn_bf's files with empty target cells (no label on those rows):
    # training row t (1-based) of sequence k loses its label when
    # (k + t) % 3 == 0, test row t when (k + t) % 2 == 0. m per row = the
    # training sequences labelled there (13 or 14).
    "rnn_bf_sparse": {
        "model": "onnx/testdata/pytorch/rnn_tanh_1l_bf.onnx",
        "from": "rnn_bf",
        "unlabelled": {"train": 3, "test": 2},
    },
}

CASES = [
    {"case": "rnn_bf", "data": "rnn_bf", "rho": 0.01, "curvature": "hessian", "self_audit": False},
    {"case": "gru_tf_varlen", "data": "gru_tf_varlen", "rho": 0.01, "curvature": "hessian",
     "self_audit": False},
    {"case": "lstm_packed", "data": "lstm_packed", "rho": 0.01, "curvature": "hessian",
     "self_audit": False},
    {"case": "rnn_bf_rho1e-3", "data": "rnn_bf", "rho": 1e-3, "curvature": "hessian",
     "self_audit": False},
    {"case": "gru_tf_varlen_gn", "data": "gru_tf_varlen", "rho": 0.01, "curvature": "gauss-newton",
     "self_audit": False},
    {"case": "rnn_bf_self", "data": "rnn_bf", "rho": 0.01, "curvature": "hessian", "self_audit": True},
    {"case": "rnn_bf_sparse", "data": "rnn_bf_sparse", "rho": 0.01, "curvature": "hessian",
     "self_audit": False},
    {"case": "rnn_bf_sparse_gn", "data": "rnn_bf_sparse", "rho": 0.01, "curvature": "gauss-newton",
     "self_audit": False},
]
ALPHA = 0.1


def seed_of(name):
    return zlib.crc32(("audit:" + name).encode("utf-8")) & 0x7FFFFFFF


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

class Model:
    def __init__(self, rel):
        self.rel = rel
        self.m = onnx_torch.OnnxTorch(os.path.join(ROOT, rel))
        x = [i for i in self.m.proto.graph.input if i.name == "x"][0]
        dims = [d.dim_param or d.dim_value for d in x.type.tensor_type.shape.dim]
        if dims[0] == "batch" and dims[1] == "time":
            self.layout = "batch-first"
        elif dims[0] == "time" and dims[1] == "batch":
            self.layout = "time-first"
        else:
            raise ValueError("layout of %s: %s" % (rel, dims))
        self.d = int(dims[2])
        self.has_lengths = "lengths" in self.m.input_names
        self.P = self.m.P
        self.theta0 = self.m.theta0.clone()

    def f(self, x, theta):
        """x: float64 [T, d] (one sequence) -> forecasts [T] (K = 1)."""
        T = x.shape[0]
        xb = x.reshape(1, T, self.d) if self.layout == "batch-first" else x.reshape(T, 1, self.d)
        feeds = {"x": xb}
        if self.has_lengths:
            feeds["lengths"] = torch.tensor([T], dtype=torch.int64)
        y = self.m.run(theta, feeds)["y"]
        y = y[0, :, 0] if self.layout == "batch-first" else y[:, 0, 0]
        assert y.shape == (T,)
        return y


# --------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------

def num(v):
    return repr(float(v))


def write_csv(path, ids, xs, ys, reverse_rows):
    d = xs[0].shape[1]
    buf = io.StringIO()
    buf.write(",".join(["id", "t"] + ["x%d" % (k + 1) for k in range(d)] + ["y"]) + "\n")
    for sid, x, y in zip(ids, xs, ys):
        rows = range(x.shape[0])
        if reverse_rows:
            rows = reversed(rows)
        for t in rows:
            buf.write(",".join([sid, str(t + 1)] + [num(v) for v in x[t]] + [num(y[t])]) + "\n")
    with open(path, "w", newline="") as fh:
        fh.write(buf.getvalue())


def read_csv(path):
    """-> list of (id, x [T,d] float64 tensor, y [T] tensor); sequences in
    order of first appearance, rows sorted by t."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    head = rows[0]
    assert head[0] == "id" and head[1] == "t" and head[-1] == "y"
    seqs, order = {}, []
    for r in rows[1:]:
        if r[0] not in seqs:
            seqs[r[0]] = []
            order.append(r[0])
        # An empty target cell is a row without a label: NaN here.
        seqs[r[0]].append((int(r[1]), [float(v) for v in r[2:-1]],
                           float(r[-1]) if r[-1].strip() else math.nan))
    out = []
    for sid in order:
        rs = sorted(seqs[sid], key=lambda q: q[0])
        ts = [q[0] for q in rs]
        assert len(set(ts)) == len(ts) and ts == list(range(1, len(ts) + 1))
        out.append((sid, torch.tensor([q[1] for q in rs]), torch.tensor([q[2] for q in rs])))
    return out


def blank_targets(name):
    """Writes the files of data set name from those of spec["from"], with
    the target cell of row t (1-based) of sequence k (1-based) emptied
    when (k + t) % every == 0."""
    spec = DATASETS[name]
    for part in ("train", "test"):
        every = spec["unlabelled"][part]
        with open(os.path.join(HERE, "%s_%s.csv" % (spec["from"], part)), newline="") as fh:
            rows = list(csv.reader(fh))
        order = []
        buf = io.StringIO()
        buf.write(",".join(rows[0]) + "\n")
        for r in rows[1:]:
            if r[0] not in order:
                order.append(r[0])
            k, t = len(order), int(r[1])
            if (k + t) % every == 0:
                r = r[:-1] + [""]
            buf.write(",".join(r) + "\n")
        with open(os.path.join(HERE, "%s_%s.csv" % (name, part)), "w", newline="") as fh:
            fh.write(buf.getvalue())


def make_data(name):
    spec = DATASETS[name]
    if "from" in spec:
        blank_targets(name)
        return
    model = Model(spec["model"])
    rng = np.random.default_rng(seed_of(name))
    # Draw order: all train features, all test features (sequence order,
    # row-major [T, d]), then train noise, then test noise.
    X = {}
    for part in ("train", "test"):
        X[part] = [np.round(rng.standard_normal((T, model.d)), DECIMALS) for T in spec[part]]
    for part in ("train", "test"):
        ys = []
        for x in X[part]:
            with torch.no_grad():
                f = model.f(torch.from_numpy(x), model.theta0).numpy()
            ys.append(np.round(f + NOISE * rng.standard_normal(x.shape[0]), DECIMALS))
        prefix = "s" if part == "train" else "u"
        ids = ["%s%02d" % (prefix, k + 1) for k in range(len(ys))]
        write_csv(os.path.join(HERE, "%s_%s.csv" % (name, part)), ids, X[part], ys,
                  spec["reverse_rows"])


# --------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------

def upper_rank(alpha, m):
    return math.ceil((1 - alpha) * (m + 1) - TOL)


def lower_rank(alpha, m):
    return math.floor(alpha * (m + 1) + TOL)


def jackknife_plus(alpha, vminus, vplus):
    m = len(vplus)
    lo, up = -math.inf, math.inf
    k = upper_rank(alpha, m)
    if 1 <= k <= m:
        up = sorted(vplus)[k - 1]
    k = lower_rank(alpha, m)
    if 1 <= k <= m:
        lo = sorted(vminus)[k - 1]
    return lo, up


def fnum(v):
    """float -> JSON number, None for +-inf / NaN."""
    v = float(v)
    return v if math.isfinite(v) else None


def rel(a, b):
    return float((a - b).norm() / max(float(b.norm()), 1e-300))


def run_case(spec, checks_fail):
    t0 = time.time()
    data = DATASETS[spec["data"]]
    model = Model(data["model"])
    P, theta0, alpha = model.P, model.theta0, ALPHA
    train = read_csv(os.path.join(HERE, spec["data"] + "_train.csv"))
    test = None if spec["self_audit"] else read_csv(os.path.join(HERE, spec["data"] + "_test.csv"))
    evals = train if spec["self_audit"] else test
    n = len(train)
    checks = {}

    def fail(msg):
        checks_fail.append("%s: %s" % (spec["case"], msg))

    # 1. Loss (squared error, weight 1, every labelled row of every
    # training sequence; a row without a label has no term)
    def seq_loss(i, theta):
        _, x, y = train[i]
        lab = ~torch.isnan(y)
        return ((y[lab] - model.f(x, theta)[lab]) ** 2).sum()

    def loss(theta):
        return sum(seq_loss(i, theta) for i in range(n))

    # 2. Per-sequence gradients at theta_hat
    G = torch.zeros(n, P)
    for i in range(n):
        th = theta0.clone().requires_grad_(True)
        G[i] = torch.autograd.grad(seq_loss(i, th), th)[0]
    grad = G.sum(0)
    th = theta0.clone().requires_grad_(True)
    g_full = torch.autograd.grad(loss(th), th)[0]
    checks["sum_block_grads_vs_grad_rel"] = rel(grad, g_full)
    if checks["sum_block_grads_vs_grad_rel"] > 1e-12:
        fail("sum of block gradients")

    # 3. Curvature
    if spec["curvature"] == "hessian":
        H = torch.autograd.functional.hessian(loss, theta0.clone())
        checks["hessian_asymmetry_abs"] = float((H - H.t()).abs().max())
        C = (H + H.t()) / 2
        # Hessian vs central differences of the gradient along a unit vector
        v = torch.from_numpy(np.random.default_rng(seed_of(spec["case"] + ":v"))
                             .standard_normal(P))
        v = v / v.norm()
        eps = 1e-5

        def grad_at(t):
            t = t.clone().requires_grad_(True)
            return torch.autograd.grad(loss(t), t)[0]
        fd = (grad_at(theta0 + eps * v) - grad_at(theta0 - eps * v)) / (2 * eps)
        checks["hessian_vs_fd_rel"] = rel(C @ v, fd)
        if checks["hessian_vs_fd_rel"] > 1e-6:
            fail("Hessian vs finite differences")
    else:
        # Gauss-Newton J^T (2I) J, J = d(forecasts of labelled rows)/dtheta
        C = torch.zeros(P, P)
        for _, x, y in train:
            J = torch.autograd.functional.jacobian(lambda t: model.f(x, t), theta0.clone())
            J = J[~torch.isnan(y)]
            C += 2.0 * J.t() @ J
        C = (C + C.t()) / 2
    trace = float(torch.trace(C))
    lam = spec["rho"] * trace / P
    w, V = torch.linalg.eigh(C)
    checks["curvature_eig_min"] = float(w[0])
    checks["curvature_eig_max"] = float(w[-1])
    checks["curvature_n_negative"] = int((w < -1e-10 * w.abs().max()).sum())
    checks["curvature_n_below_minus_lambda"] = int((w < -lam).sum())
    # Conditioning of H + lambda I: smallest |eig + lambda| relative to lambda
    # and to the largest. Small values make theta_-i sensitive to rounding.
    shifted = (w + lam).abs()
    checks["min_abs_eig_plus_lambda_over_lambda"] = float(shifted.min() / lam)
    checks["cond_H_plus_lambda"] = float(shifted.max() / shifted.min())

    # 4. Newton steps theta_-i = theta_hat + (C + lambda I)^-1 g_i (eigh)
    D = (V @ ((V.t() @ G.t()) / (w + lam).unsqueeze(1))).t()          # [n, P]
    D_lu = torch.linalg.solve(C + lam * torch.eye(P), G.t()).t()
    checks["eigh_vs_lu_solve_rel"] = rel(D_lu, D)
    if checks["eigh_vs_lu_solve_rel"] > 1e-9:
        fail("eigh vs LU solve")
    # rho -> 0: the damped (LU) solve approaches the undamped one. The
    # undamped one is the pseudo-inverse (SVD) solve: C is exactly singular
    # (PyTorch's duplicated biases) but every g_i is orthogonal to those null
    # vectors. Compared on the well-conditioned eigenspace |eig| >= 1e-3 max.
    lam_tiny = 1e-8 * trace / P
    D_tiny = torch.linalg.solve(C + lam_tiny * torch.eye(P), G.t())
    D_pinv = torch.linalg.pinv(C, rtol=1e-10, hermitian=False) @ G.t()
    good = w.abs() >= 1e-3 * w.abs().max()
    Vg = V[:, good]
    checks["tiny_rho_vs_pinv_rel_well_conditioned"] = rel(Vg.t() @ D_tiny, Vg.t() @ D_pinv)
    checks["tiny_rho_vs_pinv_rel_all"] = rel(D_tiny, D_pinv)
    checks["n_well_conditioned_eig"] = int(good.sum())
    if checks["tiny_rho_vs_pinv_rel_well_conditioned"] > 1e-6:
        fail("tiny rho vs undamped")
    thetas = theta0.unsqueeze(0) + D
    checks["grad_norm"] = float(grad.norm())
    checks["block_grad_norm_mean"] = float(G.norm(dim=1).mean())

    # 5./6. Residuals at theta_-i, perturbed predictions, jackknife+ limits
    def limits_for(thetas):
        with torch.no_grad():
            R = [(y - model.f(x, thetas[i])).abs() for i, (_, x, y) in enumerate(train)]
            preds = [[model.f(x, thetas[i]) for i in range(n)] for _, x, _ in evals]
        out = []
        for s, (sid, x, y) in enumerate(evals):
            for t in range(x.shape[0]):
                B = [i for i in range(n)
                     if R[i].shape[0] > t and not math.isnan(float(R[i][t]))
                     and not (spec["self_audit"] and i == s)]
                vp = [float(preds[s][i][t]) + float(R[i][t]) for i in B]
                vm = [float(preds[s][i][t]) - float(R[i][t]) for i in B]
                lo, up = jackknife_plus(alpha, vm, vp)
                out.append((lo, up, len(B)))
        return out

    def m_at(t):
        return sum(1 for q in train if q[1].shape[0] > t and not math.isnan(float(q[2][t])))

    lims = limits_for(thetas)
    # 7. Point predictions and naive in-sample intervals
    with torch.no_grad():
        base_train = [model.f(x, theta0) for _, x, _ in train]
        base = [model.f(x, theta0) for _, x, _ in evals]
    naive = {}
    for (_, _, y), f in zip(train, base_train):
        for t in range(len(y)):
            if not math.isnan(float(y[t])):
                naive.setdefault(t, []).append(float(abs(y[t] - f[t])))

    points = []
    k_pt = 0
    for s, (sid, x, y) in enumerate(evals):
        for t in range(x.shape[0]):
            lo, up, m = lims[k_pt]
            k_pt += 1
            # expected m: training sequences longer than t and labelled
            # there (minus self)
            m_exp = m_at(t) - (1 if spec["self_audit"] else 0)
            if m != m_exp:
                fail("m at %s row %d" % (sid, t))
            pred = float(base[s][t])
            nr = naive.get(t, [])
            k = upper_rank(alpha, len(nr))
            q = sorted(nr)[k - 1] if 1 <= k <= len(nr) else math.inf
            points.append({"id": sid, "row": t, "prediction": pred,
                           "lower": lo, "upper": up,
                           "naive_lower": pred - q, "naive_upper": pred + q,
                           "naive_half_width": q,
                           "m": m, "target": None if math.isnan(float(y[t])) else float(y[t])})

    # Sensitivity: how far the limits move (relative to the interval width)
    # when the curvature gets a random symmetric perturbation of spectral
    # size 1e-12 * max|eig| (far above the rounding differences of another
    # implementation) and lambda a relative 1e-12 change.
    E = torch.from_numpy(np.random.default_rng(seed_of(spec["case"] + ":E"))
                         .standard_normal((P, P)))
    E = (E + E.t()) / 2
    E = E * (1e-12 * float(w.abs().max()) / float(torch.linalg.eigvalsh(E).abs().max()))
    D2 = torch.linalg.solve(C + E + lam * (1 + 1e-12) * torch.eye(P), G.t()).t()
    lims2 = limits_for(theta0.unsqueeze(0) + D2)
    sens = 0.0
    for (lo, up, _), (lo2, up2, _) in zip(lims, lims2):
        if math.isfinite(lo) and math.isfinite(up):
            sens = max(sens, abs(lo2 - lo) / (up - lo), abs(up2 - up) / (up - lo))
        elif (math.isfinite(lo), math.isfinite(up)) != (math.isfinite(lo2), math.isfinite(up2)):
            fail("sensitivity run changed which limits are infinite")
    checks["limit_change_over_width_at_1e-12_curvature_perturbation"] = sens
    if sens > 1e-6:
        fail("limits too sensitive to the curvature (%g)" % sens)

    # 8. Metrics over the labelled evaluated rows
    nrow = max(p["row"] for p in points) + 1
    cov, cnt = [0] * nrow, [0] * nrow
    lsum, lcnt = [0.0] * nrow, [0] * nrow
    ncov = [0] * nrow
    seq_ok = {}
    covered = ncovered = infinite = 0
    sse = len_sum = nlen_sum = 0.0
    len_n = nlen_n = 0
    margin = math.inf
    nboundary = 0
    for p in points:
        y, lo, up, t = p["target"], p["lower"], p["upper"], p["row"]
        if y is None:
            p["naive_boundary"] = False
            continue
        inside = lo <= y <= up
        seq_ok[p["id"]] = seq_ok.get(p["id"], True) and inside
        cnt[t] += 1
        if inside:
            covered += 1
            cov[t] += 1
        sse += (y - p["prediction"]) ** 2
        if math.isfinite(lo) and math.isfinite(up):
            len_sum += up - lo
            len_n += 1
            lsum[t] += up - lo
            lcnt[t] += 1
        else:
            infinite += 1
        # Naive coverage as |y - pred| <= q: in exact arithmetic the same as
        # pred - q <= y <= pred + q, and free of rounding when q is this
        # point's own in-sample residual (self-audit: one point per row sits
        # exactly on the naive boundary; it counts as covered).
        nlo, nup, q = p["naive_lower"], p["naive_upper"], p["naive_half_width"]
        res = abs(y - p["prediction"])
        p["naive_boundary"] = res == q
        if res <= q:
            ncovered += 1
            ncov[t] += 1
        if math.isfinite(q):
            nlen_sum += nup - nlo
            nlen_n += 1
            if res != q:
                margin = min(margin, abs(res - q))
            else:
                nboundary += 1
        for lim in (lo, up):
            if math.isfinite(lim):
                margin = min(margin, abs(y - lim))
    N = sum(1 for p in points if p["target"] is not None)

    def ratio(a, b):
        return a / b if b else None
    metrics = {
        "coverage": covered / N,
        "coverage_per_step": [ratio(cov[t], cnt[t]) for t in range(nrow)],
        "joint_coverage": sum(1 for v in seq_ok.values() if v) / len(seq_ok),
        "mean_length": ratio(len_sum, len_n),
        "length_per_step": [ratio(lsum[t], lcnt[t]) for t in range(nrow)],
        "infinite": infinite,
        "rmse": math.sqrt(sse / N),
        "naive_coverage": ncovered / N,
        "naive_coverage_per_step": [ratio(ncov[t], cnt[t]) for t in range(nrow)],
        "naive_mean_length": ratio(nlen_sum, nlen_n),
        "points": N,
    }
    # The smallest distance of a target from a finite limit: coverage is
    # only robust to rounding when this is far above ~1e-12.
    checks["min_target_to_limit_distance"] = margin
    checks["naive_boundary_points"] = nboundary
    if nboundary != (nrow if spec["self_audit"] else 0):
        fail("unexpected number of naive boundary points")
    if margin < 1e-7:
        fail("a target lies within 1e-7 of a limit")
    if spec["self_audit"]:
        # m at every point = (training sequences longer than t) - 1, checked
        # above point by point: the point's own entry is left out.
        checks["self_audit_points_with_own_entry_left_out"] = len(points)
    # Sign of the Newton step: deleting block i should raise its own loss
    # (always, to first order, when C + lambda I is positive definite).
    with torch.no_grad():
        up_frac = sum(1 for i in range(n)
                      if float(seq_loss(i, thetas[i])) > float(seq_loss(i, theta0))) / n
    checks["fraction_blocks_own_loss_raised"] = up_frac

    for p in points:
        for k in ("lower", "upper", "naive_lower", "naive_upper", "naive_half_width"):
            p[k + "_inf"] = math.isinf(p[k])
            p[k] = fnum(p[k])

    out = {
        "case": spec["case"],
        "model": model.rel,
        "layout": model.layout,
        "lengths_input": model.has_lengths,
        "train_csv": spec["data"] + "_train.csv",
        "test_csv": None if spec["self_audit"] else spec["data"] + "_test.csv",
        "self_audit": spec["self_audit"],
        "loss": "squared_error",
        "block_scheme": "sequence",
        "curvature": spec["curvature"],
        "rho": spec["rho"],
        "alpha": alpha,
        "P": P,
        "n_train": n,
        "n_eval": len(evals),
        "train_lengths": [q[1].shape[0] for q in train],
        "eval_lengths": [q[1].shape[0] for q in evals],
        "trace": trace,
        "lambda": lam,
        "grad_norm": float(grad.norm()),
        "block_grad_norms": [float(v) for v in G.norm(dim=1)],
        "delta_norms": [float(v) for v in D.norm(dim=1)],
        "m_per_row": [m_at(t) for t in range(nrow)],
        "ranks": {str(m): {"lower": lower_rank(alpha, m), "upper": upper_rank(alpha, m)}
                  for m in sorted({p["m"] for p in points})},
        "points": points,
        "metrics": metrics,
        "checks": checks,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "onnx": onnx.__version__, "numpy": np.__version__},
    }
    return out, time.time() - t0


def dump(obj):
    def j(v):
        return json.dumps(v, allow_nan=False)
    lines = []
    keys = list(obj)
    for k, key in enumerate(keys):
        comma = "," if k < len(keys) - 1 else ""
        v = obj[key]
        if key == "points":
            inner = ",\n".join(j(p) for p in v)
            lines.append('"points": [\n%s\n]%s' % (inner, comma))
        else:
            lines.append("%s: %s%s" % (j(key), j(v), comma))
    return "{\n" + "\n".join(lines) + "\n}\n"


def main():
    names = sys.argv[1:] or [c["case"] for c in CASES]
    cases = [c for c in CASES if c["case"] in names]
    if len(cases) != len(names):
        sys.exit("unknown case in %s" % names)
    for d in sorted({c["data"] for c in cases}, key=list(DATASETS).index):
        make_data(d)
    failures = []
    for c in cases:
        out, secs = run_case(c, failures)
        text = dump(out)
        json.loads(text)
        with open(os.path.join(HERE, c["case"] + ".json"), "w") as fh:
            fh.write(text)
        mt = out["metrics"]
        print("%-18s P=%3d lambda=%.4g coverage=%.4f joint=%.4f naive=%.4f inf=%d "
              "mean_len=%s (%.1fs)" % (c["case"], out["P"], out["lambda"], mt["coverage"],
                                       mt["joint_coverage"], mt["naive_coverage"],
                                       mt["infinite"], mt["mean_length"], secs))
        print("    checks:", json.dumps(out["checks"]))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
