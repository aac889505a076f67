#!/usr/bin/python3
"""Export small Transformer models (nn.TransformerEncoder, nn.TransformerDecoder,
nn.Transformer, nn.MultiheadAttention) to ONNX at opsets 13 to 17, with and
without attention masks (torch's causal float mask, whose export is Trilu of a
tensor of -inf; a boolean mask, exported as Where; a key padding mask computed
from the input), with PyTorch's float64 outputs as the reference.

Run:  /usr/bin/python3 export.py      (writes <name>.onnx and <name>.json beside itself)

Per model: torch.manual_seed(crc32(name)); default init, then every parameter
+= 0.3 * randn; export in float32 (input "x" [B, T, 3], output "y" [B, T, 1],
batch and time dynamic, do_constant_folding=True); the reference is a deep
copy converted with .double() and run in training mode (dropout is 0, so
training mode only keeps PyTorch off its fused inference path) on the same
inputs (drawn in float32, widened exactly). The model width is 8 with 2 heads,
so the attention scale 1/sqrt(4) = 1/2 is exact in float32, and LayerNorm's eps
is the float32 value of 1e-5 in both the export and the reference: the
reference computes the function the exported graph holds, to rounding.
The JSON format is that of onnx/testdata/pytorch. Deterministic: re-running
rewrites byte-identical .json files.

The operators these exports hold (opsets 13 to 17, each mask kind, batch and
time dynamic) are listed in each .json ("ops"); the only one the graph lacked
before them was Trilu.
"""

import copy
import io
import json
import os
import re
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
D, HEADS, FF, F_IN = 8, 2, 16, 3
EPS = float(np.float32(1e-5))


def causal(T, like):
    """torch's causal mask: -inf above the diagonal (generate_square_subsequent_mask)."""
    return torch.triu(torch.full((T, T), float("-inf"), dtype=like.dtype), diagonal=1)


class Encoder(nn.Module):
    """Linear embedding, TransformerEncoder (2 layers), Linear head per step."""

    def __init__(self, mask=None, norm_first=False, batch_first=True):
        super().__init__()
        self.mask = mask
        self.time_axis = 1 if batch_first else 0
        self.emb = nn.Linear(F_IN, D)
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=batch_first,
                                           norm_first=norm_first, layer_norm_eps=EPS)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(D, 1)

    def forward(self, x):
        h = self.emb(x)
        T = x.shape[self.time_axis]
        m = None
        if self.mask == "causal":
            m = causal(T, h)
        elif self.mask == "bool":
            m = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        return self.head(self.enc(h, mask=m))


class Decoder(nn.Module):
    """TransformerDecoder (2 layers) over an embedding of x, with a causal
    target mask and the embedding's tanh as the memory."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(F_IN, D)
        layer = nn.TransformerDecoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True, layer_norm_eps=EPS)
        self.dec = nn.TransformerDecoder(layer, 2)
        self.head = nn.Linear(D, 1)

    def forward(self, x):
        h = self.emb(x)
        return self.head(self.dec(h, torch.tanh(h), tgt_mask=causal(x.shape[1], h)))


class Full(nn.Module):
    """nn.Transformer (1 encoder and 1 decoder layer) with causal source and target masks."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(F_IN, D)
        self.tf = nn.Transformer(D, HEADS, 1, 1, FF, dropout=0.0, batch_first=True, layer_norm_eps=EPS)
        self.head = nn.Linear(D, 1)

    def forward(self, x):
        h = self.emb(x)
        m = causal(x.shape[1], h)
        return self.head(self.tf(h, h, src_mask=m, tgt_mask=m))


class MHA(nn.Module):
    """nn.MultiheadAttention (self-attention), optionally with a causal mask and
    a key padding mask computed from the input (steps whose first feature is
    below -1.5 are padding), residual, Linear head."""

    def __init__(self, masks=False):
        super().__init__()
        self.masks = masks
        self.emb = nn.Linear(F_IN, D)
        self.att = nn.MultiheadAttention(D, HEADS, batch_first=True)
        self.head = nn.Linear(D, 1)

    def forward(self, x):
        h = self.emb(x)
        m = k = None
        if self.masks:
            m = causal(x.shape[1], h)
            # The first step is never padding, so that no row is all -inf.
            k = torch.cat([x[:, :1, 0] > 1e9, x[:, 1:, 0] < -1.5], dim=1)
        y, _ = self.att(h, h, h, attn_mask=m, key_padding_mask=k)
        return self.head(y + h)


MODELS = [
    # name, constructor, opset, description
    ("encoder_op13", lambda: Encoder(), 13, Encoder.__doc__ + " No mask, opset 13."),
    ("encoder_causal_op14", lambda: Encoder("causal"), 14, Encoder.__doc__ + " Causal float mask (Trilu), opset 14."),
    ("encoder_bool_op15", lambda: Encoder("bool"), 15, Encoder.__doc__ + " Boolean causal mask (Where), opset 15."),
    ("encoder_seqfirst_op16", lambda: Encoder("causal", batch_first=False), 16,
     Encoder.__doc__ + " Sequence-first (batch_first=False, PyTorch's default), causal mask, opset 16."),
    ("encoder_normfirst_op17", lambda: Encoder("causal", True), 17,
     Encoder.__doc__ + " Pre-norm layers, causal mask, opset 17 (LayerNormalization)."),
    ("decoder_op16", Decoder, 16, Decoder.__doc__ + " Opset 16."),
    ("transformer_op17", Full, 17, Full.__doc__ + " Opset 17."),
    ("mha_op13", lambda: MHA(), 13, MHA.__doc__ + " No masks, opset 13."),
    ("mha_masks_op14", lambda: MHA(True), 14, MHA.__doc__ + " Both masks, opset 14."),
]


def dump_json(obj):
    text = json.dumps(obj, indent=2)
    num = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
    pat = re.compile(r"\[\s*(" + num + r"(?:,\s*" + num + r")*)\s*\]")
    return pat.sub(lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]", text) + "\n"


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def main():
    for name, ctor, opset, desc in MODELS:
        torch.manual_seed(zlib.crc32(name.encode()))
        model = ctor()
        with torch.no_grad():
            for p in model.parameters():
                p += 0.3 * torch.randn_like(p)
        model.eval()
        seq_first = "seqfirst" in name
        x = torch.randn(6, 3, F_IN, dtype=torch.float32) if seq_first else torch.randn(3, 6, F_IN, dtype=torch.float32)
        f = io.BytesIO()
        dyn = {"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}}
        if seq_first:
            dyn = {"x": {0: "time", 1: "batch"}, "y": {0: "time", 1: "batch"}}
        torch.onnx.export(model, (x,), f, opset_version=opset, input_names=["x"], output_names=["y"],
                          dynamic_axes=dyn, do_constant_folding=True)
        proto = onnx.load_from_string(f.getvalue())
        onnx.checker.check_model(proto)
        ref = copy.deepcopy(model).double().train()
        with torch.no_grad():
            y = ref(x.double())
            y32 = model(x)
        err = float((y32.double() - y).abs().max())
        assert err <= 1e-5 * max(1.0, float(y.abs().max())), (name, err)
        ops = sorted({n.op_type for n in proto.graph.node})
        with open(os.path.join(HERE, name + ".onnx"), "wb") as out:
            out.write(f.getvalue())
        obj = {"model": name + ".onnx", "description": " ".join(desc.split()), "torch": torch.__version__,
               "opset": opset, "layout": "time-first" if seq_first else "batch-first", "ops": ops,
               "inputs": [{"name": "x", "shape": list(x.shape), "data": flat(x.double())}],
               "outputs": [{"name": "y", "shape": list(y.shape), "data": flat(y)}]}
        with open(os.path.join(HERE, name + ".json"), "w") as out:
            out.write(dump_json(obj))
        print(name, "opset", opset, "ops", " ".join(ops), "float32 error %.1e" % err)


if __name__ == "__main__":
    main()
