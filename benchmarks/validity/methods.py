"""Data, models and the baselines' intervals of the validity benchmark (PyTorch).

Imported by bench.py's training jobs (one process per data set, n and seed:
`bench.py train DATASET N SEED`); the main process never imports torch.

- data: the paper's synthetic process from examples/synthetic/generate.py
  (static noise sd 1, or time-dependent sd 0.1 t; T = 10), training pools of
  1000 sequences of which the first n are used, 1000 test sequences; or
  ChickWeight as examples/chickweight ships it (39 training, 11 test chicks).
  The last 20% of a random permutation of the training sequences (seeded)
  is the calibration split; the "80%" models train on the rest.
- vanilla: the model rnnaudit audits, trained with examples/rnnfit.py's fit
  (sum of squared errors + ridge/2 |theta|^2) and exported with its
  export_onnx: an RNN with 20 tanh units (synthetic) or the example's GRU
  with 8 units (ChickWeight).
- cf-rnn: split conformal per step on the vanilla model trained on 80%.
- mq-rnn: the same network with three outputs (alpha/2, 1/2, 1 - alpha/2)
  trained with the quantile (pinball) loss.
- dp-rnn: the same network with variational (Gal and Ghahramani) dropout
  on inputs, hidden state and outputs, 100 stochastic passes, Gaussian
  intervals mean +- z sd.
MQ-RNN and DP-RNN train as the paper's Appendix D says: Adam, learning
rate 0.01, batch 150, 1000 steps.
"""

import contextlib
import csv
import io
import json
import math
import os
import sys
import time
from statistics import NormalDist

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "examples", "synthetic"))
sys.dont_write_bytecode = True

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import generate  # noqa: E402
import rnnfit  # noqa: E402
from config import (ALPHA, CAL_FRACTION, DATASETS, DROPOUTS, FIT, MC_PASSES, N_TEST,  # noqa: E402
                    POOL, SGD, TRAIN_METHODS, config_dir, stored_key)

# ---------------------------------------------------------------- data

def _write_rows(path, header, rows):
    with open(path, "w", newline="\n") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(r[c] for c in header) + "\n")


def make_data(dataset, n, seed, out):
    """Writes train.csv (n sequences), train80.csv + cal.csv (its 80/20
    split, disjoint ids) and test.csv into out; returns the calibration ids."""
    os.makedirs(out, exist_ok=True)
    spec = DATASETS[dataset]
    if spec["kind"] == "synthetic":
        streams = np.random.SeedSequence(seed).spawn(2)
        x, y = generate.simulate(np.random.default_rng(streams[0]), POOL, spec["noise"])
        xt, yt = generate.simulate(np.random.default_rng(streams[1]), N_TEST, spec["noise"])
        generate.write_csv(os.path.join(out, "train.csv"), x[:n], y[:n])
        generate.write_csv(os.path.join(out, "test.csv"), xt, yt)
    else:
        src = os.path.join(ROOT, "examples", "chickweight")
        for name in ("train.csv", "test.csv"):
            with open(os.path.join(src, name)) as f, open(os.path.join(out, name), "w") as g:
                g.write(f.read())
    with open(os.path.join(out, "train.csv"), newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    ids = sorted({r["id"] for r in rows}, key=float)
    if len(ids) != n:
        raise SystemExit("%s: %d training sequences, expected n = %d" % (dataset, len(ids), n))
    perm = np.random.default_rng(seed).permutation(len(ids))
    cal = {ids[i] for i in perm[len(ids) - int(round(CAL_FRACTION * len(ids))):]}
    _write_rows(os.path.join(out, "train80.csv"), header, [r for r in rows if r["id"] not in cal])
    _write_rows(os.path.join(out, "cal.csv"), header, [r for r in rows if r["id"] in cal])
    return sorted(cal, key=float)


def load(path):
    """(ids, X, Y, M) as torch tensors (float64) from a long CSV."""
    ids, _, X, Y, M = rnnfit.read_long_csv(path)
    return ids, torch.from_numpy(X), torch.from_numpy(Y), torch.from_numpy(M)


# ---------------------------------------------------------------- models

def standardisation(X, Y, M):
    """Per-feature mean and sd of the observed rows, and of the targets
    (fixed constants inside the models, not parameters)."""
    obs = M.numpy().astype(bool)
    rows = X.numpy()[obs]
    sd = rows.std(axis=0)
    sd[sd == 0] = 1.0
    y = Y.numpy()[obs]
    return list(rows.mean(axis=0)), list(sd), float(y.mean()), float(y.std())


def recurrent(cell, d, hidden):
    if cell == "gru":
        return nn.GRU(d, hidden, batch_first=True)
    return nn.RNN(d, hidden, nonlinearity="tanh", batch_first=True)


class Forecaster(nn.Module):
    """The baselines' network: standardised inputs, one recurrent layer,
    a linear head with n_out outputs per step, de-standardised outputs.
    With dropout p > 0 the recurrence runs as a loop over a cell with
    variational dropout (one mask per sequence on inputs, hidden state and
    outputs, as Gal and Ghahramani 2016), active in training mode."""

    def __init__(self, cell, d, hidden, n_out, stats, dropout=0.0):
        super().__init__()
        self.cell_kind, self.hidden, self.p = cell, hidden, dropout
        if dropout > 0:
            self.cell = nn.GRUCell(d, hidden) if cell == "gru" else nn.RNNCell(d, hidden, nonlinearity="tanh")
        else:
            self.rnn = recurrent(cell, d, hidden)
        self.head = nn.Linear(hidden, n_out)
        in_shift, in_scale, self.out_shift, self.out_scale = stats
        self.register_buffer("in_shift", torch.tensor(in_shift))
        self.register_buffer("in_scale", torch.tensor(in_scale))

    def _mask(self, n, k, like):
        keep = 1.0 - self.p
        return torch.bernoulli(torch.full((n, k), keep, dtype=like.dtype)) / keep

    def forward(self, x):
        z = (x - self.in_shift) / self.in_scale
        if self.p == 0:
            h, _ = self.rnn(z)
        else:
            n, T, d = z.shape
            drop = self.training
            mx = self._mask(n, d, z) if drop else 1.0
            mh = self._mask(n, self.hidden, z) if drop else 1.0
            mo = self._mask(n, self.hidden, z) if drop else 1.0
            ht = torch.zeros(n, self.hidden, dtype=z.dtype)
            out = []
            for t in range(T):
                ht = self.cell(z[:, t] * mx, ht * mh)
                out.append(ht * mo)
            h = torch.stack(out, dim=1)
        return self.head(h) * self.out_scale + self.out_shift


def pinball(pred, Y, M, qs):
    """Mean over observed targets of the summed quantile losses."""
    loss = 0.0
    for k, q in enumerate(qs):
        u = Y - pred[..., k]
        loss = loss + (torch.maximum(q * u, (q - 1.0) * u) * M).sum()
    return loss / M.sum()


def mse(pred, Y, M):
    return (((pred[..., 0] - Y) ** 2) * M).sum() / M.sum()


def train_sgd(model, X, Y, M, loss_fn, seed):
    """Adam, minibatches of SGD["batch"] sequences (epochs of a seeded
    permutation), SGD["steps"] steps: the paper's Appendix D schedule."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=SGD["lr"])
    n, batch = X.shape[0], min(SGD["batch"], X.shape[0])
    perm, pos = None, n
    model.train()
    for _ in range(SGD["steps"]):
        if pos + batch > n:
            perm, pos = torch.randperm(n, generator=gen), 0
        idx = perm[pos:pos + batch]
        pos += batch
        opt.zero_grad()
        loss = loss_fn(model(X[idx]), Y[idx], M[idx])
        loss.backward()
        opt.step()


# ---------------------------------------------------------------- results

def points(M):
    """(sequence index, row index) of every observed target."""
    s, t = np.nonzero(M.numpy())
    return s, t


def save_result(path, key, method, M, Y, pred, lower, upper, train_s, interval_s, extra=None):
    """One file per (data set, n, seed, method): the per-point limits."""
    s, t = points(M)
    meta = {"key": key, "method": method, "train_seconds": train_s,
            "interval_seconds": interval_s}
    meta.update(extra or {})
    tmp = path + ".tmp.npz"
    np.savez(tmp, seq=s, step=t, target=Y.numpy()[s, t], pred=np.asarray(pred)[s, t],
             lower=np.asarray(lower)[s, t], upper=np.asarray(upper)[s, t],
             meta=np.array(json.dumps(meta, sort_keys=True)))
    os.replace(tmp, path)


def fit_vanilla(spec, Xtr, Ytr, Mtr, seed, onnx_path, log):
    """The audited model: rnnfit.fit to (near) a stationary point of the
    penalised sum loss, exported to ONNX; returns the float64 model with the
    exported float32 weights, the training facts and seconds."""
    torch.manual_seed(seed)
    in_shift, in_scale, out_shift, out_scale = standardisation(Xtr, Ytr, Mtr)
    model = rnnfit.PerStep(recurrent(spec["cell"], Xtr.shape[2], spec["hidden"]), spec["hidden"],
                           in_shift=in_shift, in_scale=in_scale, out_shift=out_shift, out_scale=out_scale)
    t0 = time.time()
    budget = dict(FIT, max_newton=0)
    with contextlib.redirect_stdout(log):
        facts = rnnfit.fit(model, Xtr, Ytr, Mtr, ridge=spec["ridge"], **budget)
        if facts["objective_grad_norm"] > FIT["tol"] and FIT["max_newton"] > 0:
            # Newton steps only (no Adam, no L-BFGS), kept only if they bring
            # the gradient down: on the ill-conditioned n = 1000 problems the
            # damped steps lower the objective at its rounding floor while
            # the gradient grows.
            theta = [p.detach().clone() for p in model.parameters()]
            newton = rnnfit.fit(model, Xtr, Ytr, Mtr, ridge=spec["ridge"], adam_steps=0, lbfgs_iters=0,
                                max_newton=FIT["max_newton"], tol=FIT["tol"])
            if newton["objective_grad_norm"] < facts["objective_grad_norm"]:
                facts.update({k: newton[k] for k in ("objective", "objective_grad_norm", "sum_loss", "newton_iters")})
            else:
                with torch.no_grad():
                    for p, v in zip(model.parameters(), theta):
                        p.copy_(v)
                print("  newton steps discarded (|grad| %.3e > %.3e after L-BFGS)"
                      % (newton["objective_grad_norm"], facts["objective_grad_norm"]))
    seconds = time.time() - t0
    exported = rnnfit.export_onnx(model, onnx_path, Xtr.shape[2])
    _, g = rnnfit.grad_norm(exported, Xtr, Ytr, Mtr, spec["ridge"])
    facts = {k: facts[k] for k in ("objective", "objective_grad_norm", "sum_loss", "lbfgs_iters", "newton_iters")}
    facts["exported_objective_grad_norm"] = g
    return exported, facts, seconds


def predict(model, X):
    model.eval()
    with torch.no_grad():
        return model(X).numpy()


def run_training(cache, dataset, n, seed, keys):
    """Trains every method whose result file is missing or stale. keys maps
    method -> cache key (computed by bench.py from method_config)."""
    rnnfit.setup(seed)
    spec = DATASETS[dataset]
    out = config_dir(cache, dataset, n, seed)
    make_data(dataset, n, seed, out)
    _, Xtr, Ytr, Mtr = load(os.path.join(out, "train.csv"))
    _, X80, Y80, M80 = load(os.path.join(out, "train80.csv"))
    _, Xc, Yc, Mc = load(os.path.join(out, "cal.csv"))
    _, Xte, Yte, Mte = load(os.path.join(out, "test.csv"))
    log = io.StringIO()
    path = lambda m: os.path.join(out, m + ".npz")  # noqa: E731
    stale = [m for m in TRAIN_METHODS if stored_key(path(m)) != keys[m]]
    for m in ("vanilla", "vanilla80"):
        if not os.path.exists(os.path.join(out, m + ".onnx")) and m not in stale:
            stale.append(m)
    z = NormalDist().inv_cdf(1 - ALPHA / 2)
    offset = {m: k for k, m in enumerate(TRAIN_METHODS)}

    if "vanilla" in stale:
        model, facts, secs = fit_vanilla(spec, Xtr, Ytr, Mtr, seed, os.path.join(out, "vanilla.onnx"), log)
        p = predict(model, Xte)[..., 0]
        save_result(path("vanilla"), keys["vanilla"], "vanilla", Mte, Yte, p, p, p, secs, 0.0,
                    {"facts": facts, "ridge": spec["ridge"]})
    if "vanilla80" in stale or "cf-rnn" in stale:
        model, facts, secs = fit_vanilla(spec, X80, Y80, M80, seed, os.path.join(out, "vanilla80.onnx"), log)
        p = predict(model, Xte)[..., 0]
        save_result(path("vanilla80"), keys["vanilla80"], "vanilla80", Mte, Yte, p, p, p, secs, 0.0,
                    {"facts": facts, "ridge": spec["ridge"]})
        t0 = time.time()
        half = split_conformal(predict(model, Xc)[..., 0], Yc.numpy(), Mc.numpy(), ALPHA, p.shape[1])
        lo, hi = p - half[None, :], p + half[None, :]
        save_result(path("cf-rnn"), keys["cf-rnn"], "cf-rnn", Mte, Yte, p, lo, hi, secs, time.time() - t0,
                    {"calibration_sequences": int(Xc.shape[0])})
    if "mq-rnn" in stale:
        torch.manual_seed(1000 * seed + offset["mq-rnn"])
        qs = (ALPHA / 2, 0.5, 1 - ALPHA / 2)
        model = Forecaster(spec["cell"], Xtr.shape[2], spec["hidden"], 3, standardisation(Xtr, Ytr, Mtr))
        t0 = time.time()
        train_sgd(model, Xtr, Ytr, Mtr, lambda f, y, m: pinball(f, y, m, qs), seed)
        secs = time.time() - t0
        t0 = time.time()
        q = np.sort(predict(model, Xte), axis=-1)  # crossing quantiles are re-ordered
        save_result(path("mq-rnn"), keys["mq-rnn"], "mq-rnn", Mte, Yte, q[..., 1], q[..., 0], q[..., 2],
                    secs, time.time() - t0)
    for p_drop in DROPOUTS:
        m = "dp-rnn-%g" % p_drop
        if m not in stale:
            continue
        torch.manual_seed(1000 * seed + offset[m])
        model = Forecaster(spec["cell"], Xtr.shape[2], spec["hidden"], 1, standardisation(Xtr, Ytr, Mtr),
                           dropout=p_drop)
        t0 = time.time()
        train_sgd(model, Xtr, Ytr, Mtr, mse, seed)
        secs = time.time() - t0
        t0 = time.time()
        model.train()  # Monte Carlo dropout: masks stay on at prediction time
        with torch.no_grad():
            draws = np.stack([model(Xte)[..., 0].numpy() for _ in range(MC_PASSES)])
        mean, sd = draws.mean(axis=0), draws.std(axis=0, ddof=1)
        save_result(path(m), keys[m], m, Mte, Yte, mean, mean - z * sd, mean + z * sd,
                    secs, time.time() - t0, {"dropout": p_drop})
    with open(os.path.join(out, "train.log"), "a") as f:
        f.write(log.getvalue())
    return stale


def split_conformal(pred_cal, Y_cal, M_cal, alpha, T):
    """Half-widths for row indices 0..T-1: the ceil((1-alpha)(m+1))-th
    smallest of the m absolute calibration residuals at that row (inf when
    that exceeds m, e.g. a row no calibration sequence reaches)."""
    half = np.full(T, np.inf)
    for t in range(min(T, M_cal.shape[1])):
        r = np.sort(np.abs(pred_cal[:, t] - Y_cal[:, t])[M_cal[:, t] > 0])
        k = math.ceil((1 - alpha) * (len(r) + 1))
        if k <= len(r):
            half[t] = r[k - 1]
    return half
