#!/usr/bin/python3
"""Generate PyTorch golden values for solver/seq_golden_test.go: nn.Embedding,
nn.LSTM and nn.GRU (batch_first, zero initial state), forward and autograd
gradients of the input and of every parameter.

Run from the repository root with the Python that has PyTorch 1.13:

    /usr/bin/python3 scripts/golden_seq.py

It rewrites solver/testdata/golden_seq/*.json in the format of
scripts/golden.py's layer fixtures (whose writer it uses): in_shape, x,
params, y, dy, dx, grads. As there, inputs and parameters are float32
values and the references are computed from them in float64 and rounded to
float32, so the Go tests' tolerance measures our float32 rounding alone.

Shapes: an embedding's in_shape is [N, T] (ids, as float32); a recurrent
layer's is [N, T, In] (batch first). config.all_steps false records the top
layer's hidden state after the last step (out[:, -1, :], equal to h_n[-1]),
true every step's output (N×T×H).
"""

import os

import torch
import torch.nn as nn

import golden

golden.OUT = os.path.join("solver", "testdata", "golden_seq")


class Last(nn.Module):
    """A recurrent module's output at the last step, or at every step."""

    def __init__(self, rnn, all_steps):
        super().__init__()
        self.rnn = rnn
        self.all_steps = all_steps

    def forward(self, x):
        out, _ = self.rnn(x)
        return out if self.all_steps else out[:, -1, :]

    def named_parameters(self, *a, **k):
        # The names of nn.LSTM's own parameters (weight_ih_l0, ...), as the
        # solver's layer names them.
        return self.rnn.named_parameters(*a, **k)


def embedding(name, vocab, dim, n, t, seed):
    torch.manual_seed(seed)
    m = nn.Embedding(vocab, dim)
    with torch.no_grad():
        m.weight.copy_(torch.randn(vocab, dim))
    ids = torch.randint(0, vocab, (n, t))
    ids[0, 0] = ids[0, 1] = vocab - 1  # a repeated id, and the last one
    m.double()
    y = m(ids)
    dy = torch.randn(y.shape).double()
    y.backward(dy)
    golden.write(name, {"kind": "layer", "layer": "embedding",
                        "config": {"vocab": vocab, "dim": dim},
                        "in_shape": [n, t], "train": True,
                        "x": ids.double(), "params": {"weight": m.weight.detach().clone()},
                        "state": {}, "y": y, "dy": dy, "grads": {"weight": m.weight.grad}})


def recurrent(name, kind, n, t, inp, hidden, layers, all_steps, seed):
    torch.manual_seed(seed)
    cls = nn.LSTM if kind == "lstm" else nn.GRU
    m = Last(cls(inp, hidden, num_layers=layers, batch_first=True), all_steps)
    with torch.no_grad():
        for p in m.rnn.parameters():
            p.copy_(torch.randn(p.shape) * 0.5)
    x = torch.randn(n, t, inp).double().requires_grad_(True)
    m.double()
    params = {k: p.detach().clone() for k, p in m.named_parameters()}
    y = m(x)
    dy = torch.randn(y.shape).double()
    y.backward(dy)
    golden.write(name, {"kind": "layer", "layer": kind,
                        "config": {"hidden": hidden, "layers": layers, "all_steps": all_steps},
                        "in_shape": [n, t, inp], "train": True, "x": x, "params": params, "state": {},
                        "y": y, "dy": dy, "dx": x.grad,
                        "grads": {k: p.grad for k, p in m.named_parameters()}})


def main():
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    os.makedirs(golden.OUT, exist_ok=True)
    embedding("embedding", 7, 5, 3, 4, 101)
    for kind, seed in (("lstm", 200), ("gru", 300)):
        recurrent(kind + "_t5", kind, 3, 5, 4, 6, 1, False, seed + 1)
        recurrent(kind + "_t1", kind, 2, 1, 3, 4, 1, False, seed + 2)
        recurrent(kind + "_2layer_all", kind, 2, 4, 3, 5, 2, True, seed + 3)
    print("wrote", len(os.listdir(golden.OUT)), "files to", golden.OUT, "with torch", torch.__version__)


if __name__ == "__main__":
    main()
