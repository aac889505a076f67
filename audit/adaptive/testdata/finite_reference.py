#!/usr/bin/python3
"""Reference for the adaptive kinds that stay finite (finite_reference.json).

An independent re-implementation, in plain Python, of the rules that
audit/adaptive states for ACI clipped, quantile tracking and conformal PID
on the split base (prediction ± q, score |y - prediction|), one series,
each label known before the next forecast (or, with delay d, before the
forecast d + 1 later, as a horizon-(d+1) forecast's label):

- base scores: a fixed calibration set, or (when none) every earlier score;
  the conformal quantile at level 1 - a is the ceil((1 - a)(m + 1))-th
  smallest of the m base scores (+inf beyond m or at a <= 0, empty at a >= 1)
- scale_t: the largest finite score among the last W taken and the
  calibration scores (when given), else the jackknife+ half-width (when finite and positive), else 1
- limit_t: clip times the largest finite score taken or among the base
  scores (else clip times that same fallback)
- ACI clipped: alpha_{t+1} = alpha_t + g_n (alpha - err_t), its interval at
  the quantile of level 1 - alpha_t with an infinite quantile replaced by
  limit_t; g_n = gamma n^-decay at the n-th label
- quantile tracking: q_1 the base scores' quantile at alpha (limit_1 / clip
  when infinite), q_{t+1} = q_t + eta_n (err_t - alpha), eta_n = step scale_t
  n^-decay; empty interval when q < 0
- conformal PID: q_t = scorecast_t + p_t + r_t, p tracked like q (from 0 with
  the scorecaster, the jackknife+ half-width, else from q_1), r_t = K_I
  scale_t tan(S log(n+1) / (C_sat (n+1))) limited to [-limit_t, limit_t]
  (±limit_t once the argument reaches ±pi/2), S the sum of err - alpha over
  the n labels taken (0 before any)

Run: /usr/bin/python3 finite_reference.py > finite_reference.json
"""
import json
import math
import random


def conformal(a, base):
    if a >= 1:
        return -math.inf
    if a <= 0:
        return math.inf
    m = len(base)
    k = math.ceil((1 - a) * (m + 1) - 1e-9)
    if k > m:
        return math.inf
    return sorted(base)[max(k, 1) - 1]


def fmax(xs, m=0.0):
    for x in xs:
        if math.isfinite(x) and x > m:
            m = x
    return m


def run(case):
    alpha, gamma, step, ki, csat, clip, decay, W = (case[k] for k in ("alpha", "gamma", "step", "ki", "csat", "clip", "decay", "W"))
    delay = case.get("delay", 0)  # the label of forecast i is known from forecast i + delay + 1 on
    cal = case.get("cal")
    out = {"clipped": [], "qt": [], "pid": []}
    st = {"hist": [], "seen": 0.0, "alpha_c": alpha, "n": 0, "psum": 0.0, "qt": None, "pidp": None}
    cast = 0.0
    casting = False
    made = []  # per forecast: its three intervals

    def unit_of(lo, up):
        h = (up - lo) / 2
        return h if (math.isfinite(h) and h > 0) else 1.0

    def scale_now(lo, up):
        sc = fmax(cal or [], fmax(st["hist"][-W:]))
        return sc if sc > 0 else unit_of(lo, up)

    def take(i):
        # the label of forecast i arrives
        pred, y, lo, up = case["pred"][i], case["y"][i], case["lower"][i], case["upper"][i]
        c, t, p = made[i]
        s = abs(y - pred)
        st["n"] += 1
        n = st["n"]
        miss = lambda iv: iv[2] or not (iv[0] <= y <= iv[1])
        st["alpha_c"] += gamma * n ** -decay * (alpha - miss(c))
        eta = step * scale_now(lo, up) * n ** -decay
        st["qt"] += eta * (miss(t) - alpha)
        st["pidp"] += eta * (miss(p) - alpha)
        st["psum"] += miss(p) - alpha
        st["seen"] = max(st["seen"], s)
        st["hist"].append(s)

    for j, (pred, y, lo, up) in enumerate(zip(case["pred"], case["y"], case["lower"], case["upper"])):
        for i in range(len(made)):
            if i + delay == j - 1:
                take(i)
        base = cal if cal is not None else st["hist"]
        h = (up - lo) / 2
        hok = case["scorecast"] and math.isfinite(h) and h >= 0
        unit = unit_of(lo, up)
        scale = scale_now(lo, up)
        lm = fmax(base, st["seen"])
        limit = clip * (lm if lm > 0 else unit)
        if st["qt"] is None:
            q0 = conformal(alpha, base)
            if not math.isfinite(q0):
                q0 = limit / clip
            st["qt"] = st["pidp"] = q0
            if hok:
                casting, st["pidp"], cast = True, 0.0, h
        # ACI clipped
        if st["alpha_c"] >= 1:
            c = (pred, pred, True)
        else:
            q = conformal(st["alpha_c"], base)
            if not math.isfinite(q):
                q = limit
            c = (pred - q, pred + q, False)
        # quantile tracking
        qt = st["qt"]
        t = (pred, pred, True) if qt < 0 else (pred - qt, pred + qt, False)
        # PID
        if casting and hok:
            cast = h
        r, n = 0.0, st["n"]
        if n > 0 and ki >= 0:
            x = st["psum"] * math.log(n + 1) / (csat * (n + 1))
            if x >= math.pi / 2:
                r = limit
            elif x <= -math.pi / 2:
                r = -limit
            else:
                r = max(-limit, min(limit, ki * scale * math.tan(x)))
        qp = (cast if casting else 0.0) + st["pidp"] + r
        p = (pred, pred, True) if qp < 0 else (pred - qp, pred + qp, False)
        out["clipped"].append([st["alpha_c"], c[0], c[1], c[2]])
        out["qt"].append([qt, t[0], t[1], t[2]])
        out["pid"].append([qp, p[0], p[1], p[2]])
        made.append((c, t, p))
    return out


def series(seed, n):
    rng = random.Random(seed)
    pred, y, lo, up = [], [], [], []
    sigma = 1.0
    for i in range(n):
        if i % 60 == 30:
            sigma = 3.0 if sigma == 1.0 else 1.0  # volatility spells
        f = math.sin(i / 7)
        pred.append(f)
        y.append(f + sigma * rng.gauss(0, 1))
        half = 1.6 + 0.3 * math.cos(i / 5)
        lo.append(f - half)
        up.append(f + half)
    return pred, y, lo, up


def main():
    cases = []
    pred, y, lo, up = series(1, 200)
    rng = random.Random(7)
    cal = [abs(rng.gauss(0, 1.5)) for _ in range(36)]
    common = dict(pred=pred, y=y, lower=lo, upper=up, alpha=0.1, gamma=0.05, step=0.1, ki=1.0, csat=1.0, clip=1.5, W=50)
    cases.append(dict(common, name="calibration", cal=cal, decay=0.0, scorecast=True))
    cases.append(dict(common, name="past", decay=0.0, scorecast=True))
    cases.append(dict(common, name="past, no scorecaster, decay 0.6", decay=0.6, scorecast=False))
    cases.append(dict(common, name="calibration, no integrator", cal=cal, decay=0.0, scorecast=False, ki=-1.0))
    cases.append(dict(common, name="past, labels 3 forecasts late (horizon 3)", decay=0.0, scorecast=True, delay=3))
    for c in cases:
        c["want"] = run(c)
    print(json.dumps(cases, indent=None))


if __name__ == "__main__":
    main()
