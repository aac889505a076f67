"""Shared helpers for the example training scripts (not a script itself).

- read_long_csv: the long CSV format of docs/data.md into padded
  float64 arrays plus a mask of observed targets;
- PerStep: a recurrent layer plus a linear head at every step, with optional
  fixed (non-trainable) input/output scaling written into the graph as
  constants;
- fit: minimises the SUM of squared errors over all observed (sequence, step)
  plus ridge/2 |theta|^2: full-batch Adam warm-up, L-BFGS, then damped Newton
  with the exact Hessian until the gradient is at its rounding floor;
- report: loss and gradient norms (of the penalised objective and of the plain
  sum loss) at the float64 optimum and at the exported float32 weights, and
  train/test RMSE;
- export_onnx: torch.onnx.export in float32, opset 14, input "x"
  [batch, time, d] with dynamic axes "batch" and "time", output "y"
  [batch, time, 1].

Everything runs in float64 on one CPU thread with deterministic algorithms,
so a re-run reproduces the same weights and the same .onnx bytes.
"""

import copy
import csv
import io
import math
import time
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn


def setup(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.set_default_dtype(torch.float64)


def _num(s):
    try:
        return float(s)
    except ValueError:
        return s


def read_long_csv(path, id_col="id", t_col="t", y_col="y"):
    """Reads a long-format CSV. Returns (ids, features, X, Y, M):
    X [n, Tmax, d] float64 (zero padded), Y [n, Tmax], M [n, Tmax] (1 where a
    target is observed). Sequences are ordered by id, steps by t."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = list(rows[0].keys())
    feats = [c for c in cols if c not in (id_col, t_col, y_col)]
    seqs = {}
    for r in rows:
        seqs.setdefault(r[id_col], []).append(r)
    ids = sorted(seqs, key=lambda k: (isinstance(_num(k), str), _num(k)))
    tmax = max(len(v) for v in seqs.values())
    n, d = len(ids), len(feats)
    X = np.zeros((n, tmax, d))
    Y = np.zeros((n, tmax))
    M = np.zeros((n, tmax))
    for i, k in enumerate(ids):
        steps = sorted(seqs[k], key=lambda r: float(r[t_col]))
        for j, r in enumerate(steps):
            X[i, j] = [float(r[c]) for c in feats]
            Y[i, j] = float(r[y_col])
            M[i, j] = 1.0
    return ids, feats, X, Y, M


class PerStep(nn.Module):
    """rnn (batch_first) -> Linear(H, 1) at every step.

    y = head(rnn((x - in_shift) / in_scale)) * out_scale + out_shift
    where the shifts and scales are fixed numbers (Python floats), exported
    as Constant nodes, not initializers: they are not parameters."""

    def __init__(self, rnn, hidden, in_shift=None, in_scale=None, out_shift=0.0, out_scale=1.0):
        super().__init__()
        self.rnn = rnn
        self.head = nn.Linear(hidden, 1)
        # Rounded to float32 up front: the exported float32 graph then holds
        # exactly the constants the float64 model trains with.
        f32 = lambda v: float(np.float32(v))  # noqa: E731
        self.in_shift = None if in_shift is None else [f32(v) for v in in_shift]
        self.in_scale = None if in_scale is None else [f32(v) for v in in_scale]
        self.out_shift = f32(out_shift)
        self.out_scale = f32(out_scale)

    def forward(self, x):
        if self.in_shift is not None:
            shift = torch.tensor(self.in_shift, dtype=x.dtype)
            scale = torch.tensor(self.in_scale, dtype=x.dtype)
            x = (x - shift) / scale
        h, _ = self.rnn(x)
        y = self.head(h)
        if self.out_scale != 1.0:
            y = y * self.out_scale
        if self.out_shift != 0.0:
            y = y + self.out_shift
        return y


def sum_loss(model, X, Y, M):
    """Sum of squared errors over observed targets (padded steps masked)."""
    pred = model(X)[..., 0]
    return (((pred - Y) ** 2) * M).sum()


def objective(model, X, Y, M, ridge=0.0):
    """sum_loss + ridge/2 |theta|^2 (the training objective)."""
    loss = sum_loss(model, X, Y, M)
    if ridge:
        loss = loss + 0.5 * ridge * sum((p ** 2).sum() for p in model.parameters())
    return loss


def grad_norm(model, X, Y, M, ridge=0.0):
    """(objective, |gradient of the objective|); ridge 0 = the sum loss."""
    model.zero_grad()
    loss = objective(model, X, Y, M, ridge)
    loss.backward()
    g = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    return loss.item(), g.norm().item()


def per_sequence_grad_norms(model, X, Y, M):
    """Norm of each sequence's gradient (the audit's sequence blocks)."""
    out = []
    for i in range(X.shape[0]):
        out.append(grad_norm(model, X[i:i + 1], Y[i:i + 1], M[i:i + 1])[1])
    return np.array(out)


def n_params(model):
    return sum(p.numel() for p in model.parameters())


def hessian(model, X, Y, M, ridge=0.0):
    """Exact Hessian of the objective (one Hessian-vector product per row)."""
    params = list(model.parameters())
    g = torch.autograd.grad(objective(model, X, Y, M, ridge), params, create_graph=True)
    g = torch.cat([v.reshape(-1) for v in g])
    P = g.numel()
    rows = []
    for k in range(P):
        e = torch.zeros(P)
        e[k] = 1.0
        hk = torch.autograd.grad(g, params, grad_outputs=e, retain_graph=True)
        rows.append(torch.cat([v.reshape(-1) for v in hk]))
    H = torch.stack(rows)
    return 0.5 * (H + H.T), g.detach()


def _flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def _set_params(model, theta):
    off = 0
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(theta[off:off + p.numel()].view_as(p))
            off += p.numel()


def fit(model, X, Y, M, ridge=0.0, adam_steps=3000, adam_lr=0.01, lbfgs_iters=20000,
        newton_at=1e-2, tol=1e-6, max_newton=100):
    """Minimises objective() = sum loss + ridge/2 |theta|^2 in three stages:
    full-batch Adam warm-up; full-batch L-BFGS (strong Wolfe) until
    |grad| < newton_at, lbfgs_iters, or a round of 500 iterations that gains
    less than 1e-10 relative; damped Newton with the exact Hessian
    (Levenberg-Marquardt style trust control: the step solves
    (H + mu I) d = -g with mu > -lambda_min(H), mu adapted to the ratio of
    actual to predicted decrease) until |grad| < tol or the predicted decrease
    is at the rounding floor. Returns a dict of training facts."""
    t0 = time.time()
    nobs = M.sum().item()
    opt = torch.optim.Adam(model.parameters(), lr=adam_lr)
    for k in range(adam_steps):
        opt.zero_grad()
        loss = objective(model, X, Y, M, ridge) / nobs  # mean for Adam's step size
        loss.backward()
        opt.step()
        if (k + 1) % 1000 == 0:
            print("  adam %5d  objective %.10g" % (k + 1, loss.item() * nobs), flush=True)

    opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=500, tolerance_grad=0.0,
                            tolerance_change=0.0, history_size=50, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        obj = objective(model, X, Y, M, ridge)
        obj.backward()
        return obj

    lbfgs_done = 0
    loss = math.inf
    while lbfgs_done < lbfgs_iters:
        prev = loss
        opt.step(closure)
        lbfgs_done = opt.state[opt._params[0]]["n_iter"]
        loss, gn = grad_norm(model, X, Y, M, ridge)
        print("  lbfgs %5d  objective %.12g  |grad| %.3e" % (lbfgs_done, loss, gn), flush=True)
        if gn < newton_at or not prev - loss > 1e-10 * abs(loss):
            break  # close enough for Newton, or L-BFGS stalled

    mu = None
    it = 0
    loss, gn = grad_norm(model, X, Y, M, ridge)
    for it in range(1, max_newton + 1):
        if gn < tol:
            it -= 1
            break
        H, g = hessian(model, X, Y, M, ridge)
        lam, Q = torch.linalg.eigh(H)
        qg = Q.T @ g
        if mu is None:
            mu = 1e-6 * lam.abs().max().item()
        theta = _flat_params(model)
        while True:
            mu_eff = max(mu, -lam[0].item() * 1.01 + 1e-12 * lam.abs().max().item())
            d = -Q @ (qg / (lam + mu_eff))
            pred = -(g @ d + 0.5 * d @ (H @ d)).item()
            _set_params(model, theta + d)
            with torch.no_grad():
                new = objective(model, X, Y, M, ridge).item()
            if pred < 1e-14 * abs(loss):
                break  # at the rounding floor: the step is taken as is
            rho = (loss - new) / pred
            if rho > 0.25:
                mu = mu / 3.0 if rho > 0.75 else mu
                break
            mu *= 4.0
        prev = loss
        loss, gn = grad_norm(model, X, Y, M, ridge)
        print("  newton %3d  objective %.12g  |grad| %.3e  lambda_min %.3e  lambda_max %.3e  mu %.2e"
              % (it, loss, gn, lam[0].item(), lam[-1].item(), mu_eff), flush=True)
        if pred < 1e-14 * abs(prev):
            break
    obj = loss
    loss, g0 = grad_norm(model, X, Y, M)
    return {"objective": obj, "objective_grad_norm": gn, "sum_loss": loss, "grad_norm": g0,
            "ridge": ridge, "adam_steps": adam_steps, "lbfgs_iters": lbfgs_done,
            "newton_iters": it, "seconds": time.time() - t0}


def rmse(model, X, Y, M):
    with torch.no_grad():
        pred = model(X)[..., 0]
    return math.sqrt((((pred - Y) ** 2) * M).sum().item() / M.sum().item())


def export_onnx(model, path, d):
    """Exports a float32 copy (opset 14, dynamic batch/time). Returns the
    float64 model carrying exactly the exported float32 weights."""
    m32 = copy.deepcopy(model).float().eval()
    dummy = torch.zeros(2, 3, d, dtype=torch.float32)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the usual RNN batch_first export warning
        torch.onnx.export(m32, (dummy,), f, opset_version=14,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch", 1: "time"},
                                        "y": {0: "batch", 1: "time"}},
                          do_constant_folding=True)
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    with open(path, "wb") as out:
        out.write(data)
    return m32.double()


def report(name, model, facts, Xtr, Ytr, Mtr, Xte, Yte, Mte, m_exported):
    """Prints the training facts for the float64 optimum and for the exported
    float32 weights (what the audit reads, evaluated in float64)."""
    seq = per_sequence_grad_norms(m_exported, Xtr, Ytr, Mtr)
    loss32, g32 = grad_norm(m_exported, Xtr, Ytr, Mtr)
    _, gobj32 = grad_norm(m_exported, Xtr, Ytr, Mtr, facts["ridge"])
    print("%s: %d parameters, %d training targets in %d sequences"
          % (name, n_params(model), int(Mtr.sum().item()), Xtr.shape[0]))
    print("  training: %d Adam steps, %d L-BFGS iterations, %d Newton steps, %.1f s"
          % (facts["adam_steps"], facts["lbfgs_iters"], facts["newton_iters"], facts["seconds"]))
    print("  float64 optimum: objective (sum loss + %g/2 |theta|^2) %.10g  |grad of objective| %.3e"
          % (facts["ridge"], facts["objective"], facts["objective_grad_norm"]))
    print("  float64 optimum: sum loss %.10g  |grad of sum loss| %.3e  (|theta| %.4g)"
          % (facts["sum_loss"], facts["grad_norm"], _flat_params(model).norm().item()))
    print("  exported float32 weights: sum loss %.10g  |grad of sum loss| %.3e  |grad of objective| %.3e"
          % (loss32, g32, gobj32))
    print("  per-sequence gradient norms at the exported weights: median %.3e, min %.3e"
          % (np.median(seq), seq.min()))
    print("  train RMSE %.6f   test RMSE %.6f  (exported weights: test RMSE %.6f)"
          % (rmse(model, Xtr, Ytr, Mtr), rmse(model, Xte, Yte, Mte), rmse(m_exported, Xte, Yte, Mte)))
