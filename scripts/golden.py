#!/usr/bin/python3
"""Generate PyTorch golden values for solver/golden_test.go.

Run from the repository root with the Python that has PyTorch 1.13:

    /usr/bin/python3 scripts/golden.py

It rewrites solver/testdata/golden/*.json (and lenet5_grads.f32). The output is
deterministic: every case seeds torch with its own fixed seed and runs on the
CPU, so running it twice gives identical files and a diff shows only real
changes. Every input, parameter and gradient fed in is a float32 value; the
reference outputs are computed from them in float64 and rounded to float32,
so they are the exact answers for those inputs and the Go tests' tolerance
measures our float32 rounding alone, not PyTorch's float32 rounding on top. The Go tests never run Python; the fixtures are committed.

Fixture kinds (the "kind" key):

  layer      one layer: in_shape [N,C,H,W], x, params, state, train, y, and for
             training cases dy (fixed random), dx (= vjp), grads, state_after.
  loss       nn.CrossEntropyLoss (mean): logits [N,C], labels, loss, dlogits.
  optimizer  several steps of torch.optim.SGD/Adam on a fixed vector with a
             fixed gradient sequence: p0, lrs[i], step_grads[i], step_params[i]
             (the parameters after step i+1).
  schedule   StepLR / CosineAnnealingLR: lrs[i] is the rate after i scheduler
             steps, i.e. the rate of 0-based iteration i.
  model      LeNet-5 on a batch of 4: parameters from a portable generator (see
             lcg_params), logits, loss and the full flat gradient (stored as
             little-endian float32 in a side file to keep the JSON small).

Floats are written as the shortest decimal that round-trips the float32
value, so Go's encoding/json (ParseFloat with 32 bits) gets the exact value.
"""

import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = os.path.join("solver", "testdata", "golden")


# ---------------------------------------------------------------- JSON writer


def fmt_float(v):
    if not math.isfinite(float(v)):
        raise ValueError("non-finite value in a fixture")
    f = np.float32(v)
    if f == 0 or abs(f) >= 1e-4:
        return np.format_float_positional(f, unique=True, trim="-")
    return np.format_float_scientific(f, unique=True, trim="-")


class Exact(float):
    """A float64 written with all its digits (a checksum), not rounded to float32."""


def dump(v):
    """Minimal JSON writer: float32 shortest repr for floats, one level per line."""
    if isinstance(v, Exact):
        return repr(float(v))
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return fmt_float(v)
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, torch.Tensor):
        return dump([float(a) for a in v.detach().reshape(-1).tolist()])
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(dump(a) for a in v) + "]"
    if isinstance(v, dict):
        return "{\n" + ",\n".join('"%s": %s' % (k, dump(a)) for k, a in v.items()) + "\n}"
    raise TypeError(type(v))


def write(name, obj):
    obj = dict(obj)
    obj["case"] = name
    path = os.path.join(OUT, name + ".json")
    with open(path, "w") as f:
        f.write(dump(obj) + "\n")
    size = os.path.getsize(path)
    assert size < 200_000, "%s is %d bytes" % (path, size)


# ---------------------------------------------------------------- layers


def layer_case(name, kind, config, module, in_shape, seed, train=True,
               x_scale=1.0, state=None, backward=True):
    """Run module on a fixed random input; record y and, when backward, the
    vjp with a fixed random dy: dx, parameter grads and the state after."""
    torch.manual_seed(seed)
    # Parameters: random rather than PyTorch's init, so that batch norm's
    # gamma/beta and every bias are non-trivial.
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape) * 0.5)
        if state is not None:
            for k, v in state.items():
                getattr(module, k).copy_(v)
    # Inputs and parameters are float32 values; the reference is computed in
    # float64 from them and rounded on output, so that it is the exact answer
    # for these inputs and the tolerance measures only our float32 rounding,
    # not PyTorch's as well (which alone reaches ~1e-4 of small elements
    # under the test's metric, e.g. a bias gradient summing 72 terms).
    x = (torch.randn(in_shape) * x_scale).double().requires_grad_(True)
    module.double()
    module.train(train)
    st0 = {k: b.detach().clone() for k, b in module.named_buffers() if k != "num_batches_tracked"}
    params = {k: p.detach().clone() for k, p in module.named_parameters()}
    y = module(x)
    rec = {"kind": "layer", "layer": kind, "config": config, "in_shape": list(in_shape),
           "train": train, "x": x, "params": params, "state": st0, "y": y}
    if backward:
        dy = torch.randn(y.shape).double()
        y.backward(dy)
        rec["dy"] = dy
        rec["dx"] = x.grad
        rec["grads"] = {k: p.grad for k, p in module.named_parameters()}
        rec["state_after"] = {k: b.detach().clone() for k, b in module.named_buffers()
                              if k != "num_batches_tracked"}
    write(name, rec)


class Flat(nn.Module):
    """Linear on flattened input, as solver.Linear flattens C×H×W."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x.flatten(1))

    def named_parameters(self, *a, **k):
        for n, p in self.inner.named_parameters():
            yield n, p


def conv_cfg(out, kh, kw, sh=1, sw=1, ph=0, pw=0, groups=1, bias=True):
    return {"out": out, "kh": kh, "kw": kw, "stride_h": sh, "stride_w": sw,
            "pad_h": ph, "pad_w": pw, "groups": groups, "no_bias": not bias}


def conv(name, in_shape, cfg, seed):
    c = in_shape[1]
    m = nn.Conv2d(c, cfg["out"], (cfg["kh"], cfg["kw"]), stride=(cfg["stride_h"], cfg["stride_w"]),
                  padding=(cfg["pad_h"], cfg["pad_w"]), groups=cfg["groups"], bias=not cfg["no_bias"])
    layer_case(name, "conv2d", cfg, m, in_shape, seed)


def pool_cfg(kh, kw, sh, sw, ph=0, pw=0, ceil=False, incl=True):
    return {"kh": kh, "kw": kw, "stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw,
            "ceil_mode": ceil, "count_include_pad": incl}


def layers():
    conv("conv2d_3x3_s1_p1", [2, 3, 7, 7], conv_cfg(4, 3, 3, 1, 1, 1, 1), 101)
    conv("conv2d_3x3_s2_p0", [2, 3, 9, 9], conv_cfg(4, 3, 3, 2, 2, 0, 0), 102)
    conv("conv2d_5x5_p2_lenet", [2, 1, 12, 12], conv_cfg(6, 5, 5, 1, 1, 2, 2), 103)
    conv("conv2d_3x5_nonsquare", [2, 2, 8, 9], conv_cfg(3, 3, 5, 2, 1, 1, 2), 104)
    conv("conv2d_groups2", [2, 4, 6, 6], conv_cfg(6, 3, 3, 1, 1, 1, 1, groups=2), 105)
    conv("conv2d_depthwise_m1", [2, 4, 7, 7], conv_cfg(4, 3, 3, 2, 2, 1, 1, groups=4), 106)
    conv("conv2d_depthwise_m2", [2, 3, 6, 6], conv_cfg(6, 3, 3, 1, 1, 1, 1, groups=3), 107)
    conv("conv2d_nobias", [2, 3, 6, 6], conv_cfg(5, 3, 3, 1, 1, 1, 1, bias=False), 108)

    def maxpool(name, in_shape, cfg, seed):
        m = nn.MaxPool2d((cfg["kh"], cfg["kw"]), (cfg["stride_h"], cfg["stride_w"]),
                         (cfg["pad_h"], cfg["pad_w"]), ceil_mode=cfg["ceil_mode"])
        layer_case(name, "maxpool2d", cfg, m, in_shape, seed)

    def avgpool(name, in_shape, cfg, seed):
        m = nn.AvgPool2d((cfg["kh"], cfg["kw"]), (cfg["stride_h"], cfg["stride_w"]),
                         (cfg["pad_h"], cfg["pad_w"]), ceil_mode=cfg["ceil_mode"],
                         count_include_pad=cfg["count_include_pad"])
        layer_case(name, "avgpool2d", cfg, m, in_shape, seed)

    maxpool("maxpool2d_2x2_s2", [2, 3, 8, 8], pool_cfg(2, 2, 2, 2), 201)
    maxpool("maxpool2d_3x3_s2_alexnet", [2, 3, 11, 11], pool_cfg(3, 3, 2, 2), 202)
    maxpool("maxpool2d_3x3_s2_p1", [2, 3, 8, 8], pool_cfg(3, 3, 2, 2, 1, 1), 203)
    maxpool("maxpool2d_2x2_s2_ceil", [2, 3, 7, 7], pool_cfg(2, 2, 2, 2, ceil=True), 204)
    maxpool("maxpool2d_3x3_s2_ceil", [2, 2, 8, 8], pool_cfg(3, 3, 2, 2, ceil=True), 205)
    avgpool("avgpool2d_2x2_s2", [2, 3, 8, 8], pool_cfg(2, 2, 2, 2), 211)
    avgpool("avgpool2d_3x3_s2_p1_incl", [2, 3, 7, 7], pool_cfg(3, 3, 2, 2, 1, 1, incl=True), 212)
    avgpool("avgpool2d_3x3_s2_p1_excl", [2, 3, 7, 7], pool_cfg(3, 3, 2, 2, 1, 1, incl=False), 213)
    layer_case("globalavgpool", "globalavgpool", {}, nn.AdaptiveAvgPool2d(1), [2, 3, 5, 5], 214)

    layer_case("linear", "linear", {"out": 5}, Flat(nn.Linear(16, 5)), [3, 4, 2, 2], 301)
    layer_case("relu", "relu", {}, nn.ReLU(), [2, 3, 4, 4], 302, x_scale=4)
    layer_case("relu6", "relu6", {}, nn.ReLU6(), [2, 3, 4, 4], 303, x_scale=4)
    layer_case("flatten", "flatten", {}, nn.Flatten(), [2, 3, 2, 2], 304)

    def bn_state(c, seed):
        g = torch.Generator().manual_seed(seed)
        return {"running_mean": torch.randn(c, generator=g) * 0.3,
                "running_var": torch.rand(c, generator=g) + 0.5}

    bn = {"eps": 1e-5, "momentum": 0.1}
    layer_case("batchnorm2d_train", "batchnorm", bn, nn.BatchNorm2d(3), [4, 3, 4, 4], 401,
               x_scale=2, state=bn_state(3, 1))
    layer_case("batchnorm1d_train", "batchnorm", bn, nn.BatchNorm1d(5), [8, 5], 402,
               x_scale=2, state=bn_state(5, 2))
    layer_case("batchnorm2d_eval", "batchnorm", bn, nn.BatchNorm2d(3), [4, 3, 4, 4], 403,
               train=False, x_scale=2, state=bn_state(3, 3))
    layer_case("batchnorm1d_eval", "batchnorm", bn, nn.BatchNorm1d(5), [8, 5], 404,
               train=False, x_scale=2, state=bn_state(5, 4))

    acts()

    layer_case("dropout_p0_train", "dropout", {"p": 0.0}, nn.Dropout(0.0), [2, 3, 4, 4], 501)
    layer_case("dropout_p05_eval", "dropout", {"p": 0.5}, nn.Dropout(0.5), [2, 3, 4, 4], 502,
               train=False)


class Fn(nn.Module):
    """A module without parameters that applies f."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


def acts():
    """The activations the ONNX importer maps (gpu.Act kinds and softmax).
    Inputs are scaled so that every piece of the piecewise ones is hit."""
    def case(name, kind, cfg, m, shape, seed, scale):
        layer_case(name, kind, cfg, m, shape, seed, x_scale=scale)

    case("sigmoid", "sigmoid", {}, nn.Sigmoid(), [2, 3, 4, 4], 311, 4)
    case("tanh", "tanh", {}, nn.Tanh(), [2, 3, 4, 4], 312, 2)
    case("hardswish", "hardswish", {}, nn.Hardswish(), [2, 3, 4, 4], 313, 4)
    case("silu", "silu", {}, nn.SiLU(), [2, 3, 4, 4], 325, 4)
    case("hardsigmoid_torch", "hardsigmoid", {"alpha": 1 / 6, "beta": 0.5}, nn.Hardsigmoid(), [2, 3, 4, 4], 314, 4)
    # ONNX's default HardSigmoid (alpha 0.2, beta 0.5), as onnx's reference defines it.
    case("hardsigmoid_onnx", "hardsigmoid", {"alpha": 0.2, "beta": 0.5},
         Fn(lambda x: torch.clamp(x * np.float32(0.2) + 0.5, 0, 1)), [2, 3, 4, 4], 315, 4)
    case("leakyrelu", "leakyrelu", {"alpha": 0.01}, nn.LeakyReLU(0.01), [2, 3, 4, 4], 316, 2)
    case("leakyrelu_negative", "leakyrelu", {"alpha": -0.3}, nn.LeakyReLU(-0.3), [2, 3, 4, 4], 317, 2)
    case("clip_both", "clip", {"lo": -1, "hi": 2}, Fn(lambda x: torch.clamp(x, -1, 2)), [2, 3, 4, 4], 318, 3)
    case("clip_min", "clip", {"lo": -0.5, "no_hi": True}, Fn(lambda x: torch.clamp(x, min=-0.5)), [2, 6], 319, 2)
    case("clip_max", "clip", {"hi": 0.25, "no_lo": True}, Fn(lambda x: torch.clamp(x, max=0.25)), [2, 3, 4, 4], 320, 2)
    # Softmax over the channels (opset 13's axis=1 on N×C×H×W), over a
    # vector's classes, over H alone, and opset 11's axis=1 on N×C×H×W
    # (the input flattened to N×(C·H·W)). Axes count from 0 after the
    # batch, as solver.Softmax's First and Last.
    case("softmax_channels", "softmax", {"first": 0, "last": 0}, nn.Softmax(dim=1), [2, 5, 3, 3], 321, 3)
    case("softmax_vector", "softmax", {"first": 0, "last": 0}, nn.Softmax(dim=1), [3, 10], 322, 3)
    case("softmax_height", "softmax", {"first": 1, "last": 1}, nn.Softmax(dim=2), [2, 3, 4, 5], 323, 3)
    case("softmax_flat", "softmax", {"first": 0, "last": 2},
         Fn(lambda x: x.flatten(1).softmax(1).reshape(x.shape)), [2, 3, 2, 2], 324, 3)


# ---------------------------------------------------------------- loss


def losses():
    def case(name, logits, labels):
        logits = logits.double().requires_grad_(True)  # float64 reference, as for layers
        labels = torch.tensor(labels, dtype=torch.long)
        loss = nn.CrossEntropyLoss()(logits, labels)
        loss.backward()
        write(name, {"kind": "loss", "classes": logits.shape[1], "logits": logits,
                     "labels": labels.tolist(), "loss": float(loss), "dlogits": logits.grad})

    torch.manual_seed(601)
    case("xent_random", torch.randn(5, 10) * 2, [3, 0, 9, 4, 4])
    big = torch.zeros(4, 5)
    big[0] = torch.tensor([50.0, -50.0, 0.0, 10.0, -10.0])  # confident, right
    big[1] = torch.tensor([50.0, -50.0, 0.0, 10.0, -10.0])  # confident, wrong
    big[2] = torch.tensor([-50.0, -50.0, -50.0, -50.0, -50.0])  # all equal
    big[3] = torch.tensor([100.0, 99.0, -100.0, 0.0, 50.0])  # near tie at the top
    case("xent_large_logits", big, [0, 1, 2, 1])


# ---------------------------------------------------------------- optimizers


def optimizers():
    def case(name, make, cfg, lrs, seed):
        torch.manual_seed(seed)
        p = nn.Parameter(torch.randn(12).double())  # float64 reference, as for layers
        p0 = p.detach().clone()
        opt = make([p], lrs[0])
        grads, after = [], []
        for lr in lrs:
            for gr in opt.param_groups:
                gr["lr"] = float(np.float32(lr))  # the float32 rate the Go side uses
            g = torch.randn(12).double()
            p.grad = g.clone()
            opt.step()
            grads.append(g)
            after.append(p.detach().clone())
        rec = {"kind": "optimizer", "optimizer": cfg["name"], "config": cfg, "p0": p0,
               "lrs": [float(np.float32(v)) for v in lrs],
               "step_grads": grads, "step_params": after}
        write(name, rec)

    lrs = [0.1, 0.1, 0.05, 0.05, 0.01, 0.01]

    def sgd(name, mom, wd, nest, seed):
        case(name, lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=mom, weight_decay=wd, nesterov=nest),
             {"name": "sgd", "momentum": mom, "weight_decay": wd, "nesterov": nest}, lrs, seed)

    sgd("sgd_plain", 0.0, 0.0, False, 701)
    sgd("sgd_momentum", 0.9, 0.0, False, 702)
    sgd("sgd_nesterov", 0.9, 0.0, True, 703)
    sgd("sgd_weight_decay", 0.0, 5e-4, False, 704)
    sgd("sgd_momentum_weight_decay", 0.9, 5e-4, False, 705)
    # A large decay so that an error in how it enters the update shows at 1e-4.
    sgd("sgd_nesterov_weight_decay", 0.9, 0.05, True, 706)

    alrs = [0.01, 0.01, 0.005, 0.005, 0.001, 0.001]

    def adam(name, wd, seed):
        case(name, lambda ps, lr: torch.optim.Adam(ps, lr=lr, weight_decay=wd),
             {"name": "adam", "momentum": 0.0, "weight_decay": wd, "nesterov": False}, alrs, seed)

    adam("adam", 0.0, 711)
    adam("adam_weight_decay", 0.1, 712)


# ---------------------------------------------------------------- schedules


def schedules():
    def case(name, cfg, make, iters):
        p = nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([p], lr=cfg["base"])
        sched = make(opt)
        lrs = []
        for _ in range(iters):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        write(name, {"kind": "schedule", "schedule": cfg["name"], "config": cfg, "lrs": lrs})

    case("steplr_3_half", {"name": "steplr", "base": 0.1, "step_size": 3, "gamma": 0.5},
         lambda o: torch.optim.lr_scheduler.StepLR(o, 3, 0.5), 13)
    case("steplr_30_tenth", {"name": "steplr", "base": 0.01, "step_size": 30, "gamma": 0.1},
         lambda o: torch.optim.lr_scheduler.StepLR(o, 30, 0.1), 100)
    # PyTorch's cosine is periodic past T_max (it rises again); ours holds
    # eta_min there, so the fixtures stop at T_max inclusive.
    case("cosine_10_min", {"name": "cosine", "base": 0.1, "t_max": 10, "eta_min": 0.001},
         lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 10, 0.001), 11)
    case("cosine_100_zero", {"name": "cosine", "base": 0.05, "t_max": 100, "eta_min": 0.0},
         lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 100, 0.0), 101)


# ---------------------------------------------------------------- model


def lcg_params(shapes, seed):
    """The portable parameter generator that solver/golden_test.go mirrors:
    one 32-bit LCG stream s <- s*1664525 + 1013904223 (mod 2^32) over the flat
    vector in parameters() order; element = float32(2*(s>>8)/2^24 - 1) * scale,
    with scale = float32(1/sqrt(fan_in)) of its tensor. Every step is exact in
    float32, so Go reproduces the values bit for bit."""
    s = seed
    out = []
    for shape, scale in shapes:
        n = int(np.prod(shape))
        vals = np.empty(n, dtype=np.float32)
        for i in range(n):
            s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
            u = np.float32((s >> 8) * 2 - (1 << 24)) / np.float32(1 << 24)
            vals[i] = np.float32(u) * np.float32(scale)
        out.append(torch.from_numpy(vals.reshape(shape)))
    return out


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def model():
    net = LeNet5()
    names, shapes, scales = [], [], []
    for n, p in net.named_parameters():
        fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else \
            int(np.prod(dict(net.named_parameters())[n.replace("bias", "weight")].shape[1:]))
        names.append(n)
        shapes.append(list(p.shape))
        scales.append(float(np.float32(1 / math.sqrt(fan_in))))
    seed = 12345
    vals = lcg_params(list(zip(shapes, scales)), seed)
    with torch.no_grad():
        for p, v in zip(net.parameters(), vals):
            p.copy_(v)
    torch.manual_seed(801)
    x = torch.rand(4, 1, 28, 28)
    labels = torch.tensor([3, 7, 0, 7])
    # The reference is computed in float64, as for layers: through five
    # layers PyTorch's own float32 run differs from it by up to 8e-5 of small
    # gradient elements under the test's metric.
    net = net.double()
    logits = net(x.double())
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    logits = logits.float()
    flat = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy().astype("<f4")
    gname = "lenet5_grads.f32"
    with open(os.path.join(OUT, gname), "wb") as f:
        f.write(flat.tobytes())
    write("model_lenet5", {
        "kind": "model", "model": "lenet5", "in_shape": [4, 1, 28, 28],
        "param_names": names, "param_shapes": shapes, "param_scales": scales, "lcg_seed": seed,
        "x": x, "labels": labels.tolist(), "logits": logits, "loss": float(loss),
        "grads_file": gname, "num_params": int(flat.size),
        "param_checksum": Exact(sum(float(v.double().sum()) for v in vals)),
    })


def main():
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    layers()
    losses()
    optimizers()
    schedules()
    model()
    print("wrote", len(os.listdir(OUT)), "files to", OUT, "with torch", torch.__version__)


if __name__ == "__main__":
    main()
