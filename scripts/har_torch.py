#!/usr/bin/python3
"""Loads a cotrain export of har-cnn into PyTorch and names the activity of a
recording as cotrain predict does: the check at the end of docs/activity.md.

    /usr/bin/python3 scripts/har_torch.py har.onnx rec.csv [rec.csv ...]

The model is built as PyTorch modules (HARCNN below: Conv1d, BatchNorm1d,
ReLU, MaxPool1d, AdaptiveAvgPool1d, Linear, the layers and names of
models/harcnn.go), its state_dict read from the ONNX initializers (cotrain
keeps PyTorch's names: conv1.weight, bn1.running_mean, ...), after
onnx.checker's full check of the file. The class
names, per-channel normalisation and stride come from the file's metadata
(cotrain.classes.names, cotrain.input.mean/std, cotrain.input.stride); the
window is the input's length. Each recording (CSV, a header row, one row a
time step) is cut into windows every stride steps, normalised, run in
evaluation mode, and the windows' softmax probabilities averaged. It prints
one JSON line per recording: the activity, the mean probabilities of every
class, the window count: compare with `cotrain predict --json`.

    /usr/bin/python3 scripts/har_torch.py bench [batch, default 64] [steps, default 20]

times the same network's training step in PyTorch on one thread (random
3×128 windows, 6 classes; forward, cross-entropy, backward, SGD with
momentum 0.9), the twin of `GOMAXPROCS=1 cotrain profile --model har-cnn
--batch 64 --json`: it prints one JSON line with the process CPU seconds
and the wall seconds per step (CPU time is what a loaded machine does not
distort), the peak RSS and the RSS before the model was built.
"""
import json
import resource
import sys
import time

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn


class HARCNN(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.conv1 = nn.Conv1d(channels, 32, 7, padding=3, bias=False)
        self.bn1 = nn.BatchNorm1d(32)
        self.conv2 = nn.Conv1d(32, 64, 5, padding=2, bias=False)
        self.bn2 = nn.BatchNorm1d(64)
        self.conv3 = nn.Conv1d(64, 64, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm1d(64)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = nn.functional.max_pool1d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = nn.functional.max_pool1d(torch.relu(self.bn2(self.conv2(x))), 2)
        x = torch.relu(self.bn3(self.conv3(x)))
        return self.fc(nn.functional.adaptive_avg_pool1d(x, 1).flatten(1))


def load(path):
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    meta = {p.key: p.value for p in m.metadata_props}
    classes = json.loads(meta["cotrain.classes.names"])
    mean = np.array([float(v) for v in meta["cotrain.input.mean"].split(",")], dtype=np.float32)
    std = np.array([float(v) for v in meta["cotrain.input.std"].split(",")], dtype=np.float32)
    stride = int(meta["cotrain.input.stride"])
    dims = m.graph.input[0].type.tensor_type.shape.dim
    channels, window = dims[1].dim_value, dims[2].dim_value
    net = HARCNN(channels, len(classes))
    state = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in m.graph.initializer}
    missing, unexpected = net.load_state_dict(state, strict=False)
    # Only the batch norms' num_batches_tracked counters are PyTorch's own.
    assert all(k.endswith("num_batches_tracked") for k in missing) and not unexpected, (missing, unexpected)
    return net.eval(), classes, mean, std, stride, window


def bench(batch, steps):
    torch.set_num_threads(1)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    torch.manual_seed(0)
    net = HARCNN(3, 6).train()
    x, y = torch.randn(batch, 3, 128), torch.arange(batch) % 6
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    for _ in range(3):
        step()
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        step()
    cpu, wall = (time.process_time() - c0) / steps, (time.perf_counter() - w0) / steps
    print(json.dumps({"model": "har-cnn", "batch": batch, "cpu_step_s": round(cpu, 6), "step_s": round(wall, 6),
                      "samples_per_cpu_s": round(batch / cpu, 1), "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "rss_before_model_mib": round(before, 1), "torch": torch.__version__}))


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "bench":
        bench(int(sys.argv[2]) if len(sys.argv) > 2 else 64, int(sys.argv[3]) if len(sys.argv) > 3 else 20)
        return 0
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    net, classes, mean, std, stride, window = load(sys.argv[1])
    for path in sys.argv[2:]:
        rec = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float32, ndmin=2)  # T×C
        starts = range(0, rec.shape[0] - window + 1, stride)
        x = np.stack([rec[s:s + window].T for s in starts])  # N×C×L
        x = (x - mean[None, :, None]) / std[None, :, None]
        with torch.no_grad():
            p = torch.softmax(net(torch.from_numpy(x)).double(), 1).mean(0).numpy()
        best = int(p.argmax())
        print(json.dumps({"input": path, "activity": classes[best], "windows": len(x),
                          "probs": {c: round(float(v), 6) for c, v in zip(classes, p)}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
