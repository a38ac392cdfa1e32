#!/usr/bin/python3
"""ONNX fixtures of 1-D CNNs (N×C×L inputs), with PyTorch golden values.

Run from the repository root with the system Python (PyTorch 1.13, onnx):

    /usr/bin/python3 scripts/onnx_1d_fixtures.py
    COTRAIN_ONNX_EXPORT=DIR go test ./models/onnx -run TestExport1DForPython
    /usr/bin/python3 scripts/onnx_1d_fixtures.py check DIR

It writes models/onnx/testdata/conv1d/: per fixture NAME, NAME.onnx
(torch.onnx.export of the model in evaluation mode, as a user exports a
trained model) and NAME.json holding a batch x of 4 windows, the evaluation
output y (batch norm by its running statistics), and for one training step
(batch norm by the batch's statistics, as PyTorch's model.train()) the
output y_train, a fixed output gradient dy and the gradient of
sum(y_train * dy) with respect to every parameter ("grads", by ONNX
initializer name, which the importer keeps as the tensor name);
manifest.json lists the fixtures and their operators.
models/onnx/conv1d_test.go imports each file and checks all three to a
relative 1e-4 on the CPU (conv1d_opencl_test.go on OpenCL); Go tests never
run Python.

The references are computed in float64 from the float32 weights and input
and rounded to float32 (as scripts/golden.py does). Every fixture has a
fixed seed: a rerun rewrites identical .json files.

The model is what a user training activity recognition in PyTorch writes:
Conv1d (+ bias) → BatchNorm1d → ReLU → MaxPool1d(2) → Conv1d (stride 2, no
bias) → BatchNorm1d → ReLU → AvgPool1d(3, stride 1, padding 1) →
AdaptiveAvgPool1d(1) → flatten → Linear. Its batch norms' running statistics
are set to non-trivial values, so evaluation and training differ.
Fixtures (exported with training=TrainingMode.PRESERVE, which keeps the
batch norms as BatchNormalization nodes so that they can be fine-tuned,
except the last):
  cnn1d_op11, cnn1d_op13   input N×3×64, opsets 11 and 13
  cnn1d_nlc_op13           input N×64×3 (time-major, as a recording's rows
                           are), transposed to N×3×64 inside the model
  cnn1d_folded_op13        the default export (TrainingMode.EVAL): each
                           BatchNorm1d folded into its Conv1d; only y is
                           compared (no parameter is PyTorch's)

"check DIR" validates cotrain's exports of these fixtures with
onnx.checker (full check) and runs them as 1-D operators (evaluate1d:
torch.nn.functional's conv1d, max_pool1d, avg_pool1d, ...) against PyTorch's
y, to a relative 1e-4.
"""
import copy
import io
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from torch import nn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "models", "onnx", "testdata", "conv1d")
L = 64


class CNN1D(nn.Module):
    def __init__(self, time_major=False):
        super().__init__()
        self.time_major = time_major
        self.conv1 = nn.Conv1d(3, 8, 5, padding=2)
        self.bn1 = nn.BatchNorm1d(8)
        self.conv2 = nn.Conv1d(8, 12, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm1d(12)
        self.pool = nn.MaxPool1d(2)
        self.avg = nn.AvgPool1d(3, stride=1, padding=1)
        self.gap = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(12, 4)
        g = torch.Generator().manual_seed(7)
        for bn in (self.bn1, self.bn2):
            c = bn.num_features
            bn.running_mean.copy_(torch.rand(c, generator=g) - 0.5)
            bn.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            bn.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            bn.bias.data.copy_(torch.rand(c, generator=g) - 0.5)

    def forward(self, x):
        if self.time_major:
            x = x.transpose(1, 2)
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.avg(F.relu(self.bn2(self.conv2(x))))
        return self.fc(self.gap(x).flatten(1))


def golden(model, x, seed):
    """y (evaluation), and y_train with the float64 gradient of
    sum(y_train * dy) in training mode, all rounded to float32."""
    g = torch.Generator().manual_seed(seed + 1)
    m64 = copy.deepcopy(model).double().eval()
    with torch.no_grad():
        y = m64(x.double()).float()
    m64.train()
    yt = m64(x.double())
    dy = torch.rand(yt.shape, generator=g, dtype=torch.float32) * 2 - 1
    (yt * dy.double()).sum().backward()
    grads = {n: p.grad.float().flatten().tolist() for n, p in m64.named_parameters()}
    return y, yt.detach().float(), dy, grads


def fixture(name, opset, time_major, seed, fold=False):
    torch.manual_seed(seed)
    model = CNN1D(time_major).eval()
    x = torch.rand(4, L, 3) * 2 - 1 if time_major else torch.rand(4, 3, L) * 2 - 1
    buf = io.BytesIO()
    torch.onnx.export(model, x, buf, opset_version=opset, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      training=torch.onnx.TrainingMode.EVAL if fold else torch.onnx.TrainingMode.PRESERVE)
    raw = buf.getvalue()
    ops = sorted({n.op_type for n in onnx.load_from_string(raw).graph.node})
    y, yt, dy, grads = golden(model, x, seed)
    if fold:
        # The exporter folded each batch norm into the convolution before
        # it (new weights named onnx::Conv_N): no PyTorch parameter is the
        # imported network's, so only the evaluation output is compared.
        yt, dy, grads = torch.zeros(0), torch.zeros(0), {}
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(raw)
    fl = lambda t: [float(v) for v in t.flatten().tolist()]
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump({"x": fl(x), "y": fl(y), "y_train": fl(yt), "dy": fl(dy), "grads": grads}, f)
    return {"name": name, "input": list(x.shape[1:]), "classes": int(y.shape[1]), "ops": ops}


def evaluate1d(model, x):
    """Runs an ONNX graph of 1-D operators (those cotrain exports for a 1-D
    network) with torch.nn.functional in float64; scripts/onnx_fixtures.py's
    evaluator is 2-D only and onnx 1.12 has no reference evaluator."""
    from onnx import numpy_helper
    v = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in model.graph.initializer}
    v = {k: (t.double() if t.is_floating_point() else t) for k, t in v.items()}
    v[model.graph.input[0].name] = torch.from_numpy(x).double()
    for n in model.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in n.attribute}
        i = [v[name] if name else None for name in n.input]
        op = n.op_type
        if op == "Conv":
            assert len(a["kernel_shape"]) == 1 and a["pads"][0] == a["pads"][1]
            y = F.conv1d(i[0], i[1], i[2] if len(i) > 2 else None, a["strides"][0], a["pads"][0], a["dilations"][0], a["group"])
        elif op == "BatchNormalization":
            y = F.batch_norm(i[0], i[3], i[4], i[1], i[2], False, 0.0, a["epsilon"])
        elif op == "Relu":
            y = F.relu(i[0])
        elif op == "MaxPool":
            y = F.max_pool1d(i[0], a["kernel_shape"][0], a["strides"][0], a["pads"][0], ceil_mode=bool(a.get("ceil_mode", 0)))
        elif op == "AveragePool":
            y = F.avg_pool1d(i[0], a["kernel_shape"][0], a["strides"][0], a["pads"][0], ceil_mode=bool(a.get("ceil_mode", 0)),
                             count_include_pad=bool(a.get("count_include_pad", 0)))
        elif op == "GlobalAveragePool":
            y = i[0].mean(dim=tuple(range(2, i[0].dim())), keepdim=True)
        elif op == "Flatten":
            y = i[0].flatten(a.get("axis", 1))
        elif op == "Gemm":
            y = i[0] @ (i[1].t() if a.get("transB", 0) else i[1]) + i[2]
        elif op == "Transpose":
            y = i[0].permute(*a["perm"])
        elif op == "Reshape":
            y = i[0].reshape([d if d != 0 else i[0].shape[k] for k, d in enumerate(i[1].tolist())])
        else:
            raise ValueError("evaluate1d: operator %s" % op)
        v[n.output[0]] = y
    return v[model.graph.output[0].name].numpy()


def check(folder):
    """Validates cotrain's exports of the fixtures (written by
    COTRAIN_ONNX_EXPORT=FOLDER go test ./models/onnx -run TestExport1DForPython)
    with onnx.checker (full check, shape inference included), runs them with
    evaluate1d and compares with PyTorch's y."""
    with open(os.path.join(OUT, "manifest.json")) as f:
        manifest = json.load(f)
    worst = 0.0
    for fx in manifest:
        model = onnx.load(os.path.join(folder, "conv1d_%s.cotrain.onnx" % fx["name"]))
        onnx.checker.check_model(model, full_check=True)
        with open(os.path.join(OUT, fx["name"] + ".json")) as f:
            g = json.load(f)
        x = np.array(g["x"], dtype=np.float32).reshape([4] + fx["input"])
        y = np.array(g["y"], dtype=np.float64).reshape(4, -1)
        got = evaluate1d(model, x).reshape(4, -1)
        err = float(np.abs(got - y).max() / np.abs(y).max())
        worst = max(worst, err)
        dims = [d.dim_value or d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim]
        print("%-16s %s: input %s, relative error %.2g" % (fx["name"], "ok" if err <= 1e-4 else "FAIL", dims, err))
    print("worst %.2g" % worst)
    return 0 if worst <= 1e-4 else 1


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        return check(sys.argv[2])
    os.makedirs(OUT, exist_ok=True)
    manifest = [
        fixture("cnn1d_op11", 11, False, 50),
        fixture("cnn1d_op13", 13, False, 51),
        fixture("cnn1d_nlc_op13", 13, True, 52),
        fixture("cnn1d_folded_op13", 13, False, 53, fold=True),
    ]
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    for fx in manifest:
        print(fx["name"], fx["input"], fx["ops"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
