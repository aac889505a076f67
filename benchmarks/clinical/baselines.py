#!/usr/bin/python3
"""The clinical benchmark's model-based baselines: MQ-RNN and DP-RNN with train.py's GRU.

The paper's Table 2 compares BJ-RNN with CF-RNN (split conformal, run.py),
MQ-RNN and DP-RNN. Both are trained here exactly as train.py trains the
audited GRU (same patients and split, same nn.GRU(F, 16) body, Adam lr
5e-3 with weight decay 1e-4, shuffled mini-batches of 16 zero-padded
sequences with a masked loss, at most 400 epochs, early stopping with
patience 30 on the held-out training patients, best weights restored):

- MQ-RNN: the GRU with a Linear(16, 3) head giving the alpha/2, 1/2 and
  1 - alpha/2 quantiles of the next value, trained with the pinball loss
  (summed over the three quantiles); the interval is [q_0.05, q_0.95]
  (crossing quantiles re-ordered), the point forecast the median head.
- DP-RNN: the GRU with dropout p = 0.2 on its inputs and on its outputs
  before the Linear(16, 1) head (nn.Dropout, as clinical GRUs are usually
  regularised), trained with the masked mean squared error; at prediction
  time the dropout stays on (Monte Carlo dropout, Gal and Ghahramani 2016)
  and 100 passes give the mean and sd; the interval is mean +- z sd, z the
  standard normal's 1 - alpha/2 quantile, the point forecast the mean.

The split is recomputed with train.py's own functions and seed and checked
against the CSVs train.py wrote. Writes preds/<name>_baselines.json:
{"mq": [[id, row, y, lower, point, upper], ...], "dp": [...], "facts": {...}}
for the test patients. Seeded: a re-run gives the same figures.

Run (after train.py):  /usr/bin/python3 benchmarks/clinical/baselines.py
"""

import csv
import json
import os
import sys
from statistics import NormalDist

import numpy as np
import torch
import torch.nn as nn

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train  # noqa: E402

ALPHA, DROPOUT, MC_PASSES = 0.1, 0.2, 100
QUANTILES = (ALPHA / 2, 0.5, 1 - ALPHA / 2)


class MQ(nn.Module):
    def __init__(self, nin):
        super().__init__()
        self.rnn = nn.GRU(nin, train.HIDDEN, batch_first=True)
        self.head = nn.Linear(train.HIDDEN, len(QUANTILES))

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.head(h)


class DP(nn.Module):
    def __init__(self, nin):
        super().__init__()
        self.drop_in, self.drop_out = nn.Dropout(DROPOUT), nn.Dropout(DROPOUT)
        self.rnn = nn.GRU(nin, train.HIDDEN, batch_first=True)
        self.head = nn.Linear(train.HIDDEN, 1)

    def forward(self, x):
        h, _ = self.rnn(self.drop_in(x))
        return self.head(self.drop_out(h))


def pinball(net, x, y, m):
    q = torch.tensor(QUANTILES)
    e = y - net(x)  # broadcast over the quantile heads
    return ((torch.maximum(q * e, (q - 1) * e)) * m).sum() / m.sum()


def fit(net, loss, fit_seqs, val, seed):
    """train.py's loop (Adam, padded mini-batches, early stopping) for any net and loss."""
    opt = torch.optim.Adam(net.parameters(), lr=train.LR, weight_decay=train.WD)
    vx, vy, vm = train.pad(val)
    best, best_state, best_epoch, epoch = float("inf"), None, 0, 0
    rng = np.random.default_rng(seed)
    for epoch in range(1, train.EPOCHS + 1):
        net.train()
        order = rng.permutation(len(fit_seqs))
        for k in range(0, len(fit_seqs), train.BATCH):
            x, y, m = train.pad([fit_seqs[i] for i in order[k:k + train.BATCH]])
            opt.zero_grad()
            loss(net, x, y, m).backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            v = float(loss(net, vx, vy, vm))
        if v < best:
            best, best_epoch = v, epoch
            best_state = {k: t.clone() for k, t in net.state_dict().items()}
        elif epoch - best_epoch >= train.PATIENCE:
            break
    net.load_state_dict(best_state)
    return {"best_epoch": best_epoch, "epochs_run": epoch}


def split(name, seed):
    """train.py's split of the patients with two or more visits, by its seed."""
    feats, _ = train.DATASETS[name]
    seqs = train.visits(os.path.join(train.DATA, name + "_raw.csv"), feats)
    ids = sorted(seqs, key=lambda s: int(s))
    rng = np.random.default_rng(20261207 + seed)
    ids = [ids[i] for i in rng.permutation(len(ids))]
    n = len(ids)
    ntr, ncal = n // 2, n // 4
    train_ids, test_ids = ids[:ntr], ids[ntr + ncal:]
    nval = max(2, ntr // 5)
    for part, xs in (("train", train_ids[nval:]), ("test", test_ids)):
        with open(os.path.join(train.DATA, "%s_%s.csv" % (name, part))) as f:
            written = list(dict.fromkeys(r["id"] for r in csv.DictReader(f)))
        if written != xs:
            raise SystemExit("baselines.py: the %s split of %s differs from train.py's CSV; re-run train.py" % (part, name))
    get = lambda xs: [(i, seqs[i]) for i in xs]
    return get(train_ids[nval:]), get(train_ids[:nval]), get(test_ids)


def main():
    torch.set_num_threads(1)
    z = NormalDist().inv_cdf(1 - ALPHA / 2)
    for seed, name in enumerate(train.DATASETS, start=1):
        fit_seqs, val, test = split(name, seed)
        nin = len(fit_seqs[0][1][0][0])
        torch.manual_seed(100 + seed)
        mq = MQ(nin)
        mq_log = fit(mq, pinball, fit_seqs, val, 100 + seed)
        torch.manual_seed(200 + seed)
        dp = DP(nin)
        dp_log = fit(dp, train.masked, fit_seqs, val, 200 + seed)
        out = {"mq": [], "dp": [], "facts": {"mq": mq_log, "dp": dict(dp_log, dropout=DROPOUT, passes=MC_PASSES), "alpha": ALPHA}}
        with torch.no_grad():
            for sid, s in test:
                x = torch.tensor(np.array([[v for v, _ in s]], np.float32))
                mq.eval()
                q = np.sort(mq(x)[0].numpy(), axis=-1)
                dp.train()  # Monte Carlo dropout: the masks stay on
                draws = np.stack([dp(x)[0, :, 0].numpy() for _ in range(MC_PASSES)])
                mean, sd = draws.mean(axis=0), draws.std(axis=0, ddof=1)
                for t in range(len(s) - 1):
                    y = float(s[t + 1][1])
                    out["mq"].append([sid, t, y, float(q[t, 0]), float(q[t, 1]), float(q[t, 2])])
                    out["dp"].append([sid, t, y, float(mean[t] - z * sd[t]), float(mean[t]), float(mean[t] + z * sd[t])])
        with open(os.path.join(HERE, "preds", name + "_baselines.json"), "w") as f:
            json.dump(out, f)
        print(name, out["facts"], flush=True)


if __name__ == "__main__":
    main()
