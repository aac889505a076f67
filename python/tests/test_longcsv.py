import io
import os
import tempfile
import unittest

import numpy as np

from _util import BINARY, SYNTHETIC, needs_binary, needs_pandas, needs_torch, read_csv_rows, rnnaudit


def read_sequences(path):
    """examples/synthetic's long CSV read with the csv module into padded
    arrays: ids, x [n, T, 1], y [n, T], lengths."""
    header, rows = read_csv_rows(path)
    assert header == ["id", "t", "x", "y"], header
    seqs = {}
    for r in rows:
        seqs.setdefault(r[0], []).append((int(r[1]), float(r[2]), float(r[3])))
    ids = list(seqs)
    T = max(len(s) for s in seqs.values())
    x = np.zeros((len(ids), T, 1))
    y = np.zeros((len(ids), T))
    lengths = []
    for i, sid in enumerate(ids):
        s = sorted(seqs[sid])
        lengths.append(len(s))
        for k, (_, xv, yv) in enumerate(s):
            x[i, k, 0], y[i, k] = xv, yv
    return ids, x, y, lengths


class PaddedArrays(unittest.TestCase):
    def test_rows_columns_and_exact_values(self):
        rng = np.random.default_rng(1)
        x = rng.standard_normal((3, 4, 2))
        y = rng.standard_normal((3, 4))
        x[2, 2:] = np.nan  # padding beyond the length is never written
        out = io.StringIO()
        rnnaudit.to_long_csv(out, x, y, lengths=[4, 1, 2], ids=["a", "b", "c"], features=["u", "v"])
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "id,t,u,v,y")
        self.assertEqual(len(lines), 1 + 4 + 1 + 2)
        got = [line.split(",") for line in lines[1:]]
        want = [(i, k) for i, L in enumerate([4, 1, 2]) for k in range(L)]
        for row, (i, k) in zip(got, want):
            self.assertEqual(row[0], "abc"[i])
            self.assertEqual(int(row[1]), k + 1)
            # Full precision: the text reads back to the same float64.
            self.assertEqual(float(row[2]), x[i, k, 0])
            self.assertEqual(float(row[3]), x[i, k, 1])
            self.assertEqual(float(row[4]), y[i, k])

    def test_one_feature_2d_time_first_and_no_targets(self):
        x = np.arange(6.0).reshape(3, 2)  # [time, n] with batch_first=False
        out = io.StringIO()
        rnnaudit.to_long_csv(out, x, batch_first=False, first_step=0)
        self.assertEqual(out.getvalue().splitlines(),
                         ["id,t,x", "1,0,0", "1,1,2", "1,2,4", "2,0,1", "2,1,3", "2,2,5"])

    def test_ragged_list(self):
        out = io.StringIO()
        rnnaudit.to_long_csv(out, [np.array([0.1, 0.2]), np.array([[0.3]])], [[1.5, 2.5], [3.5]], ids=[7, 8])
        self.assertEqual(out.getvalue().splitlines(),
                         ["id,t,x,y", "7,1,0.1,1.5", "7,2,0.2,2.5", "8,1,0.3,3.5"])

    def test_one_label_per_window(self):
        """A NaN target is a row without a label: an empty cell, which the
        audit reads as no label (no loss term, residual or coverage)."""
        out = io.StringIO()
        y = np.array([[np.nan, np.nan, 7.5], [np.nan, np.nan, 8.0]])
        rnnaudit.to_long_csv(out, np.arange(6.0).reshape(2, 3), y, ids=["w1", "w2"], first_step=0)
        self.assertEqual(out.getvalue().splitlines(),
                         ["id,t,x,y", "w1,0,0,", "w1,1,1,", "w1,2,2,7.5", "w2,0,3,", "w2,1,4,", "w2,2,5,8"])

    def test_refusals(self):
        x = np.zeros((2, 3, 1))
        y = np.zeros((2, 3))
        cases = [
            ("NaN", dict(x=np.where(np.arange(3)[None, :, None] == 1, np.nan, x), y=y), "sequence 1, step 1"),
            ("inf target", dict(x=x, y=np.where(np.arange(3)[None] == 2, np.inf, y)), "y is inf"),
            ("long length", dict(x=x, y=y, lengths=[3, 4]), "lengths[1] = 4"),
            ("zero length", dict(x=x, y=y, lengths=[0, 3]), "lengths[0] = 0"),
            ("lengths count", dict(x=x, y=y, lengths=[3]), "1 values for 2 sequences"),
            ("y shape", dict(x=x, y=np.zeros((2, 4))), "must be [2, 3]"),
            ("duplicate ids", dict(x=x, y=y, ids=[5, 5]), "'5' appears more than once"),
            ("feature names", dict(x=x, y=y, features=["a", "b"]), "names 2 columns"),
            ("name clash", dict(x=x, y=y, features=["y"]), "column names repeat"),
        ]
        for name, kw, msg in cases:
            with self.subTest(name):
                with self.assertRaises(ValueError) as cm:
                    rnnaudit.to_long_csv(io.StringIO(), **kw)
                self.assertIn(msg, str(cm.exception))


@needs_pandas
class DataFrames(unittest.TestCase):
    def test_long_frame_reordered(self):
        import pandas as pd
        df = pd.DataFrame({"y": [1.0, 2.0], "b": [3.0, 4.0], "t": [1, 2], "a": [0.5, 0.25], "id": ["s", "s"]})
        out = io.StringIO()
        rnnaudit.to_long_csv(out, df, features=["a", "b"])
        self.assertEqual(out.getvalue().splitlines(), ["id,t,a,b,y", "s,1,0.5,3,1", "s,2,0.25,4,2"])

    def test_long_frame_unlabelled_rows(self):
        import pandas as pd
        df = pd.DataFrame({"id": ["s", "s"], "t": [1, 2], "x": [0.5, 0.25], "y": [np.nan, 2.0]})
        out = io.StringIO()
        rnnaudit.to_long_csv(out, df)
        self.assertEqual(out.getvalue().splitlines(), ["id,t,x,y", "s,1,0.5,", "s,2,0.25,2"])

    def test_long_frame_refusals(self):
        import pandas as pd
        with self.assertRaisesRegex(ValueError, "no 'id' column"):
            rnnaudit.to_long_csv(io.StringIO(), pd.DataFrame({"t": [1], "y": [1.0]}))
        with self.assertRaisesRegex(ValueError, "row 1 \\(id q\\), column 'x'"):
            rnnaudit.to_long_csv(io.StringIO(), pd.DataFrame({"id": ["q", "q"], "t": [1, 2], "x": [1, np.nan],
                                                              "y": [1.0, 2.0]}))


@needs_torch
class Tensors(unittest.TestCase):
    def test_tensor_input(self):
        import torch
        x = torch.tensor([[[0.25], [0.5]]], dtype=torch.float32, requires_grad=True)
        out = io.StringIO()
        rnnaudit.to_long_csv(out, x, torch.tensor([[1.0, 2.0]]), lengths=torch.tensor([2]))
        self.assertEqual(out.getvalue().splitlines(), ["id,t,x,y", "1,1,0.25,1", "1,2,0.5,2"])


@needs_binary
class ReadByTheBinary(unittest.TestCase):
    def test_same_audit_as_the_original_file(self):
        # The bundled example read into arrays and written back by
        # to_long_csv: the binary must give identical intervals on both.
        ids, x, y, lengths = read_sequences(os.path.join(SYNTHETIC, "train_small.csv"))
        with tempfile.TemporaryDirectory() as tmp:
            path = rnnaudit.to_long_csv(os.path.join(tmp, "train.csv"), x, y, lengths=lengths, ids=ids)
            model = os.path.join(SYNTHETIC, "model_small.onnx")
            ours = rnnaudit.audit(model, path, ridge=10, binary=BINARY)
            orig = rnnaudit.audit(model, os.path.join(SYNTHETIC, "train_small.csv"), ridge=10, binary=BINARY)
        for col in ("prediction", "lower", "upper", "target"):
            np.testing.assert_array_equal(np.asarray(ours.intervals[col]), np.asarray(orig.intervals[col]))


if __name__ == "__main__":
    unittest.main()


class StaticCovariates(unittest.TestCase):
    def test_static_columns_repeat_per_sequence(self):
        x = np.arange(12.0).reshape(2, 3, 2)
        y = np.arange(6.0).reshape(2, 3)
        out = io.StringIO()
        rnnaudit.to_long_csv(out, x, y, lengths=[3, 2], static=np.array([[54.0, 1.0], [71.0, 0.0]]),
                             static_names=["age", "sex"])
        self.assertEqual(out.getvalue().splitlines(), [
            "id,t,x1,x2,age,sex,y",
            "1,1,0,1,54,1,0", "1,2,2,3,54,1,1", "1,3,4,5,54,1,2",
            "2,1,6,7,71,0,3", "2,2,8,9,71,0,4"])

    def test_static_refusals(self):
        x = np.zeros((2, 3, 1))
        for kw, want in ((dict(static=np.zeros((3, 2))), "give [2, S]"),
                         (dict(static=np.array([[1.0], [np.nan]])), "static[1, 0] is nan"),
                         (dict(static=np.zeros((2, 2)), static_names=["a"]), "names 1 columns, static has 2"),
                         (dict(static_names=["a"]), "static_names without static values")):
            with self.subTest(kw=list(kw)):
                with self.assertRaises(ValueError) as cm:
                    rnnaudit.to_long_csv(io.StringIO(), x, **kw)
                self.assertIn(want, str(cm.exception))
