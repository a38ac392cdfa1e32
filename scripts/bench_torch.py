#!/usr/bin/env python3
"""PyTorch side of cotrain's training-step benchmarks.

Times one training step (forward, cross-entropy, backward, SGD with momentum
0.9) at batch 64 on random MNIST-shaped input, on ONE thread, for the same
networks as `go test ./models -run '^$' -bench TrainStep`:

    /usr/bin/python3 scripts/bench_torch.py [--threads 1] [--seconds 3]

Prints one line per model: name, ms per step, images/s. Needs Debian's
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


MODELS = {"lenet5": lenet5, "lenet-caffe": lenet_caffe}


def time_step(model, batch, seconds):
    torch.manual_seed(0)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.arange(batch) % 10
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(10):
        step()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
    return (time.perf_counter() - t0) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} thread(s), batch {args.batch}")
    for name, make in MODELS.items():
        dt = time_step(make(), args.batch, args.seconds)
        print(f"{name}/b{args.batch}\t{dt*1e3:.2f} ms/step\t{args.batch/dt:.0f} img/s")


if __name__ == "__main__":
    main()
