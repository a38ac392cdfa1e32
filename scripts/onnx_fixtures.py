#!/usr/bin/python3
"""ONNX fixtures and PyTorch parameter counts for cotrain's models.

Run from the repository root with the system Python (PyTorch 1.13, onnx):

    /usr/bin/python3 scripts/onnx_fixtures.py            # counts + fixtures
    /usr/bin/python3 scripts/onnx_fixtures.py counts     # models/testdata/param_counts.json
    /usr/bin/python3 scripts/onnx_fixtures.py fixtures   # models/onnx/testdata/
    /usr/bin/python3 scripts/onnx_fixtures.py generated  # α=0.75 and 1 MobileNets, weights by rule
    /usr/bin/python3 scripts/onnx_fixtures.py check FILE.onnx X.npy Y.npy

"counts" builds the PyTorch twins of models/alexnet.go and models/mobilenet.go
(and torchvision's AlexNet, written out here because torchvision is not
installed) and writes sum(p.numel()) per configuration; models' Go test
compares its own counts with them.

"fixtures" exports small networks with torch.onnx.export at several opsets
and writes, per fixture NAME: NAME.onnx, NAME.x.npy (a batch of 2 inputs) and
NAME.y.npy (PyTorch's eval-mode output on it, computed in float64 from the
float32 weights and rounded), plus manifest.json with what the importer
must report (folded batch norm, a final softmax that is dropped).
Batch-norm statistics are randomised so that a wrong mapping of scale,
bias, mean and variance shows.

"check" validates an ONNX file that cotrain wrote (`cotrain export`) with
onnx.checker, runs it with a small evaluator built on torch.nn.functional
(only the operators cotrain exports), and compares the result with Y.npy to a
relative 1e-4 (max |a-b| / max |b|, the metric the Go tests use).

Every fixture has a fixed seed, so a rerun rewrites identical arrays.
"""
import io
import json
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from torch import nn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIXTURES = os.path.join(ROOT, "models", "onnx", "testdata")
COUNTS = os.path.join(ROOT, "models", "testdata", "param_counts.json")


# --- The PyTorch twins of cotrain's models -----------------------------------

class LeNet5(nn.Module):
    """models/lenet.go's lenet5, flattening with view (exports Reshape) and,
    when softmax is set, ending in a Softmax as some published models do."""

    def __init__(self, classes=10, softmax=False):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)
        self.softmax = softmax

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(x.size(0), -1)
        x = self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))
        return F.softmax(x, dim=1) if self.softmax else x


class AlexNet(nn.Module):
    """torchvision.models.AlexNet (1.13), copied: torchvision is not installed."""

    def __init__(self, classes=1000):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, stride=4, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2))
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Linear(4096, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class AlexNetSmall(nn.Module):
    """models/alexnet.go's alexnet-small."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(32, 96, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(96, 192, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(192, 128, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Linear(128 * 2 * 2, 512), nn.ReLU(inplace=True),
            nn.Dropout(0.5), nn.Linear(512, 512), nn.ReLU(inplace=True), nn.Linear(512, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


MOBILENET_BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]


def mobilenet_channels(c, alpha):
    """models.MobileNetChannels: TF-slim's max(int(c*alpha), 8)."""
    return max(int(c * alpha + 1e-9), 8)


def conv_bn_relu6(cin, cout, k, stride, groups=1):
    return [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU6(inplace=True)]


class MobileNetV1(nn.Module):
    """models/mobilenet.go's mobilenet-v1 (stem stride 2) or mobilenet-small
    (stem stride 1)."""

    def __init__(self, alpha=1.0, classes=1000, stem=2):
        super().__init__()
        ch = mobilenet_channels(32, alpha)
        layers = conv_bn_relu6(3, ch, 3, stem)
        for out, stride in MOBILENET_BLOCKS:
            layers += conv_bn_relu6(ch, ch, 3, stride, groups=ch)
            nxt = mobilenet_channels(out, alpha)
            layers += conv_bn_relu6(ch, nxt, 1, 1)
            ch = nxt
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(ch, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class BasicBlock(nn.Module):
    """ResNet-18's block: two 3x3 conv+BN, identity or 1x1 conv+BN shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNetSmall(nn.Module):
    """A ResNet-18-style network for 32x32: a 3x3 stem, one BasicBlock per
    stage (16, 32, 64, 128 channels; the first keeps its identity shortcut),
    global average pooling and a linear layer."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layers = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                                    BasicBlock(32, 64, 2), BasicBlock(64, 128, 2))
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class InceptionLite(nn.Module):
    """Concat, ReLU6 (Clip), padded average pooling counting the padding,
    global average pooling and MatMul+Add: the operators the models above
    do not reach."""

    def __init__(self, classes=5):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.Conv2d(8, 4, 1)
        self.b2 = nn.Conv2d(8, 6, 3, padding=1)
        self.pool = nn.AvgPool2d(3, stride=2, padding=1)  # count_include_pad=True
        self.w = nn.Parameter(torch.randn(10, classes) * 0.3)
        self.b = nn.Parameter(torch.randn(classes) * 0.1)

    def forward(self, x):
        x = F.relu6(self.stem(x))
        x = torch.cat([F.relu(self.b1(x)), F.relu6(self.b2(x))], dim=1)
        x = torch.flatten(F.adaptive_avg_pool2d(self.pool(x), 1), 1)
        return torch.matmul(x, self.w) + self.b


# --- Parameter counts ---------------------------------------------------------

def counts():
    rows = []

    def add(model, net, classes, shape, width=0.0):
        params = sum(p.numel() for p in net.parameters())
        state = sum(b.numel() for n, b in net.named_buffers() if not n.endswith("num_batches_tracked"))
        rows.append({"model": model, "classes": classes, "input": shape, "width": width,
                     "params": params, "state": state})

    add("alexnet", AlexNet(1000), 1000, [3, 224, 224])
    add("alexnet", AlexNet(10), 10, [3, 224, 224])
    add("alexnet-small", AlexNetSmall(10), 10, [3, 32, 32])
    add("alexnet-small", AlexNetSmall(100), 100, [3, 32, 32])
    for alpha in (0.25, 0.5, 0.75, 1.0):
        add("mobilenet-v1", MobileNetV1(alpha, 1000), 1000, [3, 224, 224], alpha)
    add("mobilenet-v1", MobileNetV1(1.0, 10), 10, [3, 128, 128], 1.0)
    for alpha in (0.25, 0.5, 1.0):
        add("mobilenet-small", MobileNetV1(alpha, 10, stem=1), 10, [3, 32, 32], alpha)
    os.makedirs(os.path.dirname(COUNTS), exist_ok=True)
    with open(COUNTS, "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    for r in rows:
        print(f"{r['model']:16s} {r['input']} {r['classes']:5d} classes width {r['width']}: "
              f"{r['params']:,} params, {r['state']:,} state")


# --- ONNX fixtures ------------------------------------------------------------

def randomise_bn(net, gen):
    """Gives every batch norm distinct, non-trivial statistics and affine
    parameters (fresh ones are 0/1, which hides a swapped mapping)."""
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            with torch.no_grad():
                m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                m.bias.copy_(torch.rand(c, generator=gen) * 0.4 - 0.2)
                m.running_mean.copy_(torch.rand(c, generator=gen) - 0.5)
                m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)


FIXTURE_SPECS = [
    # name, builder, input shape, opset, export mode, what the importer must say
    ("lenet5_softmax_op9", lambda: LeNet5(10, softmax=True), [1, 28, 28], 9, "eval", {"softmax": True}),
    ("alexnet_small_op11", lambda: AlexNetSmall(10), [3, 32, 32], 11, "eval", {}),
    ("mobilenet_a025_op13", lambda: MobileNetV1(0.25, 10), [3, 32, 32], 13, "preserve", {}),
    ("mobilenet_a05_folded_op17", lambda: MobileNetV1(0.5, 10), [3, 48, 48], 17, "eval", {"folded_bn": True}),
    ("resnet_small_op13", lambda: ResNetSmall(10), [3, 32, 32], 13, "preserve", {}),
    ("mobilenet_a025_train_op9", lambda: MobileNetV1(0.25, 10), [3, 40, 40], 9, "training", {}),
    ("inception_lite_op9", lambda: InceptionLite(5), [3, 16, 16], 9, "eval", {}),
]

MODES = {"eval": torch.onnx.TrainingMode.EVAL, "preserve": torch.onnx.TrainingMode.PRESERVE,
         "training": torch.onnx.TrainingMode.TRAINING}


def fixtures():
    os.makedirs(FIXTURES, exist_ok=True)
    manifest = []
    for i, (name, build, shape, opset, mode, expect) in enumerate(FIXTURE_SPECS):
        torch.manual_seed(100 + i)
        gen = torch.Generator().manual_seed(200 + i)
        net = build()
        randomise_bn(net, gen)
        net.eval()
        x = torch.randn([2] + shape, generator=gen)
        buf = io.BytesIO()
        torch.onnx.export(net, x, buf, opset_version=opset, training=MODES[mode],
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        net.eval()  # export(TRAINING) leaves the module in training mode
        model = onnx.load_from_string(buf.getvalue())
        onnx.checker.check_model(model)
        # A training-mode export runs the module in training mode, which moves
        # the batch-norm statistics: take the values the file holds.
        state = net.state_dict()
        with torch.no_grad():
            for init in model.graph.initializer:
                if init.name in state:
                    state[init.name].copy_(torch.from_numpy(numpy_helper.to_array(init).copy()))
        with torch.no_grad():
            ref = net.double()(x.double())
            if isinstance(net, LeNet5) and net.softmax:
                net.softmax = False  # the importer drops the softmax: compare logits
                logits = net(x.double())
                net.softmax = True
            else:
                logits = ref
        net.float()
        path = os.path.join(FIXTURES, name)
        with open(path + ".onnx", "wb") as f:
            f.write(buf.getvalue())
        np.save(path + ".x.npy", x.numpy().astype("<f4"))
        np.save(path + ".y.npy", logits.numpy().astype("<f4"))
        # Parameters as the file holds them (folding changes the count).
        params = sum(int(np.prod(i.dims)) for i in model.graph.initializer
                     if i.data_type == onnx.TensorProto.FLOAT and not any(k in i.name for k in ("running_", "num_batches")))
        ops = sorted({n.op_type for n in model.graph.node})
        manifest.append({"name": name, "opset": opset, "mode": mode, "input": shape,
                         "classes": int(logits.shape[1]), "params": params, "ops": ops,
                         "softmax": expect.get("softmax", False), "folded_bn": expect.get("folded_bn", False)})
        print(f"{name}: opset {opset}, {mode}, {params:,} params, {len(buf.getvalue()):,} bytes, ops {ops}")
    with open(os.path.join(FIXTURES, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


# --- Generated-weight fixtures (large models) ------------------------------------
#
# MobileNet v1 at α=0.75 and α=1 has 1.8 M and 3.2 M parameters: 7 and 13 MB
# of float32 that git would keep forever, for a test whose point is the graph
# and the arithmetic, not the particular numbers. These fixtures therefore
# commit the ONNX file as torch.onnx.export wrote it but with the data of the
# module's parameters and buffers removed (NAME.skel.onnx, a few tens of kB),
# and the rule that produced the data, which models/onnx/generated_test.go
# implements too: it refills the file and imports the result. The inputs and
# PyTorch's outputs are committed as usual (NAME.x.npy, NAME.y.npy).
#
# The rule, for a tensor named N with dims D in fixture seed S: element i is
# drawn from splitmix64 at state (fnv1a64(N) xor S) + (i+1)·0x9E3779B97F4A7C15;
# its top 16 bits give u in [0, 65536). Then
#   N ends in "running_var":                    (0.5 + u/65536) / 4
#   D is 1-D and N ends in ".weight" (BN scale): 0.5 + u/65536
#   other 1-D tensors (biases, running means):  (u-32768)/131072
#   weights of rank >= 2 with fan-in F = prod(D[1:]):
#       (u-32768)/32768 · 2^-k · 2, with k the least integer where 4^k >= F
# Every value is exact in float32, so both sides hold the same bits. The
# small variances make each batch norm amplify by about 2, which keeps the
# activations of the random network at a scale where the logits depend on
# the input (the two samples' logits differ by about 20% of their scale)
# while float32 rounding stays small (PyTorch float32 against float64:
# 3e-6, cotrain 2.5e-6); with variances near 1 the signal dies within ten
# layers, with half as large ones rounding grows to 5e-5, too close to the
# 1e-4 the test allows.

GOLDEN = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h


def rule_values(name, dims, seed):
    n = int(np.prod(dims)) if dims else 1
    with np.errstate(over="ignore"):
        z = np.uint64((fnv1a64(name) ^ seed) & MASK64) + (np.arange(1, n + 1, dtype=np.uint64) * np.uint64(GOLDEN))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(48)).astype(np.int64)
    if name.endswith("running_var"):
        v = (0.5 + u / 65536.0) / 4.0
    elif len(dims) == 1 and name.endswith(".weight"):
        v = 0.5 + u / 65536.0
    elif len(dims) == 1:
        v = (u - 32768) / 131072.0
    else:
        fan_in = int(np.prod(dims[1:]))
        k = 0
        while 4 ** k < fan_in:
            k += 1
        v = (u - 32768) / 32768.0 * 2.0 ** (1 - k)
    out = v.astype(np.float32)
    assert np.array_equal(out.astype(np.float64), v), name  # exact in float32
    return out.reshape(dims)


GENERATED_SPECS = [
    # name, alpha, input shape, opset, seed
    ("mobilenet_a1_op15", 1.0, [3, 64, 64], 15, 1),
    ("mobilenet_a075_op11", 0.75, [3, 64, 64], 11, 2),
]


def generated():
    os.makedirs(FIXTURES, exist_ok=True)
    manifest = []
    for name, alpha, shape, opset, seed in GENERATED_SPECS:
        net = MobileNetV1(alpha, 10)
        state = net.state_dict()
        with torch.no_grad():
            for key, t in state.items():
                if key.endswith("num_batches_tracked"):
                    continue
                t.copy_(torch.from_numpy(rule_values(key, list(t.shape), seed)))
        net.eval()
        gen = torch.Generator().manual_seed(300 + seed)
        x = torch.randn([2] + shape, generator=gen)
        buf = io.BytesIO()
        torch.onnx.export(net, x, buf, opset_version=opset, training=torch.onnx.TrainingMode.PRESERVE,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        model = onnx.load_from_string(buf.getvalue())
        onnx.checker.check_model(model)
        stripped = 0
        for init in model.graph.initializer:
            if init.name not in state or init.name.endswith("num_batches_tracked"):
                continue
            got = numpy_helper.to_array(init)
            want = rule_values(init.name, list(init.dims), seed)
            if not np.array_equal(got, want):
                sys.exit(f"{name}: initializer {init.name} is not the rule's data")
            init.ClearField("raw_data")
            init.ClearField("float_data")
            stripped += got.size
        with torch.no_grad():
            y = net.double()(x.double())
        net.float()
        # Intermediate scale: the test is weak if the logits barely depend
        # on the input, so say how much they do.
        spread = float((y[0] - y[1]).abs().max() / y.abs().max())
        path = os.path.join(FIXTURES, name)
        with open(path + ".skel.onnx", "wb") as f:
            f.write(model.SerializeToString())
        np.save(path + ".x.npy", x.numpy().astype("<f4"))
        np.save(path + ".y.npy", y.numpy().astype("<f4"))
        params = sum(p.numel() for p in net.parameters())
        manifest.append({"name": name, "alpha": alpha, "opset": opset, "input": shape, "classes": 10,
                         "params": params, "seed": seed, "generated_values": stripped})
        print(f"{name}: α={alpha}, opset {opset}, {params:,} params ({stripped:,} values generated), "
              f"skeleton {os.path.getsize(path + '.skel.onnx'):,} bytes (full file {len(buf.getvalue()):,}), "
              f"logits {y.abs().max():.3g} max, samples differ by {spread:.2f} of it")
    with open(os.path.join(FIXTURES, "generated.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


# --- Checking files cotrain exported -----------------------------------------

def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def sym_pads(pads):
    if pads[0] != pads[2] or pads[1] != pads[3]:
        raise ValueError(f"asymmetric pads {pads}")
    return pads[0], pads[1]


def resize_axis(x, axis, out_len, scale, mode, coord, nearest, cubic_a=-0.75, exclude=False, antialias=False):
    """ONNX Resize along one axis, from the operator's definition (not
    PyTorch's kernels), in float64: the output position j maps to the input
    coordinate c by coord (scale is the given scale, or out/in for sizes);
    nearest reads round(c) by nearest_mode, clamped; linear blends the
    neighbours floor(c) and floor(c)+1 with the edge repeated outside;
    cubic the four from floor(c)-1 with Keys' coefficients (cubic_a), those
    outside dropped and the rest renormalised when exclude is set; linear
    with antialias at a scale below 1 blends every input within 1/scale
    with the triangle 1 - |i - c|·scale, normalised (past the ends the
    edge, or nothing when exclude is set)."""
    n = x.shape[axis]
    out = []
    for j in range(out_len):
        if coord == "half_pixel":
            c = (j + 0.5) / scale - 0.5
        elif coord == "pytorch_half_pixel":
            c = (j + 0.5) / scale - 0.5 if out_len > 1 else 0.0
        elif coord == "align_corners":
            c = j * (n - 1) / (out_len - 1) if out_len > 1 else 0.0
        elif coord == "asymmetric":
            c = j / scale
        elif coord == "tf_half_pixel_for_nn":
            c = (j + 0.5) / scale
        elif coord == "half_pixel_symmetric":
            c = n / 2 * (1 - out_len / (scale * n)) + (j + 0.5) / scale - 0.5
        else:
            raise ValueError(f"coordinate_transformation_mode {coord}")
        at = lambda i: x.narrow(axis, min(max(i, 0), n - 1), 1)
        if mode == "nearest":
            f = math.floor(c)
            i = {"floor": f, "ceil": math.ceil(c),
                 "round_prefer_floor": f if c - f == 0.5 else math.floor(c + 0.5),
                 "round_prefer_ceil": math.floor(c + 0.5)}[nearest]
            out.append(at(i))
        elif mode == "linear" and antialias and scale < 1:
            support = 1 / scale
            taps = [(i, 1 - abs(i - c) * scale) for i in range(math.floor(c - support) + 1, math.ceil(c + support))]
            taps = [(i, w) for i, w in taps if w > 0 and not (exclude and (i < 0 or i >= n))]
            total = sum(w for _, w in taps)
            out.append(sum((w / total) * at(i) for i, w in taps))
        elif mode == "linear":
            f = math.floor(c)
            out.append((1 - (c - f)) * at(f) + (c - f) * at(f + 1))
        else:
            f, A = math.floor(c), cubic_a
            r = c - f
            near = lambda t: ((A + 2) * t - (A + 3)) * t * t + 1
            far = lambda t: ((A * t - 5 * A) * t + 8 * A) * t - 4 * A
            w = [far(r + 1), near(r), near(1 - r), far(2 - r)]
            if exclude:
                w = [wk if 0 <= f - 1 + k < n else 0.0 for k, wk in enumerate(w)]
                w = [wk / sum(w) for wk in w]
            out.append(sum(wk * at(f - 1 + k) for k, wk in enumerate(w)))
    return torch.cat(out, dim=axis)


def resize(n, a, env, x):
    """Resize (opset 11 on: X, roi, scales, sizes; axes from 18) and
    Upsample (X, scales) of what cotrain exports: nearest or linear."""
    get = lambda k: a.get(k).decode() if isinstance(a.get(k), bytes) else a.get(k)
    mode = get("mode") or "nearest"
    if n.op_type == "Upsample":
        coord, nearest, scales, sizes = "asymmetric", "floor", env[n.input[1]].tolist(), None
    else:
        coord, nearest = get("coordinate_transformation_mode") or "half_pixel", get("nearest_mode") or "round_prefer_floor"
        scales = env[n.input[2]].tolist() if len(n.input) > 2 and n.input[2] else None
        sizes = [int(v) for v in env[n.input[3]]] if len(n.input) > 3 and n.input[3] else None
        if scales == []:
            scales = None
    axes = list(a.get("axes", range(x.dim())))
    for k, ax in enumerate(axes):
        ax = ax % x.dim()
        n_in = x.shape[ax]
        out_len = int(math.floor(n_in * scales[k])) if scales else sizes[k]
        scale = scales[k] if scales else out_len / n_in
        if out_len != n_in or scale != 1:
            x = resize_axis(x, ax, out_len, scale, mode, coord, nearest, a.get("cubic_coeff_a", -0.75),
                            bool(a.get("exclude_outside", 0)), bool(a.get("antialias", 0)))
    return x


def evaluate(model, x):
    """Runs the operators cotrain exports, in float64, with torch.nn.functional."""
    env = {t.name: torch.from_numpy(numpy_helper.to_array(t).astype(np.float64)) for t in model.graph.initializer}
    env[model.graph.input[0].name] = torch.from_numpy(x.astype(np.float64))
    for n in model.graph.node:
        a, ins = attrs(n), [env[i] for i in n.input if i]
        op = n.op_type
        if op == "Conv" and ins[0].dim() == 3:  # Conv1d: pads [begin, end], alike
            pads = a.get("pads", [0, 0])
            if pads[0] != pads[1]:
                raise ValueError(f"asymmetric pads {pads}")
            y = F.conv1d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a.get("strides", [1])[0], pads[0],
                         a.get("dilations", [1])[0], a.get("group", 1))
        elif op == "Conv":
            y = F.conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, tuple(a.get("strides", [1, 1])),
                         sym_pads(a.get("pads", [0] * 4)), tuple(a.get("dilations", [1, 1])), a.get("group", 1))
        elif op == "ConvTranspose" and ins[0].dim() == 3:  # ConvTranspose1d: pads [begin, end], alike
            pads = a.get("pads", [0, 0])
            if pads[0] != pads[1]:
                raise ValueError(f"asymmetric pads {pads}")
            y = F.conv_transpose1d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a.get("strides", [1])[0], pads[0],
                                   a.get("output_padding", [0])[0], a.get("group", 1), a.get("dilations", [1])[0])
        elif op == "ConvTranspose":
            y = F.conv_transpose2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, tuple(a.get("strides", [1, 1])),
                                   sym_pads(a.get("pads", [0] * 4)), tuple(a.get("output_padding", [0, 0])),
                                   a.get("group", 1), tuple(a.get("dilations", [1, 1])))
        elif op == "MatMul":
            y = torch.matmul(ins[0], ins[1])
        elif op == "Reciprocal":
            y = 1 / ins[0]
        elif op == "Shape":
            y = torch.tensor(ins[0].shape, dtype=torch.int64)
        elif op == "Gather":
            y = torch.index_select(ins[0], a.get("axis", 0), ins[1].long().flatten()).reshape(
                ins[0].shape[:a.get("axis", 0)] + ins[1].shape + ins[0].shape[a.get("axis", 0) + 1:])
        elif op == "Expand":  # numpy broadcasting of the input and the shape
            y = ins[0].expand(torch.broadcast_shapes(ins[0].shape, tuple(int(v) for v in ins[1])))
        elif op == "Pow":
            y = ins[0] ** ins[1]
        elif op == "Sqrt":
            y = torch.sqrt(ins[0])
        elif op == "Erf":
            y = torch.erf(ins[0])
        elif op == "LayerNormalization":  # over the axes from axis (default -1)
            ax = a.get("axis", -1) % ins[0].dim()
            y = F.layer_norm(ins[0], ins[0].shape[ax:], ins[1], ins[2] if len(ins) > 2 else None, a.get("epsilon", 1e-5))
        elif op == "Tile":
            y = ins[0].repeat(*[int(v) for v in env[n.input[1]]])
        elif op in ("MaxPool", "AveragePool"):
            # A 1-D pool (N×C×L) as the 2-D one of a 1×k window.
            one_d = ins[0].dim() == 3
            lift = (lambda v: [1] + list(v)) if one_d else list
            pads = a.get("pads", [0] * (2 if one_d else 4))
            pads = [0, pads[0], 0, pads[1]] if one_d else pads
            k, s, p = tuple(lift(a["kernel_shape"])), tuple(lift(a.get("strides", [1] * len(a["kernel_shape"])))), sym_pads(pads)
            d = tuple(lift(a.get("dilations", [1] * len(a["kernel_shape"]))))
            ceil = bool(a.get("ceil_mode", 0))
            x = ins[0].unsqueeze(2) if one_d else ins[0]
            if op == "MaxPool":
                y = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil)
            elif d != (1, 1):
                # PyTorch has no dilated average pooling: pool_torch.py's definition.
                from pool_torch import avg_pool
                y = avg_pool(x, k, s, p, d, ceil, bool(a.get("count_include_pad", 0)))
            else:
                y = F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=bool(a.get("count_include_pad", 0)))
            y = y.squeeze(2) if one_d else y
        elif op == "GlobalAveragePool":
            y = ins[0].mean(dim=(2, 3), keepdim=True)
        elif op == "Gemm":
            A = ins[0].t() if a.get("transA", 0) else ins[0]
            B = ins[1].t() if a.get("transB", 0) else ins[1]
            y = a.get("alpha", 1.0) * A @ B + (a.get("beta", 1.0) * ins[2] if len(ins) > 2 else 0)
        elif op == "Relu":
            y = F.relu(ins[0])
        elif op == "Clip":
            lo = float(env[n.input[1]]) if len(n.input) > 1 and n.input[1] else None
            hi = float(env[n.input[2]]) if len(n.input) > 2 and n.input[2] else None
            y = ins[0].clamp(lo, hi)
        elif op == "Sigmoid":
            y = torch.sigmoid(ins[0])
        elif op == "Tanh":
            y = torch.tanh(ins[0])
        elif op == "HardSigmoid":
            y = (a.get("alpha", 0.2) * ins[0] + a.get("beta", 0.5)).clamp(0, 1)
        elif op == "HardSwish":
            y = F.hardswish(ins[0])
        elif op == "LeakyRelu":
            y = F.leaky_relu(ins[0], a.get("alpha", 0.01))
        elif op == "Softmax":  # cotrain writes opset 14: one axis
            y = torch.softmax(ins[0], a.get("axis", -1))
        elif op == "Reshape":  # 0 copies the dimension, -1 is inferred
            shape = [int(v) for v in env[n.input[1]]]
            shape = [ins[0].shape[i] if v == 0 else v for i, v in enumerate(shape)]
            y = ins[0].reshape(shape)
        elif op == "BatchNormalization":
            y = F.batch_norm(ins[0], ins[3], ins[4], ins[1], ins[2], False, 0.0, a.get("epsilon", 1e-5))
        elif op == "Flatten":
            y = torch.flatten(ins[0], a.get("axis", 1))
        elif op == "Identity":
            y = ins[0]
        elif op == "Add":
            y = ins[0] + ins[1]
        elif op == "Mul":  # numpy broadcasting, as torch's
            y = ins[0] * ins[1]
        elif op == "Sub":
            y = ins[0] - ins[1]
        elif op == "Div":
            y = ins[0] / ins[1]
        elif op == "Concat":
            y = torch.cat(ins, dim=a["axis"])
        elif op == "Transpose":
            y = ins[0].permute(*a["perm"])
        elif op == "Slice":  # cotrain writes every axis with positive steps
            y = ins[0]
            starts, ends, axes, steps = ([int(v) for v in env[i]] for i in n.input[1:5])
            for s0, e0, ax, st in zip(starts, ends, axes, steps):
                y = y.narrow(ax, s0, e0 - s0)[(slice(None),) * ax + (slice(None, None, st),)]
        elif op == "Pad":  # [begins..., ends...] over every axis; a constant (input 2), reflect or edge
            pads = [int(v) for v in env[n.input[1]]]
            r = len(pads) // 2
            mode = a.get("mode", b"constant")
            mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}[
                mode.decode() if isinstance(mode, bytes) else mode]
            tp = [p for k in reversed(range(r)) for p in (pads[k], pads[r + k])]  # last axis first
            while len(tp) > 2 and tp[-2:] == [0, 0]:  # torch pads the trailing axes only
                tp = tp[:-2]
            value = float(env[n.input[2]]) if len(n.input) > 2 and n.input[2] else 0.0
            y = F.pad(ins[0], tp, mode=mode, value=value) if mode == "constant" else F.pad(ins[0], tp, mode=mode)
        elif op in ("Resize", "Upsample"):
            y = resize(n, a, env, ins[0])
        elif op == "Shape":
            y = torch.tensor(ins[0].shape, dtype=torch.float64)
        elif op == "ReduceMean":
            y = ins[0].mean(dim=tuple(a["axes"]), keepdim=bool(a.get("keepdims", 1)))
        elif op == "ReduceSum":  # axes as input from opset 13
            y = ins[0].sum(dim=tuple(int(v) for v in env[n.input[1]]), keepdim=bool(a.get("keepdims", 1)))
        else:
            raise ValueError(f"operator {op} (node {n.name}) is not one cotrain exports")
        env[n.output[0]] = y
    return env[model.graph.output[0].name].numpy()


def check(path, xpath, ypath):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    x, want = np.load(xpath), np.load(ypath).astype(np.float64)
    got = evaluate(model, x)
    if got.shape != want.shape:
        sys.exit(f"{path}: output shape {got.shape}, want {want.shape}")
    rel = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    ops = sorted({n.op_type for n in model.graph.node})
    print(f"{path}: checker ok, opset {model.opset_import[0].version}, ops {ops}, max rel err {rel:.2e}")
    if not rel <= 1e-4:
        sys.exit(f"{path}: relative error {rel:.3g} > 1e-4")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what in ("all", "counts"):
        counts()
    if what in ("all", "fixtures"):
        fixtures()
    if what in ("all", "generated"):
        generated()
    if what == "check":
        if len(sys.argv) != 5:
            sys.exit("usage: onnx_fixtures.py check FILE.onnx X.npy Y.npy")
        check(*sys.argv[2:5])
