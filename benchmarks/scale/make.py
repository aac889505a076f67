#!/usr/bin/python3
"""Make the scale benchmark's models and data.

Data: the synthetic process of examples/synthetic/generate.py (same
simulate(), sd 0.1 t noise, T = 10), seed 12 split into two streams:

    data/train_100000.csv   100,000 training sequences (stream 0)
    data/train_10000.csv    its first 10,000 sequences
    data/train_1000.csv     its first 1,000
    data/train_100.csv      its first 100
    data/test_1000.csv      1,000 test sequences (stream 1)
    data/test_100.csv       its first 100
    data/train_1000000.csv  1,000,000 training sequences (stream 2, only with
                            --million: 290 MB, about a minute to write)

The data folder is a cache (gitignored): re-running rewrites the same bytes.

Models (committed, small): trained briefly (full-batch Adam on the first
2,000 training sequences, or all 100 for the RNN; no ridge), then exported with
examples/rnnfit.py's exporter (float32, opset 14, input x [batch, time, 1]):

    lstm64.onnx   LSTM, 64 hidden units, linear head: 4*64*(1+64) + 2*4*64 + 64 + 1
                  = 17,217 parameters
    rnn64.onnx    tanh RNN, 64 hidden units, linear head: 64*(1+64) + 2*64 + 64 + 1
                  = 4,353 parameters, trained on train_100.csv

The models are not at an optimum (brief training): the benchmark measures
cost, not interval quality.

Run:  /usr/bin/python3 benchmarks/scale/make.py [--steps 300] [--no-models]
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "examples", "synthetic"))
import generate  # noqa: E402
import rnnfit  # noqa: E402

SEED = 12


def adam(model, X, Y, M, steps, lr):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for s in range(steps):
        opt.zero_grad()
        loss = rnnfit.sum_loss(model, X, Y, M) / M.sum()
        loss.backward()
        opt.step()
        if s % 50 == 0 or s == steps - 1:
            print("  step %4d  mean squared error %.4f" % (s, loss.item()), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="Adam steps per model")
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--no-data", action="store_true", help="only train and export the models")
    ap.add_argument("--no-models", action="store_true", help="only write the data (keep the committed models)")
    ap.add_argument("--million", action="store_true",
                    help="only write data/train_1000000.csv (1M sequences from a third stream) and stop")
    a = ap.parse_args()

    # spawn(3)[:2] are the streams spawn(2) gave: the smaller files are unchanged.
    streams = np.random.SeedSequence(SEED).spawn(3)
    if a.million:
        os.makedirs(a.data, exist_ok=True)
        x, y = generate.simulate(np.random.default_rng(streams[2]), 1_000_000, "linear")
        generate.write_csv(os.path.join(a.data, "train_1000000.csv"), x, y)
        print("data/train_1000000.csv written", flush=True)
        return
    xtr, ytr = generate.simulate(np.random.default_rng(streams[0]), 100_000, "linear")
    xte, yte = generate.simulate(np.random.default_rng(streams[1]), 1000, "linear")
    if not a.no_data:
        os.makedirs(a.data, exist_ok=True)
        for n in (100, 1000, 10_000, 100_000):
            generate.write_csv(os.path.join(a.data, "train_%d.csv" % n), xtr[:n], ytr[:n])
        generate.write_csv(os.path.join(a.data, "test_1000.csv"), xte, yte)
        generate.write_csv(os.path.join(a.data, "test_100.csv"), xte[:100], yte[:100])
        print("data written to", a.data, flush=True)

    if a.no_models:
        return

    # Training reads the 6-decimal values the CSVs hold.
    def tensors(x, y):
        x, y = np.round(x, 6), np.round(y, 6)
        return (torch.from_numpy(x[:, :, None]), torch.from_numpy(y), torch.ones(y.shape, dtype=torch.float64))

    for name, make, n in (("lstm64", lambda: nn.LSTM(1, 64, batch_first=True), 2000),
                          ("rnn64", lambda: nn.RNN(1, 64, nonlinearity="tanh", batch_first=True), 100)):
        rnnfit.setup(SEED)  # float64 from here on
        model = rnnfit.PerStep(make(), 64)
        X, Y, M = tensors(xtr[:n], ytr[:n])
        print("%s: %d parameters, Adam on %d sequences" % (name, rnnfit.n_params(model), n), flush=True)
        adam(model, X, Y, M, a.steps, 0.01)
        exported = rnnfit.export_onnx(model, os.path.join(HERE, name + ".onnx"), 1)
        Xte, Yte, Mte = tensors(xte, yte)
        print("  exported %s.onnx: train RMSE %.4f, test RMSE %.4f" % (
            name, rnnfit.rmse(exported, X, Y, M), rnnfit.rmse(exported, Xte, Yte, Mte)), flush=True)


if __name__ == "__main__":
    main()
