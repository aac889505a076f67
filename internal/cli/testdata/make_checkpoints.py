"""Writes the files a user may pass as --model by mistake: a PyTorch
checkpoint in the zip format torch.save writes (checkpoint.pt), the same in
the legacy pickle format (checkpoint_legacy.pth), and a TorchScript file
(torch.jit.save, script.pt), for the tests of the message that names them.

Run with Debian's python3 (python3-torch): /usr/bin/python3 make_checkpoints.py
"""
import torch

torch.manual_seed(0)
net = torch.nn.RNN(1, 2, batch_first=True)
torch.save(net.state_dict(), "checkpoint.pt")
torch.save(net.state_dict(), "checkpoint_legacy.pth", _use_new_zipfile_serialization=False)
torch.jit.save(torch.jit.script(torch.nn.Linear(1, 1)), "script.pt")
