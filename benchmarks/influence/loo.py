#!/usr/bin/python3
"""Own-block leave-one-out residuals of a few blocks, four ways:

  - from scratch: the zoo's recipe (same init seed, same Adam settings and
    shuffling seed) on the training set without the block;
  - warm-started exact: from the trained (exported) weights, the sum loss
    without the block minimised to a stationary point with rnnfit.fit
    (L-BFGS, then damped Newton), its final gradient checked;
  - influence, the paper's infinitesimal jackknife: theta + (C + lambda I)^-1
    grad L_b(theta), C the Hessian or the Gauss-Newton matrix 2 J^T J of the
    sum loss, lambda = 1e-6 x mean eigenvalue (the audit's damping rule),
    evaluated through the network;
  - the leave-block-out Newton step with Gauss-Newton curvature (docs/design.md, section 4.5),
    linearised: r_b -> (I - J_b (J^T J + lambda/2 I)^-1 J_b^T)^-1 r_b.

Reported per block: the RMS of the block's own residuals y - f(x) under
each, and for reference in the trained model (in-sample). Models rnn100s
(stationary, ridge 10: the issue's setting), rnn100 and gru300 (Adam), 5
blocks each (drawn with a fixed seed). For rnn100s the curvature and the
warm re-fits include the ridge. Writes loo.json beside
this script; cached (--force recomputes).

Run:  /usr/bin/python3 benchmarks/influence/loo.py [--force]
"""

import argparse
import contextlib
import copy
import io
import json
import os
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo  # noqa: E402  (puts examples/ on the path)
import rnnfit  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

OUT = os.path.join(HERE, "loo.json")
# model: damped Newton steps of a warm re-fit (0: 1000 L-BFGS iterations
# instead; a GRU Hessian is slow to form, so the GRU's re-fits are L-BFGS only).
MODELS = {"rnn100s": 20, "rnn100": 20, "gru300": 0}
BLOCKS = 5
DAMPING = 1e-6
TOL = 1e-4  # warm start converged: |grad| below TOL x the median block gradient


def rms(v):
    return float(torch.sqrt((v ** 2).mean()).item())


def own_residuals(model, X, Y, M, b):
    with torch.no_grad():
        pred = model(X[b:b + 1])[0, :, 0]
    return (Y[b] - pred)[M[b] > 0]


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def with_params(model, theta):
    m = copy.deepcopy(model)
    rnnfit._set_params(m, theta)
    return m


def jacobian(model, X, M):
    """Rows d f(x_i)_t / d theta for every observed (i, t), sequence-major."""
    params = list(model.parameters())
    rows, owner = [], []
    for i in range(X.shape[0]):
        out = model(X[i:i + 1])[0, :, 0]
        for t in range(X.shape[1]):
            if M[i, t] > 0:
                g = torch.autograd.grad(out[t], params, retain_graph=True)
                rows.append(torch.cat([v.reshape(-1) for v in g]))
                owner.append(i)
    return torch.stack(rows), np.array(owner)


def warm_refit(model, X, Y, M, keep, max_newton, ridge):
    """Minimises the sum loss over sequences keep from the model's weights."""
    m = copy.deepcopy(model)
    k = torch.from_numpy(np.asarray(keep))
    with contextlib.redirect_stdout(io.StringIO()):
        # Near a stationary point (rnn100s) L-BFGS wanders off on this ill-conditioned
        # loss; damped Newton alone converges. Without Newton steps: L-BFGS only.
        rnnfit.fit(m, X[k], Y[k], M[k], ridge=ridge, adam_steps=0, lbfgs_iters=0 if max_newton else 1000,
                   max_newton=max_newton)
    _, g = rnnfit.grad_norm(m, X[k], Y[k], M[k], ridge)
    return m, g


def one_model(name):
    t0 = time.time()
    train = zoo.ZOO[name][0]
    X, Y, M = zoo.load(train)
    n = X.shape[0]
    with contextlib.redirect_stdout(io.StringIO()):
        trained, _, _ = zoo.fit_model(name)
    model = copy.deepcopy(trained).float().double()  # the exported float32 weights
    theta = flat(model)
    P = theta.numel()
    ridge = zoo.RIDGE_S if name == "rnn100s" else 0.0
    seq = rnnfit.per_sequence_grad_norms(model, X, Y, M)
    tol = TOL * float(np.median(seq))

    J, owner = jacobian(model, X, M)
    with torch.no_grad():
        r = (Y - model(X)[..., 0])[M > 0]
    G = 2 * J.T @ J + ridge * torch.eye(P)
    H, _ = rnnfit.hessian(model, X, Y, M, ridge)
    lam_g = DAMPING * torch.trace(G).item() / P
    lam_h = DAMPING * torch.trace(H).item() / P
    Ginv = torch.linalg.inv(G + lam_g * torch.eye(P))
    Hinv = torch.linalg.inv(H + lam_h * torch.eye(P))
    print("%s: %d parameters; Hessian eigenvalues %.3g .. %.3g; %.0f s" % (
        name, P, torch.linalg.eigvalsh(H)[0].item(), torch.linalg.eigvalsh(H)[-1].item(), time.time() - t0), flush=True)

    full, full_g = warm_refit(model, X, Y, M, range(n), MODELS[name], ridge)
    print("  warm full re-fit |grad| %.3g (tolerance %.3g), %.0f s" % (full_g, tol, time.time() - t0), flush=True)
    picks = sorted(np.random.default_rng(7).choice(n, BLOCKS, replace=False).tolist())
    out = []
    for b in picks:
        rows = owner == b
        Jb, rb = J[rows], r[rows]
        gb = -2 * Jb.T @ rb  # gradient of the block's sum loss
        ij_h = with_params(model, theta + Hinv @ gb)
        ij_g = with_params(model, theta + Ginv @ gb)
        A = Jb @ torch.linalg.solve(J.T @ J + 0.5 * (ridge + lam_g) * torch.eye(P), Jb.T)
        r_newton = torch.linalg.solve(torch.eye(A.shape[0]) - A, rb)
        keep = [i for i in range(n) if i != b]
        warm, wg = warm_refit(model, X, Y, M, keep, MODELS[name], ridge)
        with contextlib.redirect_stdout(io.StringIO()):
            scratch, _, _ = zoo.fit_model(name, keep=keep)
        scratch = copy.deepcopy(scratch).float().double()
        rec = {
            "block": "id %d" % (b + 1),
            "in_sample": rms(rb),
            "warm_full": rms(own_residuals(full, X, Y, M, b)),
            "warm_full_grad": full_g,
            "warm": rms(own_residuals(warm, X, Y, M, b)),
            "warm_grad": wg,
            "warm_converged": bool(wg < tol),
            "scratch": rms(own_residuals(scratch, X, Y, M, b)),
            "ij_hessian": rms(own_residuals(ij_h, X, Y, M, b)),
            "ij_gauss_newton": rms(own_residuals(ij_g, X, Y, M, b)),
            "newton_linear": rms(r_newton),
            "leverage_max": float(torch.linalg.eigvalsh(0.5 * (A + A.T))[-1].item()),
        }
        print("  block %s: in-sample %.3f warm-full %.3f warm %.3f (|grad| %.2g) scratch %.3f IJ-H %.3f IJ-GN %.3f Newton %.3f  %.0f s" % (
            rec["block"], rec["in_sample"], rec["warm_full"], rec["warm"], wg, rec["scratch"], rec["ij_hessian"],
            rec["ij_gauss_newton"], rec["newton_linear"], time.time() - t0), flush=True)
        out.append(rec)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="recompute even if loo.json exists")
    a = ap.parse_args()
    res = {"models": {}, "summary": {}}
    if os.path.exists(OUT) and not a.force:
        with open(OUT) as f:
            res = json.load(f)
    res.update({"description": (
        "RMS of each left-out block's own residuals y - f(x) (%d blocks drawn with seed 7). in-sample: the "
        "trained model; warm-started exact: re-fit without the block from the trained weights to a stationary "
        "point (converged: |grad| < %g x median block gradient); from scratch: the zoo's Adam recipe without "
        "the block (same init seed; for rnn100s the recipe includes its polish with ridge 10); warm-started full: the block's in-sample residuals after the same re-fit on all the data (the stationary point the warm-started leave-outs are measured from); IJ: the paper's infinitesimal jackknife (damping %g x mean eigenvalue), "
        "evaluated through the network; Newton GN: the leave-block-out Newton step with Gauss-Newton curvature, "
        "linearised (leverage correction). The **all** row is the RMS over the blocks." % (BLOCKS, TOL, DAMPING)),
        "models": res["models"], "summary": res["summary"]})
    for name in MODELS:
        if name in res["models"]:
            continue
        recs = one_model(name)
        res["models"][name] = recs
        res["summary"][name] = {k: float(np.sqrt(np.mean([r[k] ** 2 for r in recs])))
                                for k in ("in_sample", "warm_full", "warm", "scratch", "ij_hessian", "ij_gauss_newton",
                                          "newton_linear")}
        with open(OUT, "w") as f:  # after every model: an interrupted run keeps what is done
            json.dump(res, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
