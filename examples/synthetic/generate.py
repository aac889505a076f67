#!/usr/bin/python3
"""Generate the synthetic data set of the paper's Section 5.1 in long CSV format.

Process (the paper's Section 5.1, "Synthetic Simulations", with a = 0.9,
T = 10 and its time-dependent noise profile; x's law is not in the paper):

    x_t   ~ N(1, 2^2)                       i.i.d., t = 1..T
    y_t   = sum_{j=1..t} a^(t-j) x_j + eps_t
    eps_t ~ N(0, sigma_t^2),  sigma_t^2 = t/10   (paper; sd = sqrt(t/10))

(the default, --noise linear, uses sd = 0.1 t as the project's issue on the
jackknife specifies; --noise paper gives the paper's variance t/10; --noise
static the paper's static profile with sd 1, used by benchmarks/validity.)

Writes, beside this script:
    train.csv        n = 1000 sequences  (stream 0 of the seed)
    test.csv         n = 1000 sequences  (stream 1 of the seed)
    train_small.csv  the first 100 sequences of train.csv
    test_small.csv   the first 200 sequences of test.csv
Columns: id,t,x,y (id = 1..n, t = 1..T). Values are written with 6 decimals;
the CSV files are the data set (training reads them back). Re-running
rewrites byte-identical files.

Run:  /usr/bin/python3 generate.py [--seed 20200713]
"""

import argparse
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

A = 0.9
T = 10
X_MEAN, X_SD = 1.0, 2.0


def noise_sd(t, profile):
    """The noise sd at steps t: "linear" 0.1 t, "paper" sqrt(t/10), "static" 1."""
    if profile == "paper":
        return np.sqrt(t / 10.0)
    if profile == "static":
        return np.ones_like(t)
    return 0.1 * t


def simulate(rng, n, profile):
    """Returns x, y of shape [n, T]."""
    t = np.arange(1, T + 1, dtype=np.float64)
    x = rng.normal(X_MEAN, X_SD, size=(n, T))
    eps = rng.normal(0.0, 1.0, size=(n, T)) * noise_sd(t, profile)
    s = np.zeros((n, T))
    acc = np.zeros(n)
    for k in range(T):
        acc = A * acc + x[:, k]
        s[:, k] = acc
    return x, s + eps


def write_csv(path, x, y):
    lines = ["id,t,x,y"]
    for i in range(x.shape[0]):
        for k in range(T):
            lines.append("%d,%d,%.6f,%.6f" % (i + 1, k + 1, x[i, k], y[i, k]))
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20200713)
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--n-train-small", type=int, default=100)
    ap.add_argument("--n-test-small", type=int, default=200)
    ap.add_argument("--noise", choices=["paper", "linear", "static"], default="linear",
                    help="noise profile: linear = sd 0.1 t (default, as the project specifies), "
                         "paper = variance t/10, static = sd 1")
    ap.add_argument("--out", default=HERE, help="output folder (default: beside this script)")
    a = ap.parse_args()

    streams = np.random.SeedSequence(a.seed).spawn(2)
    xtr, ytr = simulate(np.random.default_rng(streams[0]), a.n_train, a.noise)
    xte, yte = simulate(np.random.default_rng(streams[1]), a.n_test, a.noise)
    os.makedirs(a.out, exist_ok=True)
    write_csv(os.path.join(a.out, "train.csv"), xtr, ytr)
    write_csv(os.path.join(a.out, "test.csv"), xte, yte)
    write_csv(os.path.join(a.out, "train_small.csv"), xtr[:a.n_train_small], ytr[:a.n_train_small])
    write_csv(os.path.join(a.out, "test_small.csv"), xte[:a.n_test_small], yte[:a.n_test_small])
    # Oracle RMSE: predicting E[y_t | x_1:t] leaves only the noise.
    t = np.arange(1, T + 1, dtype=np.float64)
    print("seed %d, noise %s: train %d, test %d sequences, T = %d; oracle RMSE %.4f"
          % (a.seed, a.noise, a.n_train, a.n_test, T, np.sqrt(np.mean(noise_sd(t, a.noise) ** 2))))


if __name__ == "__main__":
    main()
