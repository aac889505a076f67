"""Shared by the tests: the repository's paths, the binary, and skips with
a message when an optional part (pandas, torch, the binary) is absent."""

import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository
SYNTHETIC = os.path.join(ROOT, "examples", "synthetic")
sys.path.insert(0, os.path.dirname(HERE))  # the package, without installing it

import rnnaudit  # noqa: E402

HAVE_PANDAS = importlib.util.find_spec("pandas") is not None
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def binary():
    """The rnnaudit binary, or None (the tests that need it skip)."""
    try:
        return rnnaudit.find_binary()
    except rnnaudit.BinaryNotFoundError:
        return None


BINARY = binary()

needs_binary = unittest.skipIf(
    BINARY is None, "no rnnaudit binary: set RNNAUDIT_BIN (go build -o /tmp/audit ./cmd/audit) or put audit on PATH")
needs_pandas = unittest.skipIf(not HAVE_PANDAS, "pandas is not installed for %s" % sys.executable)
needs_torch = unittest.skipIf(not HAVE_TORCH, "torch is not installed for %s (use Debian's /usr/bin/python3)"
                              % sys.executable)


def read_csv_rows(path):
    """The rows of a CSV file as lists of strings, with its header: the
    independent reading the tests compare with."""
    import csv
    with open(path, newline="") as f:
        r = list(csv.reader(f))
    return r[0], r[1:]
