#!/usr/bin/env python3
"""PyTorch side of cotrain's training-step benchmarks.

Times one training step (forward, cross-entropy, backward, SGD with momentum
0.9) on random input, on ONE thread, for the same networks and batches as
`go test ./models -run '^$' -bench TrainStep` (models/bench_test.go): LeNet-5
and Caffe's LeNet at batch 64 on MNIST-shaped input, MobileNet v1 at width
0.5 on 3x128x128 input with 1000 classes at batch 16:

    /usr/bin/python3 scripts/bench_torch.py [--threads 1] [--seconds 3] [--only NAME,...]

Prints one line per model: name/b<batch>, ms per step, images/s. Needs Debian's
python3-torch and libopenblas0-pthread (without OpenBLAS PyTorch falls back
to the reference BLAS and the comparison flatters cotrain).
"""
import argparse
import time

import torch
import torch.nn as nn


def lenet5(classes=10):
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, classes))


def lenet_caffe(classes=10):
    return nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.MaxPool2d(2),
        nn.Conv2d(20, 50, 5), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(800, 500), nn.ReLU(),
        nn.Linear(500, classes))


# MobileNet v1's 13 depthwise-separable blocks: pointwise output channels at
# width 1 and the depthwise stride (models/mobilenet.go's table).
MOBILENET_BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]


def mobilenet_v1(alpha=0.5, classes=1000):
    """models/mobilenet.go's mobilenet-v1: stem conv 3x3/2, then per block a
    depthwise 3x3 and a pointwise 1x1 conv, each conv without bias and
    followed by batch norm and ReLU6; global average pool; linear."""
    def width(c):
        return max(int(c * alpha + 1e-9), 8)

    def unit(cin, cout, k, stride, groups=1):
        return [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU6()]
    ch = width(32)
    layers = unit(3, ch, 3, 2)
    for out, stride in MOBILENET_BLOCKS:
        layers += unit(ch, ch, 3, stride, groups=ch)
        layers += unit(ch, width(out), 1, 1)
        ch = width(out)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(ch, classes)]
    return nn.Sequential(*layers)


# name: (constructor, input shape of one sample, classes, batch)
MODELS = {
    "lenet5": (lenet5, (1, 28, 28), 10, 64),
    "lenet-caffe": (lenet_caffe, (1, 28, 28), 10, 64),
    "mobilenet-a0.5-128": (mobilenet_v1, (3, 128, 128), 1000, 16),
}


def time_step(model, shape, classes, batch, seconds):
    torch.manual_seed(0)
    x = torch.randn(batch, *shape)
    y = torch.arange(batch) % classes
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    warm, t0 = 0, time.perf_counter()
    while warm < 10 and (warm < 2 or time.perf_counter() - t0 < seconds / 3):
        step()
        warm += 1
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
    return (time.perf_counter() - t0) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--batch", type=int, default=0, help="batch for every model (0: each model's own)")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    args = ap.parse_args()
    only = [m for m in args.only.split(",") if m]
    for m in only:
        if m not in MODELS:
            ap.error(f"--only: unknown model {m!r} (want one of {', '.join(MODELS)})")
    torch.set_num_threads(args.threads)
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    for name, (make, shape, classes, batch) in MODELS.items():
        if only and name not in only:
            continue
        batch = args.batch or batch
        dt = time_step(make(), shape, classes, batch, args.seconds)
        print(f"{name}/b{batch}\t{dt*1e3:.2f} ms/step\t{batch/dt:.0f} img/s")


if __name__ == "__main__":
    main()
