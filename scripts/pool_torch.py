#!/usr/bin/python3
"""PyTorch goldens for pooling, dilated windows first.

Run from the repository root with Debian's PyTorch 1.13:

    /usr/bin/python3 scripts/pool_torch.py

It writes gpu/gputest/testdata/pool_torch.json, which gputest.Conformance
checks every backend against (its PoolTorch subtest): per case the
geometry (N, C, H, W, window, stride, padding, dilation, ceil mode and for
average pooling count_include_pad), an input x, an output gradient dy, and
PyTorch's output y and input gradient dx (autograd), computed in float64 from
the float32 data and rounded.

Max pooling is F.max_pool2d and F.max_pool1d (a 1-D case is stored with
H = 1, as cotrain runs it). PyTorch has no dilated average pooling (ONNX's
AveragePool has dilations from opset 19), so average pooling is written
here from its definition with F.unfold, which does dilate: the mean over the
window's taps inside the input, divided by the taps inside the padded input
when count_include_pad is set (the taps of a ceil-mode window past the
padding never count), else by the taps inside the input. For dilation 1
that definition is F.avg_pool2d's, which the script asserts on every
undilated case before writing.

Every array has a fixed seed, so a rerun rewrites identical data.
"""
import json
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "gputest", "testdata", "pool_torch.json")


def out_size(n, k, s, p, d, ceil):
    """aten's pooling_output_shape."""
    span = n + 2 * p - d * (k - 1) - 1
    o = (span + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def avg_pool(x, k, s, p, d, ceil, incl):
    """Dilated average pooling of N×C×H×W x from its definition (unfold)."""
    n, c, h, w = x.shape
    oh, ow = out_size(h, k[0], s[0], p[0], d[0], ceil), out_size(w, k[1], s[1], p[1], d[1], ceil)
    # Extra zeros past the right padding for a ceil-mode window to overrun.
    eh = max(0, (oh - 1) * s[0] + (k[0] - 1) * d[0] + 1 - (h + 2 * p[0]))
    ew = max(0, (ow - 1) * s[1] + (k[1] - 1) * d[1] + 1 - (w + 2 * p[1]))
    pads = (p[1], p[1] + ew, p[0], p[0] + eh)
    cols = F.unfold(F.pad(x, pads), k, dilation=d, stride=s)  # N × C·kh·kw × OH·OW
    assert cols.shape[2] == oh * ow, (cols.shape, oh, ow)
    sums = cols.reshape(n, c, k[0] * k[1], oh * ow).sum(2)
    ones = torch.ones(1, 1, h, w, dtype=x.dtype)
    mask = F.pad(F.pad(ones, (p[1], p[1], p[0], p[0]), value=1.0 if incl else 0.0), (0, ew, 0, eh))
    div = F.unfold(mask, k, dilation=d, stride=s).sum(1)  # 1 × OH·OW
    return (sums / div).reshape(n, c, oh, ow)


# name, kind, N, C, H, W, (kh, kw), (sh, sw), (ph, pw), (dh, dw), ceil, incl, ties
CASES = [
    ("max_d2_p1", "max", 2, 2, 9, 9, (3, 3), (1, 1), (1, 1), (2, 2), False, False, False),
    ("max_d2x3_s2_p1_ceil", "max", 1, 2, 10, 11, (3, 2), (2, 2), (1, 1), (2, 3), True, False, False),
    ("max_d3x2_s3x2_p1_ties", "max", 2, 1, 8, 13, (2, 3), (3, 2), (1, 1), (3, 2), False, False, True),
    ("max_d2_s2_p1_ceil_ties", "max", 1, 2, 7, 7, (2, 2), (2, 2), (1, 1), (2, 2), True, False, True),
    ("max_k3_s2_p1_ceil", "max", 1, 2, 5, 5, (3, 3), (2, 2), (1, 1), (1, 1), True, False, False),
    ("max1d_d3_s2_p1_ceil", "max", 2, 3, 1, 17, (1, 3), (1, 2), (0, 1), (1, 3), True, False, False),
    ("max1d_d2_p2_ties", "max", 1, 2, 1, 12, (1, 5), (1, 1), (0, 2), (1, 2), False, False, True),
    ("avg_d2_p1_incl", "avg", 2, 2, 9, 9, (3, 3), (1, 1), (1, 1), (2, 2), False, True, False),
    ("avg_d2_p1_excl", "avg", 2, 2, 9, 9, (3, 3), (1, 1), (1, 1), (2, 2), False, False, False),
    ("avg_d2x3_s2_p1_ceil_incl", "avg", 1, 2, 10, 11, (3, 2), (2, 2), (1, 1), (2, 3), True, True, False),
    ("avg_d2x3_s2_p1_ceil_excl", "avg", 1, 2, 10, 11, (3, 2), (2, 2), (1, 1), (2, 3), True, False, False),
    ("avg_d3x2_s3x2_p1_incl", "avg", 2, 1, 8, 13, (2, 3), (3, 2), (1, 1), (3, 2), False, True, False),
    ("avg_k3_s2_p1_ceil_incl", "avg", 1, 2, 5, 5, (3, 3), (2, 2), (1, 1), (1, 1), True, True, False),
    ("avg_k3_s2_p1_ceil_excl", "avg", 1, 2, 5, 5, (3, 3), (2, 2), (1, 1), (1, 1), True, False, False),
    ("avg1d_d2_s2_p1_ceil_incl", "avg", 2, 3, 1, 17, (1, 3), (1, 2), (0, 1), (1, 2), True, True, False),
    ("avg1d_d3_p1_excl", "avg", 1, 2, 1, 12, (1, 3), (1, 1), (0, 1), (1, 3), False, False, False),
]


def main():
    gen = torch.Generator().manual_seed(27)
    out = []
    for name, kind, n, c, h, w, k, s, p, d, ceil, incl, ties in CASES:
        x = torch.randn(n, c, h, w, generator=gen)
        if ties:
            # Few distinct values: windows hold several maxima, and the
            # first in tap order takes the gradient.
            x = torch.round(x * 1.5) / 1.5
        x = x.float()
        xd = x.double().requires_grad_()
        if kind == "max" and h == 1:
            y = F.max_pool1d(xd.squeeze(2), k[1], s[1], p[1], d[1], ceil_mode=ceil).unsqueeze(2)
        elif kind == "max":
            y = F.max_pool2d(xd, k, s, p, d, ceil_mode=ceil)
        else:
            y = avg_pool(xd, k, s, p, d, ceil, incl)
            if d == (1, 1):
                want = F.avg_pool2d(xd, k, s, p, ceil_mode=ceil, count_include_pad=incl)
                assert torch.allclose(y, want, rtol=0, atol=1e-12), name
        dy = torch.randn(y.shape, generator=gen).float()
        y.backward(dy.double())
        flat = lambda t: [float(v) for v in t.detach().float().flatten()]
        out.append({"name": name, "max": kind == "max", "n": n, "c": c, "h": h, "w": w, "kh": k[0], "kw": k[1],
                    "sh": s[0], "sw": s[1], "ph": p[0], "pw": p[1], "dh": d[0], "dw": d[1], "ceil": ceil,
                    "incl": incl, "oh": y.shape[2], "ow": y.shape[3], "x": flat(x), "dy": flat(dy), "y": flat(y),
                    "dx": flat(xd.grad)})
    with open(OUT, "w") as fh:
        json.dump(out, fh)
        fh.write("\n")
    print(f"{os.path.relpath(OUT)}: {len(out)} cases")


if __name__ == "__main__":
    main()
