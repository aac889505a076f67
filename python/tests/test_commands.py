import contextlib
import io
import json
import os
import subprocess
import tempfile
import time
import unittest

import numpy as np

from _util import BINARY, SYNTHETIC, needs_binary, needs_pandas, read_csv_rows, rnnaudit

MODEL = os.path.join(SYNTHETIC, "model_small.onnx")
TRAIN = os.path.join(SYNTHETIC, "train_small.csv")
TEST = os.path.join(SYNTHETIC, "test_small.csv")
CAL = os.path.join(SYNTHETIC, "cal_small.csv")


def column(res, name):
    return np.asarray(res.intervals[name])


class Flags(unittest.TestCase):
    def test_flag_args(self):
        from rnnaudit._commands import flag_args
        self.assertEqual(
            flag_args(dict(ridge=10, alpha=0.05, block_length=5, features=["a", "b"],
                           input=["x_cat=store,dow", "z=k"], quiet=True, timings=False, low=None)),
            ["--ridge", "10", "--alpha", "0.05", "--block-length", "5", "--features", "a,b",
             "--input", "x_cat=store,dow", "--input", "z=k", "--quiet"])


class ReadIntervals(unittest.TestCase):
    TEXT = ("id,t,horizon,prediction,lower,upper,target,kind\n"
            "007,1,0,0.1,-Inf,+Inf,,split\n"
            "8,2.5,1,1e-300,0.30000000000000004,2,3.5,jackknife+\n")

    def check(self, d):
        self.assertEqual(list(d["id"]), ["007", "8"])  # "007" is not the integer 7
        self.assertEqual(list(d["t"]), [1.0, 2.5])
        self.assertEqual(list(d["horizon"]), [0, 1])
        self.assertEqual(list(d["prediction"]), [0.1, 1e-300])
        self.assertEqual(list(d["lower"]), [-np.inf, 0.30000000000000004])
        self.assertEqual(list(d["upper"]), [np.inf, 2.0])
        self.assertTrue(np.isnan(d["target"][0]))
        self.assertEqual(list(d["kind"]), ["split", "jackknife+"])

    def test_arrays(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "x.csv")
            with open(p, "w") as f:
                f.write(self.TEXT)
            self.check(rnnaudit.read_intervals(p, frame=False))
            with open(p, "w") as f:
                f.write(self.TEXT.replace("007", "7").replace("2.5", "2"))
            d = rnnaudit.read_intervals(p, frame=False)
        self.assertEqual(d["id"].dtype, np.int64)
        self.assertEqual(d["t"].dtype, np.int64)

    @needs_pandas
    def test_frame(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "x.csv")
            with open(p, "w") as f:
                f.write(self.TEXT)
            d = rnnaudit.read_intervals(p)
        self.check(d)
        self.assertEqual(d["horizon"].dtype, np.int64)


@needs_binary
class Audit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.res = rnnaudit.audit(MODEL, TRAIN, TEST, calibration=CAL, ridge=10, binary=BINARY)

    def test_intervals_are_the_binarys_csv(self):
        # The same audit run directly; its CSV read with the csv module.
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "x.csv")
            subprocess.run([BINARY, "--model", MODEL, "--data", TRAIN, "--test", TEST, "--calibration", CAL,
                            "--ridge", "10", "--quiet", "--out", out], check=True)
            header, rows = read_csv_rows(out)
        self.assertEqual(list(self.res.intervals.keys()), header)
        self.assertEqual(len(rows), 2000)  # 200 test sequences of 10 steps
        for j, name in enumerate(header):
            got = column(self.res, name)
            if name == "id":
                self.assertEqual([str(v) for v in got], [r[j] for r in rows])
            elif name in ("t", "horizon") or got.dtype.kind == "f":
                want = np.array([float(r[j]) if r[j] else np.nan for r in rows])
                np.testing.assert_array_equal(got.astype(float), want, err_msg=name)

    def test_recommended_columns(self):
        # The recommended kind's limits are that kind's columns.
        iv = self.res.intervals
        if "recommended" not in iv.keys():
            self.skipTest("the binary writes no recommended column")
        prefix = {"jackknife_plus": "", "conformal_jackknife_plus": "conformal_jackknife_",
                  "split_conformal": "split_", "in_sample": "naive_"}
        kinds = set(column(self.res, "recommended"))
        self.assertEqual(len(kinds), 1, kinds)
        kind = kinds.pop()
        self.assertIn(kind, prefix)
        for side in ("lower", "upper"):
            np.testing.assert_array_equal(column(self.res, "recommended_" + side),
                                          column(self.res, prefix[kind] + side))

    def test_report(self):
        r = self.res
        self.assertEqual(r.report["format"], "rnnaudit.report")
        self.assertNotIn("sequences", r.report)
        self.assertEqual(r.report["settings"]["ridge"], 10)
        self.assertEqual(r.summary["points"], 2000)
        # Coverage in the report is the fraction of CSV rows covered.
        y, lo, hi = column(r, "target"), column(r, "lower"), column(r, "upper")
        self.assertAlmostEqual(r.summary["coverage"], float(np.mean((lo <= y) & (y <= hi))), places=12)
        self.assertIn(r.verdict["level"], ("good", "fair", "poor", "none"))
        self.assertIn("test values", r.text)
        self.assertNotIn("rnnaudit-", r.text)  # no temporary file named in the summary

    def test_out_files_kept(self):
        with tempfile.TemporaryDirectory() as tmp:
            md, js = os.path.join(tmp, "r.md"), os.path.join(tmp, "r.json")
            res = rnnaudit.audit(MODEL, TRAIN, ridge=10, out=[md, js], binary=BINARY, quiet=True)
            self.assertTrue(os.path.getsize(md) > 0)
            with open(js) as f:
                self.assertEqual(len(json.load(f)["sequences"]), 100)
        self.assertEqual(len(res.intervals["id"]), 1000)

    def test_fit_predict_equals_audit(self):
        with tempfile.TemporaryDirectory() as tmp:
            art = rnnaudit.fit(MODEL, TRAIN, os.path.join(tmp, "a.rna"), calibration=CAL, ridge=10,
                               binary=BINARY)
            self.assertTrue(os.path.isabs(art) and os.path.getsize(art) > 0)
            # From another working directory: the model path is absolute.
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                p = rnnaudit.predict("a.rna", TEST, binary=BINARY)
            finally:
                os.chdir(cwd)
        for name in self.res.intervals.keys():
            a, b = column(p, name), column(self.res, name)
            if a.dtype.kind == "f":
                np.testing.assert_array_equal(a, b, err_msg=name)
            else:
                self.assertEqual(list(a), list(b), name)
        self.assertEqual(p.summary["coverage"], self.res.summary["coverage"])

    def test_predict_without_labels(self):
        header, rows = read_csv_rows(TEST)
        keep = [j for j, h in enumerate(header) if h != "y"]
        with tempfile.TemporaryDirectory() as tmp:
            new = os.path.join(tmp, "new.csv")
            with open(new, "w") as f:
                for r in [header] + rows:
                    f.write(",".join(r[j] for j in keep) + "\n")
            art = rnnaudit.fit(MODEL, TRAIN, os.path.join(tmp, "a.rna"), ridge=10, binary=BINARY)
            p = rnnaudit.predict(art, new, binary=BINARY)
        full = rnnaudit.audit(MODEL, TRAIN, TEST, ridge=10, binary=BINARY)
        self.assertIsNone(p.summary)
        self.assertTrue(np.isnan(column(p, "target")).all())
        for name in ("prediction", "lower", "upper"):
            np.testing.assert_array_equal(column(p, name), column(full, name), err_msg=name)


@needs_binary
@needs_pandas
class DataFrameInput(unittest.TestCase):
    def test_frames_in(self):
        import pandas as pd
        train = pd.read_csv(TRAIN, float_precision="round_trip")
        test = pd.read_csv(TEST, float_precision="round_trip")
        a = rnnaudit.audit(MODEL, train, test, ridge=10, binary=BINARY)
        b = rnnaudit.audit(MODEL, TRAIN, TEST, ridge=10, binary=BINARY)
        pd.testing.assert_frame_equal(a.intervals, b.intervals, check_exact=True)


@needs_binary
class Errors(unittest.TestCase):
    def test_data_error_carries_the_message(self):
        with self.assertRaises(rnnaudit.AuditError) as cm:
            rnnaudit.audit(MODEL, TRAIN, binary=BINARY, features=["nope"])
        e = cm.exception
        self.assertEqual(e.returncode, 1)
        self.assertIn("train_small.csv:1", str(e))
        self.assertIn('column "nope"', str(e))
        self.assertEqual(e.command[0], BINARY)

    def test_usage_error(self):
        with self.assertRaises(rnnaudit.AuditError) as cm:
            rnnaudit.audit(MODEL, TRAIN, binary=BINARY, no_such_flag=1)
        self.assertEqual(cm.exception.returncode, 2)
        self.assertIn("--no-such-flag", str(cm.exception))

    def test_missing_model(self):
        with self.assertRaisesRegex(rnnaudit.AuditError, "no such file"):
            rnnaudit.audit(os.path.join(SYNTHETIC, "absent.onnx"), TRAIN, binary=BINARY)

    def test_predict_refuses_another_model(self):
        with tempfile.TemporaryDirectory() as tmp:
            art = rnnaudit.fit(MODEL, TRAIN, os.path.join(tmp, "a.rna"), ridge=10, binary=BINARY)
            with self.assertRaises(rnnaudit.AuditError) as cm:
                rnnaudit.predict(art, TEST, model=os.path.join(SYNTHETIC, "model.onnx"), binary=BINARY)
        self.assertIn("model.onnx", str(cm.exception))

    def test_timeout(self):
        for progress in (False, True):
            with self.subTest(progress=progress):
                t = time.monotonic()
                with self.assertRaisesRegex(rnnaudit.AuditError, "did not finish within"):
                    rnnaudit.audit(os.path.join(SYNTHETIC, "model.onnx"), os.path.join(SYNTHETIC, "train.csv"),
                                   binary=BINARY, timeout=0.05, progress=progress)
                # The binary was stopped, not waited for (a full audit of
                # that file takes seconds).
                self.assertLess(time.monotonic() - t, 30)

    def test_progress_streams_stderr(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            r = rnnaudit.audit(MODEL, TRAIN, ridge=10, binary=BINARY, progress=True)
            with self.assertRaises(rnnaudit.AuditError) as cm:
                rnnaudit.audit(MODEL, TRAIN, binary=BINARY, features=["nope"], progress=True)
        self.assertEqual(len(r.intervals["id"]), 1000)
        self.assertIn('column "nope"', str(cm.exception))
        self.assertEqual(cm.exception.returncode, 1)
        self.assertIn('column "nope"', err.getvalue())  # copied to sys.stderr as it came


class Binary(unittest.TestCase):
    def test_not_rnnaudit(self):
        with self.assertRaisesRegex(rnnaudit.BinaryNotFoundError, "is not the rnnaudit binary"):
            rnnaudit.find_binary("/bin/true")

    def test_absent(self):
        with self.assertRaisesRegex(rnnaudit.BinaryNotFoundError, "go install ./cmd/audit"):
            rnnaudit.find_binary("/nonexistent/audit")
        with self.assertRaisesRegex(rnnaudit.BinaryNotFoundError, "no such command on PATH"):
            rnnaudit.find_binary("no-such-rnnaudit-command")


if __name__ == "__main__":
    unittest.main()


@needs_binary
class StaticCovariates(unittest.TestCase):
    """A GRU with a second input static [batch, 2] (age, sex), audited
    through the bridge from arrays: to_long_csv(static=...) and
    input=["static=age,sex"]."""

    ZOO = os.path.join(os.path.dirname(SYNTHETIC), "..", "onnx", "testdata", "zoo-inputs")

    def test_audit_from_arrays(self):
        header, rows = read_csv_rows(os.path.join(self.ZOO, "train_static.csv"))
        self.assertEqual(header, ["id", "t", "x1", "x2", "age", "sex", "y"])
        ids = sorted({r[0] for r in rows})
        x = np.array([[[float(r[2]), float(r[3])] for r in rows if r[0] == i] for i in ids])
        y = np.array([[float(r[6]) for r in rows if r[0] == i] for i in ids])
        static = np.array([[float(next(r[4] for r in rows if r[0] == i)), float(next(r[5] for r in rows if r[0] == i))]
                           for i in ids])
        with tempfile.TemporaryDirectory() as tmp:
            data = rnnaudit.to_long_csv(os.path.join(tmp, "train.csv"), x, y, ids=ids, first_step=0,
                                        static=static, static_names=["age", "sex"])
            res = rnnaudit.audit(os.path.join(self.ZOO, "gru_static_op14.onnx"), data, input=["static=age,sex"],
                                 binary=BINARY)
            direct = os.path.join(tmp, "direct.csv")
            subprocess.run([BINARY, "--model", os.path.join(self.ZOO, "gru_static_op14.onnx"), "--data",
                            os.path.join(self.ZOO, "train_static.csv"), "--input", "static=age,sex", "--quiet",
                            "--out", direct], check=True)
            _, want = read_csv_rows(direct)
        lower = column(res, "lower")
        self.assertEqual(len(lower), len(want))
        self.assertTrue(np.isfinite(lower).all())
        # The bridge's file is the zoo's file: the same limits.
        np.testing.assert_array_equal(lower, [float(r[4]) for r in want])
