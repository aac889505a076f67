"""Writes fixed_shape.onnx: a small RNN exported the way a newcomer
first does it, without dynamic_axes, so that batch (1) and time (10) are
fixed in the graph, and the exporter names the RNN's weights itself
(onnx::RNN_...), for the tests of inspect's warning and of the
parameter roles.

Run with Debian's python3 (python3-torch): /usr/bin/python3 make_fixed.py
"""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.RNN(1, 3, batch_first=True)
        self.head = torch.nn.Linear(3, 1)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.head(h)


torch.manual_seed(0)
net = Net().eval()
x = torch.zeros(1, 10, 1)
torch.onnx.export(net, (x,), "fixed_shape.onnx", input_names=["x"], output_names=["y"], opset_version=14)
