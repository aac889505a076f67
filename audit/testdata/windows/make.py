"""Makes the windowed-audit fixture of audit/windows_test.go.

One AR(1) series (phi 0.8, 150 rows, seed 5); rows 0-109 are the training
series (train.csv), rows 110-149 the later test period (test.csv), both in
long format (id, t, y). A many-to-one RNN (1 input, 4 tanh units, a linear
head on the last hidden state: 33 parameters) reads windows of 6 rows and
forecasts the next value; it is trained on the 104 training windows
(stride 1) to a stationary point of the mean squared error plus the
coupled weight decay w |theta|^2 / 2, w = 1e-3 (so the audit's ridge is
w N = 0.104, N = 104 windows), full batch, L-BFGS in float64, and exported
like the PyTorch tutorial (dynamic batch axis) at opset 17.
test_forecasts.csv holds PyTorch's forecast of every test value (rows
110-148: the last row has no next value), from the window of the 6 rows
before it, which starts in the training rows.

Run with /usr/bin/python3 (torch 1.13): python3 make.py
"""
import io
import warnings

import numpy as np
import onnx
import torch

W, N_ROWS, N_TRAIN, DECAY = 6, 150, 110, 1e-3


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.RNN(1, 4, batch_first=True)
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.head(h[:, -1, :])


def windows(y):
    """Windows of W rows, stride 1, and the value after each."""
    x = np.stack([y[s:s + W] for s in range(len(y) - W)])
    return torch.tensor(x[:, :, None]), torch.tensor(y[W:, None])


def main():
    rng = np.random.default_rng(5)
    y = np.zeros(N_ROWS)
    for t in range(1, N_ROWS):
        y[t] = 0.8 * y[t - 1] + rng.normal()
    y = np.round(y, 6)
    for name, lo, hi in (("train.csv", 0, N_TRAIN), ("test.csv", N_TRAIN, N_ROWS)):
        with open(name, "w") as f:
            f.write("id,t,y\n")
            for t in range(lo, hi):
                f.write(f"A,{t + 1},{y[t]:.6f}\n")
    torch.manual_seed(0)
    model = Net().double()
    x, target = windows(y[:N_TRAIN])
    opt = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=5000, tolerance_grad=1e-12,
                            tolerance_change=0, history_size=50, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.mean((model(x) - target) ** 2)
        loss = loss + DECAY / 2 * sum((p ** 2).sum() for p in model.parameters())
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)
    g = torch.cat([p.grad.flatten() for p in model.parameters()])
    print(f"{len(x)} windows, loss {closure().item():.6f}, gradient norm {g.norm().item():.2e}")
    model = model.float()
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(2, W, 1),), f, opset_version=17,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    onnx.checker.check_model(onnx.load_from_string(f.getvalue()))
    with open("model.onnx", "wb") as out:
        out.write(f.getvalue())
    # The reference forecasts of the test period: the float32 weights
    # evaluated in float64, on every window whose last row is a test row
    # with a target (the windows start in the training rows).
    ref = model.double()
    xs, ys = windows(y[N_TRAIN - W + 1:])
    with torch.no_grad():
        pred = ref(xs)[:, 0].numpy()
    with open("test_forecasts.csv", "w") as out:
        out.write("step,forecast,target\n")
        for s in range(len(pred)):
            out.write(f"{N_TRAIN + s + 1},{pred[s]:.12g},{ys[s, 0].item():.6f}\n")


if __name__ == "__main__":
    main()
