#!/usr/bin/python3
"""PyTorch golden values for the structural layers (solver/shape_ops.go,
solver/arith_ops.go), checked by solver/golden_struct_test.go.

Run from the repository root with the Python that has PyTorch 1.13:

    /usr/bin/python3 scripts/golden_struct.py

It rewrites solver/testdata/golden_struct/*.json. Each case is one layer as
the graph description writes it ("layer": models.Layer's JSON, whose dims and
axes are per sample, without the batch axis), its inputs (a batch of 2, each
input's per-sample dims in "ins"), a fixed random output gradient dy, and
PyTorch's output y and input gradients dx (the vector-Jacobian product with
dy). As in scripts/golden.py, references are computed in float64 from the
float32 inputs and rounded to float32, and floats are written as the
shortest decimal that round-trips the float32 value. The layers have no
parameters; a constant operand is part of the layer description.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import dump  # noqa: E402

OUT = os.path.join("solver", "testdata", "golden_struct")
N = 2


def case(name, layer, ins, fn, seed, positive=()):
    g = torch.Generator().manual_seed(seed)
    xs = []
    for i, dims in enumerate(ins):
        x = torch.rand((N, *dims), generator=g) * 2 - 1
        if i in positive:
            x = x.abs() + 0.5  # divisors away from 0
        xs.append(x)
    x64 = [x.double().requires_grad_() for x in xs]
    y = fn(*x64)
    dy = torch.rand(y.shape, generator=g) * 2 - 1
    (y * dy.double()).sum().backward()
    obj = {"case": name, "layer": layer, "ins": ins, "x": [x.float() for x in xs], "dy": dy,
           "y": y.detach().float(), "dx": [x.grad.float() for x in x64]}
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        f.write(dump(obj) + "\n")


def perm_fn(p):
    return lambda x: x.permute(0, *[k + 1 for k in p])


def main():
    os.makedirs(OUT, exist_ok=True)
    L = lambda kind, **kw: dict(kind=kind, name=kind, **kw)
    case("transpose_nhwc", L("transpose", dims=[5, 6, 3], perm=[2, 0, 1]), [[5, 6, 3]], perm_fn([2, 0, 1]), 1)
    case("transpose_shuffle", L("transpose", dims=[2, 3, 4, 5], perm=[1, 0, 2, 3]), [[2, 3, 4, 5]], perm_fn([1, 0, 2, 3]), 2)
    case("slice", L("slice", dims=[6, 5, 4], starts=[1, 0, 1], steps=[2, 1, 2], counts=[3, 5, 2]), [[6, 5, 4]],
         lambda x: x[:, 1:6:2, :, 1:4:2], 3)
    case("pad", L("pad", dims=[3, 4, 5], before=[0, 1, 2], after=[1, 0, 2]), [[3, 4, 5]],
         lambda x: F.pad(x, (2, 2, 1, 0, 0, 1)), 4)
    case("pad_reflect", L("pad", dims=[3, 5, 6], before=[0, 2, 1], after=[0, 1, 3], mode="reflect"), [[3, 5, 6]],
         lambda x: F.pad(x, (1, 3, 2, 1), mode="reflect"), 17)
    case("pad_edge", L("pad", dims=[3, 5, 6], before=[0, 3, 1], after=[0, 1, 4], mode="edge"), [[3, 5, 6]],
         lambda x: F.pad(x, (1, 4, 3, 1), mode="replicate"), 18)
    case("concatnd", L("concatnd", axis=1, dims=[3, 2, 4]), [[3, 2, 4], [3, 3, 4]], lambda a, b: torch.cat([a, b], 2), 5)
    case("reshape", L("reshape", to=[20, 6]), [[4, 5, 6]], lambda x: x.reshape(N, 20, 6), 6)
    case("reduce_mean_hw", L("reduce", dims=[4, 5, 6], axes=[1, 2], mean=True), [[4, 5, 6]],
         lambda x: x.mean((2, 3), keepdim=True), 7)
    case("reduce_sum_c", L("reduce", dims=[4, 5, 6], axes=[0]), [[4, 5, 6]], lambda x: x.sum(1, keepdim=True), 8)
    case("mul_gate", L("binary", op="Mul", dims=[4, 5, 6], dims2=[4, 1, 1]), [[4, 5, 6], [4, 1, 1]], lambda a, b: a * b, 9)
    case("div_both_broadcast", L("binary", op="Div", dims=[1, 5, 6], dims2=[4, 1, 1]), [[1, 5, 6], [4, 1, 1]],
         lambda a, b: a / b, 10, positive=(1,))
    case("sub_act", L("binary", op="Sub", dims=[4, 5, 6], dims2=[4, 5, 1]), [[4, 5, 6], [4, 5, 1]], lambda a, b: a - b, 11)
    c = torch.tensor([0.5, -1.25, 2.0, 0.75]).view(4, 1, 1)
    case("add_const", L("binary", op="Add", dims=[4, 5, 6], dims2=[4, 1, 1], const=c.flatten().tolist()), [[4, 5, 6]],
         lambda x: x + c.double(), 12)
    case("mul_const", L("binary", op="Mul", dims=[4, 5, 6], dims2=[4, 1, 1], const=c.flatten().tolist()), [[4, 5, 6]],
         lambda x: x * c.double(), 13)
    case("const_sub", L("binary", op="Sub", dims=[4, 5, 6], dims2=[1, 1, 1], const=[3.0], first=True), [[4, 5, 6]],
         lambda x: 3.0 - x, 14)
    case("const_div", L("binary", op="Div", dims=[4, 5, 6], dims2=[1, 1, 1], const=[2.0], first=True), [[4, 5, 6]],
         lambda x: 2.0 / x, 15, positive=(0,))
    case("div_const", L("binary", op="Div", dims=[4, 5, 6], dims2=[4, 1, 1], const=[6.0, 3.0, 1.5, 0.5]), [[4, 5, 6]],
         lambda x: x / torch.tensor([6.0, 3.0, 1.5, 0.5], dtype=torch.float64).view(4, 1, 1), 16)


if __name__ == "__main__":
    main()
