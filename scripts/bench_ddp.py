#!/usr/bin/env python3
"""PyTorch DDP anchor for cotrain's cooperative throughput benchmark.

Two processes x one thread each, gloo backend on loopback, LeNet-5, 64
samples per process per step, SGD momentum 0.9, random MNIST-shaped data
(the step cost does not depend on the values). Prints aggregate images/s:

    /usr/bin/python3 scripts/bench_ddp.py [--seconds 5] [--procs 2] [--batch 64]

cotrain's side: `go test ./cmd/hub -run '^$' -bench Cooperative` (hub + 2
workers on loopback); scripts/bench_coop.sh runs both and prints the ratio.
"""
import argparse
import os
import sys
import time

# One thread per process for real: torch.set_num_threads(1) does not reach
# OpenBLAS's own pool (scripts/bench_step.sh found torch.mm on 1.5 cores),
# and two processes on two cores with a pool each would oversubscribe them.
# Set before torch loads; the spawned workers inherit it.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
from bench_torch import lenet5  # noqa: E402


def worker(rank, procs, batch, seconds, port, out):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=procs)
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(lenet5())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, 1, 28, 28)
    y = torch.arange(batch) % 10

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(10):
        step()
    # Every rank must run the same number of steps. A stop flag broadcast
    # after every step would add a collective per step that DDP's own
    # training does not have, so rank 0 times a short calibration (with the
    # flag), then every rank runs the count it broadcasts, with nothing
    # added to the steps that are timed.
    n = torch.zeros(1)
    dist.barrier()
    t0 = time.perf_counter()
    calib = 0
    while True:
        step()
        calib += 1
        n[0] = 1.0 if (rank == 0 and time.perf_counter() - t0 >= min(1.0, seconds / 5)) else 0.0
        dist.broadcast(n, 0)
        if n[0] > 0:
            break
    n[0] = max(20, int(seconds * calib / (time.perf_counter() - t0)))
    dist.broadcast(n, 0)
    steps = int(n[0])
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    # The last step's allreduce finished inside its backward; a barrier
    # makes rank 0's clock stop when every rank is done.
    dist.barrier()
    dt = time.perf_counter() - t0
    if rank == 0:
        out.put((steps, dt))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--port", type=int, default=29517)
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args.procs, args.batch, args.seconds, args.port, q))
             for r in range(args.procs)]
    for p in procs:
        p.start()
    steps, dt = q.get()
    for p in procs:
        p.join()
    ips = steps * args.batch * args.procs / dt
    print(f"# torch {torch.__version__} DDP gloo, {args.procs} procs x 1 thread, batch {args.batch} per proc")
    print(f"ddp\t{dt / steps * 1e3:.2f} ms/step\t{ips:.0f} img/s")


if __name__ == "__main__":
    main()
