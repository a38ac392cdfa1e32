#!/usr/bin/env python3
"""A golden output for the vit_tv fixtures whose head is not zero.

torchvision's VisionTransformer starts its classifier (heads.head) at zero,
so PyTorch's output for models/onnx/testdata/torch2/vit_tv.x.npy is all
zeros and says nothing about the encoder. This script (the Debian machine's
PyTorch 1.13 and python3-onnx) runs torchvision's VisionTransformer forward
(conv_proj, class token, position embedding, two encoder layers of
multi-head attention and an MLP, the final LayerNorm, the class token's
row) in torch.nn.functional on the weights vit_tv_legacy.onnx holds, checks
that the zero head gives PyTorch 2.11's zeros, replaces heads.head.weight by
0.5·sin(0.7·i) (row-major 5×32; TestTorch2Exports sets the same) and
writes the output to vit_tv.yhead.npy:

    python3 scripts/torch2_vit_head.py models/onnx/testdata/torch2
"""
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh
import torch
import torch.nn.functional as F

D, HEADS, T, CLASSES, LAYERS = 32, 2, 17, 5, 2


def main(d):
    m = onnx.load(os.path.join(d, "vit_tv_legacy.onnx"))
    W = {i.name: torch.tensor(nh.to_array(i).copy()) for i in m.graph.initializer}
    for n in m.graph.node:  # the legacy exporter's aliases of equal tensors
        if n.op_type == "Identity" and n.input[0] in W:
            W[n.output[0]] = W[n.input[0]]
    mm = {n.name: W[n.input[1]] for n in m.graph.node if n.op_type == "MatMul" and n.input[1] in W}
    x = torch.tensor(np.load(os.path.join(d, "vit_tv.x.npy")))
    h = F.conv2d(x, W["conv_proj.weight"], W["conv_proj.bias"], stride=8)
    h = h.reshape(1, D, T - 1).permute(0, 2, 1)
    h = torch.cat([W["class_token"], h], 1) + W["encoder.pos_embedding"]
    dh = D // HEADS
    for L in range(LAYERS):
        p, q = f"encoder.layers.encoder_layer_{L}.", f"/encoder/layers/encoder_layer_{L}/"
        y = F.layer_norm(h, (D,), W[p + "ln_1.weight"], W[p + "ln_1.bias"], 1e-6)
        qkv = y @ mm[q + "self_attention/MatMul"] + W[p + "self_attention.in_proj_bias"]
        qq, kk, vv = (t.reshape(1, T, HEADS, dh).permute(0, 2, 1, 3) for t in qkv.split(D, -1))
        a = torch.softmax(qq @ kk.transpose(-1, -2) / dh ** 0.5, -1) @ vv
        a = F.linear(a.permute(0, 2, 1, 3).reshape(1, T, D),
                     W[p + "self_attention.out_proj.weight"], W[p + "self_attention.out_proj.bias"])
        h = h + a
        y = F.layer_norm(h, (D,), W[p + "ln_2.weight"], W[p + "ln_2.bias"], 1e-6)
        y = F.gelu(y @ mm[q + "mlp/mlp.0/MatMul"] + W[p + "mlp.0.bias"])
        h = h + y @ mm[q + "mlp/mlp.3/MatMul"] + W[p + "mlp.3.bias"]
    h = F.layer_norm(h, (D,), W["encoder.ln.weight"], W["encoder.ln.bias"], 1e-6)[:, 0]
    zero = F.linear(h, W["heads.head.weight"], W["heads.head.bias"]).numpy()
    want = np.load(os.path.join(d, "vit_tv.y.npy"))
    assert np.abs(zero - want).max() == 0, (zero, want)
    hw = 0.5 * np.sin(0.7 * np.arange(CLASSES * D, dtype=np.float64)).reshape(CLASSES, D)
    out = F.linear(h, torch.tensor(hw, dtype=torch.float32), W["heads.head.bias"]).numpy()
    np.save(os.path.join(d, "vit_tv.yhead.npy"), out.astype(np.float32))
    print("vit_tv.yhead.npy:", out)


if __name__ == "__main__":
    main(sys.argv[1])
