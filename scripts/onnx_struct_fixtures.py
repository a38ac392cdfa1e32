#!/usr/bin/python3
"""ONNX fixtures of the structural operators, with PyTorch golden values.

Run from the repository root with the system Python (PyTorch 1.13, onnx):

    /usr/bin/python3 scripts/onnx_struct_fixtures.py
    COTRAIN_ONNX_EXPORT=DIR go test ./models/onnx -run TestExportStructuralForPython
    /usr/bin/python3 scripts/onnx_struct_fixtures.py check DIR

It writes models/onnx/testdata/struct/: per fixture NAME, NAME.onnx and
NAME.json with the input x (a batch of 2), the output y, a fixed output
gradient dy, and the gradient of sum(y * dy) with respect to every
parameter ("grads", by ONNX initializer name, which the importer keeps as
the tensor name); manifest.json lists the fixtures and their operators.
models/onnx/struct_test.go imports each file and checks the forward pass
and the parameter gradients (the backward pass through every structural
layer) to a relative 1e-4; Go tests never run Python.

The references are computed in float64 from the float32 weights and input
and rounded to float32 (as scripts/golden.py does), so the Go tests measure
cotrain's float32 rounding alone. Every fixture has a fixed seed: a rerun
rewrites identical files (the .onnx bytes depend on the exporter version).

"check DIR" validates cotrain's exports of these fixtures with
onnx.checker (full check) and runs them with scripts/onnx_fixtures.py's
evaluator against PyTorch's y, to a relative 1e-4.

Fixtures:
  shuffle_*   a ShuffleNet v2-like unit: Split (chunk), a depthwise branch,
              Concat, the channel shuffle (Reshape to rank 5, Transpose
              [0,2,1,3,4], Reshape back), a Slice with a step, Flatten.
  se_*        an edge (replicate) Pad before the first Conv, a squeeze-excitation gate: ReduceMean keepdims, 1x1 convs, a
              hard sigmoid written as relu6(x + 3) / 6 (Add, Clip, Div by
              constants), Mul broadcasting N×C×1×1 over N×C×H×W, Mul and Sub
              of constants, ReduceMax, GlobalMaxPool, ReduceMean keepdims 0,
              Concat of rank-2 tensors.
  misc_*      a reflect Pad before the first Conv, Split with sizes, asymmetric Pad (with the constant chain
              torch builds its pads with: ConstantOfShape, Reshape, a
              reversing Slice, Transpose, Cast), Slice, Concat along H, ReduceSum, Sub between
              broadcast activations, 2 / x (Reciprocal, Mul), Reshape to rank 3,
              Transpose, Unsqueeze/Squeeze, Concat of one input.
  nhwc_op13   built with onnx.helper as tf2onnx writes a Keras model: an
              NHWC input, Transpose [0,3,1,2] before the Conv and [0,2,3,1]
              after it, a per-channel constant on the last axis, ReduceMean
              over H and W, MatMul + Add.
"""
import io
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper, TensorProto
from torch import nn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "models", "onnx", "testdata", "struct")


class Shuffle(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 8, 3, padding=1)
        self.dw = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.pw = nn.Conv2d(4, 4, 1)
        self.fc = nn.Linear(8 * 4 * 3, 5)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        a, b = x.chunk(2, dim=1)
        b = F.relu(self.pw(self.dw(b)))
        x = torch.cat([a, b], 1)
        n, c, h, w = x.size()
        x = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        x = x[:, :, 1:5, ::2]
        return self.fc(torch.flatten(x, 1))


class SE(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Conv2d(8, 4, 1)
        self.fc2 = nn.Conv2d(4, 8, 1)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 8).view(1, 8, 1, 1))
        self.fc = nn.Linear(24, 5)

    def forward(self, x):
        x = F.relu(self.conv(F.pad(x, (1, 1, 1, 1), mode="replicate")))
        s = x.mean((2, 3), keepdim=True)
        s = self.fc2(F.relu(self.fc1(s)))
        s = F.relu6(s + 3.0) / 6.0
        x = x * s
        x = x * self.scale - 0.25
        m = torch.amax(x, dim=(2, 3))
        g = F.adaptive_max_pool2d(x, 1).flatten(1)
        t = x.mean(dim=(2, 3))
        return self.fc(torch.cat([m, g, t], 1))


class Misc(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 6, 3)
        self.fc = nn.Linear(72, 5)

    def forward(self, x):
        x = self.conv(F.pad(x, (1, 1, 1, 1), mode="reflect"))  # N×6×6×6
        u, v = torch.split(x, [2, 4], dim=1)  # Split with sizes
        x = torch.cat([v, u * 0.5], 1)
        p = F.pad(x, (1, 0, 2, 1))            # N×6×9×7
        p = p[:, :, :6, 1:]                   # N×6×6×6
        h = torch.cat([x, p], dim=2)          # N×6×12×6
        s = h.sum(dim=1, keepdim=True)        # N×1×12×6
        h = h - s
        d = 2.0 / (F.relu(h) + 1.0)
        r = d.reshape(d.size(0), 6, 72).transpose(1, 2)   # N×72×6
        r = r.mean(2).unsqueeze(1)            # N×1×72
        r = torch.cat([r], 1).squeeze(1)      # N×72
        return self.fc(r)


def golden(model, x, seed):
    """y and the float64 gradient of sum(y * dy), rounded to float32."""
    g = torch.Generator().manual_seed(seed + 1)
    m64 = model.double()
    x64 = x.double()
    y = m64(x64)
    dy = torch.rand(y.shape, generator=g, dtype=torch.float32) * 2 - 1
    (y * dy.double()).sum().backward()
    grads = {n: p.grad.float().flatten().tolist() for n, p in m64.named_parameters()}
    model.float()
    return y.detach().float(), dy, grads


def write(name, raw, x, y, dy, grads, ops, shape):
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(raw)
    fl = lambda t: [float(v) for v in t.flatten().tolist()]
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump({"x": fl(x), "y": fl(y), "dy": fl(dy), "grads": grads}, f)
    return {"name": name, "input": shape, "classes": int(y.shape[1]), "ops": ops}


def torch_fixture(name, cls, opset, seed):
    torch.manual_seed(seed)
    model = cls().eval()
    x = torch.rand(2, 4, 6, 6) * 2 - 1
    buf = io.BytesIO()
    torch.onnx.export(model, x, buf, opset_version=opset, input_names=["input"], output_names=["output"])
    raw = buf.getvalue()
    ops = sorted({n.op_type for n in onnx.load_from_string(raw).graph.node})
    y, dy, grads = golden(model, x, seed)
    return write(name, raw, x, y, dy, grads, ops, [4, 6, 6])


def nhwc_fixture(seed=40):
    """A Keras-style model as tf2onnx writes it (NHWC around an NCHW Conv)."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: (torch.rand(*s, generator=g) * 2 - 1)
    w, b = rnd(8, 3, 3, 3) * 0.5, rnd(8)
    mul, add = rnd(8) + 1.5, rnd(8)
    dw, db = rnd(8, 5), rnd(5)
    x = rnd(2, 6, 6, 3)
    init = [numpy_helper.from_array(t.numpy().astype(np.float32), n) for n, t in
            [("conv.weight", w), ("conv.bias", b), ("mul_c", mul), ("add_c", add), ("dense.kernel", dw), ("dense.bias", db)]]
    nodes = [
        helper.make_node("Transpose", ["input"], ["t1"], name="model/conv/Conv2D__6", perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["t1", "conv.weight", "conv.bias"], ["c"], name="model/conv/Conv2D",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="model/conv/Relu"),
        helper.make_node("Transpose", ["r"], ["t2"], name="model/conv/Relu__8", perm=[0, 2, 3, 1]),
        helper.make_node("Mul", ["t2", "mul_c"], ["m"], name="model/bn/mul"),
        helper.make_node("Add", ["m", "add_c"], ["a"], name="model/bn/add"),
        helper.make_node("ReduceMean", ["a"], ["p"], name="model/gap/Mean", axes=[1, 2], keepdims=0),
        helper.make_node("MatMul", ["p", "dense.kernel"], ["mm"], name="model/dense/MatMul"),
        helper.make_node("Add", ["mm", "dense.bias"], ["output"], name="model/dense/BiasAdd"),
    ]
    graph = helper.make_graph(nodes, "tf2onnx", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["unk__1", 6, 6, 3])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["unk__2", 5])], init)
    model = helper.make_model(graph, producer_name="tf2onnx", producer_version="1.9.3",
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    # The same computation in torch, float64.
    ps = {n: t.double().requires_grad_() for n, t in [("conv.weight", w), ("conv.bias", b), ("dense.kernel", dw), ("dense.bias", db)]}
    t = x.double().permute(0, 3, 1, 2)
    t = F.relu(F.conv2d(t, ps["conv.weight"], ps["conv.bias"], padding=1)).permute(0, 2, 3, 1)
    t = (t * mul.double() + add.double()).mean((1, 2))
    y = t @ ps["dense.kernel"] + ps["dense.bias"]
    dy = torch.rand(y.shape, generator=g, dtype=torch.float32) * 2 - 1
    (y * dy.double()).sum().backward()
    # By cotrain's tensor names and layouts: the MatMul becomes a linear
    # layer named after its node, with the kernel transposed (out×in).
    grads = {"conv.weight": ps["conv.weight"].grad, "conv.bias": ps["conv.bias"].grad,
             "model.dense.MatMul.weight": ps["dense.kernel"].grad.t(), "model.dense.MatMul.bias": ps["dense.bias"].grad}
    grads = {n: g.float().flatten().tolist() for n, g in grads.items()}
    ops = sorted({n.op_type for n in nodes})
    return write("nhwc_op13", model.SerializeToString(), x, y.detach().float(), dy, grads, ops, [6, 6, 3])


def check(folder):
    """Validates cotrain's exports of the fixtures (written by
    COTRAIN_ONNX_EXPORT=FOLDER go test ./models/onnx -run TestExportStructuralForPython)
    with onnx.checker (full check, shape inference included), runs them with
    scripts/onnx_fixtures.py's evaluator and compares with PyTorch's y."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from onnx_fixtures import evaluate
    with open(os.path.join(OUT, "manifest.json")) as f:
        manifest = json.load(f)
    worst = 0.0
    for fx in manifest:
        model = onnx.load(os.path.join(folder, "struct_%s.cotrain.onnx" % fx["name"]))
        onnx.checker.check_model(model, full_check=True)
        with open(os.path.join(OUT, fx["name"] + ".json")) as f:
            g = json.load(f)
        x = np.array(g["x"], dtype=np.float32).reshape([2] + fx["input"])
        y = np.array(g["y"], dtype=np.float64).reshape(2, -1)
        got = evaluate(model, x).reshape(2, -1)
        err = float(np.abs(got - y).max() / np.abs(y).max())
        worst = max(worst, err)
        print("%-14s %s: relative error %.2g" % (fx["name"], "ok" if err <= 1e-4 else "FAIL", err))
    print("worst %.2g" % worst)
    return 0 if worst <= 1e-4 else 1


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    os.makedirs(OUT, exist_ok=True)
    manifest = []
    for name, cls, opsets, seed in [("shuffle", Shuffle, [11, 13], 10), ("se", SE, [11, 13, 17], 20), ("misc", Misc, [11, 13], 30)]:
        for op in opsets:
            manifest.append(torch_fixture("%s_op%d" % (name, op), cls, op, seed))
    manifest.append(nhwc_fixture())
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
