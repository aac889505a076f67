"""export recognises a classifier's head and says which --loss to give."""

import json
import os
import tempfile
import unittest
import warnings

from _util import HAVE_TORCH, needs_binary, needs_torch, rnnaudit

if HAVE_TORCH:
    import torch
    import torch.nn as nn

    class Head(nn.Module):
        """GRU + Linear(5, K) at every step (or on the last step), then an
        optional final activation; K == 1 drops the last axis."""

        def __init__(self, K=1, final=None, last=False):
            super().__init__()
            self.rnn = nn.GRU(2, 5, batch_first=True)
            self.head = nn.Linear(5, K)
            self.K, self.final, self.last = K, final, last

        def forward(self, x):
            out, _ = self.rnn(x)
            if self.last:
                out = out[:, -1]
            y = self.head(out)
            if self.final == "sigmoid":
                y = torch.sigmoid(y)
            elif self.final == "softmax":
                y = torch.softmax(y, dim=-1)
            elif self.final == "log_softmax":
                y = torch.log_softmax(y, dim=-1)
            return y[..., 0] if self.K == 1 else y


def metadata(path):
    """The file's metadata_props, read with the onnx package when it is
    installed (an independent reader), else None."""
    try:
        import onnx
    except ImportError:
        return None
    return {p.key: p.value for p in onnx.load(path).metadata_props}


@needs_torch
class HeadTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def export(self, module, **kw):
        path = os.path.join(self.tmp.name, "m.onnx")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = rnnaudit.export(module, path, n_features=2, steps=6, check=False, **kw)
        return res, [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]

    def test_final_sigmoid_is_bce(self):
        res, _ = self.export(Head(final="sigmoid"))
        self.assertEqual(res.head, "sigmoid")
        self.assertEqual(res.loss, "bce")
        self.assertEqual(res.loss_flags, {"loss": "bce"})
        self.assertIn("--loss bce", repr(res))
        md = metadata(res.path)
        if md is not None:
            self.assertEqual(json.loads(md["rnnaudit.loss"]), {"loss": "bce"})

    def test_logit_trained_with_bce_with_logits(self):
        res, warned = self.export(Head(), loss=nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0])))
        self.assertEqual(res.head, "linear")
        self.assertEqual(res.loss, "bce-logits")
        self.assertEqual(res.loss_flags, {"loss": "bce-logits", "class_weights": "1,3"})
        self.assertEqual(warned, [])
        md = metadata(res.path)
        if md is not None:
            self.assertEqual(json.loads(md["rnnaudit.loss"]), {"loss": "bce-logits", "class_weights": "1,3"})
            self.assertIn("rnnaudit.parameters", md)  # the other record is kept

    def test_linear_head_without_loss_cannot_tell(self):
        res, warned = self.export(Head())
        self.assertEqual(res.head, "linear")
        self.assertIsNone(res.loss)
        self.assertEqual(res.loss_flags, {})
        self.assertIn("BCEWithLogitsLoss", res.loss_note)
        self.assertEqual(warned, [])  # a regression model is not warned about
        md = metadata(res.path)
        if md is not None:
            self.assertNotIn("rnnaudit.loss", md)

    def test_mse_is_squared_error(self):
        res, _ = self.export(Head(), loss=nn.MSELoss())
        self.assertEqual(res.loss, "squared-error")
        self.assertEqual(res.loss_flags, {})
        self.assertNotIn("--loss", repr(res))

    def test_k_logits_trained_with_cross_entropy(self):
        w = torch.tensor([1.0, 2.0, 0.5])
        res, warned = self.export(Head(K=3), loss=nn.CrossEntropyLoss(weight=w, label_smoothing=0.1))
        self.assertEqual(res.head, "linear")
        self.assertEqual(res.horizons, 3)
        self.assertEqual(res.loss, "softmax-ce")
        self.assertEqual(res.loss_flags, {"loss": "softmax-ce", "class_weights": "1,2,0.5",
                                          "label_smoothing": "%.17g" % 0.1})
        self.assertEqual(warned, [])

    def test_sequence_classifier(self):
        res, _ = self.export(Head(K=3, last=True), loss=nn.CrossEntropyLoss)
        self.assertFalse(res.per_step)
        self.assertEqual(res.loss, "softmax-ce")

    def test_log_softmax_with_nll(self):
        res, _ = self.export(Head(K=3, final="log_softmax"), loss="NLLLoss")
        self.assertEqual(res.head, "log-softmax")
        self.assertEqual(res.loss, "softmax-ce")

    def test_final_softmax_warns(self):
        res, warned = self.export(Head(K=3, final="softmax"), loss=nn.CrossEntropyLoss())
        self.assertEqual(res.head, "softmax")
        self.assertIsNone(res.loss)
        self.assertEqual(len(warned), 1)
        self.assertIn("without its final softmax", warned[0])

    def test_cross_entropy_on_one_output_is_refused(self):
        res, warned = self.export(Head(), loss=nn.CrossEntropyLoss())
        self.assertIsNone(res.loss)
        self.assertIn("not K logits", warned[0])

    def test_unknown_criterion(self):
        res, warned = self.export(Head(), loss=nn.L1Loss())
        self.assertIsNone(res.loss)
        self.assertIn("L1Loss", warned[0])


@needs_torch
@needs_binary
class HeadAuditTest(unittest.TestCase):
    def test_flags_audit_the_logit_model(self):
        """The flags export gives audit a logit model as a classifier: its
        probabilities are the module's sigmoid, computed here in float64."""
        torch.manual_seed(1)
        module = Head()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            res = rnnaudit.export(module, path, n_features=2, steps=6, loss=nn.BCEWithLogitsLoss())
            x = torch.randn(8, 6, 2)
            with torch.no_grad():
                p = torch.sigmoid(module.double()(x.double())).numpy()
            y = (p > 0.5).astype(float)
            data = os.path.join(tmp, "d.csv")
            rnnaudit.to_long_csv(data, x.double().numpy(), y)
            out = os.path.join(tmp, "r.json")
            rnnaudit.audit(path, data, data, out=out, **res.loss_flags)
            with open(out) as f:
                report = json.load(f)
        got = {(int(s["id"]), int(st["t"])): st["probability"] for s in report["sequences"] for st in s["steps"]}
        self.assertEqual(len(got), 48)
        for (i, t), v in got.items():
            self.assertAlmostEqual(v, float(p[i - 1, t - 1]), delta=1e-5)


if __name__ == "__main__":
    unittest.main()
