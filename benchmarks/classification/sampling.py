#!/usr/bin/python3
"""Why the probability intervals of the synthetic binary task hold the true
probability less often than their level: their error against the truth
split into sampling variability (what a jackknife interval measures) and
the trained model's bias, by re-training make.py's GRU, exactly as
make.py trains it, on fresh training sets from the same generator.

usage: sampling.py AUDIT.json TEST_TRUTH.csv [N_DATA [N_INIT]]  (prints Markdown)

AUDIT.json is the audit of binary_logits.onnx on test.csv (run.sh's
logits_lac). N_DATA (default 8) models are trained on new training sets
of 600 sequences (numpy streams [SEED, 99, k]) with make.py's seed, and
N_INIT (default 2) on make.py's own training set with other seeds (the
optimiser's and initialisation's share). At every test forecast, on the
logit scale: the jackknife standard error se (from the interval's width,
(logit upper - logit lower) / (2 z)), the standard deviation of the
re-trained models' logits (the sampling variability the interval
estimates), and the mean of the re-trained models' logits minus the true
logit (the model's bias, which no interval built from the trained model's
sampling variability holds).
"""
import csv
import json
import os
import sys

import numpy as np
import torch
from scipy.stats import norm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make  # noqa: E402


def train(x, y, seed):
    torch.manual_seed(seed)
    net = make.Net()
    X = torch.tensor(x, dtype=torch.float32)
    Y = torch.tensor(y, dtype=torch.float32).unsqueeze(-1)
    opt = torch.optim.Adam(net.parameters(), lr=make.LR, weight_decay=make.WD)
    lossf = torch.nn.BCEWithLogitsLoss()
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [make.EPOCHS // 3, 2 * make.EPOCHS // 3], gamma=0.1)
    for _ in range(make.EPOCHS):
        opt.zero_grad()
        loss = lossf(net(X), Y)
        loss.backward()
        opt.step()
        sched.step()
    return net


def logit(p):
    return np.log(p / (1 - p))


def main():
    audit, truth_file = sys.argv[1], sys.argv[2]
    n_data = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    n_init = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    torch.set_num_threads(1)
    ss = np.random.SeedSequence(make.SEED).spawn(3)
    xt, _, _ = make.simulate(np.random.default_rng(ss[1]), make.SIZES["test"])
    xt = np.vectorize(lambda v: float("%.6f" % v))(xt)  # as test.csv holds them
    first_test = 1001
    truth = {(r["id"], int(r["t"])): float(r["p"]) for r in csv.DictReader(open(truth_file))}
    r = json.load(open(audit))
    z = norm.ppf(1 - r["summary"]["alpha"] / 2)
    lp, lt, se, idx = [], [], [], []
    for s in r["sequences"]:
        for st in s["steps"]:
            lp.append(logit(st["probability"]))
            lt.append(logit(truth[(s["id"], int(st["t"]))]))
            se.append((logit(st["prob_upper"]) - logit(st["prob_lower"])) / (2 * z))
            idx.append((int(s["id"]) - first_test, int(st["t"]) - 1))
    lp, lt, se = map(np.array, (lp, lt, se))

    def fit_logits(x, y, seed):
        net = train(x, y, seed).double()
        with torch.no_grad():
            out = net(torch.tensor(xt))[..., 0].numpy()
        return np.array([out[i, t] for i, t in idx])

    seed = make.SEED % 2**31
    data = np.array([fit_logits(*make.simulate(np.random.default_rng([make.SEED, 99, k]), make.SIZES["train"])[::2], seed)
                     for k in range(n_data)])
    x0, _, y0 = make.simulate(np.random.default_rng(ss[0]), make.SIZES["train"])
    init = np.array([fit_logits(x0, y0, 1000 + k) for k in range(n_init)])

    rms = lambda v: float(np.sqrt(np.mean(np.square(v))))  # noqa: E731
    sd_data = data.std(0, ddof=1)
    mean_fit = data.mean(0)
    bias = mean_fit - lt
    inside = np.abs(lp - lt) <= z * se
    inside_mean = np.abs(lp - mean_fit) <= z * se
    slope, icpt = np.polyfit(lt, mean_fit, 1)
    print("Why the probability intervals hold the true probability for %.1f%% of the synthetic forecasts "
          "(sampling.py: make.py's GRU re-trained exactly as make.py trains it on %d fresh training sets of %d "
          "sequences, and on make.py's own set with %d other seeds; on the logit scale, RMS over the %d test "
          "forecasts):\n" % (100 * inside.mean(), n_data, make.SIZES["train"], n_init, len(lp)))
    print("| figure | RMS (logit) |")
    print("|---|--:|")
    print("| jackknife standard error of the audited model (from its interval) | %.3f |" % rms(se))
    print("| standard deviation of the re-trained models over new training sets (the sampling variability) | %.3f |" % rms(sd_data))
    print("| standard deviation over seeds on the same training set (initialisation, optimiser) | %.3f |"
          % (rms(init.std(0, ddof=1)) if n_init > 1 else float("nan")))
    print("| bias: mean of the re-trained models minus the true logit | %.3f |" % rms(bias))
    print("| of which the noise of a mean of %d models | %.3f |" % (n_data, rms(sd_data) / np.sqrt(n_data)))
    print("| error of the audited model's logit against the truth | %.3f |" % rms(lp - lt))
    print()
    print("Median ratio of the jackknife standard error to the re-trained models' standard deviation, per "
          "forecast: %.2f. The re-trained models' mean logit is %.3f x the true logit %+.3f: a slope below 1 "
          "is a fitted probability shrunk towards 1/2, a bias of the model and its training (weight decay, 6 "
          "hidden units for the latent recurrence) that every leave-one-block-out model shares. The intervals hold the mean of the re-trained models (the "
          "model's expected probability, the quantity a sampling interval is about) for %.1f%% of forecasts "
          "(%.1f%% expected if they held the expected probability at their level: the mean of %d models "
          "has a variance of its own, 1/%d of theirs), against %.1f%% for the true probability.\n" % (
              float(np.median(se / sd_data)), slope, icpt, 100 * inside_mean.mean(),
              100 * (2 * norm.cdf(z / np.sqrt(1 + 1 / n_data)) - 1), n_data, n_data, 100 * inside.mean()))


if __name__ == "__main__":
    main()
