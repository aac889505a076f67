#!/usr/bin/python3
"""Train an LSTM on the synthetic AR data the ordinary way and export it to ONNX.

The other examples are trained in float64 to a stationary point (L-BFGS and
Newton), which is what the audit's influence estimates assume but not what
users do. This one is trained the way a tutorial would: float32, mini-batch
Adam on the mean squared error, no weight penalty, early stopping on a
validation split, best weights restored, torch.onnx.export at opset 17 with
dynamic batch and time axes.

Data: ../synthetic/train.csv (1000 sequences of 10 steps, the paper's AR
process). A seeded random 80/20 split by sequence gives train.csv (800
sequences, the data the weights are fitted to) and val.csv (200 sequences,
used only to decide when to stop); both are written here. Test data:
../synthetic/test.csv (1000 fresh sequences).

Model: y_t = out_sd * Linear(16, 1)(LSTM(1, 16)(z_1:t))_t + out_mean with
z = (x - in_mean) / in_sd; the four constants are the training rows' means
and population standard deviations, written into the graph as Constant
nodes (not parameters).

Run (from anywhere; reads ../synthetic, writes beside this script):
    /usr/bin/python3 train.py     # -> train.csv, val.csv, model.onnx, ~1 min
"""

import copy
import csv
import io
import os
import sys
import time
import warnings

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import rnnfit  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

SEED = 7
HIDDEN = 16
BATCH = 32
LR = 1e-3
MAX_EPOCHS = 300
PATIENCE = 20
VAL_FRACTION = 0.2


def write_subset(src, dst, keep):
    """Copies the rows of src whose id is in keep to dst, unchanged."""
    with open(src, newline="") as f, open(dst, "w", newline="") as out:
        r = csv.reader(f)
        w = csv.writer(out, lineterminator="\n")
        w.writerow(next(r))
        for row in r:
            if row[0] in keep:
                w.writerow(row)


def export(model, path):
    """torch.onnx.export of the float32 model, opset 17, dynamic batch/time."""
    dummy = torch.zeros(2, 3, 1, dtype=torch.float32)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the usual LSTM batch_first export warning
        torch.onnx.export(model, (dummy,), f, opset_version=17,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch", 1: "time"},
                                        "y": {0: "batch", 1: "time"}})
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    with open(path, "wb") as out:
        out.write(data)


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    syn = os.path.join(os.path.dirname(HERE), "synthetic")

    ids, _, X, Y, M = rnnfit.read_long_csv(os.path.join(syn, "train.csv"))
    perm = torch.randperm(len(ids), generator=torch.Generator().manual_seed(SEED)).numpy()
    n_val = int(round(VAL_FRACTION * len(ids)))
    val, tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    write_subset(os.path.join(syn, "train.csv"), os.path.join(HERE, "train.csv"), {ids[i] for i in tr})
    write_subset(os.path.join(syn, "train.csv"), os.path.join(HERE, "val.csv"), {ids[i] for i in val})
    _, _, Xte, Yte, Mte = rnnfit.read_long_csv(os.path.join(syn, "test.csv"))

    obs = M[tr].astype(bool)
    model = rnnfit.PerStep(nn.LSTM(1, HIDDEN, batch_first=True), HIDDEN,
                           in_shift=[X[tr][obs].mean()], in_scale=[X[tr][obs].std()],
                           out_shift=Y[tr][obs].mean(), out_scale=Y[tr][obs].std())
    f32 = lambda a: torch.from_numpy(a.astype(np.float32))  # noqa: E731
    Xtr, Ytr = f32(X[tr]), f32(Y[tr])
    Xva, Yva = f32(X[val]), f32(Y[val])
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    mse = nn.MSELoss()

    best, best_epoch, best_state = float("inf"), 0, None
    start = time.time()
    for epoch in range(1, MAX_EPOCHS + 1):
        model.train()
        order = torch.randperm(len(tr))
        for k in range(0, len(tr), BATCH):
            b = order[k:k + BATCH]
            opt.zero_grad()
            loss = mse(model(Xtr[b])[..., 0], Ytr[b])
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            v = mse(model(Xva)[..., 0], Yva).item()
        if v < best:
            best, best_epoch, best_state = v, epoch, copy.deepcopy(model.state_dict())
        elif epoch - best_epoch >= PATIENCE:
            break
    seconds = time.time() - start
    model.load_state_dict(best_state)
    model.eval()
    export(model, os.path.join(HERE, "model.onnx"))

    # What the audit sees: the exported float32 weights, evaluated in float64.
    m64 = copy.deepcopy(model).double()
    T = torch.from_numpy
    Xtr64, Ytr64, Mtr64 = T(X[tr]), T(Y[tr]), T(M[tr])
    loss, g = rnnfit.grad_norm(m64, Xtr64, Ytr64, Mtr64)
    seq = rnnfit.per_sequence_grad_norms(m64, Xtr64, Ytr64, Mtr64)
    print("%d parameters; %d training, %d validation sequences" % (rnnfit.n_params(m64), len(tr), len(val)))
    print("stopped after epoch %d (best validation MSE %.6f at epoch %d, patience %d), %.1f s"
          % (epoch, best, best_epoch, PATIENCE, seconds))
    print("exported weights in float64: training sum of squared errors %.6g, |grad| %.3e" % (loss, g))
    print("per-sequence gradient norms: median %.3e, min %.3e, max %.3e"
          % (np.median(seq), seq.min(), seq.max()))
    print("RMSE: train %.6f  validation %.6f  test %.6f"
          % (rnnfit.rmse(m64, Xtr64, Ytr64, Mtr64), rnnfit.rmse(m64, T(X[val]), T(Y[val]), T(M[val])),
             rnnfit.rmse(m64, T(Xte), T(Yte), T(Mte))))


if __name__ == "__main__":
    main()
