#!/usr/bin/python3
"""Operator cases the ONNX backend suite (../onnx-operators) does not cover,
with numpy as the independent reference: Pad's reflect, edge and wrap modes
(with negative pads), CumSum's exclusive and reverse forms, Einsum
equations beyond batch matmul, MaxPool with pads and dilations,
GatherElements with negative indices, OneHot on an inner axis.

Run:  /usr/bin/python3 make.py     (writes <case>/model.onnx and
<case>/test_data_set_0/{input,output}_N.pb beside itself, the layout of the
ONNX backend node tests). Deterministic (numpy seed 18).
"""

import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(18)


def case(name, opset, node, inputs, outputs, consts=()):
    """inputs: list of (name, array) graph inputs; consts: (name, array) Constant nodes."""
    nodes = [helper.make_node("Constant", [], [n], value=numpy_helper.from_array(a, n)) for n, a in consts]
    nodes.append(node)
    def info(n, a):
        t = {np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64}[a.dtype.type]
        return helper.make_tensor_value_info(n, t, list(a.shape))
    g = helper.make_graph(nodes, name, [info(n, a) for n, a in inputs], [info(n, a) for n, a in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="make.py")
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    for kind, items in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(items):
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def x(*shape):
    return rng.standard_normal(shape)


# Pad: reflect, edge and wrap on two axes with a negative (cropping) pad.
X = x(2, 3, 4)
pads = np.array([0, 2, 1, 0, 1, -1], dtype=np.int64)  # begin axes 0..2, end axes 0..2
np_pads = [(0, 0), (2, 1), (1, 0)]
for mode, np_mode in (("reflect", "reflect"), ("edge", "edge"), ("wrap", "wrap")):
    y = np.pad(X, np_pads, mode=np_mode)[:, :, :-1]  # end pad -1 on the last axis crops
    case("pad_%s" % mode, 19, helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode),
         [("x", X)], [("y", y)], consts=[("pads", pads)])
# Pad on selected axes (opset 18 axes input) with a constant value.
P = np.array([1, 2], dtype=np.int64)
y = np.pad(X, [(0, 0), (0, 0), (1, 2)], mode="constant", constant_values=-0.5)
case("pad_axes_constant", 18, helper.make_node("Pad", ["x", "pads", "v", "axes"], ["y"]),
     [("x", X)], [("y", y)], consts=[("pads", P), ("v", np.array(-0.5)), ("axes", np.array([-1], dtype=np.int64))])

# CumSum forms along axis 1.
X = x(2, 5, 3)
ax = np.array(1, dtype=np.int64)
c = np.cumsum(X, axis=1)
forms = {
    "cumsum_exclusive": (dict(exclusive=1), c - X),
    "cumsum_reverse": (dict(reverse=1), np.flip(np.cumsum(np.flip(X, 1), axis=1), 1)),
    "cumsum_exclusive_reverse": (dict(exclusive=1, reverse=1), np.flip(np.cumsum(np.flip(X, 1), axis=1), 1) - X),
}
for name, (attrs, y) in forms.items():
    case(name, 14, helper.make_node("CumSum", ["x", "axis"], ["y"], **attrs), [("x", X)], [("y", y)],
         consts=[("axis", ax)])

# Einsum equations.
A, B = x(2, 3, 4), x(4, 5)
for name, eq, ins in (
    ("einsum_transposed_output", "bij,jk->kbi", [A, B]),
    ("einsum_implicit", "bij,jk", [A, B]),
    ("einsum_summed_letter", "bij,jk->bk", [A, B]),
    ("einsum_outer", "i,j->ij", [x(3), x(4)]),
    ("einsum_one_operand", "bij->jb", [A]),
    ("einsum_dot_batch", "bi,bi->b", [x(3, 4), x(3, 4)]),
):
    names = ["a", "b"][:len(ins)]
    case(name, 12, helper.make_node("Einsum", names, ["y"], equation=eq),
         list(zip(names, ins)), [("y", np.einsum(eq, *ins))])


# MaxPool with pads, strides and dilations (2-D), by brute force.
def maxpool(X, k, s, d, pads):
    N, C, H, W = X.shape
    Xp = np.pad(X, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])], constant_values=-np.inf)
    oh = (H + pads[0] + pads[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (W + pads[1] + pads[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    y = np.empty((N, C, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = Xp[:, :, i * s[0]:i * s[0] + d[0] * (k[0] - 1) + 1:d[0], j * s[1]:j * s[1] + d[1] * (k[1] - 1) + 1:d[1]]
            y[:, :, i, j] = win.max(axis=(2, 3))
    return y


X = x(2, 3, 6, 7)
case("maxpool_2d_pads_dilations", 12,
     helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3], strides=[2, 1], dilations=[2, 1], pads=[1, 1, 0, 1]),
     [("x", X)], [("y", maxpool(X, (2, 3), (2, 1), (2, 1), (1, 1, 0, 1)))])

# GatherElements with negative indices along axis 0.
X = x(3, 4)
I = np.array([[0, -1, 2, 1], [-3, 0, -2, 2]], dtype=np.int64)
case("gather_elements_negative", 13, helper.make_node("GatherElements", ["x", "i"], ["y"], axis=0),
     [("x", X)], [("y", np.take_along_axis(X, np.where(I < 0, I + 3, I), axis=0))], consts=[("i", I)])

# OneHot on axis 1 with negative indices.
ind = np.array([[1, -1], [0, 2]], dtype=np.int64)
vals = np.array([-2.0, 3.0])
depth = np.array(4, dtype=np.int64)
oh = np.where(np.arange(4)[None, :, None] == np.where(ind < 0, ind + 4, ind)[:, None, :], vals[1], vals[0])
case("onehot_axis1", 11, helper.make_node("OneHot", ["ind", "depth", "vals"], ["y"], axis=1),
     [("ind", ind)], [("y", oh)], consts=[("depth", depth), ("vals", vals)])
