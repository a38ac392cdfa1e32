#!/usr/bin/python3
"""PyTorch side of scripts/compare_cpu.sh and scripts/compare_gpu.sh: the
fine-tuning step of `cotrain profile --weights MODEL.onnx --train-last N`
(issue 29), timed the same way.

    python3 scripts/compare_torch.py --model resnet18|mobilenet_v2 --train-last all|N
        [--size 96] [--batch 16] [--steps 10] [--classes 3] [--threads 2]
        [--device cpu|cuda] [--torchvision] [--checkpoint SEGMENTS]

One step is forward, cross-entropy, backward and SGD (lr 0.01, momentum
0.9) of the trainable parameters on one random batch that stays in memory
(on the GPU with --device cuda: its batch resident), as cotrain profile's
step. --train-last N trains the last N modules with parameters (Linear,
Conv2d, BatchNorm2d: cotrain's layers with parameters, counted the same way
from the end) and freezes the others (requires_grad False, so autograd
keeps nothing for the frozen prefix); frozen batch-norm modules below the
first trained one run in eval mode (running statistics), as cotrain runs
its frozen prefix as inference (solver/net_freeze.go). --train-last all
trains everything in train mode.

On cuda: fp32 with TF32 off for matmuls and cuDNN, cudnn.benchmark on,
synchronised around the timed loop; memory is torch.cuda.max_memory_allocated.
On the CPU, torch.set_num_threads(--threads) and memory is the process's peak
RSS (getrusage). The first two steps are warm-up and not timed.

Prints one JSON line: model, train_last, batch, step_s, samples_per_s,
cpu_step_s (the process's CPU time per step: on a shared machine it moves
less with the others' load than wall time),
peak_rss_mib, cuda_max_allocated_mib (cuda only), trainable.
"""
import argparse
import json
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tv_models import build  # noqa: E402


def freeze(model, last):
    """Freezes all but the last `last` modules with parameters (0: none
    frozen) and returns the frozen batch-norm modules below the first
    trained module."""
    mods = [m for m in model.modules() if any(True for _ in m.parameters(recurse=False))]
    if last == 0:
        return []
    frozen = mods[:max(len(mods) - last, 0)]
    for m in frozen:
        for p in m.parameters(recurse=False):
            p.requires_grad_(False)
    return [m for m in frozen if isinstance(m, nn.BatchNorm2d)]


def checkpointed(model, name, segments):
    """model's forward with its feature extractor run through
    torch.utils.checkpoint.checkpoint_sequential in `segments` segments:
    PyTorch's recomputation of activations, to set beside cotrain's
    --memory-budget (scripts/mem_budget.sh). Batch norm in training mode
    updates its running statistics again in the recomputation (PyTorch's
    documented behaviour), which changes no memory figure."""
    from torch.utils.checkpoint import checkpoint_sequential
    if name == "mobilenet_v2":
        def forward(x):
            h = checkpoint_sequential(model.features, segments, x)
            return model.classifier(torch.flatten(F.adaptive_avg_pool2d(h, (1, 1)), 1))
        return forward
    seq = nn.Sequential(model.conv1, model.bn1, model.relu, model.maxpool, model.layer1, model.layer2, model.layer3, model.layer4)

    def forward(x):
        h = checkpoint_sequential(seq, segments, x)
        return model.fc(torch.flatten(model.avgpool(h), 1))
    return forward


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=["resnet18", "mobilenet_v2"])
    ap.add_argument("--train-last", default="all")
    ap.add_argument("--size", type=int, default=96)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--torchvision", action="store_true", help="torchvision's model instead of tv_models.py's twin")
    ap.add_argument("--checkpoint", type=int, default=0,
                    help="recompute activations with torch.utils.checkpoint.checkpoint_sequential in this many segments (0: keep them)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    torch.manual_seed(1)
    model = build(a.model, a.classes, a.torchvision).to(dev)
    last = 0 if a.train_last == "all" else int(a.train_last)
    frozen_bn = freeze(model, last)
    model.train()
    for m in frozen_bn:
        m.eval()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    x = torch.randn(a.batch, 3, a.size, a.size, device=dev)
    y = torch.randint(0, a.classes, (a.batch,), device=dev)

    forward = model
    if a.checkpoint > 0:
        forward = checkpointed(model, a.model, a.checkpoint)
        # The reentrant checkpoint of 1.13 computes no parameter gradient
        # inside a segment unless an input of it needs a gradient.
        x.requires_grad_(True)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(2):
        step()
    sync()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(a.steps):
        step()
    sync()
    dt = (time.perf_counter() - t0) / a.steps
    cpu = (time.process_time() - c0) / a.steps
    res = {"model": a.model, "train_last": a.train_last, "batch": a.batch, "checkpoint": a.checkpoint, "size": a.size, "device": a.device,
           "threads": torch.get_num_threads(), "step_s": dt, "samples_per_s": a.batch / dt, "cpu_step_s": cpu,
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
           "trainable": sum(p.numel() for p in params), "torch": torch.__version__}
    if dev.type == "cuda":
        res["cuda_max_allocated_mib"] = torch.cuda.max_memory_allocated() / 2**20
    print(json.dumps(res))


if __name__ == "__main__":
    main()
