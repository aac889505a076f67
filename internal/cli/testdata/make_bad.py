"""Writes several_problems.onnx: a small model with three problems at once
(three operators rnnaudit does not implement: Hardmax, LpNormalization and
MaxUnpool), for the test that the command prints every problem of a model.

Run with Debian's python3 (python3-onnx): /usr/bin/python3 make_bad.py
"""
import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "time", 1])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "time", 1])
nodes = [
    helper.make_node("Hardmax", ["x"], ["a"], name="hardmax"),
    helper.make_node("LpNormalization", ["a"], ["b"], name="norm"),
    helper.make_node("MaxUnpool", ["b", "scale"], ["c"], name="unpool", kernel_shape=[1]),
    helper.make_node("Identity", ["c"], ["y"], name="out"),
]
scale = helper.make_tensor("scale", TensorProto.INT64, [1], [0])
graph = helper.make_graph(nodes, "bad", [x], [y], [scale])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                          producer_name="make_bad.py")
model.ir_version = 7
onnx.save(model, "several_problems.onnx")
