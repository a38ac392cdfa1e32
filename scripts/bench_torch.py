#!/usr/bin/env python3
"""PyTorch side of cotrain's training-step benchmarks.

Times one training step (forward, cross-entropy, backward, SGD with momentum
0.9) on random input, on ONE thread, for the same networks and batches as
`go test ./models -run '^$' -bench TrainStep` (models/bench_test.go): LeNet-5
and Caffe's LeNet at batch 64 on MNIST-shaped input, MobileNet v1 at width
0.5 on 3x128x128 input with 1000 classes at batch 16, har-cnn on 3×128
sensor windows with 6 classes at batch 64:

    /usr/bin/python3 scripts/bench_torch.py [--threads 1] [--seconds 3] [--only NAME,...]

Prints one line per model: name/b<batch>, ms per step, images/s. Needs Debian's
python3-torch and libopenblas0-pthread (without OpenBLAS PyTorch falls back
to the reference BLAS and the comparison flatters cotrain).

With --device cuda (scripts/bench_gpu.sh) it times the same steps on the GPU
in fp32 (TF32 off for matmuls and cuDNN, cudnn.benchmark on), the input
already on the GPU, synchronising before and after each timed loop; there
the default set adds MobileNet v1 at width 1 on 3x224x224 and AlexNet on
3x224x224, both at batch 32. --sgemm 1024,2048,4096 instead times
torch.mm (cuBLAS, fp32, TF32 off) on n×n×n products and prints TFLOPS.

--upload pageable (with --device cuda) copies the batch from host memory to
the GPU at the start of every step, `x_cpu.to('cuda')` from an ordinary
(pageable) tensor, as a plain training loop does and as cotrain's Upload
does; --upload pinned copies it from page-locked memory with
non_blocking=True instead. The labels stay on the GPU (cotrain's benchmark
re-uses its label buffer too). The default, --upload none, keeps the batch
on the GPU.
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


def alexnet(classes=1000):
    """models/alexnet.go's alexnet (torchvision's AlexNet; at 224x224 the
    adaptive pool to 6x6 is the identity, as in cotrain)."""
    return nn.Sequential(
        nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(),
        nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Flatten(),
        nn.Dropout(0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(),
        nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(),
        nn.Linear(4096, classes))


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


def har_cnn(classes=6):
    """models/harcnn.go's har-cnn on 3×128 sensor windows: Conv1d 32@7, 64@5,
    64@3 (no bias) with BatchNorm1d and ReLU, two max pools, global average
    pooling, Linear."""
    return nn.Sequential(
        nn.Conv1d(3, 32, 7, padding=3, bias=False), nn.BatchNorm1d(32), nn.ReLU(), nn.MaxPool1d(2),
        nn.Conv1d(32, 64, 5, padding=2, bias=False), nn.BatchNorm1d(64), nn.ReLU(), nn.MaxPool1d(2),
        nn.Conv1d(64, 64, 3, padding=1, bias=False), nn.BatchNorm1d(64), nn.ReLU(),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, classes))


# name: (constructor, input shape of one sample, classes, batch, GPU only)
MODELS = {
    "lenet5": (lenet5, (1, 28, 28), 10, 64, False),
    "lenet-caffe": (lenet_caffe, (1, 28, 28), 10, 64, False),
    "mobilenet-a0.5-128": (mobilenet_v1, (3, 128, 128), 1000, 16, False),
    "har-cnn": (har_cnn, (3, 128), 6, 64, False),
    "mobilenet-a1-224": (lambda: mobilenet_v1(1.0), (3, 224, 224), 1000, 32, True),
    "alexnet": (alexnet, (3, 224, 224), 1000, 32, True),
}


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def time_step(model, shape, classes, batch, seconds, device="cpu", upload="none"):
    """Seconds per training step. upload: "none" (the batch stays where the
    step runs), "pageable" or "pinned" (copied there from host memory of
    that kind at the start of every step)."""
    torch.manual_seed(0)
    model = model.to(device)
    x_host = torch.randn(batch, *shape)
    if upload == "pinned":
        x_host = x_host.pin_memory()
    x = x_host.to(device)
    y = (torch.arange(batch) % classes).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        xs = x
        if upload != "none":
            xs = x_host.to(device, non_blocking=upload == "pinned")
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs), y)
        loss.backward()
        opt.step()

    warm, t0 = 0, time.perf_counter()
    while warm < 10 and (warm < 2 or time.perf_counter() - t0 < seconds / 3):
        step()
        warm += 1
    sync(device)
    # Steps are timed in runs of 10 between synchronisations, so that the
    # GPU's queue never runs ahead of the clock by more than 10 steps.
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10 if device == "cuda" else 1):
            step()
            n += 1
        sync(device)
    return (time.perf_counter() - t0) / n


def time_sgemm(sizes, seconds):
    """cuBLAS through torch.mm, fp32 with TF32 off: TFLOPS per size."""
    out = {}
    for n in sizes:
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        c = torch.mm(a, b)
        for _ in range(5):
            torch.mm(a, b, out=c)
        sync("cuda")
        reps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(20):
                torch.mm(a, b, out=c)
            reps += 20
            sync("cuda")
        out[n] = 2 * n**3 * reps / (time.perf_counter() - t0) / 1e12
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--batch", type=int, default=0, help="batch for every model (0: each model's own)")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all for the device)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--sgemm", default="", help="comma-separated sizes: time cuBLAS SGEMM instead of steps")
    ap.add_argument("--upload", default="none", choices=["none", "pageable", "pinned"],
                    help="copy the batch from host memory of this kind to the GPU every step (--device cuda)")
    args = ap.parse_args()
    if args.upload != "none" and args.device != "cuda":
        ap.error("--upload: only with --device cuda (on the CPU the batch is already where the step runs)")
    if args.device == "cuda" or args.sgemm:
        if not torch.cuda.is_available():
            ap.error("--device cuda / --sgemm: torch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    if args.sgemm:
        print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, cuBLAS fp32, TF32 off")
        for n, tf in time_sgemm([int(v) for v in args.sgemm.split(",")], args.seconds).items():
            print(f"sgemm/{n}\t{tf:.2f} TFLOPS")
        return
    only = [m for m in args.only.split(",") if m]
    for m in only:
        if m not in MODELS:
            ap.error(f"--only: unknown model {m!r} (want one of {', '.join(MODELS)})")
    torch.set_num_threads(args.threads)
    where = torch.cuda.get_device_name() if args.device == "cuda" else f"{torch.get_num_threads()} thread(s)"
    if args.device == "cuda":
        where += ", " + {"none": "batch on the GPU",
                         "pageable": "batch uploaded every step from pageable host memory",
                         "pinned": "batch uploaded every step from pinned host memory, non_blocking"}[args.upload]
    print(f"# torch {torch.__version__}, {where}")
    for name, (make, shape, classes, batch, gpu_only) in MODELS.items():
        if (only and name not in only) or (not only and gpu_only and args.device == "cpu"):
            continue
        batch = args.batch or batch
        dt = time_step(make(), shape, classes, batch, args.seconds, args.device, args.upload)
        print(f"{name}/b{batch}\t{dt*1e3:.2f} ms/step\t{batch/dt:.0f} img/s")


if __name__ == "__main__":
    main()
