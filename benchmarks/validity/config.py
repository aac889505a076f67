"""Settings of the validity benchmark shared by bench.py (no torch) and
methods.py (the training jobs)."""

import json
import os
import sys
from statistics import NormalDist

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "synthetic"))
sys.dont_write_bytecode = True

import numpy as np  # noqa: E402

import generate  # noqa: E402

# Bump when a change to training, data or a baseline changes its numbers:
# every cached training result carries it in its key.
TRAIN_VERSION = 2

ALPHA = 0.1
POOL = 1000          # training sequences generated per seed; the first n are used
N_TEST = 1000
CAL_FRACTION = 0.2
MC_PASSES = 100

DATASETS = {
    # noise: generate.noise_sd profile; thresholds as in examples/synthetic/README.md
    "static": {"kind": "synthetic", "noise": "static", "low": 0.0, "high": 10.0,
               "cell": "rnn", "hidden": 20, "ridge": 100.0},
    "linear": {"kind": "synthetic", "noise": "linear", "low": 0.0, "high": 10.0,
               "cell": "rnn", "hidden": 20, "ridge": 100.0},
    # ridge and size from examples/chickweight (chosen there by cross-validation)
    "chickweight": {"kind": "chickweight", "low": 50.0, "high": 250.0,
                    "cell": "gru", "hidden": 8, "ridge": 3000.0},
}

FIT = {"adam_steps": 1000, "lbfgs_iters": 1000, "max_newton": 3, "tol": 1e-6}
SGD = {"steps": 1000, "batch": 150, "lr": 0.01}
DROPOUTS = (0.1, 0.45)   # 0.45 is the paper's tuned rate

TRAIN_METHODS = ["vanilla", "vanilla80", "cf-rnn", "mq-rnn"] + ["dp-rnn-%g" % p for p in DROPOUTS]


def method_config(dataset, method):
    """Everything that determines a training method's result (its cache key)."""
    cfg = dict(DATASETS[dataset], version=TRAIN_VERSION, alpha=ALPHA, method=method,
               cal_fraction=CAL_FRACTION)
    if method in ("vanilla", "vanilla80", "cf-rnn"):
        cfg["fit"] = FIT
    else:
        cfg["sgd"] = SGD
    if method.startswith("dp-rnn"):
        cfg["mc_passes"] = MC_PASSES
    return cfg




def config_dir(cache, dataset, n, seed):
    """The cache folder of one (data set, n, seed)."""
    return os.path.join(cache, dataset, "n%d-s%d" % (n, seed))


def oracle_width(dataset, steps):
    """Width 2 z_{1-alpha/2} sd_t of the oracle interval (known noise) at
    row indices `steps` (0 = t 1) for synthetic data, else None."""
    spec = DATASETS[dataset]
    if spec["kind"] != "synthetic":
        return None
    sd = generate.noise_sd(np.asarray(steps, dtype=np.float64) + 1.0, spec["noise"])
    return 2.0 * NormalDist().inv_cdf(1 - ALPHA / 2) * sd


def stored_key(path):
    """The cache key stored in a result file, or None when it is missing or unreadable."""
    try:
        with np.load(path) as z:
            return json.loads(str(z["meta"]))["key"]
    except (OSError, ValueError, KeyError):
        return None
