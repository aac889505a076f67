import os
import tempfile
import unittest
import warnings

from _util import BINARY, HAVE_TORCH, needs_binary, needs_torch, rnnaudit

if HAVE_TORCH:
    import torch
    import torch.nn as nn

    class PerStep(nn.Module):
        """GRU + Linear at every step, K values per step."""

        def __init__(self, K=1):
            super().__init__()
            self.rnn = nn.GRU(2, 5, batch_first=True)
            self.head = nn.Linear(5, K)
            self.K = K

        def forward(self, x):
            out, _ = self.rnn(x)
            y = self.head(out)
            return y[..., 0] if self.K == 1 else y

    class LastStep(nn.Module):
        """LSTM + Linear(hidden, H) on the last state: one forecast per sequence."""

        def __init__(self, H=1):
            super().__init__()
            self.rnn = nn.LSTM(2, 5, batch_first=True)
            self.head = nn.Linear(5, H)
            self.H = H

        def forward(self, x):
            out, _ = self.rnn(x)
            y = self.head(out[:, -1])
            return y[:, 0] if self.H == 1 else y

    class TimeFirst(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.RNN(2, 4)
            self.head = nn.Linear(4, 1)

        def forward(self, x):
            out, h = self.rnn(x)
            return self.head(out), h  # a second output, ignored by the audit

    class Static(nn.Module):
        """GRU over x with per-sequence values (static covariates) repeated
        along time and concatenated, Linear at every step."""

        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 5, batch_first=True)
            self.head = nn.Linear(5, 1)

        def forward(self, x, static):
            s = static.unsqueeze(1).expand(-1, x.shape[1], -1)
            out, _ = self.rnn(torch.cat([x, s], -1))
            return self.head(out)

    class Packed(nn.Module):
        """pack_padded_sequence over a lengths input, as variable-length
        training does."""

        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(2, 5, batch_first=True)
            self.head = nn.Linear(5, 1)

        def forward(self, x, lengths):
            from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
            p = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, _ = self.rnn(p)
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
            return self.head(out)[..., 0]

    class LengthConstant(PerStep):
        """Multiplies by the traced length: the export fixes it at 10."""

        def forward(self, x):
            return super().forward(x) * float(x.shape[1])

    class CellLoop(nn.Module):
        """A Python loop over a tanh cell: tracing unrolls it for the
        example's length; torch.jit.script makes it a Loop."""

        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(2, 4)
            self.rec = nn.Linear(4, 4, bias=False)
            self.head = nn.Linear(4, 1)

        def forward(self, x):
            h = torch.zeros(x.shape[0], 4, dtype=x.dtype)
            outs = []
            for t in range(x.shape[1]):
                h = torch.tanh(self.inp(x[:, t]) + self.rec(h))
                outs.append(self.head(h))
            return torch.stack(outs, 1)


@needs_torch
@needs_binary
class Export(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(3)
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "m.onnx")

    def tearDown(self):
        self.tmp.cleanup()

    def export(self, module, **kw):
        kw.setdefault("n_features", 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's own warnings
            return rnnaudit.export(module, self.path, binary=BINARY, **kw)

    def test_matches_the_module(self):
        cases = [
            ("per step", PerStep(1), dict(), True, 1, 10 + 13 + 7 + 10),
            ("per step, 3 horizons", PerStep(3), dict(horizon_axis=True), True, 3, None),
            ("last step", LastStep(1), dict(), False, 1, 4),
            ("last step, 3 horizons", LastStep(3), dict(opset=17), False, 3, 12),
            ("time first, two outputs", TimeFirst(), dict(batch_first=False), True, 1, 40),
            ("packed, lengths input", Packed(), dict(lengths="lengths"), True, 1, 40),
            ("static covariates", Static(), dict(static="static", static_example=torch.zeros(1, 2)), True, 1, 40),
        ]
        for name, module, kw, per_step, horizons, n in cases:
            with self.subTest(name):
                module.train()
                r = self.export(module, **kw)
                self.assertTrue(module.training, "export must restore the training mode")
                self.assertTrue(r.checked)
                self.assertEqual(r.per_step, per_step)
                self.assertEqual(r.horizons, horizons)
                if n is not None:
                    self.assertEqual(r.values_checked, n)
                # float32 weights evaluated in float64 on both sides.
                self.assertLess(r.max_abs_diff, 1e-12)
                self.assertEqual(r.opset, kw.get("opset", 14))

    def test_static_covariates(self):
        import onnx
        r = self.export(Static(), static="static", static_example=torch.zeros(1, 2))
        self.assertEqual(r.dynamic_axes["static"], {0: "batch"})
        g = onnx.load(self.path).graph
        self.assertEqual([i.name for i in g.input], ["x", "static"])
        self.assertEqual([(d.dim_param, d.dim_value) for d in g.input[1].type.tensor_type.shape.dim], [("batch", 0), ("", 2)])
        with self.assertRaisesRegex(ValueError, "give static_example"):
            self.export(Static(), static="static")

    def test_dynamic_axes(self):
        import onnx
        r = self.export(PerStep(3), horizon_axis=True)
        self.assertEqual(r.dynamic_axes, {"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time", 2: "horizon"}})
        g = onnx.load(self.path).graph
        self.assertEqual([d.dim_param for d in g.input[0].type.tensor_type.shape.dim][:2], ["batch", "time"])
        self.assertEqual([d.dim_param for d in g.output[0].type.tensor_type.shape.dim], ["batch", "time", "horizon"])

    def test_mismatch_is_refused(self):
        with self.assertRaisesRegex(rnnaudit.ExportError, "does not compute what the module does"):
            self.export(LengthConstant())

    def test_fixed_time_axis(self):
        # A traced cell loop runs only on its example's length: export
        # finds it, exports with the time axis fixed, checks and warns.
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = rnnaudit.export(CellLoop(), self.path, n_features=2, binary=BINARY)
        self.assertEqual(r.fixed_steps, 10)
        self.assertEqual(r.dynamic_axes, {"x": {0: "batch"}, "y": {0: "batch"}})
        self.assertEqual(r.values_checked, 40)
        self.assertLess(r.max_abs_diff, 1e-12)
        self.assertTrue(any("exactly 10 steps" in str(x.message) and "torch.jit.script" in str(x.message)
                            for x in w))
        # Sequences of other lengths given by the caller: refused, with the
        # binary's message.
        with self.assertRaisesRegex(rnnaudit.ExportError, "could not run the export"):
            self.export(CellLoop(), check_x=[torch.randn(8, 2).numpy(), torch.randn(8, 2).numpy()])
        # A scripted loop runs on any length.
        r = self.export(torch.jit.script(CellLoop()))
        self.assertIsNone(r.fixed_steps)
        self.assertEqual(r.values_checked, 40)
        self.assertLess(r.max_abs_diff, 1e-12)


@needs_torch
class ExportMarksParameters(unittest.TestCase):
    def test_trained_initializers_recorded(self):
        """A module standardising its inputs with buffers, a frozen
        parameter and a GRU whose weights the exporter folds into new
        names: the file's metadata lists exactly the initializers of the
        trained parameters."""
        import json

        import onnx
        from onnx import numpy_helper

        class Standardised(PerStep):
            def __init__(self):
                super().__init__(1)
                self.register_buffer("mean", torch.tensor([60.0, 0.5]))
                self.register_buffer("std", torch.tensor([10.0, 0.2]))
                self.gain = nn.Parameter(torch.tensor([1.5, 0.75]), requires_grad=False)

            def forward(self, x):
                return super().forward((x - self.mean) / self.std * self.gain)

        m = Standardised()
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = os.path.join(tmp, "m.onnx")
            r = rnnaudit.export(m, path, n_features=2, check=False)
            model = onnx.load(path)
        meta = {p.key: p.value for p in model.metadata_props}
        recorded = json.loads(meta["rnnaudit.parameters"])
        self.assertEqual(recorded, r.parameters)
        inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        # Every trained value is in a recorded initializer: the GRU's
        # three (W, R, B, reordered by the exporter), the head's weight
        # (transposed for MatMul) and bias; no buffer and not the frozen
        # gain.
        self.assertEqual(len(recorded), 5, recorded)
        self.assertEqual(sum(inits[n].size for n in recorded),
                         sum(p.numel() for p in m.parameters() if p.requires_grad))
        for name in ("mean", "std", "gain"):
            self.assertNotIn(name, recorded)
        self.assertIn("head.bias", recorded)


@needs_torch
class ExportWithoutBinary(unittest.TestCase):
    def test_unchecked_with_a_warning(self):
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = os.path.join(tmp, "m.onnx")
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                r = rnnaudit.export(PerStep(), path, n_features=2, binary="/nonexistent/audit")
            self.assertFalse(r.checked)
            self.assertTrue(os.path.getsize(path) > 0)
            self.assertTrue(any("was not checked" in str(x.message) for x in w))
            with self.assertRaises(rnnaudit.BinaryNotFoundError):
                rnnaudit.export(PerStep(), path, n_features=2, binary="/nonexistent/audit", check=True)
            r = rnnaudit.export(PerStep(), path, n_features=2, binary="/nonexistent/audit", check=False)
            self.assertFalse(r.checked)


if __name__ == "__main__":
    unittest.main()


@needs_torch
class ExportRecordsTargetScale(unittest.TestCase):
    def test_target_scale_recorded(self):
        """target_scale=(mean, std) is appended to the file's metadata as
        "rnnaudit.target_scale", [mean, std], which the audit reads as
        --target-scale; a bad scale is refused before exporting."""
        import json

        import onnx

        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = os.path.join(tmp, "m.onnx")
            r = rnnaudit.export(PerStep(1), path, n_features=2, check=False, target_scale=(57.5, 41.25))
            meta = {p.key: p.value for p in onnx.load(path).metadata_props}
            with self.assertRaises(ValueError):
                rnnaudit.export(PerStep(1), os.path.join(tmp, "bad.onnx"), n_features=2, check=False,
                                target_scale=(0.0, -1.0))
        self.assertEqual(json.loads(meta["rnnaudit.target_scale"]), [57.5, 41.25])
        self.assertEqual(r.target_scale, (57.5, 41.25))
        self.assertIn("rnnaudit.parameters", meta)


@needs_torch
class ExportRecordsTrainBudget(unittest.TestCase):
    def test_train_budget_recorded(self):
        """train_budget is appended to the file's metadata as
        "rnnaudit.train_budget" in --train-budget's form; a budget without
        epochs or with an unknown optimizer is refused."""
        import onnx

        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = os.path.join(tmp, "m.onnx")
            rnnaudit.export(PerStep(1), path, n_features=2, check=False,
                            train_budget={"optimizer": "adam", "epochs": 24, "lr": 0.005, "batch": 16})
            meta = {p.key: p.value for p in onnx.load(path).metadata_props}
            for bad in ({"lr": 0.1}, {"epochs": 3, "lr": 0.1, "optimizer": "rmsprop"}, "epochs 3"):
                with self.assertRaises(ValueError):
                    rnnaudit.export(PerStep(1), os.path.join(tmp, "bad.onnx"), n_features=2, check=False, train_budget=bad)
        self.assertEqual(meta["rnnaudit.train_budget"], "epochs=24,lr=0.005,batch=16,optimizer=adam")
