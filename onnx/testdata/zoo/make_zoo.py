#!/usr/bin/python3
"""Build the zoo of exports practitioners make and their float64
PyTorch references.

Run from anywhere with Debian's PyTorch 1.13 and python3-onnx 1.12:

    /usr/bin/python3 make_zoo.py              # every entry, and MODELS.md
    /usr/bin/python3 make_zoo.py NAME...      # only the named entries

For every entry of ZOO this script
  1. builds the model in float32 (torch.manual_seed(crc32(name))) and trains
     it briefly with mini-batch Adam (lr 0.01, batches of 10, 60 epochs) on
     train.csv (or train_cat.csv), a synthetic autoregressive process of 40
     sequences of 12 steps (written by this script),
  2. exports it: torch.onnx.export for the PyTorch patterns; onnx.helper for
     the Keras patterns, in the node patterns tf2onnx emits (tf2onnx is not
     installable here; see KERAS below for the assumption),
  3. runs the same module in float64 (weights widened exactly) on float32
     inputs widened to float64, and writes <name>.json: inputs, outputs and
     the gradient of 0.5*sum(y^2) (first output) with respect to every ONNX
     initializer that is a PyTorch parameter or its transpose.

KERAS: tf2onnx (rewriter/lstm_rewriter, gru_rewriter) replaces the while loop
of a Keras LSTM or GRU by one ONNX LSTM or GRU node between a Transpose to
time-major and, after it, a Squeeze of the direction axis and a Transpose back
(Keras gate order i,f,c,o and z,r,h reordered to ONNX's iofc and zrh; one
Keras bias in the W half of B; GRU reset_after=True as linear_before_reset=1).
Keras SimpleRNN is not pattern-matched; its loop becomes a Scan
(rewriter/custom_rnn_rewriter) over the time-major input whose states are the
loop's time counter (int64 [1], incremented by the body) and the hidden
state, with the weights read from the outer scope (the rewriter connects the
loop's Enter nodes to their inputs). Dense on a
3-D tensor is MatMul + Add. Input dimensions get generated names (unk__N).
"""

import copy
import json
import os
import sys
import zlib
from typing import List

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
N_SEQ, T_LEN, F = 40, 12, 2
H = 5


def seed(name):
    torch.manual_seed(zlib.crc32(name.encode()))


# ----------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------

def make_data():
    rng = np.random.default_rng(18)
    x = rng.normal(size=(N_SEQ, T_LEN, F)).astype(np.float32)
    cat = rng.integers(0, 4, size=(N_SEQ, T_LEN)).astype(np.int64)
    y = np.zeros((N_SEQ, T_LEN), np.float32)
    prev = np.zeros(N_SEQ, np.float32)
    for t in range(T_LEN):
        prev = 0.6 * prev + x[:, t, 0] - 0.4 * x[:, t, 1] + 0.2 * (cat[:, t] - 1.5) \
            + (0.1 + 0.02 * t) * rng.normal(size=N_SEQ).astype(np.float32)
        y[:, t] = prev
    y = np.round(y, 4).astype(np.float32)
    x = np.round(x, 4).astype(np.float32)
    for fname, with_cat in (("train.csv", False), ("train_cat.csv", True)):
        with open(os.path.join(HERE, fname), "w") as f:
            f.write("id,t,x1,x2," + ("x_cat," if with_cat else "") + "y\n")
            for i in range(N_SEQ):
                for t in range(T_LEN):
                    c = "%d," % cat[i, t] if with_cat else ""
                    f.write("s%02d,%d,%s,%s,%s%s\n" % (i, t, repr(float(x[i, t, 0])), repr(float(x[i, t, 1])), c, repr(float(y[i, t]))))
    return x, cat, y


# ----------------------------------------------------------------------------
# Modules
# ----------------------------------------------------------------------------

class PerStep(nn.Module):
    def __init__(self, rnn, head):
        super().__init__()
        self.rnn, self.head = rnn, head

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


class AttnPool(nn.Module):
    """GRU, attention weights softmax over time, pooled (w * out).sum(1)."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(F, H, batch_first=True)
        self.score = nn.Linear(H, 1)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        w = torch.softmax(self.score(out), dim=1)
        return self.head((w * out).sum(1))


class LayerNormHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(F, H, batch_first=True)
        self.norm = nn.LayerNorm(H)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(self.norm(out))


class BatchNormInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(F)
        self.rnn = nn.GRU(F, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        x = self.bn(x.permute(0, 2, 1)).permute(0, 2, 1)
        out, _ = self.rnn(x)
        return self.head(out)


class CNNLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(F, 4, kernel_size=3, padding=1)
        self.rnn = nn.LSTM(4, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        z = torch.relu(self.conv(x.permute(0, 2, 1))).permute(0, 2, 1)
        out, _ = self.rnn(z)
        return self.head(out)


class ActHead(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.rnn = nn.GRU(F, H, batch_first=True)
        self.mid = nn.Linear(H, 4)
        self.act = act
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(self.act(self.mid(out)))


class ExportedGELU(nn.Module):
    """nn.GELU as torch.onnx.export writes it: x * 0.5 * (1 + erf(x / c)) with
    c = sqrt(2) rounded to float32 (1.41421354), the constant the exported
    Div node holds. The float64 reference of a GELU entry computes this, so
    that it differs from the export only by the engine's arithmetic; with the
    exact sqrt(2) the two differ by about 1e-9."""

    C = float(np.float32(np.sqrt(2.0)))

    def forward(self, x):
        return x * 0.5 * (1.0 + torch.erf(x / self.C))


class Gaussian(nn.Module):
    """mu and a clamped log-variance, as two outputs or cat([mu, logvar], -1)."""

    def __init__(self, cat):
        super().__init__()
        self.rnn = nn.LSTM(F, H, batch_first=True)
        self.mu = nn.Linear(H, 1)
        self.logvar = nn.Linear(H, 1)
        self.cat = cat

    def forward(self, x):
        out, _ = self.rnn(x)
        mu, lv = self.mu(out), self.logvar(out).clamp(-6.0, 3.0)
        if self.cat:
            return torch.cat([mu, lv], -1)
        return mu, lv


class JitCell(nn.Module):
    """A cell written out and scripted: exports as Loop with SequenceEmpty,
    SequenceInsert and ConcatFromSequence."""

    def __init__(self):
        super().__init__()
        self.wx = nn.Linear(F, H)
        self.wh = nn.Linear(H, H, bias=False)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        h = torch.zeros(x.size(0), self.wh.in_features, dtype=x.dtype)
        outs: List[torch.Tensor] = []
        for t in range(x.size(1)):
            h = torch.tanh(self.wx(x[:, t]) + self.wh(h))
            outs.append(self.head(h))
        return torch.stack(outs, 1)


class TracedLSTMCell(nn.Module):
    """A Python loop over nn.LSTMCell, traced: unrolled for the trace's 12 steps."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(F, H)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        h = torch.zeros(x.size(0), H, dtype=x.dtype)
        c = torch.zeros(x.size(0), H, dtype=x.dtype)
        ys = []
        for xt in x.unbind(1):
            h, c = self.cell(xt, (h, c))
            ys.append(self.head(h))
        return torch.stack(ys, 1)


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(4, 3)
        self.rnn = nn.GRU(F + 3, H, batch_first=True)
        self.head = nn.Linear(H, 1)

    def forward(self, x, x_cat):
        out, _ = self.rnn(torch.cat([x, self.emb(x_cat)], -1))
        return self.head(out)


class MultiHorizon(nn.Module):
    def __init__(self, horizons=3):
        super().__init__()
        self.rnn = nn.LSTM(F, H, batch_first=True)
        self.head = nn.Linear(H, horizons)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


class Seq2Seq(nn.Module):
    """GRU encoder; GRUCell decoder fed its own previous output for 3 steps."""

    def __init__(self):
        super().__init__()
        self.enc = nn.GRU(F, H, batch_first=True)
        self.dec = nn.GRUCell(1, H)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        _, h = self.enc(x)
        h = h[0]
        y = self.head(h)
        ys = []
        for _ in range(3):
            h = self.dec(y, h)
            y = self.head(h)
            ys.append(y)
        return torch.cat(ys, 1)


class KerasSimpleRNN(nn.Module):
    """Keras SimpleRNN(return_sequences=True) + Dense, written out in torch:
    h_t = tanh(x_t K + h_{t-1} R + b), y_t = h_t D + d."""

    def __init__(self):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(F, H) * 0.5)
        self.recurrent_kernel = nn.Parameter(torch.randn(H, H) * 0.3)
        self.bias = nn.Parameter(torch.randn(H) * 0.1)
        self.dense_kernel = nn.Parameter(torch.randn(H, 1) * 0.5)
        self.dense_bias = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        h = torch.zeros(x.size(0), H, dtype=x.dtype)
        ys = []
        for t in range(x.size(1)):
            h = torch.tanh(x[:, t] @ self.kernel + h @ self.recurrent_kernel + self.bias)
            ys.append(h @ self.dense_kernel + self.dense_bias)
        return torch.stack(ys, 1)


class KerasRNN(nn.Module):
    """Keras LSTM/GRU + Dense: the cell is torch's (same equations as Keras
    with reset_after=True), the Dense a MatMul + Add."""

    def __init__(self, kind):
        super().__init__()
        self.rnn = (nn.LSTM if kind == "LSTM" else nn.GRU)(F, H, batch_first=True)
        self.dense_kernel = nn.Parameter(torch.randn(H, 1) * 0.5)
        self.dense_bias = nn.Parameter(torch.zeros(1))
        if kind == "LSTM":  # Keras has one bias
            with torch.no_grad():
                self.rnn.bias_hh_l0.zero_()
            self.rnn.bias_hh_l0.requires_grad_(False)

    def forward(self, x):
        out, _ = self.rnn(x)
        return out @ self.dense_kernel + self.dense_bias


# ----------------------------------------------------------------------------
# Keras graphs, in tf2onnx's node patterns
# ----------------------------------------------------------------------------

def f32(a):
    return np.asarray(a.detach().cpu().numpy(), np.float32)


def keras_inputs():
    return [helper.make_tensor_value_info("input_1", TensorProto.FLOAT, ["unk__1", "unk__2", F])]


def keras_dense(nodes, inits, y_bth, m):
    inits += [numpy_helper.from_array(f32(m.dense_kernel), "dense/kernel"),
              numpy_helper.from_array(f32(m.dense_bias), "dense/bias")]
    nodes += [helper.make_node("MatMul", [y_bth, "dense/kernel"], ["dense/MatMul:0"], name="dense/MatMul"),
              helper.make_node("Add", ["dense/MatMul:0", "dense/bias"], ["dense"], name="dense/BiasAdd")]
    return helper.make_tensor_value_info("dense", TensorProto.FLOAT, ["unk__1", "unk__2", 1])


def keras_simplernn_graph(m, opset):
    inits = [numpy_helper.from_array(f32(m.kernel), "simple_rnn/kernel"),
             numpy_helper.from_array(f32(m.recurrent_kernel), "simple_rnn/recurrent_kernel"),
             numpy_helper.from_array(f32(m.bias), "simple_rnn/bias"),
             numpy_helper.from_array(np.array([0], np.int64), "const_axes_0"),
             numpy_helper.from_array(np.array([H], np.int64), "const_units")]
    nodes = [
        helper.make_node("Transpose", ["input_1"], ["simple_rnn/transpose:0"], perm=[1, 0, 2], name="simple_rnn/transpose"),
        helper.make_node("Shape", ["input_1"], ["simple_rnn/Shape:0"], name="simple_rnn/Shape"),
        helper.make_node("Gather", ["simple_rnn/Shape:0", "const_axes_0"], ["simple_rnn/strided_slice:0"], axis=0, name="simple_rnn/strided_slice"),
        helper.make_node("Concat", ["simple_rnn/strided_slice:0", "const_units"], ["simple_rnn/zeros/packed:0"], axis=0, name="simple_rnn/zeros/packed"),
        helper.make_node("ConstantOfShape", ["simple_rnn/zeros/packed:0"], ["simple_rnn/zeros:0"],
                         value=helper.make_tensor("value", TensorProto.FLOAT, [1], [0.0]), name="simple_rnn/zeros"),
    ]
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "simple_rnn/time"))
    body_nodes = [
        helper.make_node("Constant", [], ["b/one"], value=helper.make_tensor("value", TensorProto.INT64, [1], [1]), name="b/one"),
        helper.make_node("Add", ["time_prev", "b/one"], ["b/time_next"], name="b/add_time"),
        helper.make_node("MatMul", ["x_t", "simple_rnn/kernel"], ["b/MatMul:0"], name="b/MatMul"),
        helper.make_node("MatMul", ["h_prev", "simple_rnn/recurrent_kernel"], ["b/MatMul_1:0"], name="b/MatMul_1"),
        helper.make_node("Add", ["b/MatMul:0", "simple_rnn/bias"], ["b/BiasAdd:0"], name="b/BiasAdd"),
        helper.make_node("Add", ["b/BiasAdd:0", "b/MatMul_1:0"], ["b/add:0"], name="b/add"),
        helper.make_node("Tanh", ["b/add:0"], ["b/Tanh:0"], name="b/Tanh"),
        helper.make_node("Identity", ["b/Tanh:0"], ["b/Tanh:0_out"], name="b/Identity"),
    ]
    body = helper.make_graph(
        body_nodes, "simple_rnn_scan_body",
        [helper.make_tensor_value_info("time_prev", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("h_prev", TensorProto.FLOAT, ["unk__1", H]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, ["unk__1", F])],
        [helper.make_tensor_value_info("b/time_next", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("b/Tanh:0", TensorProto.FLOAT, ["unk__1", H]),
         helper.make_tensor_value_info("b/Tanh:0_out", TensorProto.FLOAT, ["unk__1", H])])
    nodes += [
        helper.make_node("Scan", ["simple_rnn/time", "simple_rnn/zeros:0", "simple_rnn/transpose:0"],
                         ["simple_rnn/time_T", "simple_rnn/h_T", "simple_rnn/outputs_tm"],
                         body=body, num_scan_inputs=1, name="simple_rnn/while_loop"),
        helper.make_node("Transpose", ["simple_rnn/outputs_tm"], ["simple_rnn/transpose_1:0"], perm=[1, 0, 2], name="simple_rnn/transpose_1"),
    ]
    out = keras_dense(nodes, inits, "simple_rnn/transpose_1:0", m)
    return helper.make_graph(nodes, "keras_simplernn", keras_inputs(), [out], inits)


def keras_rnn_graph(m, kind, opset):
    r = m.rnn
    w, rr = f32(r.weight_ih_l0), f32(r.weight_hh_l0)
    bi, bh = f32(r.bias_ih_l0), f32(r.bias_hh_l0)
    if kind == "LSTM":  # torch i,f,g,o -> ONNX i,o,f,c
        order = [0, 3, 1, 2]
    else:  # torch r,z,n -> ONNX z,r,h
        order = [1, 0, 2]

    def reorder(a):
        return np.concatenate([a[k * H:(k + 1) * H] for k in order], 0)

    W, R, B = reorder(w)[None], reorder(rr)[None], np.concatenate([reorder(bi), reorder(bh)])[None]
    name = kind.lower()
    inits = [numpy_helper.from_array(W, name + "/W"), numpy_helper.from_array(R, name + "/R"),
             numpy_helper.from_array(B, name + "/B"),
             numpy_helper.from_array(np.array([1], np.int64), "const_axes_1")]
    attrs = dict(hidden_size=H, direction="forward")
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    nodes = [
        helper.make_node("Transpose", ["input_1"], [name + "/transpose:0"], perm=[1, 0, 2], name=name + "/transpose"),
        helper.make_node(kind, [name + "/transpose:0", name + "/W", name + "/R", name + "/B"], [name + "/Y", name + "/Y_h"],
                         name=name + "/" + kind, **attrs),
        helper.make_node("Squeeze", [name + "/Y", "const_axes_1"], [name + "/Squeeze:0"], name=name + "/Squeeze"),
        helper.make_node("Transpose", [name + "/Squeeze:0"], [name + "/transpose_1:0"], perm=[1, 0, 2], name=name + "/transpose_1"),
    ]
    out = keras_dense(nodes, inits, name + "/transpose_1:0", m)
    return helper.make_graph(nodes, "keras_" + name, keras_inputs(), [out], inits)


# ----------------------------------------------------------------------------
# The zoo
# ----------------------------------------------------------------------------

def entry(name, make, desc, opset=13, kind="torch", target="perstep", cat=False, T=9, script=False, dynamic_time=True, keras=None):
    return dict(name=name, make=make, desc=desc, opset=opset, kind=kind, target=target, cat=cat, T=T,
                script=script, dynamic_time=dynamic_time, keras=keras)


ZOO = []
for op in (13, 17):
    ZOO += [
        entry("plain_rnn_op%d" % op, lambda: PerStep(nn.RNN(F, H, batch_first=True), nn.Linear(H, 1)), "nn.RNN(2,5) batch_first + Linear per step", op),
        entry("plain_lstm_op%d" % op, lambda: PerStep(nn.LSTM(F, H, batch_first=True), nn.Linear(H, 1)), "nn.LSTM(2,5) batch_first + Linear per step", op),
        entry("plain_gru_op%d" % op, lambda: PerStep(nn.GRU(F, H, batch_first=True), nn.Linear(H, 1)), "nn.GRU(2,5) batch_first + Linear per step", op),
        entry("attention_pool_op%d" % op, AttnPool, "GRU, softmax attention over time, (w * out).sum(1), Linear: many-to-one", op, target="last"),
        entry("layernorm_op%d" % op, LayerNormHead, "LSTM, LayerNorm(5) (opset 13: ReduceMean/Pow/Sqrt; 17: LayerNormalization), Linear", op),
        entry("batchnorm_input_op%d" % op, BatchNormInput, "BatchNorm1d on the inputs (permute), GRU, Linear", op),
        entry("cnn_lstm_op%d" % op, CNNLSTM, "permute, Conv1d(2,4,3,padding=1), ReLU, permute, LSTM, Linear", op),
        entry("gelu_head_op%d" % op, lambda: ActHead(nn.GELU()), "GRU, Linear, GELU (Erf), Linear", op),
        entry("softplus_head_op%d" % op, lambda: ActHead(nn.Softplus()), "GRU, Linear, Softplus, Linear", op),
        entry("gaussian_two_outputs_op%d" % op, lambda: Gaussian(False), "LSTM, mu and clamp(logvar, -6, 3) (Clip) as a second output", op),
        entry("gaussian_cat_op%d" % op, lambda: Gaussian(True), "LSTM, cat([mu, clamp(logvar, -6, 3)], -1)", op),
        entry("jit_loop_op%d" % op, JitCell, "torch.jit.script-ed tanh cell loop (Loop, SequenceEmpty, SequenceInsert, ConcatFromSequence)", op, script=True),
        entry("keras_simplernn_op%d" % op, KerasSimpleRNN, "Keras SimpleRNN + Dense as tf2onnx emits it: Transpose, Scan, Transpose, MatMul, Add", op, kind="keras", keras="SimpleRNN"),
        entry("keras_lstm_op%d" % op, lambda: KerasRNN("LSTM"), "Keras LSTM + Dense as tf2onnx emits it: Transpose, LSTM, Squeeze, Transpose, MatMul, Add", op, kind="keras", keras="LSTM"),
        entry("keras_gru_op%d" % op, lambda: KerasRNN("GRU"), "Keras GRU (reset_after) + Dense as tf2onnx emits it: GRU linear_before_reset=1", op, kind="keras", keras="GRU"),
        entry("traced_lstmcell12_op%d" % op, TracedLSTMCell, "traced Python loop over nn.LSTMCell, unrolled for 12 steps (time axis fixed)", op, T=12, dynamic_time=False),
        entry("embedding_op%d" % op, Embed, "nn.Embedding(4,3) on a second integer input x_cat [batch, time], cat with x, GRU, Linear", op, cat=True),
        entry("multihorizon_op%d" % op, MultiHorizon, "LSTM, Linear(5, 3) on the last step: [batch, 3] horizons", op, target="horizons"),
        entry("seq2seq_op%d" % op, Seq2Seq, "GRU encoder, GRUCell decoder fed its own output for 3 steps: [batch, 3]", op, target="horizons"),
    ]


def targets(e, y):
    if e["target"] == "last":
        return y[:, -1:]
    if e["target"] == "horizons":
        return y[:, -3:]
    return y[:, :, None]


def train(e, m, x, cat, y):
    g = torch.Generator().manual_seed(zlib.crc32(e["name"].encode()))
    opt = torch.optim.Adam([p for p in m.parameters() if p.requires_grad], lr=0.01)
    X, C, Y = torch.from_numpy(x), torch.from_numpy(cat), torch.from_numpy(targets(e, y))
    m.train()
    for _ in range(60):
        perm = torch.randperm(N_SEQ, generator=g)
        for k in range(0, N_SEQ, 10):
            idx = perm[k:k + 10]
            out = m(X[idx], C[idx]) if e["cat"] else m(X[idx])
            if isinstance(out, tuple):
                out = out[0]
            loss = ((out - Y[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    m.eval()


def grads_by_initializer(model_proto, m64, inputs64):
    """Gradient of 0.5*sum(y^2) (first output) for every ONNX initializer that
    equals a parameter or its transpose."""
    for p in m64.parameters():
        p.grad = None
    out = m64(*inputs64)
    if isinstance(out, tuple):
        out = out[0]
    (0.5 * (out ** 2).sum()).backward()
    params = [(p, f32(p)) for p in m64.parameters() if p.grad is not None]
    res = {}
    for init in model_proto.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype != np.float32 or a.size < 2:
            continue
        for p, pv in params:
            if pv.shape == a.shape and np.array_equal(pv, a):
                res[init.name] = p.grad.numpy().ravel().tolist()
                break
            if pv.ndim == 2 and pv.T.shape == a.shape and np.array_equal(pv.T, a):
                res[init.name] = p.grad.numpy().T.ravel().tolist()
                break
    return res


def build(e, x, cat, y):
    seed(e["name"])
    m = e["make"]()
    with torch.no_grad():
        for p in m.parameters():
            if p.requires_grad:
                p.add_(0.1 * torch.randn_like(p))
    train(e, m, x, cat, y)
    path = os.path.join(HERE, e["name"] + ".onnx")
    B, T = 3, e["T"]
    rng = np.random.default_rng(zlib.crc32(e["name"].encode()))
    xin = rng.normal(size=(B, T, F)).astype(np.float32)
    cin = rng.integers(0, 4, size=(B, T)).astype(np.int64)
    if e["kind"] == "keras":
        g = keras_simplernn_graph(m, e["opset"]) if e["keras"] == "SimpleRNN" else keras_rnn_graph(m, e["keras"], e["opset"])
        proto = helper.make_model(g, opset_imports=[helper.make_opsetid("", e["opset"])], producer_name="tf2onnx-pattern")
        proto.ir_version = 8
        onnx.save(proto, path)
        in_names = ["input_1"]
    else:
        ex = torch.jit.script(m) if e["script"] else m
        xs = (torch.from_numpy(xin), torch.from_numpy(cin)) if e["cat"] else (torch.from_numpy(xin),)
        in_names = ["x", "x_cat"] if e["cat"] else ["x"]
        out_names = ["mu", "logvar"] if e["name"].startswith("gaussian_two") else ["y"]
        dyn = {}
        for n in in_names:
            dyn[n] = {0: "batch", 1: "time"} if e["dynamic_time"] else {0: "batch"}
        for n in out_names:
            dyn[n] = {0: "batch"} if e["target"] in ("last", "horizons") or not e["dynamic_time"] else {0: "batch", 1: "time"}
        torch.onnx.export(ex, xs, path, opset_version=e["opset"], input_names=in_names, output_names=out_names,
                          dynamic_axes=dyn, do_constant_folding=True)
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    m64 = copy.deepcopy(m).double()
    if isinstance(getattr(m64, "act", None), nn.GELU):
        m64.act = ExportedGELU()
    ins64 = [torch.from_numpy(xin.astype(np.float64))]
    if e["cat"]:
        ins64.append(torch.from_numpy(cin))
    with torch.no_grad():
        out = m64(*ins64)
    outs = list(out) if isinstance(out, tuple) else [out]
    onames = [o.name for o in proto.graph.output]
    grad = grads_by_initializer(proto, m64, ins64)
    inputs = [{"name": in_names[0], "shape": list(xin.shape), "data": xin.astype(np.float64).ravel().tolist()}]
    if e["cat"]:
        inputs.append({"name": "x_cat", "dtype": "int64", "shape": list(cin.shape), "data": cin.ravel().tolist()})
    doc = {
        "model": e["name"] + ".onnx", "description": e["desc"], "torch": torch.__version__, "opset": e["opset"],
        "train": "train_cat.csv" if e["cat"] else "train.csv",
        "ops": sorted({n.op_type for n in proto.graph.node}),
        "inputs": inputs,
        "outputs": [{"name": n, "shape": list(o.shape), "data": o.detach().numpy().ravel().tolist()} for n, o in zip(onames, outs)],
        "grad": grad,
    }
    with open(os.path.join(HERE, e["name"] + ".json"), "w") as f:
        json.dump(doc, f, indent=None)
        f.write("\n")
    return doc


def main():
    x, cat, y = make_data()
    only = set(sys.argv[1:])
    rows = []
    for e in ZOO:
        if only and e["name"] not in only:
            continue
        d = build(e, x, cat, y)
        size = os.path.getsize(os.path.join(HERE, e["name"] + ".onnx"))
        rows.append("| %s | %s | %s | %d B | %d |" % (e["name"], e["desc"], ", ".join(d["ops"]), size, len(d["grad"])))
        print(rows[-1])
    if only:
        return
    with open(os.path.join(HERE, "MODELS.md"), "w") as f:
        f.write("| name | what | ONNX operators | size | gradients in the reference |\n|---|---|---|---|---|\n")
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
