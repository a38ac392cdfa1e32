#!/usr/bin/python3
"""Peak memory of MobileNet v1 training steps in PyTorch, the twin of
`cotrain profile` (scripts/mem_step.sh runs both).

    /usr/bin/python3 scripts/mem_torch.py [--alpha 1] [--size 224] [--batch 8] [--steps 2]

One thread (torch.set_num_threads(1)); random input and labels; each step is
forward, cross-entropy, backward and an SGD-momentum update, as in cotrain.
Prints one JSON line: peak RSS of the process (getrusage maxrss), the RSS
before the model was built (the interpreter and torch's libraries), and
seconds per step.
"""
import argparse
import json
import resource
import sys
import time
import os

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_fixtures import MobileNetV1  # noqa: E402


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    before = peak_mib()
    net = MobileNetV1(a.alpha, a.classes)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(a.batch, 3, a.size, a.size)
    y = torch.randint(0, a.classes, (a.batch,))
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    per = sum(times[1:]) / max(1, len(times) - 1) if len(times) > 1 else times[0]
    print(json.dumps({"framework": "pytorch " + torch.__version__, "params": sum(p.numel() for p in net.parameters()),
                      "batch": a.batch, "steps": a.steps, "step_s": per, "first_step_s": times[0],
                      "peak_rss_mib": peak_mib(), "rss_before_model_mib": before}))


if __name__ == "__main__":
    main()
