"""Writes the ONNX backend cases test_scan9_sum and test_loop13_seq (wrapped).

Run with Debian's python3-onnx 1.12 from this directory:
    /usr/bin/python3 make.py

test_loop11, test_scan_sum (opset-8 Scan) and test_if are copied unchanged
from the ONNX project's backend node tests (github.com/onnx/onnx, commit
6be0677f, onnx/backend/test/data/node/, Apache-2.0); this script does not
write them.
The two others are not in that folder; this script makes them from the ONNX
package's own case definitions (onnx/backend/test/case/node/scan.py and
loop.py), with the expected outputs those definitions compute in numpy.

test_loop13_seq takes and returns a sequence of tensors, which rnnaudit does
not take as a graph input or give as an output. test_loop13_seq_wrapped is
the same Loop node between a SequenceEmpty node (instead of the empty
sequence input) and ConcatFromSequence(axis=0) (instead of the sequence
output); its expected output is the concatenation of the case's expected
sequence.
"""
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
import onnx.backend.test.case.node as node_cases

captured = {}


def capture(node, inputs, outputs, name, **kwargs):
    captured[name] = (node, inputs, outputs, kwargs)


node_cases.expect = capture
from onnx.backend.test.case.node import loop, scan  # noqa: E402

loop.expect = capture
scan.expect = capture
scan.Scan.export_scan_9()
loop.Loop.export_loop_13()


def write(name, model, inputs, outputs):
    d = os.path.join(name, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(name, "model.onnx"))
    for i, x in enumerate(inputs):
        t = numpy_helper.from_array(x, model.graph.input[i].name)
        open(os.path.join(d, "input_%d.pb" % i), "wb").write(t.SerializeToString())
    for i, y in enumerate(outputs):
        t = numpy_helper.from_array(y, model.graph.output[i].name)
        open(os.path.join(d, "output_%d.pb" % i), "wb").write(t.SerializeToString())


# test_scan9_sum: opset 9 Scan, as the ONNX case builds it.
node, inputs, outputs, kw = captured["test_scan9_sum"]
ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, x.shape) for n, x in zip(node.input, inputs)]
outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, y.shape) for n, y in zip(node.output, outputs)]
g = helper.make_graph([node], "test_scan9_sum", ins, outs)
write("test_scan9_sum", helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]), inputs, outputs)

# test_loop13_seq, wrapped.
node, inputs, outputs, kw = captured["test_loop13_seq"]
trip_count, cond, _ = inputs
empty = helper.make_node("SequenceEmpty", [], [node.input[2]], dtype=TensorProto.FLOAT)
cat = helper.make_node("ConcatFromSequence", [node.output[0]], ["res"], axis=0)
want = np.concatenate(outputs[0]).astype(np.float32)
g = helper.make_graph(
    [empty, node, cat], "test_loop13_seq_wrapped",
    [helper.make_tensor_value_info(node.input[0], TensorProto.INT64, trip_count.shape),
     helper.make_tensor_value_info(node.input[1], TensorProto.BOOL, cond.shape)],
    [helper.make_tensor_value_info("res", TensorProto.FLOAT, want.shape)])
write("test_loop13_seq_wrapped", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
      [trip_count, cond], [want])
