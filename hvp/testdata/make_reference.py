#!/usr/bin/python3
"""PyTorch float64 reference derivatives of a weighted loss in the flat
parameter vector theta of the exported ONNX recurrent models.

Run:  /usr/bin/python3 make_reference.py            (all models)
      /usr/bin/python3 make_reference.py gru_1l_bf  (only the named cases)

Writes <case>.json beside itself (deterministic: byte-identical on re-run)
and exits 1 if any verification fails. See README.md for the format.

For each case the ONNX model of onnx/testdata/pytorch/<model>.onnx is
evaluated with onnx_torch.py (the graph in torch float64 ops, every parameter
initializer a view of one flat theta) on the inputs of the fixture
<model>.json, and torch.autograd gives

  loss, grad, Hv1, Hv2 (double backward), GNv1, GNv2 (J^T diag(l'') J v via
  the double-backward jvp trick + vjp), per-sequence losses and gradients,
  the dense Hessian (torch.autograd.functional.hessian) and the dense
  Gauss-Newton matrix (from torch.autograd.functional.jacobian): their
  eigenvalues, and the Hessian itself when P <= 120.

Verifications (all must pass, their numbers are written under "checks"):
forward vs the fixture's stored PyTorch outputs; u.Hv = v.Hu; sum of the
per-sequence gradients = grad; Hv vs central differences of grad; Hv and GNv
vs the dense matrices; eigvalsh vs numpy's general eig of the unsymmetrised
Hessian; and grad / Hv1 again through PyTorch's own nn.RNN/LSTM/GRU model
(rebuilt with onnx/testdata/pytorch/export.py, its parameters mapped onto
theta by exact value matching) as an independent implementation.
"""

import os
import sys

# Single-threaded BLAS/LAPACK and torch: bit-for-bit reproducible output.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"
sys.dont_write_bytecode = True  # no __pycache__ in testdata

import copy  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import zlib  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXDIR = os.path.join(ROOT, "onnx", "testdata", "pytorch")
sys.path.insert(0, HERE)
sys.path.insert(1, FIXDIR)
import onnx_torch  # noqa: E402
import export  # noqa: E402  (model table + builders of the fixtures)

# (case name, fixture model, loss)
CASES = [(s["name"], s["name"], "squared_error") for s in export.MODELS]
CASES.append(("gru_1l_bf_bce", "gru_1l_bf", "bce_logits"))
CASES.append(("gru_horizon3_bf_softmax", "gru_horizon3_bf", "softmax_ce"))

NOISE = 0.3          # Y = F + NOISE * N(0,1)
P_ZERO = 0.15        # fraction of zero weights
P_TWO = 0.15         # fraction of weights 2.0
DENSE_MATRIX_MAX_P = 120
EIG_MAX_P = 600
FD_EPS = 1e-5
# softmax_ce: nn.CrossEntropyLoss(weight=CLASS_WEIGHTS,
# label_smoothing=LABEL_SMOOTHING, reduction="none") on the last axis.
CLASS_WEIGHTS = [0.5, 1.0, 2.0]
LABEL_SMOOTHING = 0.1

LOSS_FORMULA = {
    "squared_error": "L = sum_e Wt_e * (Y_e - F_e)^2",
    "bce_logits": "L = sum_e Wt_e * -(Y_e*log(sigmoid(F_e)) + (1-Y_e)*log(1-sigmoid(F_e))) "
                  "(BCE with logits: F is the logit)",
    "softmax_ce": "L = sum_g Wt_g * torch.nn.functional.cross_entropy(F_g, C_g, weight=class_weights, "
                  "label_smoothing=label_smoothing, reduction='none') over groups g of the last axis "
                  "= sum_g Wt_g * -sum_k Y_gk log softmax(F_g)_k, "
                  "Y_gk = (1-eps) w_C [k=C] + eps/K w_k",
}
LPP_FORMULA = {
    "squared_error": "l''_e = 2*Wt_e",
    "bce_logits": "l''_e = Wt_e*s_e*(1-s_e), s_e = sigmoid(F_e)",
    "softmax_ce": "d2L/dF_g dF_g = Wt_g S_g (diag(p_g) - p_g p_g^T), p_g = softmax(F_g), S_g = sum_k Y_gk",
}


def seed_of(case):
    return zlib.crc32(("hvp:" + case).encode("utf-8")) & 0x7FFFFFFF


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def elementwise_loss(kind, F, Y, Wt):
    """Per-term losses: one per element, or for softmax_ce one per group of
    the last axis (Y holds the class indices, Wt one weight per group)."""
    if kind == "softmax_ce":
        K = F.shape[-1]
        ce = torch.nn.functional.cross_entropy(
            F.reshape(-1, K), Y.reshape(-1), reduction="none",
            weight=torch.tensor(CLASS_WEIGHTS, dtype=torch.float64),
            label_smoothing=LABEL_SMOOTHING)
        return Wt * ce.reshape(F.shape[:-1])
    if kind == "squared_error":
        return Wt * (Y - F) ** 2
    # -(y log s + (1-y) log(1-s)) = softplus(F) - y*F, computed stably
    return Wt * (torch.nn.functional.softplus(F) - Y * F)


def loss_second_derivative(kind, F, Wt):
    if kind == "squared_error":
        return 2.0 * Wt
    s = torch.sigmoid(F)
    return Wt * s * (1.0 - s)


def load_feeds(fx):
    feeds = {}
    for i in fx["inputs"]:
        dt = torch.int64 if i.get("dtype") == "int64" else torch.float64
        feeds[i["name"]] = torch.tensor(i["data"], dtype=dt).reshape(i["shape"])
    return feeds


def rel(a, b):
    """||a - b|| / max(||b||, tiny)."""
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    return float((a - b).norm() / max(float(b.norm()), 1e-300))


# --------------------------------------------------------------------------
# Independent implementation: PyTorch's own nn modules (first and second
# derivatives through nn.RNN/LSTM/GRU on CPU), parameters mapped onto theta
# by exact value matching (the ONNX initializers are the float32 module
# parameters, reordered / transposed by the exporter).
# --------------------------------------------------------------------------

def module_check(model_name, theta0, feeds, loss_of_F, v):
    s = [m for m in export.MODELS if m["name"] == model_name][0]
    torch.manual_seed(export.seed_of(model_name))
    model = copy.deepcopy(export.build(s)).double()
    params = list(model.parameters())
    th = theta0.tolist()
    where = {}
    for k, val in enumerate(th):
        if val in where:
            raise AssertionError("theta has repeated values: cannot map module parameters")
        where[val] = k
    idx = []
    for p in params:
        idx.append(torch.tensor([where[val] for val in p.detach().reshape(-1).tolist()],
                                dtype=torch.int64))
    allidx = torch.cat(idx)
    assert sorted(allidx.tolist()) == list(range(theta0.numel())), "not a permutation"
    args = [feeds["x"]] + ([feeds["lengths"]] if "lengths" in feeds else [])
    F = model(*args)
    L = loss_of_F(F)
    g = torch.autograd.grad(L, params, create_graph=True)
    gtheta = torch.zeros_like(theta0)
    for gi, ii in zip(g, idx):
        gtheta[ii] = gi.detach().reshape(-1)
    dot = sum((gi.reshape(-1) * v[ii]).sum() for gi, ii in zip(g, idx))
    hv = torch.autograd.grad(dot, params)
    hvtheta = torch.zeros_like(theta0)
    for hi, ii in zip(hv, idx):
        hvtheta[ii] = hi.reshape(-1)
    return float(L), gtheta, hvtheta


# --------------------------------------------------------------------------

def process(case, model_name, kind):
    torch.manual_seed(0)
    rng = np.random.default_rng(seed_of(case))
    fx = json.load(open(os.path.join(FIXDIR, model_name + ".json")))
    model = onnx_torch.OnnxTorch(os.path.join(FIXDIR, fx["model"]))
    feeds = load_feeds(fx)
    out_name = model.output_names[0]
    P = model.P
    theta0 = model.theta0.clone()
    checks = {}

    def forward(theta):
        return model.run(theta, feeds)[out_name]

    # forward vs the fixture
    onnx_torch.RELU_MIN_ABS = []
    F0 = forward(theta0).detach()
    relu_min = min(onnx_torch.RELU_MIN_ABS) if onnx_torch.RELU_MIN_ABS else None
    onnx_torch.RELU_MIN_ABS = None
    want = [o for o in fx["outputs"] if o["name"] == out_name][0]
    assert list(F0.shape) == want["shape"]
    fwd = float((F0 - torch.tensor(want["data"], dtype=torch.float64)
                 .reshape(want["shape"])).abs().max())
    checks["forward_max_abs_diff_vs_fixture"] = fwd
    assert fwd <= 1e-12, (case, fwd)
    if relu_min is not None:
        checks["relu_min_abs_preactivation"] = relu_min
        assert relu_min > 1e-4, (case, relu_min)

    # batch axis, padded positions
    layout_tf = fx["layout"] == "time-first"
    shape = list(F0.shape)
    batch_axis = 1 if (layout_tf and len(shape) == 3) else 0
    nb = shape[batch_axis]
    pad = np.zeros(shape, dtype=bool)
    if "lengths" in feeds and len(shape) == 3:
        time_axis = 1 - batch_axis
        for b, L in enumerate(feeds["lengths"].tolist()):
            for t in range(L, shape[time_axis]):
                ix = [slice(None)] * 3
                ix[batch_axis], ix[time_axis] = b, t
                pad[tuple(ix)] = True

    # targets and weights (fixed seed; order of draws is part of the format)
    F0n = F0.numpy()
    wshape = shape
    if kind == "softmax_ce":
        wshape = shape[:-1]
        e0 = np.exp(F0n - F0n.max(-1, keepdims=True))
        p0 = e0 / e0.sum(-1, keepdims=True)
        Yn = (rng.random(wshape)[..., None] > np.cumsum(p0, -1)).sum(-1)
        Yn = np.minimum(Yn, shape[-1] - 1).astype(np.int64)
        pad = pad.any(-1) if pad.ndim == len(shape) else pad
    elif kind == "squared_error":
        Yn = F0n + NOISE * rng.standard_normal(shape)
    else:
        s0 = 1.0 / (1.0 + np.exp(-F0n))
        Yn = (rng.random(shape) < s0).astype(np.float64)
    u = rng.random(wshape)
    Wn = np.ones(wshape)
    Wn[u < P_ZERO] = 0.0
    Wn[(u >= P_ZERO) & (u < P_ZERO + P_TWO)] = 2.0
    Wn[pad] = 0.0
    v1n = rng.standard_normal(P)
    v1n /= np.linalg.norm(v1n)
    v2n = rng.standard_normal(P)
    v2n /= np.linalg.norm(v2n)
    Y, Wt = torch.from_numpy(Yn), torch.from_numpy(Wn)
    v1, v2 = torch.from_numpy(v1n), torch.from_numpy(v2n)

    def loss_of_F(F):
        return elementwise_loss(kind, F, Y, Wt).sum()

    def loss_fn(theta):
        return loss_of_F(forward(theta))

    # loss, grad, per-sequence
    theta = theta0.clone().requires_grad_(True)
    F = forward(theta)
    ell = elementwise_loss(kind, F, Y, Wt)
    L = ell.sum()
    (g,) = torch.autograd.grad(L, theta, create_graph=True)
    per_loss, per_grad = [], []
    for b in range(nb):
        Lb = ell.select(batch_axis, b).sum()
        (gb,) = torch.autograd.grad(Lb, theta, retain_graph=True)
        per_loss.append(float(Lb))
        per_grad.append(gb.detach())
    per_grad = torch.stack(per_grad)
    checks["per_seq_grad_sum_rel"] = rel(per_grad.sum(0), g.detach())
    checks["per_seq_loss_sum_rel"] = abs(sum(per_loss) - float(L)) / abs(float(L))
    assert checks["per_seq_grad_sum_rel"] < 1e-12 and checks["per_seq_loss_sum_rel"] < 1e-12

    # Hessian-vector products (double backward)
    (Hv1,) = torch.autograd.grad(g, theta, v1, retain_graph=True)
    (Hv2,) = torch.autograd.grad(g, theta, v2, retain_graph=True)
    a, b_ = float(v2 @ Hv1), float(v1 @ Hv2)
    checks["symmetry_v2Hv1"] = a
    checks["symmetry_v1Hv2"] = b_
    checks["symmetry_rel"] = abs(a - b_) / max(abs(a), abs(b_))
    assert checks["symmetry_rel"] < 1e-12, (case, a, b_)

    # Gauss-Newton products: Jv by the double-backward trick, then J^T(l'' Jv)
    # (for softmax_ce, l'' is the Hessian of the loss in F, block-diagonal)
    def lpp_times(jv):
        if kind != "softmax_ce":
            return loss_second_derivative(kind, F.detach(), Wt) * jv
        Fd = F.detach().clone().requires_grad_(True)
        (gF,) = torch.autograd.grad(loss_of_F(Fd), Fd, create_graph=True)
        (hv,) = torch.autograd.grad(gF, Fd, jv)
        return hv

    def gn_vec(v):
        w = torch.zeros_like(F, requires_grad=True)
        (jtw,) = torch.autograd.grad(F, theta, w, create_graph=True)
        (jv,) = torch.autograd.grad(jtw, w, v)
        (gnv,) = torch.autograd.grad(F, theta, lpp_times(jv), retain_graph=True)
        return gnv
    GNv1, GNv2 = gn_vec(v1), gn_vec(v2)

    # central differences of grad
    def grad_at(th):
        th = th.clone().requires_grad_(True)
        return torch.autograd.grad(loss_fn(th), th)[0]
    for nm, v, hv in (("Hv1", v1, Hv1), ("Hv2", v2, Hv2)):
        fd = (grad_at(theta0 + FD_EPS * v) - grad_at(theta0 - FD_EPS * v)) / (2 * FD_EPS)
        checks["fd_%s_rel" % nm] = rel(fd, hv)
        assert checks["fd_%s_rel" % nm] < 1e-6, (case, nm, checks["fd_%s_rel" % nm])
    checks["fd_eps"] = FD_EPS

    # independent: PyTorch nn modules
    mc = module_check(model_name, theta0, feeds, loss_of_F, v1)
    Lm, gm, hvm = mc
    checks["nn_module_loss_rel"] = abs(Lm - float(L)) / abs(float(L))
    checks["nn_module_grad_rel"] = rel(gm, g.detach())
    checks["nn_module_Hv1_rel"] = rel(hvm, Hv1)
    assert checks["nn_module_grad_rel"] < 1e-12 and checks["nn_module_Hv1_rel"] < 1e-12, \
        (case, checks)

    # per-element targets and weights (softmax_ce: the term's soft targets
    # Y_gk = (1-eps) w_C [k=C] + eps/K w_k and its weight on every element)
    Y_el, Wt_el = Y, Wt
    if kind == "softmax_ce":
        K = shape[-1]
        cw = torch.tensor(CLASS_WEIGHTS, dtype=torch.float64)
        oh = torch.nn.functional.one_hot(Y, K).double()
        Y_el = (1 - LABEL_SMOOTHING) * cw[Y].unsqueeze(-1) * oh + LABEL_SMOOTHING / K * cw
        Wt_el = Wt.unsqueeze(-1).expand(shape)
        checks["soft_target_loss_rel"] = abs(float(
            (Wt_el * Y_el * -torch.log_softmax(F.detach(), -1)).sum()) - float(L)) / abs(float(L))
        assert checks["soft_target_loss_rel"] < 1e-12, (case, checks)

    out = {
        "case": case,
        "model": "onnx/testdata/pytorch/" + fx["model"],
        "fixture": "onnx/testdata/pytorch/" + model_name + ".json",
        "description": fx["description"],
        "layout": fx["layout"],
        "loss": kind,
        "loss_formula": LOSS_FORMULA[kind],
        "loss_second_derivative": LPP_FORMULA[kind],
        "seed": seed_of(case),
        "inputs": fx["inputs"],
        "output": out_name,
        "output_shape": shape,
        "batch_axis": batch_axis,
        "n_sequences": nb,
        "F": flat(F0),
        "target": flat(Y_el),
        "weight": flat(Wt_el),
        "P": P,
        "params": model.params,
        "theta": flat(theta0),
        "loss_value": float(L),
        "grad": flat(g),
        "v1": flat(v1),
        "v2": flat(v2),
        "Hv1": flat(Hv1),
        "Hv2": flat(Hv2),
        "GNv1": flat(GNv1),
        "GNv2": flat(GNv2),
        "per_seq_loss": per_loss,
        "per_seq_grad": [flat(r) for r in per_grad],
    }

    if kind == "softmax_ce":
        out["target_class"] = [int(c) for c in Y.reshape(-1).tolist()]
        out["class_weights"] = CLASS_WEIGHTS
        out["label_smoothing"] = LABEL_SMOOTHING

    # dense Hessian and Gauss-Newton matrix
    if P <= EIG_MAX_P:
        H = torch.autograd.functional.hessian(loss_fn, theta0.clone())
        asym = float((H - H.T).abs().max())
        checks["hessian_max_abs_asymmetry"] = asym
        checks["hessian_max_abs"] = float(H.abs().max())
        Hs = 0.5 * (H + H.T)
        ev = torch.linalg.eigvalsh(Hs)
        ev_np = np.sort(np.linalg.eigvals(H.numpy()).real)
        scale = float(ev.abs().max())
        checks["hessian_eig_vs_numpy_eig_rel"] = float(np.abs(ev.numpy() - ev_np).max()) / scale
        checks["dense_Hv1_rel"] = rel(H @ v1, Hv1)
        checks["dense_Hv2_rel"] = rel(H @ v2, Hv2)
        checks["hessian_n_negative_eig"] = int((ev < -1e-10 * scale).sum())
        checks["hessian_n_zero_eig"] = int((ev.abs() <= 1e-10 * scale).sum())
        # exact null directions e_i - e_j from bias pairs that only enter as a sum
        rows_equal = 0
        for i in range(P):
            for j in range(i + 1, P):
                if torch.equal(H[i], H[j]):
                    rows_equal += 1
        checks["hessian_identical_row_pairs"] = rows_equal
        checks["hessian_zero_rows"] = int((H.abs().sum(1) == 0).sum())
        assert checks["hessian_eig_vs_numpy_eig_rel"] < 1e-10, (case, checks)
        assert checks["dense_Hv1_rel"] < 1e-12 and checks["dense_Hv2_rel"] < 1e-12, (case, checks)
        assert asym <= 1e-12 * max(1.0, checks["hessian_max_abs"]), (case, asym)

        J = torch.autograd.functional.jacobian(lambda th: forward(th).reshape(-1),
                                               theta0.clone())
        if kind == "softmax_ce":
            D = torch.autograd.functional.hessian(
                lambda f: loss_of_F(f.reshape(F0.shape)), F0.reshape(-1).clone())
            GN = J.T @ D @ J
            lpp = torch.diagonal(D)
        else:
            lpp = loss_second_derivative(kind, F.detach(), Wt)
            GN = J.T @ (lpp.reshape(-1, 1) * J)
        gev = torch.linalg.eigvalsh(0.5 * (GN + GN.T))
        gscale = float(gev.abs().max())
        checks["dense_GNv1_rel"] = rel(GN @ v1, GNv1)
        checks["dense_GNv2_rel"] = rel(GN @ v2, GNv2)
        checks["gn_rank_bound"] = int((lpp != 0).sum())
        checks["gn_n_nonzero_eig"] = int((gev.abs() > 1e-10 * gscale).sum())
        checks["gn_min_eig_rel"] = float(gev[0]) / gscale
        assert checks["dense_GNv1_rel"] < 1e-12 and checks["dense_GNv2_rel"] < 1e-12, \
            (case, checks)
        assert checks["gn_min_eig_rel"] > -1e-12, (case, checks)
        out["hessian_eigenvalues"] = flat(ev)
        out["gn_eigenvalues"] = flat(gev)
        if P <= DENSE_MATRIX_MAX_P:
            out["hessian"] = [flat(r) for r in H]
    out["checks"] = checks
    out["versions"] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "onnx": onnx.__version__,
        "numpy": np.__version__,
    }
    return out


def dump(obj):
    """One top-level key per line; numeric arrays on one line; matrix rows
    and lists of objects one per line. Floats are Python repr (exact)."""
    def j(v):
        return json.dumps(v, allow_nan=False)
    lines = []
    for k, v in obj.items():
        if isinstance(v, list) and v and isinstance(v[0], (list, dict)):
            body = "[\n" + ",\n".join("    " + j(r) for r in v) + "\n  ]"
        elif isinstance(v, dict) and k == "checks":
            body = "{\n" + ",\n".join("    %s: %s" % (j(a), j(b)) for a, b in v.items()) + "\n  }"
        else:
            body = j(v)
        lines.append("  %s: %s" % (j(k), body))
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main():
    torch.set_num_threads(1)
    want = set(sys.argv[1:])
    cases = [c for c in CASES if not want or c[0] in want]
    if want - {c[0] for c in cases}:
        sys.exit("unknown case(s): %s" % sorted(want - {c[0] for c in cases}))
    for case, model_name, kind in cases:
        out = process(case, model_name, kind)
        text = dump(out)
        json.loads(text)
        path = os.path.join(HERE, case + ".json")
        with open(path, "w") as fh:
            fh.write(text)
        c = out["checks"]
        print("%-26s P=%3d  L=%-10.4g sym %.1e  fd %.1e  nn %.1e/%.1e  %s  %6.0f kB" % (
            case, out["P"], out["loss_value"], c["symmetry_rel"],
            max(c["fd_Hv1_rel"], c["fd_Hv2_rel"]), c["nn_module_grad_rel"],
            c["nn_module_Hv1_rel"],
            ("H eig: %d neg %d zero; GN rank %d (<= %d)" % (
                c["hessian_n_negative_eig"], c["hessian_n_zero_eig"],
                c["gn_n_nonzero_eig"], c["gn_rank_bound"]))
            if "hessian_n_zero_eig" in c else "no dense",
            len(text) / 1e3))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
