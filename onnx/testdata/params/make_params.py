#!/usr/bin/python3
"""Build the exports of parameters and outputs that practitioners write,
with the data they were trained on.

Run from this folder with Debian's PyTorch 1.13 (/usr/bin/python3):

    /usr/bin/python3 make_params.py

It writes
  train.csv, test.csv       30 and 10 sequences of 12 steps: features
                            glucose (about 60 +- 10) and dose (about
                            0.5 +- 0.2), target y at every row;
  gru_std.onnx              a GRU whose export standardises its inputs inside
                            the graph, (x - mean) / std with the statistics
                            as registered buffers (torch.onnx.export as
                            people write it); trained in float32 with Adam,
                            weight_decay 1e-3 (--ridge 0.36: 1e-3 times the
                            360 loss terms), mini-batches then full batches;
  gru_std_bridge.onnx       the same module exported by the Python bridge
                            (rnnaudit.export): its metadata names the
                            initializers that hold trained values;
  gru_tanh_std.onnx         the same GRU reading tanh of its standardised
                            inputs: the statistics feed no linear layer,
                            so they are taken as parameters and the
                            stationarity check must name them;
  masked_attn.onnx          causal self-attention with a sinusoidal position
                            table and a mask of 0 and -inf as buffers,
                            then a GRU: the table and the mask are
                            constants, the mask's -inf accepted;
  attn_two.onnx             an LSTM with attention over its steps returning
                            (attention weights [batch, time], forecast
                            [batch]): the forecast of the last row's target,
                            trained with Adam (weight_decay 1e-3, 30 terms:
                            --ridge 0.03);
  params.json               the names of each model's trained initializers
                            and buffers as PyTorch knows them, and the
                            float64 forecasts of the first test sequence.
"""

import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
import rnnaudit  # noqa: E402

N_TRAIN, N_TEST, T, F, H = 30, 10, 12, 2, 4
MEAN, STD = [60.0, 0.5], [10.0, 0.2]


def data(n, rng):
    xs, ys = [], []
    for _ in range(n):
        g = np.zeros(T)
        for t in range(1, T):
            g[t] = 0.7 * g[t - 1] + rng.normal()
        d = rng.normal(size=T)
        x = np.stack([MEAN[0] + STD[0] * g / 1.4, MEAN[1] + STD[1] * d], axis=1)
        y = np.zeros(T)
        for t in range(T):
            y[t] = 0.8 * g[t] / 1.4 - 0.5 * d[t] + (0.3 * d[t - 1] if t else 0) + 0.2 * rng.normal()
        xs.append(x)
        ys.append(y)
    return np.array(xs), np.array(ys)


def write_csv(path, xs, ys):
    with open(path, "w") as f:
        f.write("id,t,glucose,dose,y\n")
        for i, (x, y) in enumerate(zip(xs, ys)):
            for t in range(T):
                f.write("%d,%d,%.6f,%.6f,%.6f\n" % (i + 1, t + 1, x[t, 0], x[t, 1], y[t]))


def read_csv(path):
    """The values as the audit reads them: the CSV's six decimals."""
    rows = np.loadtxt(path, delimiter=",", skiprows=1)
    n = int(rows[:, 0].max())
    return rows[:, 2:4].reshape(n, T, F), rows[:, 4].reshape(n, T)


class StdGRU(nn.Module):
    """Standardises its inputs with stored statistics, then GRU and a
    linear head at every step."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor(MEAN))
        self.register_buffer("std", torch.tensor(STD))
        self.rnn = nn.GRU(F, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        out, _ = self.rnn((x - self.mean) / self.std)
        return self.head(out)[..., 0]


class TanhStdGRU(StdGRU):
    """Squashes its standardised inputs with tanh before the GRU: the
    statistics do not feed a linear layer, so no rule makes them
    constants; the stationarity check names them."""

    def forward(self, x):
        out, _ = self.rnn(torch.tanh((x - self.mean) / self.std))
        return self.head(out)[..., 0]


class MaskedAttnGRU(nn.Module):
    """Causal self-attention over a sinusoidal position table, both
    registered buffers (the table, and the mask of 0 and -inf), then a
    GRU and a head at every step."""

    def __init__(self, L=64, d=4):
        super().__init__()
        self.inp = nn.Linear(F, d)
        pos = torch.arange(L, dtype=torch.float32)[:, None]
        w = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-np.log(100.0) / d))
        pe = torch.zeros(L, d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * w), torch.cos(pos * w)
        self.register_buffer("pe", pe)
        self.register_buffer("mask", torch.full((L, L), float("-inf")).triu(1))
        self.rnn = nn.GRU(d, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        T = x.shape[1]
        z = self.inp((x - torch.tensor(MEAN)) / torch.tensor(STD)) + self.pe[:T]
        a = torch.softmax(z @ z.transpose(1, 2) * 0.5 + self.mask[:T, :T], dim=-1)
        out, _ = self.rnn(a @ z)
        return self.head(out)[..., 0]


class AttnLSTM(nn.Module):
    """LSTM, attention over its steps, a head on the attended state:
    returns (attention weights, forecast)."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(F, H, batch_first=True)
        self.score = nn.Linear(H, 1)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        z = (x - torch.tensor(MEAN)) / torch.tensor(STD)
        out, _ = self.rnn(z)
        a = torch.softmax(self.score(out)[..., 0], dim=1)
        ctx = (a.unsqueeze(-1) * out).sum(1)
        return a, self.head(ctx + out[:, -1])[:, 0]


def train(model, x, y, loss_of, epochs=300):
    opt = torch.optim.Adam(model.parameters(), lr=0.02, weight_decay=1e-3)
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    rng = np.random.default_rng(1)
    for epoch in range(epochs):
        # Mini-batches of 10, then the full batch with a falling rate.
        if epoch < epochs // 2:
            order = [rng.permutation(len(x))[i:i + 10] for i in range(0, len(x), 10)]
        else:
            order = [np.arange(len(x))]
            for g in opt.param_groups:
                g["lr"] = 0.02 * 0.99 ** (epoch - epochs // 2)
        for idx in order:
            opt.zero_grad()
            loss = loss_of(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    return float(loss_of(model(x), y))


def export(model, path, outputs, axes):
    model.eval()
    torch.onnx.export(model, (torch.zeros(1, T, F),), path, opset_version=14, input_names=["x"],
                      output_names=outputs, dynamic_axes=axes)


def main():
    rng = np.random.default_rng(33)
    write_csv(os.path.join(HERE, "train.csv"), *data(N_TRAIN, rng))
    write_csv(os.path.join(HERE, "test.csv"), *data(N_TEST, rng))
    x, y = read_csv(os.path.join(HERE, "train.csv"))
    xt, _ = read_csv(os.path.join(HERE, "test.csv"))
    ref = {}

    torch.manual_seed(1)
    gru = StdGRU()
    mse = nn.MSELoss()
    print("gru_std: training MSE %.4f" % train(gru, x, y, mse))
    export(gru, os.path.join(HERE, "gru_std.onnx"), ["y"], {"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}})
    r = rnnaudit.export(gru, os.path.join(HERE, "gru_std_bridge.onnx"), torch.zeros(1, T, F), check=False)
    with torch.no_grad():
        f = gru.double()(torch.tensor(xt[:1])).numpy()
    gru.float()
    ref["gru_std"] = {"parameters": [n for n, _ in gru.named_parameters()],
                      "buffers": [n for n, _ in gru.named_buffers()],
                      "bridge_parameters": r.parameters, "test_forecast": f.ravel().tolist()}

    torch.manual_seed(3)
    sq = TanhStdGRU()
    print("gru_tanh_std: training MSE %.4f" % train(sq, x, y, mse))
    export(sq, os.path.join(HERE, "gru_tanh_std.onnx"), ["y"], {"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}})

    torch.manual_seed(4)
    ma = MaskedAttnGRU()
    print("masked_attn: training MSE %.4f" % train(ma, x, y, mse))
    export(ma, os.path.join(HERE, "masked_attn.onnx"), ["y"], {"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}})
    with torch.no_grad():
        f = ma.double()(torch.tensor(xt[:1])).numpy()
    ref["masked_attn"] = {"parameters": [n for n, _ in ma.named_parameters()],
                          "buffers": [n for n, _ in ma.named_buffers()], "test_forecast": f.ravel().tolist()}

    torch.manual_seed(2)
    att = AttnLSTM()
    print("attn_two: training MSE %.4f" % train(att, x, y, lambda out, yy: mse(out[1], yy[:, -1])))
    export(att, os.path.join(HERE, "attn_two.onnx"), ["attention", "forecast"],
           {"x": {0: "batch", 1: "time"}, "attention": {0: "batch", 1: "time"}, "forecast": {0: "batch"}})
    with torch.no_grad():
        a, f = att.double()(torch.tensor(xt[:1]))
    ref["attn_two"] = {"parameters": [n for n, _ in att.named_parameters()],
                       "test_attention": a.numpy().ravel().tolist(), "test_forecast": f.numpy().ravel().tolist()}
    with open(os.path.join(HERE, "params.json"), "w") as fh:
        json.dump(ref, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
