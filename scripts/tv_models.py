#!/usr/bin/python3
"""torchvision's ResNet-18 and MobileNet v2 written with plain torch.nn, for
the fine-tuning comparisons (issue 29) on machines without torchvision.

    /usr/bin/python3 scripts/tv_models.py export DIR [--size 96] [--classes 3] [--torchvision]

writes DIR/resnet18.onnx and DIR/mobilenet_v2.onnx: random weights under a
fixed seed, initialised as torchvision initialises them, batch-norm
statistics randomised, exported by torch.onnx.export at opset 13 in
TrainingMode.PRESERVE (the model in eval mode, batch norm kept as
BatchNormalization nodes, as for fine-tuning; the default EVAL export would
fold it into the convolutions, and a fine-tuning run would then train a
different network from PyTorch's), batch dynamic, input 3xSIZExSIZE.
--torchvision exports torchvision's own models instead (the device machine,
PyTorch 2.x: the TorchScript exporter, dynamo=False, which writes one
file as 1.13 does). The files are tens of MB; keep them out of git (scripts/compare_cpu.sh
writes them under .dev/, which .gitignore lists).

The architectures are torchvision 0.14's, module for module and in the same
parameter order (torchvision.models.resnet18(), mobilenet_v2() at width
1.0): `check` compares the state_dict names and shapes with torchvision's
where torchvision is installed (the device machine), and prints the
parameter counts (ResNet-18 11,689,512 and MobileNet v2 3,504,872 with
1000 classes, torchvision's documented figures).

compare_torch.py imports this module for the PyTorch side of the
comparison.
"""
import argparse
import inspect
import os
import sys

import torch
import torch.nn as nn


def _make_divisible(v, divisor, min_value=None):
    # torchvision.models._utils._make_divisible
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class Conv2dNormActivation(nn.Sequential):
    """torchvision.ops.misc.Conv2dNormActivation with BatchNorm2d and ReLU6."""

    def __init__(self, cin, cout, kernel_size=3, stride=1, groups=1):
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2d(cin, cout, kernel_size, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden, kernel_size=1))
        layers.extend([
            Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        ])
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision.models.mobilenet_v2(width_mult=1.0)."""

    def __init__(self, num_classes=1000, width_mult=1.0, round_nearest=8, dropout=0.2):
        super().__init__()
        input_channel, last_channel = 32, 1280
        setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2],
                   [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(3, input_channel, stride=2)]
        for t, c, n, s in setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, t))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.classifier(x)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """torchvision.models.resnet18()."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, 2)
        self.layer2 = self._make_layer(128, 2, stride=2)
        self.layer3 = self._make_layer(256, 2, stride=2)
        self.layer4 = self._make_layer(512, 2, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


MODELS = {"resnet18": ResNet18, "mobilenet_v2": MobileNetV2}


def build(name, classes, torchvision=False):
    """The model by name: torchvision's own with torchvision set, else the
    plain definition above."""
    if torchvision:
        import torchvision.models as tvm
        return getattr(tvm, name)(num_classes=classes)
    return MODELS[name](num_classes=classes)


def randomise_bn(model, gen):
    """Non-trivial running statistics, so that an import that ignored or
    misplaced them would show."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) * 0.5 + 0.75)


def export(out, size, classes, torchvision=False):
    os.makedirs(out, exist_ok=True)
    # PyTorch 2.x's default exporter is the dynamo one; the TorchScript
    # exporter (dynamo=False) writes what PyTorch 1.13 writes, in one file.
    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    for name in MODELS:
        torch.manual_seed(29)
        m = build(name, classes, torchvision)
        with torch.no_grad():
            randomise_bn(m, torch.Generator().manual_seed(29))
        m.eval()
        x = torch.randn(2, 3, size, size)
        path = os.path.join(out, name + ".onnx")
        torch.onnx.export(m, x, path, opset_version=13, training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=False, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, **kw)
        print(f"{path}: {sum(p.numel() for p in m.parameters())} parameters, input 3x{size}x{size}", file=sys.stderr)


def check():
    for name in MODELS:
        ours = build(name, 1000)
        print(f"{name}: {sum(p.numel() for p in ours.parameters())} parameters")
        try:
            theirs = build(name, 1000, torchvision=True)
        except ImportError:
            continue
        a = [(k, tuple(v.shape)) for k, v in ours.state_dict().items()]
        b = [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
        print(f"  same state_dict names and shapes as torchvision's: {a == b}")
        if a != b:
            sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["export", "check"])
    ap.add_argument("dir", nargs="?", default=".dev/onnx")
    ap.add_argument("--size", type=int, default=96)
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--torchvision", action="store_true", help="export torchvision's own models (where it is installed)")
    a = ap.parse_args()
    if a.cmd == "export":
        export(a.dir, a.size, a.classes, a.torchvision)
    else:
        check()


if __name__ == "__main__":
    main()
