#!/usr/bin/python3
"""Export well-known CNN families with random weights for the ONNX import check.

Run from the repository root with the Python that has PyTorch 1.13 and
torchvision 0.14 (Debian: python3-torch, python3-torchvision):

    /usr/bin/python3 scripts/onnx_zoo.py [DIR] [NAME...]

DIR defaults to /tmp/cotrain-onnx-zoo; the files are large (VGG-11 alone is
over 500 MB) and are not committed. For each model it writes DIR/NAME.onnx
(torch.onnx.export, eval mode, opset 13 unless the table says otherwise,
batch dynamic, batch norm folded into the convolutions as the exporter does
by default; two entries keep it, TrainingMode.PRESERVE, at opsets 11 and 17), DIR/NAME.x.npy (2 random 3x224x224 inputs, 299x299 for
Inception v3) and DIR/NAME.y.npy (the logits, computed in float64 from the
float32 weights and rounded), and DIR/zoo.json listing them. Weights are
torchvision's random initialisation under a fixed seed; batch-norm
statistics are randomised so that folding them is checked.

Then run the Go check:

    COTRAIN_ONNX_ZOO=/tmp/cotrain-onnx-zoo go test ./models/onnx -run TestZoo -v

It imports each file, runs it on the CPU backend and compares the logits with
PyTorch's to a relative 1e-4 (max |a-b| / max |b|), printing per model
whether it imported (or the importer's refusal) and the error.
"""

import io
import json
import os
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision.models as tvm

# name, constructor, input size, opset, export mode (default EVAL: batch
# norm folded into the convolutions; PRESERVE keeps it, as for fine-tuning)
PRESERVE = torch.onnx.TrainingMode.PRESERVE
ZOO = [
    ("mobilenet_v2", lambda: tvm.mobilenet_v2(), 224, 13),
    ("mobilenet_v3_small", lambda: tvm.mobilenet_v3_small(), 224, 13),
    ("mobilenet_v3_large", lambda: tvm.mobilenet_v3_large(), 224, 14),
    ("shufflenet_v2_x1_0", lambda: tvm.shufflenet_v2_x1_0(), 224, 13),
    ("squeezenet1_1", lambda: tvm.squeezenet1_1(), 224, 11),
    ("mnasnet1_0", lambda: tvm.mnasnet1_0(), 224, 13),
    ("efficientnet_b0", lambda: tvm.efficientnet_b0(), 224, 13),
    ("regnet_y_400mf", lambda: tvm.regnet_y_400mf(), 224, 13),
    ("resnet18", lambda: tvm.resnet18(), 224, 13),
    ("vgg11", lambda: tvm.vgg11(), 224, 13),
    ("alexnet", lambda: tvm.alexnet(), 224, 13),
    ("googlenet", lambda: tvm.googlenet(aux_logits=False, init_weights=True), 224, 13),
    ("inception_v3", lambda: tvm.inception_v3(aux_logits=False, init_weights=True), 299, 13),
    ("densenet121", lambda: tvm.densenet121(), 224, 13),
    ("mobilenet_v3_small_bn_op11", lambda: tvm.mobilenet_v3_small(), 224, 11, PRESERVE),
    ("shufflenet_v2_x0_5_bn_op17", lambda: tvm.shufflenet_v2_x0_5(), 224, 17, PRESERVE),
]


def randomise_bn(net, gen):
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
                c = m.num_features
                m.running_mean.copy_(torch.rand(c, generator=gen) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
                if m.weight is not None:
                    m.weight.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
                    m.bias.copy_(torch.rand(c, generator=gen) * 0.2 - 0.1)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/cotrain-onnx-zoo"
    only = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    path = os.path.join(out, "zoo.json")
    manifest = []
    if only and os.path.exists(path):
        with open(path) as f:
            manifest = [m for m in json.load(f) if m["name"] not in only]
    for i, (name, build, size, opset, *mode) in enumerate(ZOO):
        mode = mode[0] if mode else torch.onnx.TrainingMode.EVAL
        if only and name not in only:
            continue
        t0 = time.time()
        torch.manual_seed(1000 + i)
        gen = torch.Generator().manual_seed(2000 + i)
        net = build()
        randomise_bn(net, gen)
        net.eval()
        x = torch.randn([2, 3, size, size], generator=gen)
        buf = io.BytesIO()
        torch.onnx.export(net, x, buf, opset_version=opset, training=mode, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        raw = buf.getvalue()
        model = onnx.load_from_string(raw)
        onnx.checker.check_model(model)
        with torch.no_grad():
            y = net.double()(x.double())
        base = os.path.join(out, name)
        with open(base + ".onnx", "wb") as f:
            f.write(raw)
        np.save(base + ".x.npy", x.numpy().astype("<f4"))
        np.save(base + ".y.npy", y.numpy().astype("<f4"))
        ops = sorted({n.op_type for n in model.graph.node})
        params = sum(p.numel() for p in net.parameters())
        manifest.append({"name": name, "opset": opset, "input": [3, size, size], "classes": int(y.shape[1]),
                         "params": params, "ops": ops, "nodes": len(model.graph.node)})
        print(f"{name}: opset {opset}, {params:,} params, {len(model.graph.node)} nodes, {len(raw) / 1e6:.1f} MB, "
              f"{time.time() - t0:.0f} s, ops {ops}", flush=True)
        with open(path, "w") as f:
            json.dump(sorted(manifest, key=lambda m: m["name"]), f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
