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

    /usr/bin/python3 scripts/lm_torch.py predict lm.onnx "the GNU General Public" [...]

checks a `cotrain export` of lstm-lm or gru-lm twice, independently, and
prints the top 5 next words after each text as `cotrain predict --text
--json` does: (1) PyTorch: the model built from nn.Embedding, nn.LSTM or
nn.GRU and nn.Linear, its state_dict loaded from the file's PyTorch-named
initializers (embed.weight, rnn.weight_ih_l0, ...); (2) the ONNX graph
itself evaluated with numpy by the ONNX specification of its nodes
(Gather, LSTM/GRU with layout 1 and ONNX's gate order, Squeeze, Gemm), from
its W, R and B. The vocabulary and the context length come from the file
(metadata cotrain.text.vocab, the input's length); the text is tokenized
as cotrain tokenizes (data.Tokenize: lower case, words of letters and
digits, every other character a token) and padded on the left with <unk>.
It prints the largest difference between the two evaluations' probabilities.
"""
import json
import re
import resource
import sys
import time

import numpy as np
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


def tokenize(text):
    """data.Tokenize for ordinary text: words (an inner apostrophe kept), punctuation single."""
    return [t.lower() for t in re.findall(r"\w+(?:['’]\w+)*|[^\w\s]", text)]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def onnx_eval(m, ids):
    """Evaluates cotrain's exported graph by the ONNX operators' definitions."""
    from onnx import numpy_helper
    vals = {t.name: numpy_helper.to_array(t).astype(np.float64) if t.data_type == 1 else numpy_helper.to_array(t)
            for t in m.graph.initializer}
    vals["input"] = ids
    for n in m.graph.node:
        a = {x.name: x for x in n.attribute}
        ins = [vals[i] if i else None for i in n.input]
        if n.op_type == "Gather":
            out = [np.take(ins[0], ins[1].astype(np.int64), axis=a["axis"].i if "axis" in a else 0)]
        elif n.op_type == "Squeeze":
            out = [np.squeeze(ins[0], axis=tuple(int(v) for v in ins[1]))]
        elif n.op_type == "Gemm":
            out = [ins[0] @ ins[1].T + ins[2]]
        elif n.op_type in ("LSTM", "GRU"):
            assert a["layout"].i == 1, "batch-first layout expected"
            x, W, R, B = ins[0], ins[1][0], ins[2][0], ins[3][0]
            H = a["hidden_size"].i
            g = W.shape[0] // H
            Wb, Rb = B[:g * H], B[g * H:]
            n_, T, _ = x.shape
            h, c = np.zeros((n_, H)), np.zeros((n_, H))
            ys = []
            for t in range(T):
                if n.op_type == "LSTM":  # gates i, o, f, c
                    z = x[:, t] @ W.T + h @ R.T + Wb + Rb
                    i, o, f, cc = (z[:, k * H:(k + 1) * H] for k in range(4))
                    c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
                    h = sigmoid(o) * np.tanh(c)
                else:  # gates z, r, h; linear_before_reset = 1
                    assert a["linear_before_reset"].i == 1
                    xw, hr = x[:, t] @ W.T + Wb, h @ R.T + Rb
                    zt = sigmoid(xw[:, :H] + hr[:, :H])
                    rt = sigmoid(xw[:, H:2 * H] + hr[:, H:2 * H])
                    ht = np.tanh(xw[:, 2 * H:] + rt * hr[:, 2 * H:])
                    h = (1 - zt) * ht + zt * h
                ys.append(h)
            out = [np.stack(ys, 1)[:, :, None, :], h[:, None, :]]
        else:
            raise SystemExit("node %s: not one cotrain's language models export" % n.op_type)
        for name, v in zip(n.output, out):
            vals[name] = v
    return vals[m.graph.output[0].name]


def predict(path, texts):
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    meta = {p.key: p.value for p in m.metadata_props}
    words = json.loads(meta["cotrain.text.vocab"])
    index = {w: i for i, w in enumerate(words)}
    context = m.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    init = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in m.graph.initializer}
    cell = nn.GRU if any(n.op_type == "GRU" for n in m.graph.node) else nn.LSTM
    vocab, embed = init["embed.weight"].shape
    hidden = init["rnn.weight_hh_l0"].shape[1]
    net = LM.__new__(LM)
    nn.Module.__init__(net)
    net.embed, net.rnn, net.fc = nn.Embedding(vocab, embed), cell(embed, hidden, batch_first=True), nn.Linear(hidden, vocab)
    net.load_state_dict({k: v for k, v in init.items() if k.split(".")[0] in ("embed", "rnn", "fc") and ".l0." not in k
                         and not k.endswith("_axes")}, strict=True)
    net.eval()
    for text in texts:
        ids = [index.get(t, 0) for t in tokenize(text)][-context:]
        ids = [0] * (context - len(ids)) + ids
        with torch.no_grad():
            p_torch = torch.softmax(net(torch.tensor([ids])).double(), 1)[0].numpy()
        logits = onnx_eval(m, np.array([ids], dtype=np.int64))[0]
        p_onnx = np.exp(logits - logits.max())
        p_onnx /= p_onnx.sum()
        top = [i for i in np.argsort(-p_torch, kind="stable") if i != 0][:5]
        print(json.dumps({"text": text, "context": [words[i] for i in ids],
                          "next": [{"word": words[i], "id": int(i), "prob": round(float(p_torch[i]), 6)} for i in top],
                          "max_diff_torch_onnx": float(np.abs(p_torch - p_onnx).max())}))


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "predict":
        predict(sys.argv[2], sys.argv[3:])
        sys.exit(0)
    if len(sys.argv) < 2 or sys.argv[1] != "bench":
        sys.exit(__doc__)
    kind = sys.argv[2] if len(sys.argv) > 2 else "lstm"
    bench(kind, int(sys.argv[3]) if len(sys.argv) > 3 else 32, int(sys.argv[4]) if len(sys.argv) > 4 else 20)
