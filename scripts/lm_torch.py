#!/usr/bin/python3
"""The PyTorch twin of cotrain's language models (models/lm.go), for the
figures of docs/text.md.

    /usr/bin/python3 scripts/lm_torch.py bench [lstm|gru] [batch, default 32] [steps, default 20]

times a training step of the same network in PyTorch on one thread:
nn.Embedding(2000, 64), nn.LSTM or nn.GRU(64, 128, batch_first=True), the
last step's hidden state, nn.Linear(128, 2000); a batch of random contexts
of 32 word ids and random next words; forward, cross-entropy, backward, SGD
with momentum 0.9. It is the twin of
`GOMAXPROCS=1 cotrain profile --model lstm-lm --batch 32 --json`: it prints
one JSON line with the process CPU seconds and the wall seconds per step
(CPU time is what a loaded machine does not distort), samples per CPU
second, the peak RSS and the RSS before the model was built.
"""
import json
import resource
import sys
import time

import torch
from torch import nn

VOCAB, CONTEXT, EMBED, HIDDEN = 2000, 32, 64, 128


class LM(nn.Module):
    """cotrain's lstm-lm and gru-lm, with the same parameter names."""

    def __init__(self, cell):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.rnn = cell(EMBED, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, VOCAB)

    def forward(self, ids):
        out, _ = self.rnn(self.embed(ids))
        return self.fc(out[:, -1, :])


def bench(kind, batch, steps):
    torch.set_num_threads(1)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    torch.manual_seed(0)
    net = LM(nn.LSTM if kind == "lstm" else nn.GRU)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.randint(0, VOCAB, (batch, CONTEXT))
    y = torch.randint(0, VOCAB, (batch,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()

    step()  # the first step allocates
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        step()
    cpu, wall = (time.process_time() - c0) / steps, (time.perf_counter() - w0) / steps
    print(json.dumps({"model": kind + "-lm", "batch": batch, "steps": steps, "params": sum(p.numel() for p in net.parameters()),
                      "cpu_step_s": cpu, "step_s": wall, "samples_per_cpu_s": batch / cpu,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "rss_before_model_mib": before, "torch": torch.__version__}))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "bench":
        sys.exit(__doc__)
    kind = sys.argv[2] if len(sys.argv) > 2 else "lstm"
    bench(kind, int(sys.argv[3]) if len(sys.argv) > 3 else 32, int(sys.argv[4]) if len(sys.argv) > 4 else 20)
