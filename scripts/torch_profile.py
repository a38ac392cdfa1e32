#!/usr/bin/python3
"""torch_profile.py prints where PyTorch CUDA's training step spends GPU time.

It builds scripts/bench_torch.py's model (fp32, TF32 off, cudnn.benchmark
on, SGD with momentum, as bench_gpu.sh times it), runs 20 warm-up steps on
a batch already on the GPU, then profiles 10 steps with torch.profiler and
prints the CUDA kernels by total time; "Self CUDA time total" divided by 10
is the GPU time of one step. Run on the device machine from the repository
root:

    python3 scripts/torch_profile.py [--model alexnet] [--batch 32] [--by-op]

--by-op also records the host side and prints the GPU time of each ATen
operator per input shape (a convolution's forward, its backward, each
addmm), which maps the kernels to the model's layers.
"""
import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_torch  # noqa: E402  (the same models as the benchmark)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="alexnet", choices=sorted(bench_torch.MODELS))
    ap.add_argument("--batch", type=int, default=0, help="0: the model's batch in bench_torch.py")
    ap.add_argument("--by-op", action="store_true", help="GPU time per operator and input shape")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_profile.py: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    build, shape, classes, batch, _ = bench_torch.MODELS[args.model]
    batch = args.batch or batch
    model = build().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, *shape, device="cuda")
    y = (torch.arange(batch) % classes).cuda()
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    acts = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if args.by_op else [])
    with profile(activities=acts, record_shapes=args.by_op) as p:
        for _ in range(10):
            step()
        torch.cuda.synchronize()
    print(f"# {args.model}, batch {batch}, {torch.cuda.get_device_name()}: 10 steps")
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=40, max_name_column_width=90))
    if args.by_op:
        print(f"# {args.model}: GPU time per operator and input shape, 10 steps")
        print(p.key_averages(group_by_input_shape=True).table(
            sort_by="cuda_time_total", row_limit=60, max_name_column_width=40, max_shapes_column_width=90))


if __name__ == "__main__":
    main()
