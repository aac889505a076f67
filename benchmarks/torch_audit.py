#!/usr/bin/python3
"""Time a batched PyTorch implementation of the whole blockwise-jackknife+
audit at the paper's scale (the procedure of docs/design.md sections 4-5 and of
audit/testdata/make_reference.py, exact solver, Hessian curvature, one block
per training sequence): the infinitesimal jackknife, for comparison with
BenchmarkAuditPaperInfinitesimal, the same algorithm (benchmarks/audit.sh).
With --data DIR --model paper_rnn.onnx it runs on the Go benchmark's own
data, weights and damping (written by RNNAUDIT_BENCH_DUMP=DIR) and compares
its limits with the Go run's, printing
`torch_audit_limits_maxdiff_over_width X`: the largest |ours - torch| of
the lower and upper limits relative to the Go interval's width, over all
10000 test points. Without --data it draws its own data and a random model
as below (timing does not depend on the weights).

Model: nn.RNN(1, 20, tanh, batch_first) + nn.Linear(20, 1) at every step,
both RNN bias vectors (P = 481), float64, PyTorch's default random
initialisation under torch.manual_seed(0), or the ONNX export's weights
with --model. The cell equations are written out in torch ops on a
flat parameter vector theta, laid out as the ONNX export:
W_ih [20,1], W_hh [20,20], b_ih [20], b_hh [20], w_out [1,20], b_out [1].

Data: the paper's AR process, numpy default_rng(SEED): x_t ~ N(1, 2^2),
y_t = sum_{j<=t} 0.9^(t-j) x_j + eps_t, eps_t ~ N(0, (0.1 t)^2), t = 1..T,
T = 10; n = 1000 training and 1000 test sequences (train drawn first).
Loss: L(theta) = sum_{i,t} (y_it - f_t(x_i; theta))^2.

Phases (torch.set_num_threads(2), --threads; each timed once with time.perf_counter,
after an untimed warm-up of the whole pipeline on 8 + 8 sequences that
absorbs one-time initialisation):
  grads      all per-sequence gradients g_i = grad L_i(theta), G [1000, 481],
             functorch.vmap(functorch.grad(L_i)) over the sequences.
  hessian    dense H = torch.autograd.functional.hessian(L, theta)
             (vectorize=False, as in torch_derivatives.py: 481 double-backward
             passes through the full-data loss; --vectorize for True).
  solve      lambda = RHO * |trace(H)| / P (hvp's rule; RHO = 0.01, or the
             Go run's rho with --data); e, V = eigh((H + H^T)/2);
             Theta[i] = theta + V diag(1/(e + lambda)) V^T g_i for all i as one
             matrix product: Theta = theta + ((G V) / (e + lambda)) V^T.
  residuals  r_it = |y_it - f_t(x_i; Theta[i])|, each training sequence under
             its own theta_-i, in one batched pass (--forward, below).
  intervals  predictions of all 1000 test sequences under every Theta[i]
             (F [1000 blocks, 1000 seqs, 10]), then per test point (s, t)
             over the m = 1000 blocks: upper = k_up-th smallest of
             F[:, s, t] + r[:, t] with k_up = ceil(0.9 (m+1)) = 901,
             lower = k_lo-th smallest of F[:, s, t] - r[:, t] with
             k_lo = floor(0.1 (m+1)) = 100 (torch.kthvalue along the block
             axis, laid out last), and the coverage of the test targets.
  total      the sum of the five phases (data generation and model set-up
             are not timed).

Perturbed forward passes (residuals, intervals), --forward:
  bmm   (default, fastest here) the cell equations with one parameter set
        per block: per step h = tanh(b + x_t w_ih + h W_hh^T) as baddbmm over
        the block axis, the output head as bmm; the intervals phase runs the
        1000 blocks in chunks of --chunk blocks (all 1000 test sequences at
        once), writing predictions straight into a [seqs, T, blocks] buffer.
  vmap  functorch.vmap of the functional flat-theta forward over theta_-i
        (residuals: over (theta_-i, x_i); intervals: over theta_-i with the
        test batch shared), same chunking.
  rnn   nn.RNN + nn.Linear with theta_-i copied into the module: residuals
        one sequence per call (1000 calls), intervals one [1000, 10, 1]
        batch per call (1000 calls).
In the intervals phase the chunks are shared round-robin by --workers Python
threads (default 2; torch ops release the GIL). This Debian torch links the
reference (netlib) BLAS and its CPU bmm loops over the batch serially, so
with one worker the batched matmuls use one core whatever set_num_threads
says; two workers use both (about 1.8x on that phase on 2 cores). vmap
always runs with one worker (functorch 1.13's vmap is not thread-safe).
The sanity checks after the timed run (untimed) compare: sum of g_i with the
full gradient, H v with a double-backward HVP, the eigh step of one block
with an LU solve, one block's residuals and test predictions with the
single-theta forward; --check adds unbatched residuals for all blocks and
six test points' limits by sorting.

Prints one line per phase, `torch_audit_<phase>_s X`, then
`torch_audit_total_s X` and `torch_audit_coverage X` (fraction of the
10000 test points inside their interval), plus '#' lines (methods, checks,
diagnostics). Deterministic: fixed seeds, fixed thread count.
Run with Debian's interpreter: /usr/bin/python3 benchmarks/torch_audit.py
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "2")

import argparse  # noqa: E402
import copy  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

warnings.filterwarnings("ignore")  # functorch 1.13 deprecation chatter
import functorch  # noqa: E402

N_TRAIN, N_TEST, T, F, H = 1000, 1000, 10, 1, 20
SEED = 20240601
RHO = 0.01
ALPHA = 0.1
TOL = 1e-9  # rank tolerance, as make_reference.py
SHAPES = [("W_ih", (H, F)), ("W_hh", (H, H)), ("b_ih", (H,)), ("b_hh", (H,)),
          ("w_out", (1, H)), ("b_out", (1,))]
SIZES = [int(torch.Size(s).numel()) for _, s in SHAPES]
P = sum(SIZES)


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

def ar_data(rng, n):
    """n sequences of the paper's AR process -> x [n, T, 1], y [n, T]."""
    x = 1.0 + 2.0 * rng.standard_normal((n, T))
    eps = 0.1 * np.arange(1, T + 1) * rng.standard_normal((n, T))
    y = np.empty((n, T))
    acc = np.zeros(n)
    for t in range(T):
        acc = 0.9 * acc + x[:, t]
        y[:, t] = acc + eps[:, t]
    return torch.from_numpy(x).unsqueeze(2), torch.from_numpy(y)


def csv_data(path):
    """The sequences of a CSV written by the Go benchmark (RNNAUDIT_BENCH_DUMP:
    columns id, t, x, y; every sequence T steps) -> ids, x [n, T, 1], y [n, T],
    sequences in the file's order."""
    a = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding=None)
    ids = [str(v) for v in a["id"][::T]]
    x = np.asarray(a["x"], dtype=np.float64).reshape(-1, T)
    y = np.asarray(a["y"], dtype=np.float64).reshape(-1, T)
    assert all(str(v) == ids[k // T] for k, v in enumerate(a["id"])), path
    return ids, torch.from_numpy(x).unsqueeze(2), torch.from_numpy(y)


def onnx_theta(path):
    """The paper RNN's flat parameter vector (torch_audit's layout) from its
    ONNX export: RNN W [1,H,1], R [1,H,H], B [1,2H] (b_ih then b_hh), the
    head's MatMul weight [H,1] and Add bias [1]."""
    import onnx
    from onnx import numpy_helper
    w = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    rnn = [n for n in onnx.load(path).graph.node if n.op_type == "RNN"][0]
    W, R, B = (w[rnn.input[k]][0] for k in (1, 2, 3))
    head = [v for k, v in w.items() if v.shape == (H, 1)][0]
    bias = [v for k, v in w.items() if v.shape == (1,)][0]
    parts = [W.reshape(-1), R.reshape(-1), B[:H], B[H:], head[:, 0], bias]
    return torch.from_numpy(np.concatenate(parts).astype(np.float64))


def read_setting(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, v = line.split()
            out[k] = v
    return out


def compare_limits(path, ids, lo, up, pred):
    """Max |ours - torch| of the lower and upper limits relative to our
    interval's width at the same point, over every test point, from the
    Go benchmark's limits.csv (id, t, prediction, lower, upper)."""
    a = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding=None)
    pos = {v: k for k, v in enumerate(ids)}
    rows = np.array([pos[str(v)] for v in a["id"]])
    ts = np.asarray(a["t"], dtype=np.float64).astype(int) - 1
    glo, gup = np.asarray(a["lower"], np.float64), np.asarray(a["upper"], np.float64)
    tlo, tup = lo.numpy()[rows, ts], up.numpy()[rows, ts]
    width = gup - glo
    rel = np.maximum(np.abs(glo - tlo), np.abs(gup - tup)) / width
    dpred = np.abs(np.asarray(a["prediction"], np.float64) - pred.numpy()[rows, ts]).max()
    return (float(rel.max()), float(np.median(rel)), float(np.abs(glo - tlo).max()),
            float(np.abs(gup - tup).max()), float(dpred))


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

class PaperRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(F, H, num_layers=1, nonlinearity="tanh", batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)

    def params_in_flat_order(self):
        return [self.rnn.weight_ih_l0, self.rnn.weight_hh_l0, self.rnn.bias_ih_l0,
                self.rnn.bias_hh_l0, self.head.weight, self.head.bias]

    def theta(self):
        return torch.cat([p.detach().reshape(-1) for p in self.params_in_flat_order()]).clone()

    def load(self, theta):
        with torch.no_grad():
            off = 0
            for p, k in zip(self.params_in_flat_order(), SIZES):
                p.copy_(theta[off:off + k].view_as(p))
                off += k


def unflatten(theta):
    """theta [..., P] -> the six parameter tensors, each [..., *shape]."""
    out, off = [], 0
    lead = theta.shape[:-1]
    for (_, s), k in zip(SHAPES, SIZES):
        out.append(theta[..., off:off + k].reshape(lead + s))
        off += k
    return out


def forward_flat(theta, x):
    """One parameter vector. x [B, T, F] -> forecasts [B, T]."""
    Wih, Whh, bih, bhh, wo, bo = unflatten(theta)
    h = x.new_zeros(x.shape[0], H)
    xw = x @ Wih.t() + bih + bhh                  # [B, T, H]
    outs = []
    for t in range(x.shape[1]):
        h = torch.tanh(xw[:, t] + h @ Whh.t())
        outs.append(h @ wo[0] + bo[0])            # [B]
    return torch.stack(outs, 1)


def loss_flat(theta, x, y):
    return ((y - forward_flat(theta, x)) ** 2).sum()


def forward_many(thetas, x, out=None):
    """One parameter vector per block, F = 1. thetas [M, P]; x [B, T, 1] shared
    by all blocks, or [M, B, T, 1] (block m on its own x[m]). Returns
    forecasts [M, B, T], or writes them into out [B, T, M] (a strided view)."""
    Wih, Whh, bih, bhh, wo, bo = unflatten(thetas)
    M = thetas.shape[0]
    shared = x.dim() == 3
    B = x.shape[0] if shared else x.shape[1]
    wih = Wih[:, None, :, 0]                      # [M, 1, H]
    b = (bih + bhh)[:, None, :]                   # [M, 1, H]
    WhhT = Whh.transpose(1, 2)                    # [M, H, H]
    wo_col = wo.transpose(1, 2)                   # [M, H, 1]
    bo_ = bo[:, None, :]                          # [M, 1, 1]
    h = None
    res = None if out is not None else thetas.new_empty(M, B, T)
    for t in range(T):
        xt = x[None, :, t, :] if shared else x[:, :, t, :]   # [1|M, B, 1]
        pre = torch.addcmul(b, xt, wih)           # [M, B, H]
        if h is not None:
            pre = torch.baddbmm(pre, h, WhhT)
        h = torch.tanh(pre)
        f = torch.baddbmm(bo_, h, wo_col)[:, :, 0]   # [M, B]
        if out is not None:
            out[:, t, :] = f.t()
        else:
            res[:, :, t] = f
    return res


# --------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------

def upper_rank(m):
    return math.ceil((1 - ALPHA) * (m + 1) - TOL)


def lower_rank(m):
    return math.floor(ALPHA * (m + 1) + TOL)


class Audit:
    def __init__(self, args, theta, xtr, ytr, xte, yte, model):
        self.a, self.theta, self.model = args, theta, model
        self.xtr, self.ytr, self.xte, self.yte = xtr, ytr, xte, yte
        self.times = {}
        self.info = {}

    def timed(self, name, fn):
        t0 = time.perf_counter()
        out = fn()
        self.times[name] = time.perf_counter() - t0
        return out

    # 1.
    def grads(self):
        def one_loss(th, xb, yb):
            return loss_flat(th, xb.unsqueeze(0), yb.unsqueeze(0))
        return functorch.vmap(functorch.grad(one_loss), in_dims=(None, 0, 0))(
            self.theta, self.xtr, self.ytr)

    # 2.
    def hessian(self):
        return torch.autograd.functional.hessian(
            lambda th: loss_flat(th, self.xtr, self.ytr), self.theta,
            vectorize=self.a.vectorize)

    # 3.
    def solve(self, Hm, G):
        lam = self.a.rho * torch.trace(Hm).abs() / P
        e, V = torch.linalg.eigh((Hm + Hm.t()) / 2)
        D = ((G @ V) / (e + lam)) @ V.t()
        self.info.update(lam=float(lam), e=e)
        return self.theta.unsqueeze(0) + D

    # 4.
    def residuals(self, Th):
        x, y = self.xtr, self.ytr
        how = self.a.forward
        if how == "bmm":
            f = forward_many(Th, x.unsqueeze(1))[:, 0, :]
        elif how == "vmap":
            f = functorch.vmap(lambda th, xb: forward_flat(th, xb.unsqueeze(0))[0])(Th, x)
        else:
            f = torch.empty_like(y)
            for i in range(Th.shape[0]):
                self.model.load(Th[i])
                f[i] = self.model(x[i:i + 1])[0, :, 0]
        return (y - f).abs()                      # [n, T]

    # 5.
    def intervals(self, Th, R):
        x, y = self.xte, self.yte
        M, B = Th.shape[0], x.shape[0]
        how, C = self.a.forward, self.a.chunk
        Fp = torch.empty(B, T, M)                 # predictions, blocks last
        if how == "rnn":
            C = 1
        vf = functorch.vmap(forward_flat, in_dims=(0, None)) if how == "vmap" else None
        # functorch 1.13's vmap is not thread-safe (DynamicLayer assert): one worker
        workers = 1 if how == "vmap" else max(1, self.a.workers)
        models = [self.model] + [copy.deepcopy(self.model) for _ in range(workers - 1)]

        def chunk(c, model):
            if how == "bmm":
                forward_many(Th[c:c + C], x, out=Fp[:, :, c:c + C])
            elif how == "vmap":
                Fp[:, :, c:c + C] = vf(Th[c:c + C], x).permute(1, 2, 0)
            else:
                model.load(Th[c])
                Fp[:, :, c] = model(x)[:, :, 0]

        def worker(k):
            with torch.no_grad():
                for c in range(k * C, M, C * len(models)):
                    chunk(c, models[k])

        if len(models) == 1:
            worker(0)
        else:
            with ThreadPoolExecutor(len(models)) as ex:
                list(ex.map(worker, range(len(models))))
        Rt = R.t().unsqueeze(0)                   # [1, T, M]
        m = M
        ku, kl = upper_rank(m), lower_rank(m)
        inf = torch.tensor(math.inf)
        up = torch.kthvalue(Fp + Rt, ku, dim=2).values if 1 <= ku <= m else inf.expand(B, T)
        lo = torch.kthvalue(Fp - Rt, kl, dim=2).values if 1 <= kl <= m else (-inf).expand(B, T)
        cover = ((lo <= y) & (y <= up)).double().mean()
        self.info.update(ku=ku, kl=kl, lo=lo, up=up, Fp=Fp)
        return float(cover)

    def run(self):
        G = self.timed("grads", self.grads)
        Hm = self.timed("hessian", self.hessian)
        with torch.no_grad():
            Th = self.timed("solve", lambda: self.solve(Hm, G))
            R = self.timed("residuals", lambda: self.residuals(Th))
            cov = self.timed("intervals", lambda: self.intervals(Th, R))
        return G, Hm, Th, R, cov


def main():
    ap = argparse.ArgumentParser(description="Batched PyTorch audit timing (see docstring).")
    ap.add_argument("--forward", choices=("bmm", "vmap", "rnn"), default="bmm",
                    help="perturbed forward passes (residuals, intervals); default bmm")
    ap.add_argument("--chunk", type=int, default=10,
                    help="blocks per batched forward in the intervals phase (default 10)")
    ap.add_argument("--workers", type=int, default=2,
                    help="Python threads sharing the intervals chunks (default 2)")
    ap.add_argument("--threads", type=int, default=2,
                    help="torch.set_num_threads (default 2)")
    ap.add_argument("--vectorize", action="store_true",
                    help="functional.hessian(vectorize=True) instead of the default")
    ap.add_argument("--data", metavar="DIR",
                    help="run on the Go benchmark's data, model damping and limits "
                    "(RNNAUDIT_BENCH_DUMP=DIR; needs --model) instead of drawing "
                    "data and a random model, and compare the limits")
    ap.add_argument("--model", metavar="ONNX",
                    help="the paper RNN's ONNX export whose weights to audit (with --data)")
    ap.add_argument("--check", action="store_true",
                    help="also verify against unbatched computations (untimed, slow)")
    args = ap.parse_args()
    args.rho = RHO

    torch.set_num_threads(args.threads)
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    model = PaperRNN().double()
    if args.data:
        if not args.model:
            ap.error("--data needs --model")
        model.load(onnx_theta(args.model))
        setting = read_setting(os.path.join(args.data, "setting.txt"))
        if (setting["estimator"], setting["curvature"]) != ("infinitesimal", "hessian"):
            ap.error("%s: the Go run used the %s estimator with the %s; this reference "
                     "implements the infinitesimal jackknife with the Hessian"
                     % (args.data, setting["estimator"], setting["curvature"]))
        args.rho = float(setting["rho"])
        _, xtr, ytr = csv_data(os.path.join(args.data, "train.csv"))
        test_ids, xte, yte = csv_data(os.path.join(args.data, "test.csv"))
    theta = model.theta()
    assert theta.numel() == P == 481
    if not args.data:
        rng = np.random.default_rng(SEED)
        xtr, ytr = ar_data(rng, N_TRAIN)
        xte, yte = ar_data(rng, N_TEST)
    with torch.no_grad():
        d = float((forward_flat(theta, xte) - model(xte)[:, :, 0]).abs().max())
    assert d < 1e-12, d

    # untimed warm-up on 8 + 8 sequences (lazy initialisation, first vmap)
    Audit(args, theta, xtr[:8], ytr[:8], xte[:8], yte[:8], model).run()
    model.load(theta)

    au = Audit(args, theta, xtr, ytr, xte, yte, model)
    G, Hm, Th, R, cov = au.run()
    model.load(theta)

    # ---- cheap sanity checks (untimed) ----
    th = theta.clone().requires_grad_(True)
    gfull = torch.autograd.grad(loss_flat(th, xtr, ytr), th)[0]
    g_err = float((G.sum(0) - gfull).norm() / gfull.norm())
    assert G.shape == (N_TRAIN, P) and g_err < 1e-12, g_err
    v = torch.from_numpy(np.random.default_rng(SEED + 1).standard_normal(P))
    th = theta.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(loss_flat(th, xtr, ytr), th, create_graph=True)
    hv = torch.autograd.grad(g, th, v)[0]
    h_err = float((Hm @ v - hv).norm() / hv.norm())
    assert h_err < 1e-12, h_err
    lam, e = au.info["lam"], au.info["e"]
    D7 = torch.linalg.solve((Hm + Hm.t()) / 2 + lam * torch.eye(P), G[7])
    s_err = float((Th[7] - theta - D7).norm() / D7.norm())
    with torch.no_grad():
        i = 7
        r7 = (ytr[i] - forward_flat(Th[i], xtr[i:i + 1])[0]).abs()
        r_err = float((R[i] - r7).abs().max())
        j = 3
        fj = forward_flat(Th[j], xte)                          # [B, T]
        f_err = float((au.info["Fp"][:, :, j] - fj).abs().max())
    print("# threads %d; forward method: %s (intervals: chunks of %d blocks over %d worker "
          "threads); per-seq grads: functorch vmap(grad); hessian: "
          "functional.hessian(vectorize=%s)"
          % (args.threads, args.forward, 1 if args.forward == "rnn" else args.chunk,
             1 if args.forward == "vmap" else args.workers, args.vectorize))
    print("# checks: sum g_i vs grad rel %.1e; H v vs hvp rel %.1e; eigh vs LU solve (block 7) "
          "rel %.1e; residual (block 7) abs %.1e; prediction (block 3) abs %.1e"
          % (g_err, h_err, s_err, r_err, f_err))
    print("# lambda %.6g, eig(H) [%.4g, %.4g], %d below -lambda, min|e+lambda|/lambda %.3g, "
          "k_up %d, k_lo %d, mean length %.4g, mean |theta_-i - theta| %.3g"
          % (lam, float(e[0]), float(e[-1]), int((e < -lam).sum()),
             float((e + lam).abs().min() / lam), au.info["ku"], au.info["kl"],
             float((au.info["up"] - au.info["lo"]).mean()),
             float((Th - theta).norm(dim=1).mean())))

    if args.check:
        # unbatched residuals and a few test points by hand (sorted lists)
        with torch.no_grad():
            Rl = torch.stack([(ytr[i] - forward_flat(Th[i], xtr[i:i + 1])[0]).abs()
                              for i in range(N_TRAIN)])
            assert float((Rl - R).abs().max()) < 1e-12
            for s in (0, 500, 999):
                Fs = torch.stack([forward_flat(Th[i], xte[s:s + 1])[0] for i in range(N_TRAIN)])
                for t in (0, 9):
                    vp = sorted((Fs[:, t] + Rl[:, t]).tolist())
                    vm = sorted((Fs[:, t] - Rl[:, t]).tolist())
                    assert abs(vp[au.info["ku"] - 1] - float(au.info["up"][s, t])) < 1e-12
                    assert abs(vm[au.info["kl"] - 1] - float(au.info["lo"][s, t])) < 1e-12
        print("# --check passed (unbatched residuals; limits of 6 test points by sorting)")

    if args.data:
        with torch.no_grad():
            pred = forward_flat(theta, xte)
        rel, med, dlo, dup, dpred = compare_limits(os.path.join(args.data, "limits.csv"), test_ids,
                                                   au.info["lo"], au.info["up"], pred)
        glam = float(setting["lambda"])
        print("# same data, model and damping as the Go run in %s: lambda %.10g here, %.10g "
              "there (rel diff %.1e)" % (args.data, lam, glam, abs(lam - glam) / glam))
        print("torch_audit_limits_maxdiff_over_width %.3g" % rel)
        print("# limits vs Go: median |diff|/width %.3g; max |diff| lower %.3g, upper %.3g; "
              "point predictions max |diff| %.3g" % (med, dlo, dup, dpred))

    for name in ("grads", "hessian", "solve", "residuals", "intervals"):
        print("torch_audit_%s_s %.4f" % (name, au.times[name]))
    print("torch_audit_total_s %.4f" % sum(au.times.values()))
    print("torch_audit_coverage %.4f" % cov)


if __name__ == "__main__":
    main()
