#!/usr/bin/env python3
"""What today's PyTorch writes, checked against cotrain's importer.

Runs on the device machine, whose python3 has PyTorch 2.11 and torchvision
(the exporter users have today), not on the Debian machine (PyTorch 1.13):

    python3 scripts/torch2_exports.py OUTDIR [COTRAIN_BINARY]

For every model below it writes OUTDIR/NAME.onnx as torch.onnx.export writes
it with default arguments (PyTorch 2.11: the dynamo exporter, opset 20 or
newer, weights in NAME.onnx.data beside the model) and OUTDIR/NAME_legacy.onnx
with dynamo=False (the TorchScript exporter, its default opset), plus
NAME.x.npy (a seeded input batch) and NAME.y.npy (PyTorch's float32 output in
eval mode). Models:

- small ones, kept as test fixtures (copy OUTDIR's cnn*, resnet_tiny*,
  prelu_ln*, gru_lm*, lstm_lm* files into models/onnx/testdata/torch2,
  where TestTorch2Exports reads them, and this run's output into its
  device.log): a CNN with BatchNorm and AdaptiveAvgPool, a ResNet basic
  block, PReLU with LayerNorm and GELU, a 1-D CNN over 3×128 sensor windows,
  an embedding+LSTM and an embedding+GRU next-word model;
- convnext_tv, vit_tv: torchvision's ConvNeXt and VisionTransformer classes
  at toy sizes (32² input, batch 1), fixtures as well;
- checked here only: torchvision's MobileNet v2 at width 0.25 on 64×64
  input (2.2 MB), and resnet18, mobilenet_v2 and alexnet at 224² (random
  weights, seeded; 14 to 245 MB).

With COTRAIN_BINARY (a cotrain built for this machine), each file is then
imported and run by `cotrain predict --json` on NAME.x.npy and its logits
are compared with NAME.y.npy; one line per file says the largest absolute
difference, or cotrain's refusal. Everything is seeded: a rerun writes
the same inputs and weights.

    python3 scripts/torch2_exports.py OUTDIR COTRAIN_BINARY --survey

exports and checks torchvision's classification models instead (survey()
below: ResNet-50 to ViT, ConvNeXt and Swin; hundreds of MB in OUTDIR), eight
at a time, both ways each: what the importer makes of the models a user
would bring.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
from torch import nn


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x):
        return self.f(x)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + x)


class ResNetTiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.block = Block(16)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))

    def forward(self, x):
        return self.head(self.block(self.stem(x)))


class PReLULN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.act = nn.PReLU(8)
        self.flat = nn.Flatten()
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.ln = nn.LayerNorm(32)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.gelu(self.ln(self.fc1(self.flat(self.act(self.conv(x)))))))


class CNN1D(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv1d(3, 16, 5, padding=2), nn.BatchNorm1d(16), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(16, 32, 5, padding=2), nn.BatchNorm1d(32), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 6))

    def forward(self, x):
        return self.f(x)


class LM(nn.Module):
    def __init__(self, cell, vocab=50, dim=16, hidden=24):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = cell(dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.out(h[:, -1])


def convnext_tv():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], stochastic_depth_prob=0.0, num_classes=5)


def models():
    import torchvision
    small = [
        ("cnn", CNN, (2, 1, 28, 28)),
        ("resnet_tiny", ResNetTiny, (2, 3, 16, 16)),
        ("prelu_ln", PReLULN, (2, 3, 16, 16)),
        ("cnn1d", CNN1D, (2, 3, 128)),
        ("lstm_lm", lambda: LM(nn.LSTM), (2, 12)),
        ("gru_lm", lambda: LM(nn.GRU), (2, 12)),
        ("mobilenet_v2_w025", lambda: torchvision.models.mobilenet_v2(width_mult=0.25, num_classes=10), (2, 3, 64, 64)),
        # torchvision's own ConvNeXt and ViT classes at toy sizes, exported at
        # batch 1 as a user's example input fixes it: the survey's
        # convnext_tiny and vit_b_16 patterns in files small enough to keep.
        ("convnext_tv", convnext_tv, (1, 3, 32, 32)),
        ("vit_tv", lambda: torchvision.models.VisionTransformer(
            image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=5), (1, 3, 32, 32)),
    ]
    large = [
        ("resnet18", lambda: torchvision.models.resnet18(), (1, 3, 224, 224)),
        ("mobilenet_v2", lambda: torchvision.models.mobilenet_v2(), (1, 3, 224, 224)),
        ("alexnet", lambda: torchvision.models.alexnet(), (1, 3, 224, 224)),
    ]
    return small, large


def survey():
    """torchvision's classification models, as a user would export them:
    the families of the ONNX model zoo and what came after (transformers,
    ConvNeXt), at 224² (299² for Inception v3), batch 1, random weights."""
    import torchvision.models as tvm
    names = ["resnet50", "resnext50_32x4d", "wide_resnet50_2", "googlenet", "inception_v3", "densenet121",
             "shufflenet_v2_x1_0", "squeezenet1_1", "mnasnet1_0", "mobilenet_v3_small", "mobilenet_v3_large",
             "efficientnet_b0", "efficientnet_v2_s", "regnet_y_400mf", "regnet_x_400mf", "vgg11_bn",
             "convnext_tiny", "vit_b_16", "swin_t", "maxvit_t"]
    kw = {"googlenet": {"aux_logits": False, "init_weights": True},
          "inception_v3": {"aux_logits": False, "init_weights": True}}
    return [(n, (lambda n=n: nonzero_heads(getattr(tvm, n)(**kw.get(n, {})))), (1, 3, 299 if n == "inception_v3" else 224,
             299 if n == "inception_v3" else 224)) for n in names]


def nonzero_heads(m):
    """Gives a Linear layer that its model initialises to zero (ViT's head)
    seeded random weights, so that its output, and the check, mean something."""
    g = torch.Generator().manual_seed(31)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.Linear) and not mod.weight.any():
                mod.weight.copy_(torch.randn(mod.weight.shape, generator=g) * 0.05)
    return m


def _one(args):
    """Exports and checks one model in a worker process; returns its lines."""
    import contextlib
    import io
    name, out, binary = args
    make, shape = {n: (m, s) for n, m, s in survey()}[name]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        torch.set_num_threads(2)
        for f in export(name, make, shape, out):
            check(binary, f, os.path.join(out, name + ".y.npy"))
    return buf.getvalue()


def export(name, make, shape, out):
    torch.manual_seed(29)
    m = make().eval()
    # Batch norm statistics that are not the identity, so that folding them is tested.
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 1.5)
    g = torch.Generator().manual_seed(30)
    if name.endswith("_lm"):
        x = torch.randint(0, 50, shape, generator=g)
    else:
        x = torch.randn(*shape, generator=g)
    with torch.no_grad():
        y = m(x)
    np.save(os.path.join(out, name + ".x.npy"), x.numpy().astype(np.float32) if x.dtype.is_floating_point else x.numpy().astype(np.float32))
    np.save(os.path.join(out, name + ".y.npy"), y.numpy().astype(np.float32))
    files = []
    for suffix, kw in (("", {}), ("_legacy", {"dynamo": False})):
        path = os.path.join(out, name + suffix + ".onnx")
        try:
            torch.onnx.export(m, (x,), path, **kw)
            files.append(path)
        except Exception as e:  # an exporter failure is a finding too
            print(f"{name}{suffix}: torch.onnx.export failed: {type(e).__name__}: {str(e)[:300]}")
    return files


def check(binary, path, ynpy):
    import onnx
    mp = onnx.load(path, load_external_data=False)
    opset = max((o.version for o in mp.opset_import if o.domain in ("", "ai.onnx")), default=0)
    ops = sorted({n.op_type for n in mp.graph.node})
    ext = os.path.exists(path + ".data") or any(
        t.data_location == onnx.TensorProto.EXTERNAL for t in mp.graph.initializer)
    base = path[: -len(".onnx")].replace("_legacy", "")
    head = f"{os.path.basename(path)}: opset {opset}, external data {ext}, ops {' '.join(ops)}"
    if not binary:
        print(head)
        return
    r = subprocess.run([binary, "predict", "--device", "cpu", "--json", "--weights", path, "--input", base + ".x.npy"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(head + "\n    cotrain: " + (r.stderr.strip() or r.stdout.strip())[:400])
        return
    got = np.array([json.loads(l)["logits"] for l in r.stdout.splitlines() if l.startswith("{")], dtype=np.float32)
    want = np.load(ynpy)
    got = got.reshape(want.shape) if got.size == want.size else got
    if got.shape != want.shape:
        print(head + f"\n    cotrain: output shape {got.shape}, PyTorch {want.shape}")
        return
    diff = np.abs(got - want).max()
    rel = diff / max(np.abs(want).max(), 1e-30)
    print(head + f"\n    cotrain predict: max |diff| {diff:.3g}, relative to max |PyTorch| {np.abs(want).max():.3g}: {rel:.3g}"
          + ("" if rel <= 1e-4 else "  MISMATCH"))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = args[0]
    binary = args[1] if len(args) > 1 else None
    os.makedirs(out, exist_ok=True)
    print("torch", torch.__version__)
    if "--survey" in sys.argv:
        # Each model in its own process, eight at a time: the dynamo exporter
        # takes tens of seconds per model and is single-threaded.
        import multiprocessing as mp
        jobs = [(n, out, binary) for n, _, _ in survey()]
        with mp.get_context("fork").Pool(8) as pool:
            for text in pool.imap(_one, jobs):
                print(text, end="", flush=True)
        return
    small, large = models()
    for name, make, shape in small + large:
        for f in export(name, make, shape, out):
            check(binary, f, os.path.join(out, name + ".y.npy"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
