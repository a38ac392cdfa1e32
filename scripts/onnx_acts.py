#!/usr/bin/python3
"""ONNX fixtures for the activation operators, and the mobile-blocks model.

Run from the repository root with the Python that has PyTorch 1.13:

    /usr/bin/python3 scripts/onnx_acts.py            # all three
    /usr/bin/python3 scripts/onnx_acts.py acts
    /usr/bin/python3 scripts/onnx_acts.py mobile
    /usr/bin/python3 scripts/onnx_acts.py unary

acts: small networks of Sigmoid, Tanh, LeakyReLU, Hardswish, Hardsigmoid,
SiLU, ReLU6, clamp with one or two bounds, Softmax inside the graph, ELU, SELU,
Softplus, Softsign, Neg, Abs, Sqrt, Reciprocal, Exp, Pow, GELU (Erf), PReLU,
LogSoftmax, LayerNorm, InstanceNorm and GroupNorm, exported by
torch.onnx.export at the opsets where PyTorch writes them differently (Clip's
bounds as attributes at opset 9, as inputs from 11; Hardswish as
x*HardSigmoid(x) before opset 14; a Softmax over a non-last axis as
Transpose/Softmax/Transpose before 13). Writes models/onnx/testdata/acts/:
NAME.onnx, NAME.x.npy (2 inputs), NAME.y.npy (the eval-mode output, computed
in float64 from the float32 weights and rounded) and acts.json, which lists
per fixture the cotrain layer kinds the import must produce and those it
must not (a fused Hardswish leaves no Mul). The fixtures of issue 27's
operators also get NAME.json: a fixed output gradient and PyTorch's gradient
of every parameter by autograd.

unary: gpu/gputest/testdata/unary_torch.json, every entry of gpu/ops.go's
operator table as PyTorch computes it (output and input gradient), which
gputest.Conformance checks every backend against.

mobile: the small network of modern mobile blocks that the fine-tuning
tests use (MobileBlocks below: hard-swish, squeeze-excitation with sigmoid
and hard-sigmoid gates, a ShuffleNet-style unit with a concat of branches
and a channel shuffle), input 3x32x32, 5 classes, batch norm kept
(TrainingMode.PRESERVE, so it can be fine-tuned), opset 13. Writes
models/onnx/testdata/mobile_blocks.onnx, .x.npy, .y.npy (4 inputs).

Every fixture has a fixed seed, so a rerun rewrites identical arrays.
"""

import io
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

ACTS = os.path.join("models", "onnx", "testdata", "acts")
MOBILE = os.path.join("models", "onnx", "testdata", "mobile_blocks")


class Chain(nn.Module):
    """conv 3x3 (pad 1) -> act, for each act, then global average pool and a
    linear layer to 4 classes."""

    def __init__(self, acts, width=6):
        super().__init__()
        self.convs = nn.ModuleList()
        c = 3
        for _ in acts:
            self.convs.append(nn.Conv2d(c, width, 3, padding=1))
            c = width
        self.acts = acts
        self.fc = nn.Linear(width, 4)

    def forward(self, x):
        for conv, act in zip(self.convs, self.acts):
            x = act(conv(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class SoftmaxNet(nn.Module):
    """Softmax inside the graph: over the channels (opset 13 only: before,
    PyTorch wraps it in transposes), over the width (the last axis, a plain
    Softmax at every opset), and over a vector between two linear layers."""

    def __init__(self, channels):
        super().__init__()
        self.channels = channels
        self.c1 = nn.Conv2d(3, 5, 3, padding=1)
        self.c2 = nn.Conv2d(5, 4, 3, padding=1)
        self.fc1 = nn.Linear(4 * 8 * 8, 6)
        self.fc2 = nn.Linear(6, 4)

    def forward(self, x):
        x = self.c1(x)
        if self.channels:
            x = torch.softmax(x, 1)
        x = torch.softmax(self.c2(x), -1)
        return self.fc2(torch.softmax(self.fc1(x.flatten(1)), 1))


def prelu_chain():
    """PReLU per channel and shared, with random slopes (some negative)."""
    net = Chain([nn.PReLU(6), nn.PReLU(), nn.PReLU(6)])
    with torch.no_grad():
        for a in net.acts:
            a.weight.copy_(torch.rand(a.weight.shape) * 1.2 - 0.4)
    # Chain keeps acts in a plain list: register them so that their slopes
    # are parameters of the network (exported, and given gradients).
    net.prelus = nn.ModuleList(net.acts)
    return net


def name_slopes(model):
    """Names the slope initializer of the i-th PRelu node prelus.i.weight,
    its parameter's name in PyTorch (the exporter folds the slope's reshape
    into a constant named onnx::PRelu_N), so that the gradient golden's
    names are the imported tensors'."""
    inits = {t.name: t for t in model.graph.initializer}
    for i, n in enumerate(x for x in model.graph.node if x.op_type == "PRelu"):
        new = f"prelus.{i}.weight"
        inits[n.input[1]].name = new
        n.input[1] = new
    onnx.checker.check_model(model)
    return model.SerializeToString(), model


class LayerNormNet(nn.Module):
    """nn.LayerNorm over the last axis and over C×H×W, with random affine
    parameters, then a linear head (opset 17: LayerNormalization)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.ln1 = nn.LayerNorm(8)
        self.c2 = nn.Conv2d(6, 6, 3, padding=1)
        self.ln2 = nn.LayerNorm([6, 8, 8])
        self.fc = nn.Linear(6, 4)
        with torch.no_grad():
            for ln in (self.ln1, self.ln2):
                ln.weight.copy_(torch.rand(ln.weight.shape) + 0.5)
                ln.bias.copy_(torch.rand(ln.bias.shape) - 0.5)

    def forward(self, x):
        x = F.relu(self.ln1(self.c1(x)))
        x = self.ln2(self.c2(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class InstanceNormNet(nn.Module):
    """nn.InstanceNorm2d with affine parameters (ONNX InstanceNormalization),
    random ones."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.inorm = nn.InstanceNorm2d(6, affine=True)
        self.fc = nn.Linear(6, 4)
        with torch.no_grad():
            self.inorm.weight.copy_(torch.rand(6) + 0.5)
            self.inorm.bias.copy_(torch.rand(6) - 0.5)

    def forward(self, x):
        x = F.relu(self.inorm(self.c1(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class GroupNormNet(nn.Module):
    """nn.GroupNorm(2, 6), which PyTorch 1.13 writes as a Reshape to
    N×2×(3·H·W), an InstanceNormalization and a Reshape back, then its affine
    parameters as a Mul and an Add of constants."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.gn = nn.GroupNorm(2, 6)
        self.fc = nn.Linear(6, 4)
        with torch.no_grad():
            self.gn.weight.copy_(torch.rand(6) + 0.5)
            self.gn.bias.copy_(torch.rand(6) - 0.5)

    def forward(self, x):
        x = F.relu(self.gn(self.c1(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class LogSoftmaxNet(nn.Module):
    """A LogSoftmax over the channels inside the graph and one at the end
    (dropped by the import: the network outputs the logits, which logits()
    returns for the golden)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 5, 3, padding=1)
        self.c2 = nn.Conv2d(5, 6, 3, padding=1)
        self.fc = nn.Linear(6, 4)

    def logits(self, x):
        x = F.log_softmax(self.c1(x), 1)
        return self.fc(F.adaptive_avg_pool2d(self.c2(x), 1).flatten(1))

    def forward(self, x):
        return F.log_softmax(self.logits(x), 1)


ACT_SPECS = [
    # name, builder, opset, kinds the import must produce, kinds it must not
    ("smooth_op11", lambda: Chain([torch.sigmoid, torch.tanh, nn.LeakyReLU(0.1), nn.LeakyReLU(-0.2)]), 11,
     ["sigmoid", "tanh", "leakyrelu"], []),
    ("smooth_op13", lambda: Chain([torch.sigmoid, torch.tanh, nn.LeakyReLU(0.1), nn.LeakyReLU(-0.2)]), 13,
     ["sigmoid", "tanh", "leakyrelu"], []),
    ("hard_op11", lambda: Chain([nn.Hardswish(), nn.Hardsigmoid(), nn.ReLU6(), nn.Hardswish()]), 11,
     ["hardswish", "hardsigmoid", "relu6"], ["binary"]),
    ("hard_op13", lambda: Chain([nn.Hardswish(), nn.Hardsigmoid(), nn.ReLU6(), nn.Hardswish()]), 13,
     ["hardswish", "hardsigmoid", "relu6"], ["binary"]),
    ("hard_op14", lambda: Chain([nn.Hardswish(), nn.Hardsigmoid(), nn.ReLU6(), nn.Hardswish()]), 14,
     ["hardswish", "hardsigmoid", "relu6"], ["binary"]),
    ("clip_op9", lambda: Chain([lambda x: torch.clamp(x, -1, 2), lambda x: torch.clamp(x, min=-0.5),
                                lambda x: torch.clamp(x, max=0.7), lambda x: torch.clamp(x, 0, 6)]), 9,
     ["clip", "relu6"], []),
    ("clip_op11", lambda: Chain([lambda x: torch.clamp(x, -1, 2), lambda x: torch.clamp(x, min=-0.5),
                                 lambda x: torch.clamp(x, max=0.7), lambda x: torch.clamp(x, 0, 6)]), 11,
     ["clip", "relu6"], []),
    ("clip_op13", lambda: Chain([lambda x: torch.clamp(x, -1, 2), lambda x: torch.clamp(x, min=-0.5),
                                 lambda x: torch.clamp(x, max=0.7), lambda x: torch.clamp(x, 0, 6)]), 13,
     ["clip", "relu6"], []),
    ("softmax_op11", lambda: SoftmaxNet(False), 11, ["softmax"], []),
    ("softmax_op13", lambda: SoftmaxNet(True), 13, ["softmax"], []),
    # SiLU is x*Sigmoid(x) at every opset: one silu layer, no Mul.
    ("silu_op11", lambda: Chain([nn.SiLU(), torch.sigmoid, nn.SiLU()]), 11, ["silu", "sigmoid"], ["binary"]),
    ("silu_op13", lambda: Chain([nn.SiLU(), torch.sigmoid, nn.SiLU()]), 13, ["silu", "sigmoid"], ["binary"]),
    # Issue 27's elementwise operators (one entry each of gpu/ops.go's table).
    # These fixtures also carry NAME.json: a fixed output gradient and
    # PyTorch's gradient of every parameter, by autograd (see grads below).
    ("smooth27_op9", lambda: Chain([nn.ELU(0.5), nn.SELU(), nn.Softplus(), nn.Softsign()]), 9,
     ["elu", "selu", "softplus", "abs", "binary"], []),
    ("smooth27_op13", lambda: Chain([nn.ELU(), nn.SELU(), nn.Softplus(), nn.Softsign()]), 13,
     ["elu", "selu", "softplus", "abs", "binary"], []),
    ("math27_op13", lambda: Chain([lambda x: -x, lambda x: torch.sqrt(torch.abs(x) + 0.1),
                                   lambda x: torch.reciprocal(torch.abs(x) + 1), lambda x: torch.exp(-torch.abs(x))]), 13,
     ["neg", "abs", "sqrt", "reciprocal", "exp"], []),
    ("pow27_op13", lambda: Chain([lambda x: x ** 2, lambda x: torch.pow(torch.abs(x) + 0.5, 1.5),
                                  lambda x: torch.pow(torch.abs(x) + 1, -0.5), lambda x: x ** 3]), 13,
     ["pow", "abs"], []),
    # GELU: x·0.5·(1 + Erf(x/√2)) at opset 13, the Erf an erf layer, the rest
    # binary layers.
    ("gelu_op13", lambda: Chain([nn.GELU(), nn.GELU()]), 13, ["erf", "binary"], []),
    ("prelu_op9", prelu_chain, 9, ["prelu"], []),
    ("prelu_op13", prelu_chain, 13, ["prelu"], []),
    ("logsoftmax_op11", LogSoftmaxNet, 11, ["softmax", "log"], []),
    ("logsoftmax_op13", LogSoftmaxNet, 13, ["softmax", "log"], []),
    ("layernorm_op17", LayerNormNet, 17, ["layernorm"], []),
    ("instancenorm_op13", InstanceNormNet, 13, ["groupnorm"], []),
    ("groupnorm_op13", GroupNormNet, 13, ["groupnorm", "reshape"], []),
]

# The fixtures from which a gradient golden is written too.
GRADS = {"smooth27_op9", "smooth27_op13", "math27_op13", "pow27_op13", "gelu_op13", "prelu_op9", "prelu_op13",
         "logsoftmax_op11", "logsoftmax_op13", "layernorm_op17", "instancenorm_op13"}


def export(net, x, opset, training=torch.onnx.TrainingMode.EVAL):
    buf = io.BytesIO()
    torch.onnx.export(net, x, buf, opset_version=opset, training=training,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    net.eval()
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    return buf.getvalue(), model


def save(path, raw, x, y):
    with open(path + ".onnx", "wb") as f:
        f.write(raw)
    np.save(path + ".x.npy", x.numpy().astype("<f4"))
    np.save(path + ".y.npy", y.numpy().astype("<f4"))


def acts():
    os.makedirs(ACTS, exist_ok=True)
    manifest = []
    for i, (name, build, opset, kinds, absent) in enumerate(ACT_SPECS):
        torch.manual_seed(300 + i)
        gen = torch.Generator().manual_seed(400 + i)
        net = build().eval()
        # Inputs large enough to reach every piece of the piecewise kinds.
        x = torch.randn([2, 3, 8, 8], generator=gen) * 3
        raw, model = export(net, x, opset)
        if hasattr(net, "prelus"):
            raw, model = name_slopes(model)
        with torch.no_grad():
            y = getattr(net.double(), "logits", net)(x.double())  # the logits where a final LogSoftmax is dropped
        net.float()
        save(os.path.join(ACTS, name), raw, x, y)
        if name in GRADS:
            grads(net, x, os.path.join(ACTS, name + ".json"), gen)
        ops = sorted({n.op_type for n in model.graph.node})
        manifest.append({"name": name, "opset": opset, "input": [3, 8, 8], "classes": 4, "ops": ops,
                         "kinds": kinds, "absent": absent})
        print(f"{name}: opset {opset}, {len(raw):,} bytes, ops {ops}")
    with open(os.path.join(ACTS, "acts.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def grads(net, x, path, gen):
    """Writes path: the input x, a fixed output gradient dy, the output y and
    the gradient of sum(y·dy) for every parameter by autograd, in float64
    from the float32 data (rounded), by the parameter's name (the ONNX
    initializer's, which the import keeps)."""
    net = net.double()
    dy = torch.randn([x.shape[0], 4], generator=gen)
    y = getattr(net, "logits", net)(x.double())
    (y * dy.double()).sum().backward()
    flat = lambda t: [float(v) for v in t.detach().float().flatten()]
    out = {"x": flat(x), "dy": flat(dy), "y": flat(y),
           "grads": {k: flat(p.grad) for k, p in net.named_parameters()}}
    net.float()
    with open(path, "w") as fh:
        json.dump(out, fh)


# The operator table's entries as PyTorch computes them (gpu/ops.go):
# cotrain kind, parameters, the PyTorch function.
UNARY = [
    ("relu", [], F.relu),
    ("relu6", [], F.relu6),
    ("sigmoid", [], torch.sigmoid),
    ("hardsigmoid", [1 / 6, 0.5], F.hardsigmoid),
    # ONNX's default: hardsigmoid(1.2x) = clamp(0.2x + 0.5, 0, 1), with
    # hardsigmoid's gradient (0 at the bounds; clamp's would be 1 there).
    ("hardsigmoid", [0.2, 0.5], lambda x: F.hardsigmoid(1.2 * x)),
    ("hardswish", [], F.hardswish),
    ("tanh", [], torch.tanh),
    ("leakyrelu", [0.01], lambda x: F.leaky_relu(x, 0.01)),
    ("leakyrelu", [-0.5], lambda x: F.leaky_relu(x, -0.5)),
    ("clip", [-1, 2], lambda x: F.hardtanh(x, -1, 2)),  # clamp's gradient would be 1 at the bounds
    ("silu", [], F.silu),
    ("elu", [1], F.elu),
    ("elu", [0.5], lambda x: F.elu(x, 0.5)),
    ("selu", [1.67326319217681884765625, 1.05070102214813232421875], F.selu),
    ("softplus", [], F.softplus),
    ("softsign", [], F.softsign),
    ("exp", [], torch.exp),
    ("neg", [], torch.neg),
    ("abs", [], torch.abs),
    ("sqrt", [], torch.sqrt),
    ("reciprocal", [], torch.reciprocal),
    ("erf", [], torch.erf),
    ("pow", [2], lambda x: torch.pow(x, 2)),
    ("pow", [0.5], lambda x: torch.pow(x, 0.5)),
    ("pow", [-1.5], lambda x: torch.pow(x, -1.5)),
    ("log", [], torch.log),
    ("gelu", [], F.gelu),
]

# Defined for x > 0 only (gpu.UnaryOp.Positive).
POSITIVE = {"sqrt", "pow", "log"}


def unary():
    """gpu/gputest/testdata/unary_torch.json: for every UNARY entry, inputs x
    (a grid through the kinks and random values), a random output gradient
    dy, and PyTorch's float32 output y and input gradient dx (autograd),
    which gputest.Conformance checks every backend against."""
    gen = torch.Generator().manual_seed(27)
    out = []
    for kind, params, fn in UNARY:
        x = torch.cat([torch.linspace(-7, 7, 57), torch.tensor([-3.0, 0.0, 3.0, 6.0, 20.5, -20.5]),
                       torch.randn(200, generator=gen) * 4])
        if kind in POSITIVE:
            x = x.abs() + 0.1
        if kind == "reciprocal":
            x = torch.where(x.abs() < 0.1, x + 0.2, x)
        if kind == "hardswish":
            # At x = 3 PyTorch's own kernels disagree: the scalar one gives
            # x/3 + 0.5 (cotrain's), the vectorised one 1.
            x = x[x != 3]
        dy = torch.randn(x.shape, generator=gen)
        xv = x.clone().requires_grad_()
        y = fn(xv)
        y.backward(dy)
        out.append({"kind": kind, "params": [float(v) for v in params], "x": x.tolist(), "dy": dy.tolist(),
                    "y": y.detach().tolist(), "dx": xv.grad.tolist()})
    path = os.path.join("gpu", "gputest", "testdata", "unary_torch.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(out, fh)
        fh.write("\n")
    print(f"{path}: {len(out)} operators")


# ---------------------------------------------------------------- mobile blocks


class ConvBN(nn.Sequential):
    def __init__(self, cin, cout, k=1, stride=1, groups=1, act=None):
        layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act is not None:
            layers.append(act)
        super().__init__(*layers)


class SqueezeExcite(nn.Module):
    """MobileNetV3's squeeze-excitation: a per-channel gate from the global
    average, through a bottleneck, multiplied into the input."""

    def __init__(self, c, squeeze, gate):
        super().__init__()
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)
        self.gate = gate

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = self.gate(self.fc2(F.relu(self.fc1(s))))
        return x * s


class InvertedResidual(nn.Module):
    """MobileNetV3 block: expand, depthwise, squeeze-excite, project, skip."""

    def __init__(self, c, expand, gate):
        super().__init__()
        self.expand = ConvBN(c, expand, act=nn.Hardswish())
        self.dw = ConvBN(expand, expand, 3, groups=expand, act=nn.Hardswish())
        self.se = SqueezeExcite(expand, expand // 4, gate)
        self.project = ConvBN(expand, c)

    def forward(self, x):
        return x + self.project(self.se(self.dw(self.expand(x))))


def channel_shuffle(x, groups):
    # torchvision's ShuffleNetV2 code, as users write it.
    batchsize, num_channels, height, width = x.size()
    x = x.view(batchsize, groups, num_channels // groups, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, -1, height, width)


class ShuffleDown(nn.Module):
    """ShuffleNetV2's stride-2 unit: two branches concatenated, then shuffled."""

    def __init__(self, cin, branch):
        super().__init__()
        self.b1 = nn.Sequential(ConvBN(cin, cin, 3, 2, groups=cin), ConvBN(cin, branch, act=nn.ReLU()))
        self.b2 = nn.Sequential(ConvBN(cin, branch, act=nn.ReLU()), ConvBN(branch, branch, 3, 2, groups=branch),
                                ConvBN(branch, branch, act=nn.ReLU()))

    def forward(self, x):
        return channel_shuffle(torch.cat([self.b1(x), self.b2(x)], 1), 2)


class MobileBlocks(nn.Module):
    """3x32x32 -> 5 classes, 11k parameters."""

    def __init__(self, classes=5):
        super().__init__()
        self.stem = ConvBN(3, 16, 3, 2, act=nn.Hardswish())      # 16x16x16
        self.block1 = InvertedResidual(16, 32, nn.Sigmoid())       # 16x16x16
        self.down = ShuffleDown(16, 16)                            # 32x8x8
        self.block2 = InvertedResidual(32, 48, nn.Hardsigmoid())   # 32x8x8
        self.head = ConvBN(32, 64, act=nn.Hardswish())             # 64x8x8
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.head(self.block2(self.down(self.block1(self.stem(x)))))
        return self.fc(self.drop(F.adaptive_avg_pool2d(x, 1).flatten(1)))


def mobile():
    torch.manual_seed(500)
    gen = torch.Generator().manual_seed(501)
    net = MobileBlocks()
    # Non-trivial batch-norm statistics and affine parameters, so that a
    # wrong mapping of them shows in the logits.
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                m.bias.copy_(torch.rand(c, generator=gen) * 0.4 - 0.2)
                m.running_mean.copy_(torch.rand(c, generator=gen) - 0.5)
                m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
    net.eval()
    x = torch.randn([4, 3, 32, 32], generator=gen)
    raw, model = export(net, x, 13, torch.onnx.TrainingMode.PRESERVE)
    with torch.no_grad():
        y = net.double()(x.double())
    net.float()
    save(MOBILE, raw, x, y)
    params = sum(p.numel() for p in net.parameters())
    ops = sorted({n.op_type for n in model.graph.node})
    print(f"mobile_blocks: opset 13, {params:,} params, {len(raw):,} bytes, ops {ops}")


def main():
    torch.set_num_threads(1)
    what = sys.argv[1:] or ["acts", "mobile", "unary"]
    for w in what:
        {"acts": acts, "mobile": mobile, "unary": unary}[w]()


if __name__ == "__main__":
    main()
