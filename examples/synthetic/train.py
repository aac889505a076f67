#!/usr/bin/python3
"""Train the paper's vanilla RNN on the synthetic data and export it to ONNX.

Model: nn.RNN(1, H, nonlinearity="tanh", batch_first=True) + nn.Linear(H, 1)
at every step; the output at step t is compared with y_t (row t).
Objective: squared error summed over all (sequence, step) plus
ridge/2 |theta|^2. Training in float64: full-batch Adam warm-up, L-BFGS, then
damped Newton with the exact Hessian until the objective's gradient is at its
floor.
Export: float32 weights, opset 14, input "x" [batch, time, 1], output "y"
[batch, time, 1], dynamic axes "batch" and "time".

Run (from anywhere; reads and writes beside this script):
    /usr/bin/python3 train.py            # H = 20 on train.csv  -> model.onnx
    /usr/bin/python3 train.py --small    # H = 8 on train_small.csv -> model_small.onnx
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import rnnfit  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true",
                    help="the fast-test variant: H = 8, train_small.csv, test_small.csv, model_small.onnx")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ridge", type=float, default=10.0,
                    help="ridge/2 |theta|^2 added to the sum loss (see README: without it the "
                         "loss has no finite minimiser)")
    ap.add_argument("--tol", type=float, default=1e-6, help="stop when |grad of the objective| < tol")
    a = ap.parse_args()
    if a.small:
        hidden, train, test, out = 8, "train_small.csv", "test_small.csv", "model_small.onnx"
    else:
        hidden, train, test, out = 20, "train.csv", "test.csv", "model.onnx"

    rnnfit.setup(a.seed)
    _, feats, Xtr, Ytr, Mtr = rnnfit.read_long_csv(os.path.join(HERE, train))
    _, _, Xte, Yte, Mte = rnnfit.read_long_csv(os.path.join(HERE, test))
    assert feats == ["x"], feats
    Xtr, Ytr, Mtr, Xte, Yte, Mte = (torch.from_numpy(v) for v in (Xtr, Ytr, Mtr, Xte, Yte, Mte))

    model = rnnfit.PerStep(nn.RNN(1, hidden, nonlinearity="tanh", batch_first=True), hidden)
    facts = rnnfit.fit(model, Xtr, Ytr, Mtr, ridge=a.ridge, tol=a.tol)
    exported = rnnfit.export_onnx(model, os.path.join(HERE, out), 1)
    rnnfit.report(out, model, facts, Xtr, Ytr, Mtr, Xte, Yte, Mte, exported)


if __name__ == "__main__":
    main()
