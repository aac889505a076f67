#!/usr/bin/python3
"""Time PyTorch's own float64 forward of the paper-size model.

Model: nn.RNN(1, 20) tanh, 1 layer, batch_first + nn.Linear(20, 1) at every
step (same architecture as onnx/testdata/pytorch/paper_rnn.onnx). Input: a
batch of 1000 sequences, T = 10. torch.set_num_threads(2), torch.no_grad(),
warm-up, then the median of REPS timed forwards.

Prints exactly one line:   torch_forward_ms <median milliseconds>
With --go-ms X (a Go timing of the same forward, in ms) it also prints
                           go_over_torch_ratio <X / median>
Run with Debian's interpreter (/usr/bin/python3); weights are random, timing
does not depend on them.
"""

import argparse
import statistics
import time

import torch
import torch.nn as nn

B, T, F, H = 1000, 10, 1, 20
WARMUP, REPS = 20, 101


class PaperRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(F, H, num_layers=1, nonlinearity="tanh", batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go-ms", type=float, default=None,
                    help="Go forward time in ms; prints go_over_torch_ratio too")
    args = ap.parse_args()

    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = PaperRNN().double().eval()
    x = torch.randn(B, T, F, dtype=torch.float64)

    with torch.no_grad():
        for _ in range(WARMUP):
            model(x)
        times = []
        for _ in range(REPS):
            t0 = time.perf_counter()
            y = model(x)
            times.append(time.perf_counter() - t0)
    assert y.shape == (B, T, 1) and y.dtype == torch.float64
    ms = statistics.median(times) * 1e3
    print("torch_forward_ms %.3f" % ms)
    if args.go_ms is not None:
        print("go_over_torch_ratio %.3f" % (args.go_ms / ms))


if __name__ == "__main__":
    main()
