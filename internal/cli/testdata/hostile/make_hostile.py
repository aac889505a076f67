"""Writes the small hostile ONNX models of the catalogue in hostile_test.go
(TestHostile). Each is a tiny linear model y = x * w + b, batch-first
[batch, time, 1], with one thing wrong; the big hostile inputs (a model
nested a million levels deep, /dev/zero, a 100 MB CSV line, a sequence of
200,000 steps) are made by the test itself.

Run with Debian's python3 (python3-onnx): /usr/bin/python3 make_hostile.py
"""
import math

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "time", 1])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "time", 1])


def linear(extra_nodes=(), extra_inits=(), w=0.9, b=0.1, xname="x", yname="y"):
    xi = helper.make_tensor_value_info(xname, TensorProto.FLOAT, ["batch", "time", 1])
    yi = helper.make_tensor_value_info(yname, TensorProto.FLOAT, ["batch", "time", 1])
    nodes = [helper.make_node("Mul", [xname, "w"], ["xw"], name="mul"),
             helper.make_node("Add", ["xw", "b"], [yname], name="add")]
    nodes += list(extra_nodes)
    inits = [helper.make_tensor("w", TensorProto.FLOAT, [1], [w]),
             helper.make_tensor("b", TensorProto.FLOAT, [1], [b])] + list(extra_inits)
    return nodes, inits, xi, yi


def save(name, nodes, inits, xi, yi, outputs=None):
    outs = [yi] + list(outputs or [])
    g = helper.make_graph(nodes, "hostile", [xi], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="make_hostile.py")
    m.ir_version = 7
    onnx.save(m, name)


def bomb(name, node, inits, out):
    """A linear model whose forecast adds the sum of node's output, so that
    the audit, which leaves out what the forecast does not need, meets it."""
    nodes, base, xi, _ = linear([node], inits, yname="ylin")
    nodes.append(helper.make_node("ReduceSum", [out], ["bsum"], name="bsum", keepdims=0))
    nodes.append(helper.make_node("Add", ["ylin", "bsum"], ["y"], name="addbomb"))
    save(name, nodes, base, xi, y)


ints = lambda n, v: helper.make_tensor(n, TensorProto.INT64, [len(v)], v)
scalar = lambda n, v: helper.make_tensor(n, TensorProto.FLOAT, [], [v])

# Shape-folding bombs: constant folding would allocate 1e9-1e12 elements.
bomb("cos_1e9.onnx", helper.make_node("ConstantOfShape", ["s"], ["big"], name="bomb"), [ints("s", [1000000000])], "big")
bomb("cos_1e12.onnx", helper.make_node("ConstantOfShape", ["s"], ["big"], name="bomb"), [ints("s", [1000000, 1000000])], "big")
bomb("cos_overflow.onnx", helper.make_node("ConstantOfShape", ["s"], ["big"], name="bomb"), [ints("s", [1 << 62, 1 << 62, 4])], "big")
bomb("expand_1e10.onnx", helper.make_node("Expand", ["w", "s"], ["big"], name="bomb"), [ints("s", [100000, 100000])], "big")


def range_bomb(name, limit):
    """Range(0, limit, 1) with its scalars from Constant nodes (float
    initializers would be parameters, which Range does not take)."""
    const = lambda n, v: helper.make_node("Constant", [], [n], name=n, value=helper.make_tensor(n + "v", TensorProto.FLOAT, [], [v]))
    bomb(name, helper.make_node("Range", ["r0", "r1", "r2"], ["big"], name="bomb"), [], "big")
    m = onnx.load(name)
    m.graph.node.insert(0, const("r2", 1.0))
    m.graph.node.insert(0, const("r1", limit))
    m.graph.node.insert(0, const("r0", 0.0))
    onnx.save(m, name)


range_bomb("range_1e9.onnx", 1e9)
range_bomb("range_inf.onnx", math.inf)

# A model without parameters: y = x * 2 from a Constant node.
xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "time", 1])
yi = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "time", 1])
g = helper.make_graph([helper.make_node("Constant", [], ["two"], name="two", value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.0])),
                       helper.make_node("Mul", ["x", "two"], ["y"], name="mul")], "hostile", [xi], [yi])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="make_hostile.py")
m.ir_version = 7
onnx.save(m, "no_params.onnx")

# Non-finite weights.
save("nan_weight.onnx", *linear(w=math.nan))
save("inf_weight.onnx", *linear(b=math.inf))

# Names with terminal control characters (ESC, BEL).
save("control_names.onnx", *linear(xname="x\x1b[2J\x07", yname="y\x1b]0;owned\x07"))

# The plain linear model, for the cases whose trouble is elsewhere.
save("model.onnx", *linear())
