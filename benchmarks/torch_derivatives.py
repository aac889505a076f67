#!/usr/bin/python3
"""Time PyTorch's float64 derivatives of the paper-size model.

Model: nn.RNN(1, 20) tanh, 1 layer, batch_first + nn.Linear(20, 1) at every
step (the architecture of onnx/testdata/pytorch/paper_rnn.onnx, P = 481
parameters). Data: n = 1000 sequences, T = 10. Loss: squared error summed
over all sequences and steps, L = sum_{b,t} (y_bt - F_bt)^2.
torch.set_num_threads(2), float64.

  (a) all 1000 per-sequence gradients, computed in a batched way. Methods
      tried (each checked: the rows sum to the full gradient):
        vmap      functorch.vmap(functorch.grad(...)) over the functional cell
                  equations on a flat theta (functorch 1.13)
        expand    one backward pass with the parameters replicated per
                  sequence (theta.expand(n, P)), batched matmuls
        loop      1000 separate backward passes through nn.RNN (baseline)
      torch_per_seq_grads_s is the fastest of them; the method is printed.
  (b) one full-data gradient and one full-data Hessian-vector product (double
      backward), through PyTorch's own nn.RNN + nn.Linear (the module's
      parameters, not a flat vector). The functional flat-theta version is
      timed too (extra lines).
  (c) the dense 481 x 481 Hessian of the summed loss with
      torch.autograd.functional.hessian (default: vectorize=False, i.e. 481
      double-backward passes), with the cell equations written out in torch
      ops on a flat parameter vector. --vectorize also times vectorize=True.

Prints (medians of the repetitions, after warm-up):
  torch_per_seq_grads_s X
  torch_grad_ms X
  torch_hvp_ms X
  torch_hessian_s X
plus lines starting with '#' (method details, other variants, checks).
Run with Debian's interpreter (/usr/bin/python3).
"""

import argparse
import statistics
import time
import warnings

import torch
import torch.nn as nn

N, T, F, H = 1000, 10, 1, 20
# flat theta layout (ONNX-like): W_ih [H,F], W_hh [H,H], b_ih [H], b_hh [H],
# head weight [1,H], head bias [1]
SHAPES = [("W_ih", (H, F)), ("W_hh", (H, H)), ("b_ih", (H,)), ("b_hh", (H,)),
          ("w_out", (1, H)), ("b_out", (1,))]
P = sum(int(torch.Size(s).numel()) for _, s in SHAPES)


def unflatten(theta):
    out, off = [], 0
    for _, s in SHAPES:
        n = int(torch.Size(s).numel())
        out.append(theta[off:off + n].view(s))
        off += n
    return out


def forward_flat(theta, x):
    """x [B, T, F] -> F [B, T, 1]; cell equations in torch ops."""
    Wih, Whh, bih, bhh, wo, bo = unflatten(theta)
    B = x.shape[0]
    h = x.new_zeros(B, H)
    xw = x @ Wih.t() + bih + bhh              # [B, T, H]
    hs = []
    for t in range(x.shape[1]):
        h = torch.tanh(xw[:, t] + h @ Whh.t())
        hs.append(h)
    hs = torch.stack(hs, 1)                   # [B, T, H]
    return hs @ wo.t() + bo


def loss_flat(theta, x, y):
    return ((y - forward_flat(theta, x)) ** 2).sum()


def forward_expanded(thetas, x):
    """Per-sequence parameters thetas [B, P] (a view of one theta expanded)."""
    B = x.shape[0]
    off, parts = 0, []
    for _, s in SHAPES:
        n = int(torch.Size(s).numel())
        parts.append(thetas[:, off:off + n].reshape((B,) + s))
        off += n
    Wih, Whh, bih, bhh, wo, bo = parts
    h = x.new_zeros(B, H)
    xw = torch.einsum("btf,bhf->bth", x, Wih) + (bih + bhh).unsqueeze(1)
    hs = []
    for t in range(x.shape[1]):
        h = torch.tanh(xw[:, t] + torch.bmm(Whh, h.unsqueeze(2)).squeeze(2))
        hs.append(h)
    hs = torch.stack(hs, 1)                   # [B, T, H]
    return torch.bmm(hs, wo.transpose(1, 2)) + bo.unsqueeze(1)


class PaperRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(F, H, num_layers=1, nonlinearity="tanh", batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


def module_to_theta(m):
    return torch.cat([m.rnn.weight_ih_l0.reshape(-1), m.rnn.weight_hh_l0.reshape(-1),
                      m.rnn.bias_ih_l0, m.rnn.bias_hh_l0,
                      m.head.weight.reshape(-1), m.head.bias]).detach().clone()


MINS = {}


def timeit(fn, reps, warmup=1, key=None):
    """Median wall time of reps calls after warmup calls; the minimum is kept
    in MINS[key] (less sensitive to other load on the machine)."""
    for _ in range(warmup):
        out = fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    if key:
        MINS[key] = min(ts)
    return statistics.median(ts), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vectorize", action="store_true",
                    help="also time functional.hessian(vectorize=True)")
    ap.add_argument("--no-loop", action="store_true",
                    help="skip the 1000-backward-pass loop baseline for (a)")
    ap.add_argument("--hessian-reps", type=int, default=3)
    args = ap.parse_args()

    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = PaperRNN().double()
    x = torch.randn(N, T, F, dtype=torch.float64)
    y = torch.randn(N, T, 1, dtype=torch.float64)
    theta = module_to_theta(model)
    assert theta.numel() == P == 481
    params = list(model.parameters())

    # consistency of the functional model with nn.RNN
    with torch.no_grad():
        d = float((forward_flat(theta, x) - model(x)).abs().max())
    assert d < 1e-12, d

    # ---------------- (b) full gradient and HVP -------------------------
    def mod_grad():
        L = ((y - model(x)) ** 2).sum()
        return torch.autograd.grad(L, params)

    vparams = [torch.randn_like(p) for p in params]

    def mod_hvp():
        L = ((y - model(x)) ** 2).sum()
        g = torch.autograd.grad(L, params, create_graph=True)
        dot = sum((gi * vi).sum() for gi, vi in zip(g, vparams))
        return torch.autograd.grad(dot, params)

    t_grad, gmod = timeit(mod_grad, 21, 3, "grad")
    t_hvp, _ = timeit(mod_hvp, 21, 3, "hvp")

    vflat = torch.randn(P, dtype=torch.float64)

    def flat_grad():
        th = theta.clone().requires_grad_(True)
        return torch.autograd.grad(loss_flat(th, x, y), th)[0]

    def flat_hvp():
        th = theta.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(loss_flat(th, x, y), th, create_graph=True)
        return torch.autograd.grad(g, th, vflat)[0]

    t_fgrad, gfull = timeit(flat_grad, 21, 3)
    t_fhvp, hv = timeit(flat_hvp, 21, 3)
    gmod_flat = torch.cat([g.reshape(-1) for g in gmod])
    assert float((gmod_flat - gfull).norm() / gfull.norm()) < 1e-12

    # ---------------- (a) per-sequence gradients ------------------------
    results = {}
    try:
        import functorch
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")

            def one_loss(th, xb, yb):
                return loss_flat(th, xb.unsqueeze(0), yb.unsqueeze(0))
            per_grad = functorch.vmap(functorch.grad(one_loss), in_dims=(None, 0, 0))

            def vmap_grads():
                return per_grad(theta, x, y)
            t, G = timeit(vmap_grads, 5, 1, "vmap")
        results["vmap"] = (t, G)
    except Exception as e:  # noqa: BLE001
        print("# vmap failed: %s" % (str(e).splitlines()[0] if str(e) else type(e).__name__))

    def expand_grads():
        # one copy of theta per sequence: the gradient wrt the copies is the
        # matrix of per-sequence gradients
        leaf = theta.expand(N, P).clone().requires_grad_(True)
        L = ((y - forward_expanded(leaf, x)) ** 2).sum()
        return torch.autograd.grad(L, leaf)[0]
    t, G = timeit(expand_grads, 5, 1, "expand")
    results["expand"] = (t, G)

    if not args.no_loop:
        def loop_grads():
            rows = []
            for b in range(N):
                L = ((y[b:b + 1] - model(x[b:b + 1])) ** 2).sum()
                gs = torch.autograd.grad(L, params)
                rows.append(torch.cat([g.reshape(-1) for g in gs]))
            return torch.stack(rows)
        t, G = timeit(loop_grads, 1, 1, "loop")
        results["loop"] = (t, G)

    for name, (t, G) in results.items():
        err = float((G.sum(0) - gfull).norm() / gfull.norm())
        assert G.shape == (N, P) and err < 1e-12, (name, err)
        print("# per_seq_grads %-6s median %.4f s  min %.4f s  (sum of rows vs full grad "
              "rel %.1e)" % (name, t, MINS[name], err))
    names = list(results)
    for other in names[1:]:
        d = float((results[other][1] - results[names[0]][1]).abs().max())
        assert d <= 1e-12 * float(results[names[0]][1].abs().max()), (other, d)
    best = min(results, key=lambda k: results[k][0])

    # ---------------- (c) dense Hessian ---------------------------------
    def hess():
        return torch.autograd.functional.hessian(lambda th: loss_flat(th, x, y), theta)
    t_hess, Hm = timeit(hess, args.hessian_reps, 0, "hessian")
    err = float((Hm @ vflat - hv).norm() / hv.norm())
    assert err < 1e-12, err
    print("# hessian check: |H v - hvp| / |hvp| = %.1e, max|H - H^T| = %.1e" % (
        err, float((Hm - Hm.T).abs().max())))
    if args.vectorize:
        def hess_vec():
            return torch.autograd.functional.hessian(lambda th: loss_flat(th, x, y), theta,
                                                     vectorize=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_hv, Hv = timeit(hess_vec, args.hessian_reps, 0)
        print("# hessian vectorize=True %.3f s (max|diff| vs default %.1e)" % (
            t_hv, float((Hv - Hm).abs().max())))

    print("# per-seq method: %s; grad/hvp through nn.RNN; flat functional: grad %.3f ms, "
          "hvp %.3f ms" % (best, t_fgrad * 1e3, t_fhvp * 1e3))
    print("# minima: per_seq_grads %.4f s, grad %.3f ms, hvp %.3f ms, hessian %.3f s" % (
        MINS[best], MINS["grad"] * 1e3, MINS["hvp"] * 1e3, MINS["hessian"]))
    print("torch_per_seq_grads_s %.4f" % results[best][0])
    print("torch_grad_ms %.3f" % (t_grad * 1e3))
    print("torch_hvp_ms %.3f" % (t_hvp * 1e3))
    print("torch_hessian_s %.3f" % t_hess)


if __name__ == "__main__":
    main()
