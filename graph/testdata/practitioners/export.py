#!/usr/bin/python3
"""Export small models in the shapes practitioners give recurrent forecasters
(CNN-LSTM front ends, BatchNorm1d on the inputs, LayerNorm, GELU, attention
pooling, Softplus and clamped log-variance heads) and operator probes
(grouped and dilated convolutions, pooling, padding modes, CumSum, Einsum) to
ONNX, with PyTorch's float64 outputs as the reference.

Run:  /usr/bin/python3 export.py      (writes <name>.onnx and <name>.json beside itself)

Per model: torch.manual_seed(crc32(name)); default init, then every
parameter (and BatchNorm's running statistics) += 0.3 * randn; export in
float32 (input "x", output "y", do_constant_folding=True); the reference is a
deep copy converted with .double() run on the same inputs (drawn in float32,
widened exactly). The JSON format is that of onnx/testdata/pytorch.
Deterministic: re-running rewrites byte-identical .json files.

The reference computes the function the exported graph holds, exactly, in
float64 (the Go tests ask for a match to 1e-10), so where the export rounds a
constant to float32 the reference uses that float32 value: sqrt(2) in GELU,
sqrt(2/pi) and 0.044715 in GELU's tanh form, the eps of LayerNorm and
InstanceNorm, SELU's alpha and scale (ONNX's float32 defaults), HardSigmoid's
1/6, and the scalar arguments the models pass (written as float32 values
below, so the export and the reference share them). Where the export folds
BatchNorm into the Conv before it (eval mode), the reference's Conv takes the
folded float32 weights from the graph and its BatchNorm becomes Identity.
Before this, the references used the exact constants and matched the graphs
only to 3e-9 (ln_lstm_gelu) and 3e-7 (probe_1d, probe_2d).
"""

import copy
import io
import json
import os
import re
import zlib

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def f32(v):
    """v rounded to float32, as the exported graph holds it."""
    return float(np.float32(v))


class Exported:
    """Float64 versions of the activations whose export rounds a constant to
    float32 (the reference uses them; the exported model uses PyTorch's)."""

    @staticmethod
    def gelu(x, approximate="none"):
        if approximate == "tanh":
            return 0.5 * x * (1 + torch.tanh(f32(np.sqrt(2 / np.pi)) * (x + f32(0.044715) * x ** 3)))
        return x * 0.5 * (1 + torch.erf(x / f32(np.sqrt(2.0))))

    @staticmethod
    def selu(x):
        # ONNX Selu's default attributes, which PyTorch's export leaves out.
        return 1.05070102214813232421875 * torch.where(x > 0, x, 1.67326319217681884765625 * torch.expm1(x))

    @staticmethod
    def hardsigmoid(x):
        return torch.clamp(f32(1 / 6) * x + 0.5, 0, 1)


class Eager:
    """PyTorch's own activations, for the exported model."""

    gelu = staticmethod(F.gelu)
    selu = staticmethod(F.selu)
    hardsigmoid = staticmethod(F.hardsigmoid)


class CNNLSTM(nn.Module):
    """x [B, T, F] -> permute -> Conv1d (dilated, padded) -> ReLU -> permute -> LSTM -> Linear per step."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, kernel_size=3, padding=2, dilation=2, groups=2)
        self.lstm = nn.LSTM(6, 5, batch_first=True)
        self.head = nn.Linear(5, 1)

    def forward(self, x):
        h = torch.relu(self.conv(x.permute(0, 2, 1))).permute(0, 2, 1)
        out, _ = self.lstm(h)
        return self.head(out)


class BNGRUAttention(nn.Module):
    """BatchNorm1d on the inputs, GRU, attention pooling (w * out).sum(1), Softplus head."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(3)
        self.gru = nn.GRU(3, 4, batch_first=True)
        self.score = nn.Linear(4, 1)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        x = self.bn(x.permute(0, 2, 1)).permute(0, 2, 1)
        out, _ = self.gru(x)
        w = torch.softmax(self.score(out), dim=1)
        pooled = (w * out).sum(1)
        return F.softplus(self.head(pooled))


class LNLSTMGelu(nn.Module):
    """LSTM -> LayerNorm -> GELU -> Linear; a Gaussian head with clamped log-variance."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 6, batch_first=True)
        self.ln = nn.LayerNorm(6)
        self.mid = nn.Linear(6, 6)
        self.mean = nn.Linear(6, 1)
        self.logvar = nn.Linear(6, 1)
        self.fn = Eager

    def forward(self, x):
        out, _ = self.lstm(x)
        h = self.fn.gelu(self.mid(self.ln(out)))
        return torch.cat([self.mean(h), torch.clamp(self.logvar(h), -0.5, 0.5)], dim=-1)


class Probe2D(nn.Module):
    """Operator probe: grouped, strided, dilated Conv2d; pooling; padding modes."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 6, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2)
        self.bn = nn.BatchNorm2d(6)
        self.inorm = nn.InstanceNorm2d(6, affine=True)

    def forward(self, x):
        h = self.bn(self.conv(x))
        a = F.max_pool2d(h, kernel_size=2, stride=2, ceil_mode=True)
        b = F.avg_pool2d(h, kernel_size=3, stride=2, padding=1, count_include_pad=True)
        c = F.avg_pool2d(h, kernel_size=3, stride=2, padding=1, count_include_pad=False)
        p = F.pad(x, (1, 2, 2, 1), mode="reflect") + F.pad(x, (1, 2, 2, 1), mode="replicate") \
            + F.pad(x, (1, 2, 2, 1), mode="constant", value=0.5)
        # Not mode="circular": PyTorch 1.13 exports it with the last axis's
        # two pads swapped (the ONNX graph differs from eager PyTorch).
        e = torch.einsum("bchw,bcw->bh", x, x.sum(2)) + torch.cumsum(x, dim=2).sum((1, 3))
        g = self.inorm(h)
        return torch.cat([a.flatten(1), b.flatten(1), c.flatten(1), p.flatten(1),
                          e.flatten(1), g.flatten(1), F.adaptive_avg_pool2d(h, 1).flatten(1)], dim=1)


class Probe1D(nn.Module):
    """Operator probe: Conv1d with bias, MaxPool1d, AvgPool1d, elementwise heads."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 4, kernel_size=2, stride=2, padding=1)
        self.fn = Eager

    def forward(self, x):
        h = self.conv(x.permute(0, 2, 1))
        a = F.max_pool1d(h, 2, ceil_mode=True)
        b = F.avg_pool1d(h, 2)
        m = torch.maximum(h.abs().sqrt(), torch.sigmoid(h)) + torch.minimum(h, torch.erf(h))
        s = F.elu(h) * self.fn.selu(h) + F.celu(h, f32(1.3)) + F.hardswish(h) + F.mish(h) + F.softsign(h)
        w = torch.where(h > 0, h, f32(0.3) * h) + F.leaky_relu(h, f32(0.2)) + self.fn.hardsigmoid(h) \
            + torch.sin(h) * torch.cos(h)
        r = self.fn.gelu(h, approximate="tanh") + torch.pow(h.abs() + 1, 1.5) + torch.reciprocal(h.abs() + 1)
        t = torch.logsumexp(h, dim=2) + h.amax(dim=2) - h.amin(dim=1).mean(1, keepdim=True) + h.norm(dim=2)
        return torch.cat([a.flatten(1), b.flatten(1), m.flatten(1), s.flatten(1), w.flatten(1), r.flatten(1), t], dim=1)


MODELS = [
    # name, constructor, opset, input shape [B, T, F] or [B, C, H, W], description
    ("cnn_lstm", CNNLSTM, 14, [3, 7, 4], CNNLSTM.__doc__),
    ("bn_gru_attention", BNGRUAttention, 14, [3, 6, 3], BNGRUAttention.__doc__),
    ("ln_lstm_gelu_op14", LNLSTMGelu, 14, [2, 5, 3], LNLSTMGelu.__doc__ + " Opset 14: LayerNorm as ReduceMean/Pow/Sqrt."),
    ("ln_lstm_gelu_op17", LNLSTMGelu, 17, [2, 5, 3], LNLSTMGelu.__doc__ + " Opset 17: LayerNormalization."),
    ("probe_2d", Probe2D, 14, [2, 4, 6, 5], Probe2D.__doc__),
    ("probe_1d", Probe1D, 14, [2, 9, 3], Probe1D.__doc__),
]


def dump_json(obj):
    text = json.dumps(obj, indent=2)
    num = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
    pat = re.compile(r"\[\s*(" + num + r"(?:,\s*" + num + r")*)\s*\]")
    return pat.sub(lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]", text) + "\n"


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def exported_reference(model, proto):
    """A float64 copy of model that computes the function the exported graph
    proto holds (see the module doc)."""
    ref = copy.deepcopy(model).double()
    if hasattr(ref, "fn"):
        ref.fn = Exported
    for m in ref.modules():
        if isinstance(m, (nn.LayerNorm, nn.InstanceNorm2d, nn.BatchNorm1d, nn.BatchNorm2d)):
            m.eps = f32(m.eps)
    ops = {n.op_type for n in proto.graph.node}
    if isinstance(getattr(ref, "bn", None), nn.BatchNorm2d) and "BatchNormalization" not in ops:
        # Folded into the Conv: take the folded weights from the graph.
        inits = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
        conv = next(n for n in proto.graph.node if n.op_type == "Conv")
        with torch.no_grad():
            ref.conv.weight.copy_(torch.from_numpy(inits[conv.input[1]].astype(np.float64)))
            ref.conv.bias.copy_(torch.from_numpy(inits[conv.input[2]].astype(np.float64)))
        ref.bn = nn.Identity()
    return ref


def main():
    for name, ctor, opset, shape, desc in MODELS:
        torch.manual_seed(zlib.crc32(name.encode()))
        model = ctor()
        with torch.no_grad():
            for p in model.parameters():
                p += 0.3 * torch.randn_like(p)
            for n, b in model.named_buffers():
                if n.endswith("running_mean"):
                    b += 0.3 * torch.randn_like(b)
                elif n.endswith("running_var"):
                    b *= torch.exp(0.3 * torch.randn_like(b))
        model.eval()
        x = torch.randn(*shape, dtype=torch.float32)
        f = io.BytesIO()
        dyn = {"x": {0: "batch"}, "y": {0: "batch"}}
        torch.onnx.export(model, (x,), f, opset_version=opset, input_names=["x"], output_names=["y"],
                          dynamic_axes=dyn, do_constant_folding=True)
        proto = onnx.load_from_string(f.getvalue())
        onnx.checker.check_model(proto)
        ref = exported_reference(model, proto)
        with torch.no_grad():
            y = ref(x.double())
            y32 = model(x)
        err = float((y32.double() - y).abs().max())
        assert err <= 1e-5 * max(1.0, float(y.abs().max())), (name, err)
        ops = sorted({n.op_type for n in proto.graph.node})
        with open(os.path.join(HERE, name + ".onnx"), "wb") as out:
            out.write(f.getvalue())
        obj = {"model": name + ".onnx", "description": " ".join(desc.split()), "torch": torch.__version__,
               "opset": opset, "ops": ops,
               "inputs": [{"name": "x", "shape": list(x.shape), "data": flat(x.double())}],
               "outputs": [{"name": "y", "shape": list(y.shape), "data": flat(y)}]}
        with open(os.path.join(HERE, name + ".json"), "w") as out:
            out.write(dump_json(obj))
        print(name, "opset", opset, "ops", " ".join(ops), "float32 error %.1e" % err)


if __name__ == "__main__":
    main()
