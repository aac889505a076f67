#!/usr/bin/python3
"""Independent check of AgACI: re-implements ACI experts on the last 500 scores and
Bernstein online aggregation (gradient trick), as audit/adaptive.go documents, and
compares with the audit's agaci_lower/agaci_upper of a pooled --calibration-from last:500
run (the window run of bench.py):

    /usr/bin/python3 agaci_check.py data/regime/window.json base

"shared" also runs a variant with one range bound B for all experts."""
import json, numpy as np, sys, math
d = json.load(open(sys.argv[1]))
st = sorted([s for q in d['sequences'] for s in q['steps']], key=lambda s: s['t'])
pred = np.array([s['prediction'] for s in st]); y = np.array([s['target'] for s in st])
go_lo = np.array([s['agaci_lower'] if s['agaci_lower'] is not None else -np.inf for s in st])
go_up = np.array([s['agaci_upper'] if s['agaci_upper'] is not None else np.inf for s in st])
alpha = 0.1; grid = d['adaptive']['grid']; N = d['adaptive']['window']
def q_at(a, sc):
    if a >= 1: return -np.inf
    if a <= 0: return np.inf
    k = math.ceil((1 - a) * (len(sc) + 1) - 1e-9)
    return np.inf if k > len(sc) else sc[k - 1]
class BOA:
    def __init__(s, K, shared=False):
        s.w = np.ones(K) / K; s.B = np.zeros(K); s.V = np.zeros(K); s.R = np.zeros(K); s.eta = np.zeros(K); s.shared = shared
    def pred(s, x): return s.w @ x
    def upd(s, x, p, g):
        r = g * (p - x)
        s.B = np.maximum(s.B, np.abs(r))
        if s.shared: s.B[:] = s.B.max()
        s.V += r * r
        if s.B.max() == 0: return
        eta = np.where(s.B > 0, 1 / (2 * np.where(s.B > 0, s.B, 1)), 0)
        eta = np.where(s.V > 0, np.minimum(eta, np.sqrt(np.log(len(x)) / np.where(s.V > 0, s.V, 1))), eta)
        s.eta = np.where(s.B > 0, eta, s.eta)
        s.R += np.where(s.B > 0, r - s.eta * r * r, 0)
        e = np.where(s.B > 0, s.eta, s.eta[s.B > 0].min())
        lw = np.log(e) + e * s.R
        w = np.exp(lw - lw.max()); s.w = w / w.sum()
def run(variant):
    K = len(grid); a = np.full(K, alpha); lo_b, up_b = BOA(K, variant == 'shared'), BOA(K, variant == 'shared')
    hist = []; out_lo = []; out_up = []
    for i in range(len(y)):
        sc = sorted(hist[-N:])
        widest = max([v for v in sc if np.isfinite(v)], default=np.inf)
        xl = np.zeros(K); xu = np.zeros(K); miss_empty = np.zeros(K, bool)
        for k in range(K):
            q = q_at(a[k], sc)
            if np.isinf(q) and q < 0: xl[k] = xu[k] = pred[i]; miss_empty[k] = True; continue
            if np.isinf(q):
                q = widest
            xl[k], xu[k] = pred[i] - q, pred[i] + q
        fin = np.all(np.isfinite(xl)) and np.all(np.isfinite(xu))
        L = lo_b.pred(xl) if fin else -np.inf; U = up_b.pred(xu) if fin else np.inf
        out_lo.append(L); out_up.append(U)
        # label
        for k in range(K):
            q = q_at(a[k], sc)
            lo, up = (pred[i] - q, pred[i] + q) if not (np.isinf(q) and q < 0) else (pred[i], pred[i])
            miss = miss_empty[k] or not (lo <= y[i] <= up)
            a[k] += grid[k] * (alpha - miss)
        if fin:
            gl = (1 - alpha / 2) if y[i] < L else -alpha / 2
            gu = (1 - (1 - alpha / 2)) if y[i] < U else -(1 - alpha / 2)
            lo_b.upd(xl, L, gl); up_b.upd(xu, U, gu)
        hist.append(abs(y[i] - pred[i]))
    lo = np.array(out_lo); up = np.array(out_up)
    return lo, up
for v in sys.argv[2:]:
    lo, up = run(v)
    cov = ((lo <= y) & (y <= up)).mean()
    fin = np.isfinite(lo) & np.isfinite(up)
    h = ((lo <= y) & (y <= up)).astype(float); w = np.convolve(h, np.ones(250), 'valid') / 250
    print(v, 'cov %.3f worst %.3f width %.3f  below %.3f above %.3f' % (cov, w.min(), (up - lo)[fin].mean(), (y < lo).mean(), (y > up).mean()))
    if v == 'base':
        print('  matches Go:', np.allclose(lo[fin], go_lo[fin]), np.allclose(up[fin], go_up[fin]))
