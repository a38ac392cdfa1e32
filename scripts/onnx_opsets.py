#!/usr/bin/python3
"""Fixtures for every ONNX opset cotrain reads (7 to 21) and for external data.

Run from the repository root with Debian's PyTorch 1.13 and ONNX 1.12
(apt-get install -y python3-torch python3-onnx libopenblas0-pthread):

    /usr/bin/python3 scripts/onnx_opsets.py

It writes models/onnx/testdata/opsets/:

- ops_opN.onnx for N = 7..21: one graph written in each opset's own spelling
  of the operators whose form changed between opsets: Pad (pads and value as
  attributes before 11, inputs from 11, an axes input from 18), Split (split
  attribute before 13, input from 13, num_outputs from 18), ReduceMean (axes
  attribute before 18, input from 18), ReduceSum (input from 13), Squeeze and
  Unsqueeze (axes input from 13), Clip (min/max attributes before 11, inputs
  from 11), BatchNormalization (spatial in 7 and 8, training_mode 0 from
  14), Dropout (ratio attribute before 12, input from 12), Reshape
  (allowzero 0 from 14) and Shape (start/end from 15). ONNX 1.12's helper
  writes the graph; its checker knows opsets up to 17 and checks those.
  ops.x.npy is a batch of 2 inputs and ops.y.npy the output PyTorch computes
  with the same weights (torch.nn.functional, float64, rounded to float32).
- cnn_op20.onnx and cnn_op20.onnx.data: what today's torch.onnx.export
  writes by default (opset 20, weights in model.onnx.data beside the model),
  made here from a PyTorch 1.13 export at opset 17 whose opset is re-declared
  as 20 (every operator in it has the same semantics at 17 and 20; the
  script checks the list) and whose weights are saved externally through
  onnx (save_model with save_as_external_data). cnn_op20.x.npy and
  cnn_op20.y.npy are its input and PyTorch's output.
- zoo_ops.onnx and zoo_ops.json: the operators of the ONNX model zoo's
  classic CNNs (Caffe/Caffe2 exports, opset 9) that need more than a
  PyTorch export shows: asymmetric pads on Conv, MaxPool and AveragePool, and
  Sum of three inputs, with PyTorch's output and parameter gradients.
- zoo_lrn.onnx and zoo_lrn.json: LRN (AlexNet's parameters, and larger
  ones on signed values) against nn.LocalResponseNorm, the same way.
- zoo_alexnet.onnx and zoo_alexnet.json: BVLC AlexNet's structure as the
  zoo's Caffe export writes it (grouped convolutions, LRN, MaxPool, Gemm,
  Dropout, a final Softmax), scaled down to 3x67x67 inputs; gradients with
  dropout off.
- zoo_resnet.onnx and zoo_resnet.json: the zoo's Caffe2 ResNet structure
  (bias-free convolutions, BatchNormalization, residual joins as Sum), two
  bottleneck blocks; gradients with batch norm in training mode.
- pad_value_op9.onnx, pad_value_op13.onnx and their .json: Pad with a
  constant other than zero (attribute at 9, input at 13), as zoo_ops.
- dilated_op13.onnx and dilated_op13.json: dilated convolutions (dilation 2,
  and (2, 3) grouped with stride 2) as torch.onnx.export writes them.
- dilated1d_op13.onnx and dilated1d_op13.json: dilated Conv1d (dilation 2,
  and 3 grouped with stride 2) over N×3×20.
- convtranspose_op13.onnx and convtranspose_op13.json: transposed
  convolutions (stride 2 with padding and output padding in 2 groups; 2x2
  stride 2 without bias) as torch.onnx.export writes them.
- matmul_op13.onnx and matmul_op13.json: MatMul between activations (one
  head of self-attention over a 4x4 map) as torch.onnx.export writes it.
- tile_op13.onnx and tile_op13.json: Tile as torch.onnx.export writes
  Tensor.repeat (along the channels, then both spatial axes).
- resize_op11.onnx, resize_op13.onnx, upsample_op9.onnx, resize1d_op13.onnx
  and their .json: Resize and Upsample as torch.onnx.export writes
  nn.Upsample and F.interpolate (resize()); resize_op18.onnx and
  resize_op19.onnx: opset 18's spelling through onnx.helper (resize_new());
  bicubic_op13.onnx and .json: Resize mode cubic, F.interpolate bicubic
  (bicubic()); resize_sym_op19.onnx and .json: half_pixel_symmetric and
  tf_half_pixel_for_nn (resize_sym()); resize_aa_op18.onnx and .json:
  antialias=1, F.interpolate(antialias=True) (resize_aa()).
- pad_modes_op9.onnx, pad_modes_op13.onnx, pad_modes_op18.onnx,
  pad_modes1d_op13.onnx and their .json: Pad in modes reflect and edge as
  torch.onnx.export writes nn.ReflectionPad2d, nn.ReplicationPad2d and
  padding_mode="reflect"/"replicate" convolutions, and in opset 18's
  spelling with the axes input (pad_modes()).

- dilatedpool_op13.onnx and dilatedpool_op13.json: dilated MaxPool2d (3x3
  dilation 2, stride 2, padding 1, ceil mode; 2x2 dilation (2, 3)) as
  torch.onnx.export writes it (MaxPool's dilations).
- dilatedpool1d_op13.onnx and dilatedpool1d_op13.json: dilated MaxPool1d
  (3, dilation 3, stride 2, padding 1, ceil mode) over N×3×20.
- avgpool_dilated_op19.onnx and avgpool_dilated_op19.json: AveragePool with
  dilations (opset 19, onnx.helper; PyTorch has no dilated average pooling,
  so its values come from scripts/pool_torch.py's definition with F.unfold),
  counting the padding in ceil mode and not counting it.
- convtranspose2_op13.onnx and convtranspose1d_op13.onnx with their .json:
  nn.ConvTranspose2d and nn.ConvTranspose1d with dilation, output padding
  and groups as torch.onnx.export writes them.
- matmul_bcast_op13.onnx and matmul_bcast_op13.json: torch.matmul between
  activations whose leading dims broadcast (2×4×16 by 1×16×4, and 1×4×16
  by 3×16×2) as torch.onnx.export writes it.
- dilatedpool_pads_op13.onnx and dilatedpool_pads_op13.json: dilated
  MaxPool with pads that differ at the two ends ([1 0 0 1], [0 0 1 1];
  onnx.helper), against F.pad with -inf and F.max_pool2d.
- pads1d_op13.onnx and pads1d_op13.json: 1-D Conv, MaxPool and AveragePool
  whose pads differ at the two ends of L (what TensorFlow's "same" padding
  of an even kernel writes; onnx.helper), against F.pad and the 1-D ops.
- convtranspose_pads_op13.onnx and convtranspose_pads_op13.json:
  ConvTranspose's attributes PyTorch never writes (onnx.helper): pads that
  differ at the two ends, output_shape, and auto_pad SAME_UPPER with
  dilations; the golden is F.conv_transpose2d without padding, cropped as
  ONNX's formulas say.
- convnext_op13.onnx, convnext_op17.onnx and their .json: torchvision's
  ConvNeXt blocks (channels-last LayerNorm, Linear, GELU, Linear, layer
  scale, residual; LayerNorm2d and a 2x2 stride-2 downsampling) scaled down
  to 3x32x32, at opset 13 (LayerNorm as arithmetic) and 17
  (LayerNormalization) (convnext()).
- vit_op13.onnx, vit_op17.onnx and their .json: torchvision's
  VisionTransformer scaled down (image 32x32, patch 8, dim 32, 2 heads, 2
  layers of nn.TransformerEncoderLayer), its gradients by cotrain's tensor
  names (vit()).

    /usr/bin/python3 scripts/onnx_opsets.py only FUNCTION...

runs only the named builders (resize, resize_new, tile, ...).

Every array has a fixed seed, so a rerun rewrites identical data.

    /usr/bin/python3 scripts/onnx_opsets.py check DIR

checks cotrain's exports of the fixtures of new operators (CHECKED), which
COTRAIN_ONNX_EXPORT=DIR go test ./models/onnx -run TestExportZooOpsForPython
writes: onnx.checker's full check, and scripts/onnx_fixtures.py's evaluator
against PyTorch's output.
"""
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper
from torch import nn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "models", "onnx", "testdata", "opsets")

# Operators whose semantics are the same at opsets 17 and 20 (their newer
# versions only add data types), so that re-declaring a 17 export as 20 is
# exact.
SAME_17_TO_20 = {"Conv", "Relu", "MaxPool", "Flatten", "Gemm", "BatchNormalization", "Add", "Identity"}


def weights():
    g = torch.Generator().manual_seed(27)
    r = lambda *s: torch.randn(*s, generator=g)
    return {
        "w1": r(8, 4, 3, 3) * 0.3, "b1": r(8) * 0.1,
        "scale": 1 + 0.2 * r(8), "bias": 0.1 * r(8), "mean": 0.1 * r(8), "var": 0.5 + torch.rand(8, generator=g),
        "w2": r(5, 24) * 0.3, "b2": r(5) * 0.1,
        "x": r(2, 4, 6, 6),
    }


def golden(w):
    """The graph of ops_opN in torch.nn.functional, in float64."""
    d = {k: v.double() for k, v in w.items()}
    x = F.pad(d["x"], (1, 1, 1, 1))
    x = F.conv2d(x, d["w1"], d["b1"])
    x = F.batch_norm(x, d["mean"], d["var"], d["scale"], d["bias"], False, 0.1, 1e-5)
    x = torch.clamp(x, -1.5, 2.0)
    a, b = torch.split(x, [4, 4], dim=1)
    x = a + b                                      # 4×6×6
    x = x.mean(dim=3, keepdim=True)                # 4×6×1
    x = x.squeeze(3).unsqueeze(1)                  # 1×4×6
    x = x.sum(dim=1, keepdim=True)                 # 1×4×6
    x = x.reshape(x.shape[0], -1)                  # 24
    return F.linear(x, d["w2"], d["b2"]).float()


def ints(name, vals):
    return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)


def floats(name, t):
    return numpy_helper.from_array(t.numpy().astype(np.float32), name)


def ops_model(op, w):
    """The graph of golden() in opset op's spelling."""
    inits = [floats(k, w[k]) for k in ("w1", "b1", "scale", "bias", "mean", "var", "w2", "b2")]
    nodes = []

    def node(kind, ins, outs, **attrs):
        nodes.append(helper.make_node(kind, ins, outs, name=f"{kind.lower()}_{len(nodes)}", **attrs))

    # Pad
    if op < 11:
        node("Pad", ["x"], ["p"], pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.0)
    elif op < 18:
        inits.append(ints("pads", [0, 0, 1, 1, 0, 0, 1, 1]))
        inits.append(floats("padv", torch.zeros(())))
        node("Pad", ["x", "pads", "padv"], ["p"], mode="constant")
    else:
        inits.append(ints("pads", [1, 1, 1, 1]))
        inits.append(ints("padaxes", [2, -1]))
        node("Pad", ["x", "pads", "", "padaxes"], ["p"])
    node("Conv", ["p", "w1", "b1"], ["c"], kernel_shape=[3, 3])
    bn = {"epsilon": 1e-5}
    if op < 9:
        bn["spatial"] = 1
    if op >= 14:
        bn["training_mode"] = 0
    node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"], **bn)
    if op < 11:
        node("Clip", ["n"], ["r"], min=-1.5, max=2.0)
    else:
        inits += [floats("lo", torch.tensor(-1.5)), floats("hi", torch.tensor(2.0))]
        node("Clip", ["n", "lo", "hi"], ["r"])
    if op < 13:
        node("Split", ["r"], ["s1", "s2"], axis=1, split=[4, 4])
    elif op < 18:
        inits.append(ints("split", [4, 4]))
        node("Split", ["r", "split"], ["s1", "s2"], axis=1)
    else:
        node("Split", ["r"], ["s1", "s2"], axis=1, num_outputs=2)
    node("Add", ["s1", "s2"], ["a"])
    if op < 12:
        node("Dropout", ["a"], ["d"], ratio=0.3)
    else:
        inits.append(floats("ratio", torch.tensor(0.3)))
        node("Dropout", ["a", "ratio"], ["d"])
    if op < 18:
        node("ReduceMean", ["d"], ["m"], axes=[3], keepdims=1)
    else:
        inits.append(ints("meanaxes", [3]))
        node("ReduceMean", ["d", "meanaxes"], ["m"], keepdims=1)
    if op < 13:
        node("Squeeze", ["m"], ["q"], axes=[3])
        node("Unsqueeze", ["q"], ["u"], axes=[1])
        node("ReduceSum", ["u"], ["su"], axes=[1], keepdims=1)
    else:
        inits += [ints("sqaxes", [3]), ints("unsqaxes", [1])]
        node("Squeeze", ["m", "sqaxes"], ["q"])
        node("Unsqueeze", ["q", "unsqaxes"], ["u"])
        node("ReduceSum", ["u", "unsqaxes"], ["su"], keepdims=1)
    if op < 15:
        inits.append(ints("target", [0, -1]))
        node("Reshape", ["su", "target"], ["f"], **({"allowzero": 0} if op >= 14 else {}))
    else:
        # x.view(x.size(0), -1) through Shape's start/end (opset 15).
        inits.append(ints("minus1", [-1]))
        node("Shape", ["su"], ["batch"], start=0, end=1)
        node("Concat", ["batch", "minus1"], ["target"], axis=0)
        node("Reshape", ["su", "target"], ["f"], allowzero=0)
    node("Gemm", ["f", "w2", "b2"], ["y"], transB=1)
    graph = helper.make_graph(
        nodes, f"ops_op{op}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", op)], producer_name="scripts/onnx_opsets.py")
    m.ir_version = 8 if op <= 17 else 9  # IR 9 came with opset 19; 8 is what ONNX 1.12 writes
    if op <= 17:
        onnx.checker.check_model(m)
    return m


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 6)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def cnn_op20():
    torch.manual_seed(20)
    m = SmallCNN().eval()
    with torch.no_grad():
        m.bn1.running_mean.normal_(0, 0.1)
        m.bn1.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 16, 16)
    path = os.path.join(OUT, "cnn_op20.onnx")
    tmp = path + ".tmp"
    torch.onnx.export(m, x, tmp, opset_version=17, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    model = onnx.load(tmp)
    os.remove(tmp)
    ops = {n.op_type for n in model.graph.node}
    assert ops <= SAME_17_TO_20, f"operators {ops - SAME_17_TO_20} may change meaning from opset 17 to 20"
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 20
    model.ir_version = 9
    data = "cnn_op20.onnx.data"
    if os.path.exists(os.path.join(OUT, data)):
        os.remove(os.path.join(OUT, data))  # save_model appends to an existing file
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data, size_threshold=0)
    with torch.no_grad():
        y = m.double()(x.double()).float()
    np.save(os.path.join(OUT, "cnn_op20.x.npy"), x.numpy().astype("<f4"))
    np.save(os.path.join(OUT, "cnn_op20.y.npy"), y.numpy().astype("<f4"))
    print(f"cnn_op20: operators {sorted(ops)}, weights in {data}")


def zoo_ops():
    """zoo_ops.onnx: the Caffe-style operators of the model zoo's classic CNNs
    at opset 9, written with onnx.helper: Conv, MaxPool and AveragePool
    (count_include_pad) with asymmetric pads, and a Sum of three inputs.
    zoo_ops.json holds a batch of 2 inputs x, a fixed output gradient dy,
    PyTorch's output y and the gradient of sum(y·dy) for every parameter, by
    cotrain's tensor name (float64 from the float32 data, rounded)."""
    g = torch.Generator().manual_seed(9)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"c1.weight": r(6, 3, 3, 3) * 0.3, "c1.bias": r(6) * 0.1,
         "c2.weight": r(6, 6, 1, 1) * 0.3, "c2.bias": r(6) * 0.1,
         "c3.weight": r(6, 6, 3, 3) * 0.2, "c3.bias": r(6) * 0.1,
         "fc.weight": r(5, 96) * 0.2, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 9, 9), r(2, 5)
    nodes = [
        helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[0, 0, 1, 1]),
        # On the convolution's output, negative values included: zero padding would be wrong.
        helper.make_node("MaxPool", ["c1"], ["m"], name="pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1]),
        helper.make_node("AveragePool", ["m"], ["a"], name="pool2", kernel_shape=[2, 2], pads=[1, 0, 0, 1], count_include_pad=1),
        helper.make_node("Conv", ["a", "c2.weight", "c2.bias"], ["c2"], name="conv2", kernel_shape=[1, 1]),
        helper.make_node("Conv", ["a", "c3.weight", "c3.bias"], ["c3"], name="conv3", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Sum", ["a", "c2", "c3"], ["s"], name="sum"),
        helper.make_node("Relu", ["s"], ["rs"], name="relu"),
        helper.make_node("Flatten", ["rs"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "zoo_ops",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 9, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                              initializer=[floats(k, v) for k, v in p.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], producer_name="scripts/onnx_opsets.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save_model(m, os.path.join(OUT, "zoo_ops.onnx"))

    d = {k: v.double().requires_grad_() for k, v in p.items()}
    c1 = F.conv2d(F.pad(x.double(), (0, 1, 0, 1)), d["c1.weight"], d["c1.bias"])
    mp = F.max_pool2d(F.pad(c1, (0, 1, 0, 1), value=float("-inf")), 3, 2)
    a = F.avg_pool2d(F.pad(mp, (0, 1, 1, 0)), 2, 1)
    s = a + F.conv2d(a, d["c2.weight"], d["c2.bias"]) + F.conv2d(a, d["c3.weight"], d["c3.bias"], padding=1)
    y = F.linear(torch.flatten(F.relu(s), 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    flat = lambda t: [float(v) for v in t.detach().float().flatten()]
    out = {"x": flat(x), "dy": flat(dy), "y": flat(y), "grads": {k: flat(v.grad) for k, v in d.items()}}
    with open(os.path.join(OUT, "zoo_ops.json"), "w") as fh:
        json.dump(out, fh)
    print("zoo_ops written")


def zoo_lrn():
    """zoo_lrn.onnx: LRN as the zoo's AlexNet, CaffeNet and GoogLeNet use it
    (opset 9, onnx.helper): after a ReLU with AlexNet's parameters (size 5,
    alpha 1e-4, beta 0.75, bias 1), and on a convolution's signed output
    with parameters large enough to matter (size 5, alpha 0.5, beta 0.75,
    bias 2). zoo_lrn.json holds PyTorch's output (nn.LocalResponseNorm) and
    parameter gradients, as zoo_ops.json."""
    g = torch.Generator().manual_seed(5)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"c1.weight": r(8, 3, 3, 3) * 0.4, "c1.bias": r(8) * 0.1,
         "c2.weight": r(8, 8, 3, 3) * 0.3, "c2.bias": r(8) * 0.1,
         "fc.weight": r(5, 128) * 0.2, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 8, 8), r(2, 5)
    nodes = [
        helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("LRN", ["r1"], ["n1"], name="norm1", size=5, alpha=1e-4, beta=0.75, bias=1.0),
        helper.make_node("MaxPool", ["n1"], ["m"], name="pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1]),
        helper.make_node("Conv", ["m", "c2.weight", "c2.bias"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("LRN", ["c2"], ["n2"], name="norm2", size=5, alpha=0.5, beta=0.75, bias=2.0),
        helper.make_node("Flatten", ["n2"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "zoo_lrn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                              initializer=[floats(k, v) for k, v in p.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], producer_name="scripts/onnx_opsets.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save_model(m, os.path.join(OUT, "zoo_lrn.onnx"))

    d = {k: v.double().requires_grad_() for k, v in p.items()}
    h = F.relu(F.conv2d(x.double(), d["c1.weight"], d["c1.bias"], padding=1))
    h = nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)(h)
    h = F.max_pool2d(F.pad(h, (0, 1, 0, 1), value=float("-inf")), 3, 2)
    h = F.conv2d(h, d["c2.weight"], d["c2.bias"], padding=1)
    h = nn.LocalResponseNorm(5, alpha=0.5, beta=0.75, k=2.0)(h)
    y = F.linear(torch.flatten(h, 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    flat = lambda t: [float(v) for v in t.detach().float().flatten()]
    out = {"x": flat(x), "dy": flat(dy), "y": flat(y), "grads": {k: flat(v.grad) for k, v in d.items()}}
    with open(os.path.join(OUT, "zoo_lrn.json"), "w") as fh:
        json.dump(out, fh)
    print("zoo_lrn written")


def _save_zoo(name, nodes, p, x, dy, in_shape, classes):
    """Writes name.onnx (opset 9, onnx.helper) from nodes and parameters p."""
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"] + in_shape)],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", classes])],
                              initializer=[floats(k, v) for k, v in p.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], producer_name="scripts/onnx_opsets.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save_model(m, os.path.join(OUT, name + ".onnx"))


def _save_golden(name, x, dy, y, d):
    flat = lambda t: [float(v) for v in t.detach().float().flatten()]
    out = {"x": flat(x), "dy": flat(dy), "y": flat(y),
           "grads": {k: flat(v.grad) for k, v in d.items() if v.grad is not None}}
    with open(os.path.join(OUT, name + ".json"), "w") as fh:
        json.dump(out, fh)
    print(name, "written")


def _export_op13(name, net, x, dy):
    """Exports net (in eval mode) as NAME.onnx at opset 13 with a dynamic
    batch, and writes NAME.json: PyTorch's float64 output on x and every
    parameter's gradient of sum(y·dy) (_save_golden)."""
    _export_op(name, net, x, dy, 13, lambda k: True)


def _export_op(name, net, x, dy, opset, keep, rename=lambda k: k):
    """_export_op13 at the given opset, keeping the gradients of the
    parameters whose names keep accepts, under rename's names (cotrain's)."""
    net.eval()
    torch.onnx.export(net, x, os.path.join(OUT, name + ".onnx"), opset_version=opset,
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    d = net.double()
    y = d(x.double())
    (y * dy.double()).sum().backward()
    _save_golden(name, x, dy, y, {rename(k): v for k, v in d.named_parameters() if keep(k)})


def zoo_alexnet():
    """zoo_alexnet.onnx: BVLC AlexNet's structure as the model zoo's Caffe
    export writes it (opset 9), scaled down to 3×67×67 inputs and a few
    channels: conv1 11×11 stride 4, ReLU, LRN (size 5, alpha 1e-4, beta 0.75,
    bias 1), MaxPool 3 stride 2; conv2 5×5 in 2 groups, ReLU, LRN, MaxPool;
    conv3, conv4 (2 groups), conv5 (2 groups) 3×3 with ReLUs, MaxPool; then
    Flatten, Gemm, ReLU, Dropout (ratio 0.5) twice, a last Gemm and Softmax.
    zoo_alexnet.json holds PyTorch's logits (the importer drops the final
    Softmax: the network outputs logits and the loss applies it) and the
    parameter gradients with dropout off (its mask is random), as
    zoo_ops.json."""
    g = torch.Generator().manual_seed(11)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"conv1.weight": r(8, 3, 11, 11) * 0.08, "conv1.bias": r(8) * 0.1,
         "conv2.weight": r(16, 4, 5, 5) * 0.15, "conv2.bias": r(16) * 0.1,
         "conv3.weight": r(16, 16, 3, 3) * 0.12, "conv3.bias": r(16) * 0.1,
         "conv4.weight": r(16, 8, 3, 3) * 0.15, "conv4.bias": r(16) * 0.1,
         "conv5.weight": r(8, 8, 3, 3) * 0.15, "conv5.bias": r(8) * 0.1,
         "fc6.weight": r(32, 8) * 0.3, "fc6.bias": r(32) * 0.1,
         "fc7.weight": r(32, 32) * 0.2, "fc7.bias": r(32) * 0.1,
         "fc8.weight": r(5, 32) * 0.2, "fc8.bias": r(5) * 0.1}
    x, dy = r(2, 3, 67, 67), r(2, 5)
    mk = helper.make_node
    lrn = dict(size=5, alpha=1e-4, beta=0.75, bias=1.0)
    nodes = [
        mk("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], name="conv1", kernel_shape=[11, 11], strides=[4, 4]),
        mk("Relu", ["c1"], ["r1"], name="relu1"),
        mk("LRN", ["r1"], ["n1"], name="norm1", **lrn),
        mk("MaxPool", ["n1"], ["p1"], name="pool1", kernel_shape=[3, 3], strides=[2, 2]),
        mk("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2", kernel_shape=[5, 5], pads=[2, 2, 2, 2], group=2),
        mk("Relu", ["c2"], ["r2"], name="relu2"),
        mk("LRN", ["r2"], ["n2"], name="norm2", **lrn),
        mk("MaxPool", ["n2"], ["p2"], name="pool2", kernel_shape=[3, 3], strides=[2, 2]),
        mk("Conv", ["p2", "conv3.weight", "conv3.bias"], ["c3"], name="conv3", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        mk("Relu", ["c3"], ["r3"], name="relu3"),
        mk("Conv", ["r3", "conv4.weight", "conv4.bias"], ["c4"], name="conv4", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2),
        mk("Relu", ["c4"], ["r4"], name="relu4"),
        mk("Conv", ["r4", "conv5.weight", "conv5.bias"], ["c5"], name="conv5", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2),
        mk("Relu", ["c5"], ["r5"], name="relu5"),
        mk("MaxPool", ["r5"], ["p5"], name="pool5", kernel_shape=[3, 3], strides=[2, 2]),
        mk("Flatten", ["p5"], ["f"], name="flatten", axis=1),
        mk("Gemm", ["f", "fc6.weight", "fc6.bias"], ["f6"], name="fc6", transB=1),
        mk("Relu", ["f6"], ["r6"], name="relu6"),
        mk("Dropout", ["r6"], ["d6"], name="drop6", ratio=0.5),
        mk("Gemm", ["d6", "fc7.weight", "fc7.bias"], ["f7"], name="fc7", transB=1),
        mk("Relu", ["f7"], ["r7"], name="relu7"),
        mk("Dropout", ["r7"], ["d7"], name="drop7", ratio=0.5),
        mk("Gemm", ["d7", "fc8.weight", "fc8.bias"], ["f8"], name="fc8", transB=1),
        mk("Softmax", ["f8"], ["prob"], name="prob", axis=1),
    ]
    _save_zoo("zoo_alexnet", nodes, p, x, dy, [3, 67, 67], 5)

    d = {k: v.double().requires_grad_() for k, v in p.items()}
    norm = nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)
    h = F.max_pool2d(norm(F.relu(F.conv2d(x.double(), d["conv1.weight"], d["conv1.bias"], stride=4))), 3, 2)
    h = F.max_pool2d(norm(F.relu(F.conv2d(h, d["conv2.weight"], d["conv2.bias"], padding=2, groups=2))), 3, 2)
    h = F.relu(F.conv2d(h, d["conv3.weight"], d["conv3.bias"], padding=1))
    h = F.relu(F.conv2d(h, d["conv4.weight"], d["conv4.bias"], padding=1, groups=2))
    h = F.relu(F.conv2d(h, d["conv5.weight"], d["conv5.bias"], padding=1, groups=2))
    h = torch.flatten(F.max_pool2d(h, 3, 2), 1)
    h = F.relu(F.linear(h, d["fc6.weight"], d["fc6.bias"]))
    h = F.relu(F.linear(h, d["fc7.weight"], d["fc7.bias"]))
    y = F.linear(h, d["fc8.weight"], d["fc8.bias"])
    (y * dy.double()).sum().backward()
    _save_golden("zoo_alexnet", x, dy, y, d)


def zoo_resnet():
    """zoo_resnet.onnx: the model zoo's Caffe2 ResNet as its file holds it
    (opset 9), two bottleneck blocks deep: convolutions without bias, each
    followed by a BatchNormalization (Caffe2's SpatialBN), the residual join
    written as Sum, a projection shortcut in the first block and an identity
    one in the second; a 7×7 stride-2 stem with a padded MaxPool, then
    GlobalAveragePool, Flatten, Gemm and Softmax. zoo_resnet.json holds
    PyTorch's logits and parameter gradients with batch norm in training mode
    (batch statistics), as cotrain's training pass computes them."""
    g = torch.Generator().manual_seed(50)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {}
    bns = []

    def conv(name, co, ci, k):
        p[name + ".weight"] = r(co, ci, k, k) * (1.5 / (ci * k * k)) ** 0.5

    def bn(name, c):
        p[name + ".weight"] = 1 + 0.2 * r(c)
        p[name + ".bias"] = 0.1 * r(c)
        p[name + ".running_mean"] = 0.1 * r(c)
        p[name + ".running_var"] = 0.5 + torch.rand(c, generator=g)
        bns.append(name)

    conv("conv1", 8, 3, 7); bn("bn1", 8)
    conv("b1.conv1", 4, 8, 1); bn("b1.bn1", 4)
    conv("b1.conv2", 4, 4, 3); bn("b1.bn2", 4)
    conv("b1.conv3", 16, 4, 1); bn("b1.bn3", 16)
    conv("b1.proj", 16, 8, 1); bn("b1.bnp", 16)
    conv("b2.conv1", 4, 16, 1); bn("b2.bn1", 4)
    conv("b2.conv2", 4, 4, 3); bn("b2.bn2", 4)
    conv("b2.conv3", 16, 4, 1); bn("b2.bn3", 16)
    p["fc.weight"], p["fc.bias"] = r(5, 16) * 0.3, r(5) * 0.1
    x, dy = r(2, 3, 16, 16), r(2, 5)

    mk = helper.make_node
    nodes = []

    def cbn(inp, cname, bname, k, stride=1, relu=True):
        pad = k // 2
        nodes.append(mk("Conv", [inp, cname + ".weight"], [cname], name=cname, kernel_shape=[k, k],
                        strides=[stride, stride], pads=[pad] * 4))
        nodes.append(mk("BatchNormalization", [cname] + [bname + s for s in (".weight", ".bias", ".running_mean", ".running_var")],
                        [bname], name=bname, epsilon=1e-5, momentum=0.9))
        if not relu:
            return bname
        nodes.append(mk("Relu", [bname], [bname + ".relu"], name=bname + ".relu"))
        return bname + ".relu"

    h = cbn("x", "conv1", "bn1", 7, 2)
    nodes.append(mk("MaxPool", [h], ["pool1"], name="pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    h = "pool1"
    for b, proj in (("b1", True), ("b2", False)):
        t = cbn(h, b + ".conv1", b + ".bn1", 1)
        t = cbn(t, b + ".conv2", b + ".bn2", 3)
        t = cbn(t, b + ".conv3", b + ".bn3", 1, relu=False)
        s = cbn(h, b + ".proj", b + ".bnp", 1, relu=False) if proj else h
        nodes.append(mk("Sum", [s, t], [b + ".sum"], name=b + ".sum"))
        nodes.append(mk("Relu", [b + ".sum"], [b + ".out"], name=b + ".relu"))
        h = b + ".out"
    nodes += [mk("GlobalAveragePool", [h], ["gap"], name="gap"),
              mk("Flatten", ["gap"], ["f"], name="flatten", axis=1),
              mk("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
              mk("Softmax", ["logits"], ["prob"], name="prob", axis=1)]
    _save_zoo("zoo_resnet", nodes, p, x, dy, [3, 16, 16], 5)

    d = {k: v.double().requires_grad_(not k.endswith(("running_mean", "running_var"))) for k, v in p.items()}

    def tcbn(t, cname, bname, k, stride=1, relu=True):
        t = F.conv2d(t, d[cname + ".weight"], stride=stride, padding=k // 2)
        t = F.batch_norm(t, d[bname + ".running_mean"].clone(), d[bname + ".running_var"].clone(),
                         d[bname + ".weight"], d[bname + ".bias"], True, 0.1, 1e-5)
        return F.relu(t) if relu else t

    h = F.max_pool2d(tcbn(x.double(), "conv1", "bn1", 7, 2), 3, 2, padding=1)
    for b, proj in (("b1", True), ("b2", False)):
        t = tcbn(h, b + ".conv1", b + ".bn1", 1)
        t = tcbn(t, b + ".conv2", b + ".bn2", 3)
        t = tcbn(t, b + ".conv3", b + ".bn3", 1, relu=False)
        s = tcbn(h, b + ".proj", b + ".bnp", 1, relu=False) if proj else h
        h = F.relu(s + t)
    y = F.linear(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    _save_golden("zoo_resnet", x, dy, y, {k: v for k, v in d.items() if v.requires_grad})


def pad_value():
    """pad_value_op9.onnx and pad_value_op13.onnx: Pad with a constant other
    than zero (nn.ConstantPad2d, F.pad(..., value=v)), as an attribute
    (opset 9) and as the constant_value input (opset 11 on): an asymmetric
    padding by -0.7 of a convolution's output and a symmetric one by 1.5
    (which a zero padding would fold into the next convolution), then a
    convolution, ReLU and Gemm. pad_value_opN.json (the same for both) holds
    PyTorch's output and parameter gradients, as zoo_ops.json."""
    g = torch.Generator().manual_seed(71)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"c1.weight": r(4, 3, 3, 3) * 0.3, "c1.bias": r(4) * 0.1,
         "c2.weight": r(4, 4, 3, 3) * 0.2, "c2.bias": r(4) * 0.1,
         "fc.weight": r(5, 4 * 11 * 11) * 0.05, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 8, 8), r(2, 5)
    pads1, pads2 = [0, 0, 1, 2, 0, 0, 2, 1], [0, 0, 1, 1, 0, 0, 1, 1]
    for op in (9, 13):
        inits = [floats(k, v) for k, v in p.items()]
        if op < 11:
            pad1 = helper.make_node("Pad", ["c1"], ["q1"], name="pad1", mode="constant", pads=pads1, value=-0.7)
            pad2 = helper.make_node("Pad", ["q1"], ["q2"], name="pad2", pads=pads2, value=1.5)
        else:
            inits += [ints("pads1", pads1), ints("pads2", pads2),
                      numpy_helper.from_array(np.array(-0.7, dtype=np.float32), "v1"),
                      numpy_helper.from_array(np.array(1.5, dtype=np.float32), "v2")]
            pad1 = helper.make_node("Pad", ["c1", "pads1", "v1"], ["q1"], name="pad1", mode="constant")
            pad2 = helper.make_node("Pad", ["q1", "pads2", "v2"], ["q2"], name="pad2")
        nodes = [
            helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            pad1, pad2,
            helper.make_node("Conv", ["q2", "c2.weight", "c2.bias"], ["c2"], name="conv2", kernel_shape=[3, 3], strides=[1, 1]),
            helper.make_node("Relu", ["c2"], ["r2"], name="relu"),
            helper.make_node("Flatten", ["r2"], ["f"], name="flatten", axis=1),
            helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
        ]
        graph = helper.make_graph(nodes, "pad_value",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                                  initializer=inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", op)], producer_name="scripts/onnx_opsets.py")
        m.ir_version = 8
        onnx.checker.check_model(m)
        onnx.save_model(m, os.path.join(OUT, f"pad_value_op{op}.onnx"))

    d = {k: v.double().requires_grad_() for k, v in p.items()}
    h = F.conv2d(x.double(), d["c1.weight"], d["c1.bias"], padding=1)
    h = F.pad(h, (2, 1, 1, 2), value=-0.7)   # F.pad: W's (begin, end), then H's
    h = F.pad(h, (1, 1, 1, 1), value=1.5)
    h = F.relu(F.conv2d(h, d["c2.weight"], d["c2.bias"]))
    y = F.linear(torch.flatten(h, 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    for op in (9, 13):
        _save_golden(f"pad_value_op{op}", x, dy, y, d)


class _Dilated(nn.Module):
    """dilated_op13's network: 3×3 convolutions with dilation 2 (padding 2,
    the size kept) and dilation (2, 3) in 2 groups with stride 2, between
    ReLUs, then Flatten and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, padding=2, dilation=2)
        self.c2 = nn.Conv2d(4, 6, 3, stride=2, padding=(1, 2), dilation=(2, 3), groups=2)
        self.fc = nn.Linear(6 * 5 * 5, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))
        h = F.relu(self.c2(h))
        return self.fc(torch.flatten(h, 1))


def dilated():
    """dilated_op13.onnx: dilated convolutions as torch.onnx.export writes
    them (Conv's dilations attribute), with dilated_op13.json holding
    PyTorch's output and parameter gradients, as zoo_ops.json."""
    torch.manual_seed(31)
    net = _Dilated()
    g = torch.Generator().manual_seed(32)
    x, dy = torch.randn(2, 3, 11, 11, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("dilated_op13", net, x, dy)


class _Transposed(nn.Module):
    """convtranspose_op13's network: a convolution, a stride-2 transposed
    convolution with padding and output padding in 2 groups, one of 2×2
    stride 2 without bias, then Flatten and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, padding=1)
        self.t1 = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.t2 = nn.ConvTranspose2d(6, 2, 2, stride=2, bias=False)
        self.fc = nn.Linear(2 * 20 * 20, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))
        h = F.relu(self.t1(h))
        h = self.t2(h)
        return self.fc(torch.flatten(h, 1))


def convtranspose():
    """convtranspose_op13.onnx: ConvTranspose as torch.onnx.export writes it,
    with convtranspose_op13.json holding PyTorch's output and parameter
    gradients, as zoo_ops.json."""
    torch.manual_seed(41)
    net = _Transposed()
    g = torch.Generator().manual_seed(42)
    x, dy = torch.randn(2, 3, 5, 5, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("convtranspose_op13", net, x, dy)


class _Attention(nn.Module):
    """matmul_op13's network: one head of self-attention over the 16
    positions of a 4×4 map, written with torch.matmul between activations
    (q, k, v from 1×1 convolutions; softmax(qᵀk/√8) inside the graph), then
    Flatten and a linear layer."""

    def __init__(self):
        super().__init__()
        self.q = nn.Conv2d(3, 8, 1)
        self.k = nn.Conv2d(3, 8, 1)
        self.v = nn.Conv2d(3, 6, 1)
        self.fc = nn.Linear(6 * 16, 5)

    def forward(self, x):
        q, k, v = (torch.flatten(m(x), 2) for m in (self.q, self.k, self.v))   # N×C×16
        s = torch.softmax(torch.matmul(q.transpose(1, 2), k) / 8 ** 0.5, dim=-1)  # N×16×16
        o = torch.matmul(v, s.transpose(1, 2))                                 # N×6×16
        return self.fc(torch.flatten(o, 1))


def matmul_acts():
    """matmul_op13.onnx: MatMul between activations (attention's scores and
    its weighted sum) as torch.onnx.export writes it, with matmul_op13.json
    holding PyTorch's output and parameter gradients, as zoo_ops.json."""
    torch.manual_seed(51)
    net = _Attention()
    g = torch.Generator().manual_seed(52)
    x, dy = torch.randn(2, 3, 4, 4, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("matmul_op13", net, x, dy)


class _Tiled(nn.Module):
    """tile_op13's network: a convolution's output repeated along the
    channels, then along both spatial axes (Tensor.repeat), a convolution,
    Flatten and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3)
        self.c2 = nn.Conv2d(8, 2, 3)
        self.fc = nn.Linear(2 * 4 * 7, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))             # 4×3×3
        h = h.repeat(1, 2, 1, 1)           # 8×3×3
        h = h.repeat(1, 1, 2, 3)           # 8×6×9
        h = F.relu(self.c2(h))             # 2×4×7
        return self.fc(torch.flatten(h, 1))


def tile():
    """tile_op13.onnx: Tile as torch.onnx.export writes Tensor.repeat, with
    tile_op13.json holding PyTorch's output and parameter gradients, as
    zoo_ops.json."""
    torch.manual_seed(61)
    net = _Tiled()
    g = torch.Generator().manual_seed(62)
    x, dy = torch.randn(2, 3, 5, 5, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("tile_op13", net, x, dy)


class _DilatedPool(nn.Module):
    """dilatedpool_op13's network: a convolution, ReLU, a 3×3 max pool with
    dilation 2, stride 2, padding 1 in ceil mode, a convolution, a 2×2 max
    pool with dilation (2, 3) at stride 1, then Flatten and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, padding=1)
        self.p1 = nn.MaxPool2d(3, stride=2, padding=1, dilation=2, ceil_mode=True)
        self.c2 = nn.Conv2d(4, 4, 3)
        self.p2 = nn.MaxPool2d(2, stride=1, dilation=(2, 3))
        self.fc = nn.Linear(4 * 2 * 1, 5)

    def forward(self, x):
        h = self.p1(F.relu(self.c1(x)))   # 4×6×6
        h = self.p2(self.c2(h))           # 4×2×1
        return self.fc(torch.flatten(h, 1))


def dilated_pool():
    """dilatedpool_op13.onnx: dilated MaxPool2d as torch.onnx.export writes
    it, with dilatedpool_op13.json holding PyTorch's output and parameter
    gradients (the first convolution's pass through both pools' backward)."""
    torch.manual_seed(35)
    net = _DilatedPool()
    g = torch.Generator().manual_seed(36)
    x, dy = torch.randn(2, 3, 13, 13, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("dilatedpool_op13", net, x, dy)


class _DilatedPool1D(nn.Module):
    """dilatedpool1d_op13's network: Conv1d, ReLU, MaxPool1d(3) with
    dilation 3, stride 2, padding 1 in ceil mode, Conv1d, Flatten and a
    linear layer, over N×3×20."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 4, 3, padding=1)
        self.p1 = nn.MaxPool1d(3, stride=2, padding=1, dilation=3, ceil_mode=True)
        self.c2 = nn.Conv1d(4, 4, 3)
        self.fc = nn.Linear(4 * 7, 5)

    def forward(self, x):
        h = self.p1(F.relu(self.c1(x)))   # 4×9
        return self.fc(torch.flatten(self.c2(h), 1))


def dilated_pool1d():
    """dilatedpool1d_op13.onnx: dilated MaxPool1d as torch.onnx.export
    writes it, with dilatedpool1d_op13.json as dilatedpool_op13.json."""
    torch.manual_seed(37)
    net = _DilatedPool1D()
    g = torch.Generator().manual_seed(38)
    x, dy = torch.randn(2, 3, 20, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("dilatedpool1d_op13", net, x, dy)


def avgpool_dilated():
    """avgpool_dilated_op19.onnx: AveragePool's dilations (opset 19, written
    with onnx.helper; ONNX 1.12's checker knows opsets up to 17, so it is not
    run): a convolution, ReLU, a 3×3 average pool with dilation 2, stride 2,
    padding 1, ceil mode, counting the padding; a 2×2 one with dilation (2,
    1) and padding (1, 0) not counting it; Flatten and Gemm.
    avgpool_dilated_op19.json holds PyTorch's output and parameter gradients
    with the pools computed as scripts/pool_torch.py defines them."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pool_torch import avg_pool
    g = torch.Generator().manual_seed(19)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"c1.weight": r(4, 3, 3, 3) * 0.3, "c1.bias": r(4) * 0.1, "fc.weight": r(5, 80) * 0.2, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 11, 11), r(2, 5)
    nodes = [
        helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("AveragePool", ["r1"], ["a1"], name="pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         dilations=[2, 2], ceil_mode=1, count_include_pad=1),
        helper.make_node("AveragePool", ["a1"], ["a2"], name="pool2", kernel_shape=[2, 2], pads=[1, 0, 1, 0],
                         dilations=[2, 1], count_include_pad=0),
        helper.make_node("Flatten", ["a2"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "avgpool_dilated_op19",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 11, 11])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                              initializer=[floats(k, v) for k, v in p.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], producer_name="scripts/onnx_opsets.py")
    m.ir_version = 9
    onnx.save_model(m, os.path.join(OUT, "avgpool_dilated_op19.onnx"))

    d = {k: v.double().requires_grad_() for k, v in p.items()}
    h = F.relu(F.conv2d(x.double(), d["c1.weight"], d["c1.bias"], padding=1))
    h = avg_pool(h, (3, 3), (2, 2), (1, 1), (2, 2), True, True)      # 4×5×5
    h = avg_pool(h, (2, 2), (1, 1), (1, 0), (2, 1), False, False)    # 4×5×4
    y = F.linear(torch.flatten(h, 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    _save_golden("avgpool_dilated_op19", x, dy, y, d)


class _Transposed2(nn.Module):
    """convtranspose2_op13's network: a convolution, a transposed 3×3
    convolution of dilation 2, stride 2, padding 1, output padding 1 in 2
    groups, one of 2×3 with dilation (3, 1) without bias, Flatten and a
    linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, padding=1)
        self.t1 = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, dilation=2, groups=2)
        self.t2 = nn.ConvTranspose2d(4, 2, (2, 3), dilation=(3, 1), bias=False)
        self.fc = nn.Linear(2 * 15 * 14, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))     # 4×5×5
        h = F.relu(self.t1(h))     # 4×12×12
        h = self.t2(h)             # 2×15×14
        return self.fc(torch.flatten(h, 1))


def convtranspose2():
    """convtranspose2_op13.onnx: dilated ConvTranspose as torch.onnx.export
    writes it, with convtranspose2_op13.json as zoo_ops.json."""
    torch.manual_seed(43)
    net = _Transposed2()
    g = torch.Generator().manual_seed(44)
    x, dy = torch.randn(2, 3, 5, 5, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("convtranspose2_op13", net, x, dy)


class _Transposed1D(nn.Module):
    """convtranspose1d_op13's network over N×3×12: Conv1d, ConvTranspose1d
    (3, stride 2, padding 1, output padding 1, dilation 2, 2 groups), Conv1d,
    Flatten and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 4, 3, padding=1)
        self.t1 = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, dilation=2, groups=2)
        self.c2 = nn.Conv1d(6, 2, 3)
        self.fc = nn.Linear(2 * 24, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))     # 4×12
        h = F.relu(self.t1(h))     # 6×26
        return self.fc(torch.flatten(self.c2(h), 1))


def convtranspose1d():
    """convtranspose1d_op13.onnx: ConvTranspose1d as torch.onnx.export
    writes it (N×C×L, 1-D attributes), with convtranspose1d_op13.json."""
    torch.manual_seed(45)
    net = _Transposed1D()
    g = torch.Generator().manual_seed(46)
    x, dy = torch.randn(2, 3, 12, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("convtranspose1d_op13", net, x, dy)


def _convt_onnx(x, w, b, s, d, pads, op):
    """ONNX ConvTranspose from its definition: the unpadded transposed
    convolution (output padding included), cropped by pads [top, left,
    bottom, right]."""
    y = F.conv_transpose2d(x, w, b, stride=s, output_padding=op, dilation=d)
    return y[:, :, pads[0]:y.shape[2] - pads[2], pads[1]:y.shape[3] - pads[3]]


def _convt_total(n, k, s, d, op, o):
    return s * (n - 1) + op + (k - 1) * d + 1 - o


def convtranspose_pads():
    """convtranspose_pads_op13.onnx: ConvTranspose with pads [0, 1, 2, 0];
    with output_shape (total padding 1: ONNX puts the odd one at the start);
    with auto_pad SAME_UPPER and dilations 2 (total 3: the odd one at the
    end). Written with onnx.helper at opset 13; the golden crops the
    unpadded F.conv_transpose2d as the operator's formulas say."""
    g = torch.Generator().manual_seed(47)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"t1.weight": r(3, 4, 3, 3) * 0.3, "t1.bias": r(4) * 0.1, "t2.weight": r(4, 2, 2, 2) * 0.3, "t2.bias": r(2) * 0.1,
         "t3.weight": r(2, 2, 3, 3) * 0.3, "fc.weight": r(5, 2 * 18 * 22) * 0.05, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 5, 5), r(2, 5)
    nodes = [
        helper.make_node("ConvTranspose", ["x", "t1.weight", "t1.bias"], ["t1"], name="t1", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[0, 1, 2, 0]),
        helper.make_node("Relu", ["t1"], ["r1"], name="relu1"),
        helper.make_node("ConvTranspose", ["r1", "t2.weight", "t2.bias"], ["t2"], name="t2", kernel_shape=[2, 2], output_shape=[9, 11]),
        helper.make_node("Relu", ["t2"], ["r2"], name="relu2"),
        helper.make_node("ConvTranspose", ["r2", "t3.weight"], ["t3"], name="t3", kernel_shape=[3, 3], strides=[2, 2],
                         dilations=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("Flatten", ["t3"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "convtranspose_pads_op13",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                              initializer=[floats(k, v) for k, v in p.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="scripts/onnx_opsets.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save_model(m, os.path.join(OUT, "convtranspose_pads_op13.onnx"))

    d = {k: v.double().requires_grad_() for k, v in p.items()}
    h = F.relu(_convt_onnx(x.double(), d["t1.weight"], d["t1.bias"], 2, 1, (0, 1, 2, 0), 0))       # 4×9×10
    th, tw = _convt_total(9, 2, 1, 1, 0, 9), _convt_total(10, 2, 1, 1, 0, 11)                     # 1, 0
    h = F.relu(_convt_onnx(h, d["t2.weight"], d["t2.bias"], 1, 1, (th - th // 2, tw - tw // 2, th // 2, tw // 2), 0))  # 2×9×11
    th, tw = _convt_total(9, 3, 2, 2, 0, 18), _convt_total(11, 3, 2, 2, 0, 22)                   # 3, 3
    h = _convt_onnx(h, d["t3.weight"], None, 2, 2, (th // 2, tw // 2, th - th // 2, tw - tw // 2), 0)  # 2×18×22
    assert h.shape[1:] == (2, 18, 22), h.shape
    y = F.linear(torch.flatten(h, 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    _save_golden("convtranspose_pads_op13", x, dy, y, d)


class _MatMulBroadcast(nn.Module):
    """matmul_bcast_op13's network: three 1×1 convolutions of N×3×4×4,
    reshaped so that torch.matmul broadcasts: A 2×4×16 by B 1×16×4 (B shared
    by A's two matrices), and C 1×4×16 by D 3×16×2 (C shared by D's
    three), then both flattened, concatenated and a linear layer."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 1)
        self.b = nn.Conv2d(3, 4, 1)
        self.d = nn.Conv2d(3, 6, 1)
        self.fc = nn.Linear(2 * 4 * 4 + 3 * 4 * 2, 5)

    def forward(self, x):
        a = self.a(x).reshape(-1, 2, 4, 16)
        b = self.b(x).reshape(-1, 1, 16, 4)
        c = self.b(x).reshape(-1, 1, 4, 16)
        d = self.d(x).reshape(-1, 3, 16, 2)
        h = torch.cat([torch.flatten(torch.matmul(a, b), 1), torch.flatten(torch.matmul(c, d), 1)], 1)
        return self.fc(h)


def matmul_bcast():
    """matmul_bcast_op13.onnx: MatMul whose leading dims broadcast, as
    torch.onnx.export writes torch.matmul, with matmul_bcast_op13.json."""
    torch.manual_seed(53)
    net = _MatMulBroadcast()
    g = torch.Generator().manual_seed(54)
    x, dy = torch.randn(2, 3, 4, 4, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("matmul_bcast_op13", net, x, dy)


def dilated_pool_pads():
    """dilatedpool_pads_op13.onnx: Conv 3×3 (pads 1), ReLU, MaxPool 3×3
    dilation 2 stride 2 with pads [1, 0, 0, 1], Conv 1×1, MaxPool 2×2
    dilation 2 stride 2 with pads [0, 0, 1, 1], Flatten, Gemm over
    N×3×9×9 (onnx.helper, opset 13); the golden pads with -inf explicitly
    and runs F.max_pool2d."""
    g = torch.Generator().manual_seed(73)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"c1.weight": r(4, 3, 3, 3) * 0.3, "c1.bias": r(4) * 0.1, "c2.weight": r(4, 4, 1, 1) * 0.3, "c2.bias": r(4) * 0.1,
         "fc.weight": r(5, 4) * 0.3, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 9, 9), r(2, 5)
    nodes = [
        helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["m1"], name="pool1", kernel_shape=[3, 3], strides=[2, 2], dilations=[2, 2],
                         pads=[1, 0, 0, 1]),
        helper.make_node("Conv", ["m1", "c2.weight", "c2.bias"], ["c2"], name="conv2", kernel_shape=[1, 1]),
        helper.make_node("MaxPool", ["c2"], ["m2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2], dilations=[2, 2],
                         pads=[0, 0, 1, 1]),
        helper.make_node("Flatten", ["m2"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "dilatedpool_pads_op13", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 9, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                              initializer=[floats(k, v) for k, v in p.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="scripts/onnx_opsets.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save_model(m, os.path.join(OUT, "dilatedpool_pads_op13.onnx"))

    d = {k: v.double().requires_grad_() for k, v in p.items()}
    inf = float("-inf")
    h = F.relu(F.conv2d(x.double(), d["c1.weight"], d["c1.bias"], padding=1))              # 4×9×9
    h = F.max_pool2d(F.pad(h, (0, 1, 1, 0), value=inf), 3, 2, 0, 2)                          # 4×3×3
    h = F.conv2d(h, d["c2.weight"], d["c2.bias"])
    h = F.max_pool2d(F.pad(h, (0, 1, 0, 1), value=inf), 2, 2, 0, 2)                          # 4×1×1
    assert h.shape[1:] == (4, 1, 1), h.shape
    y = F.linear(torch.flatten(h, 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    _save_golden("dilatedpool_pads_op13", x, dy, y, d)


def pads1d():
    """pads1d_op13.onnx: over N×3×10, Conv k=4 with pads [1, 2], ReLU,
    MaxPool k=2 stride 2 with pads [0, 1], AveragePool k=2 with pads [1, 0]
    counting the padding, Conv k=2 with pads [0, 1], Flatten, Gemm
    (onnx.helper, opset 13); the golden pads explicitly (-inf before the
    max pool) and runs F.conv1d, F.max_pool1d and F.avg_pool1d."""
    g = torch.Generator().manual_seed(71)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"c1.weight": r(4, 3, 4) * 0.3, "c1.bias": r(4) * 0.1, "c2.weight": r(2, 4, 2) * 0.3, "c2.bias": r(2) * 0.1,
         "fc.weight": r(5, 10) * 0.3, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 10), r(2, 5)
    nodes = [
        helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="conv1", kernel_shape=[4], pads=[1, 2]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["m"], name="pool1", kernel_shape=[2], strides=[2], pads=[0, 1]),
        helper.make_node("AveragePool", ["m"], ["a"], name="pool2", kernel_shape=[2], pads=[1, 0], count_include_pad=1),
        helper.make_node("Conv", ["a", "c2.weight", "c2.bias"], ["c2"], name="conv2", kernel_shape=[2], pads=[0, 1]),
        helper.make_node("Flatten", ["c2"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "pads1d_op13", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                              initializer=[floats(k, v) for k, v in p.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="scripts/onnx_opsets.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save_model(m, os.path.join(OUT, "pads1d_op13.onnx"))

    d = {k: v.double().requires_grad_() for k, v in p.items()}
    h = F.relu(F.conv1d(F.pad(x.double(), (1, 2)), d["c1.weight"], d["c1.bias"]))        # 4×10
    h = F.max_pool1d(F.pad(h, (0, 1), value=float("-inf")), 2, 2)                      # 4×5
    h = F.avg_pool1d(F.pad(h, (1, 0)), 2, 1)                                            # 4×5
    h = F.conv1d(F.pad(h, (0, 1)), d["c2.weight"], d["c2.bias"])                         # 2×5
    y = F.linear(torch.flatten(h, 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    _save_golden("pads1d_op13", x, dy, y, d)


class _Dilated1D(nn.Module):
    """dilated1d_op13's network: Conv1d with dilation 2 (padding 2, the
    length kept) and with dilation 3 in 2 groups with stride 2, between
    ReLUs, then Flatten and a linear layer, over N×3×20."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 4, 3, padding=2, dilation=2)
        self.c2 = nn.Conv1d(4, 4, 3, stride=2, padding=1, dilation=3, groups=2)
        self.fc = nn.Linear(4 * 8, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))
        h = F.relu(self.c2(h))
        return self.fc(torch.flatten(h, 1))


def dilated1d():
    """dilated1d_op13.onnx: dilated Conv1d as torch.onnx.export writes it,
    with dilated1d_op13.json holding PyTorch's output and parameter
    gradients, as zoo_ops.json."""
    torch.manual_seed(33)
    net = _Dilated1D()
    g = torch.Generator().manual_seed(34)
    x, dy = torch.randn(2, 3, 20, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("dilated1d_op13", net, x, dy)


class _FPN(nn.Module):
    """resize_op11's and resize_op13's network, a small FPN/UNet-like
    classifier over 3×8×8: a convolution, a strided one (downsample), a 1×1
    lateral upsampled ×2 by nn.Upsample(mode="nearest") and joined by Concat,
    a convolution, F.interpolate bilinear ×0.5 (align_corners=False) added
    to the lateral, F.interpolate bilinear to a size of 7×5
    (align_corners=True), a convolution, global average pooling and a linear
    layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 6, 3, stride=2, padding=1)
        self.c3 = nn.Conv2d(6, 4, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.c4 = nn.Conv2d(8, 4, 3, padding=1)
        self.c5 = nn.Conv2d(4, 4, 3, padding=1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        a = F.relu(self.c1(x))                     # 4×8×8
        b = F.relu(self.c2(a))                     # 6×4×4
        lat = self.c3(b)                           # 4×4×4
        h = torch.cat([a, self.up(lat)], 1)        # 8×8×8
        h = F.relu(self.c4(h))                     # 4×8×8
        h = F.interpolate(h, scale_factor=0.5, mode="bilinear", align_corners=False) + lat  # 4×4×4
        h = F.interpolate(h, size=(7, 5), mode="bilinear", align_corners=True)               # 4×7×5
        h = F.relu(self.c5(h))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


class _UpsampleNearest(nn.Module):
    """upsample_op9's network: what opset 9's Upsample expresses exactly
    (nearest, asymmetric, rounding down): a convolution, nn.Upsample ×2 and
    added to a lateral, F.interpolate by (1, 3) in mode nearest, then a
    convolution, global average pooling and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.lat = nn.Conv2d(3, 4, 1)
        self.c2 = nn.Conv2d(4, 4, 3, padding=1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))                                        # 4×4×6
        h = F.interpolate(h, scale_factor=2, mode="nearest")          # 4×8×12
        h = h + self.lat(x)
        h = F.interpolate(h, scale_factor=(1, 3), mode="nearest")     # 4×8×36
        h = F.relu(self.c2(h))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


class _Resize1D(nn.Module):
    """resize1d_op13's network over N×3×10: Conv1d, F.interpolate linear ×2
    (align_corners=False), Conv1d stride 2, nearest to a length of 7, Flatten
    and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 4, 3, padding=1)
        self.c2 = nn.Conv1d(4, 4, 3, stride=2)
        self.fc = nn.Linear(4 * 7, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))                                               # 4×10
        h = F.interpolate(h, scale_factor=2, mode="linear", align_corners=False)  # 4×20
        h = F.relu(self.c2(h))                                               # 4×9
        h = F.interpolate(h, size=7, mode="nearest")                         # 4×7
        return self.fc(torch.flatten(h, 1))


def resize():
    """resize_op11.onnx and resize_op13.onnx (torch.onnx.export of _FPN:
    Resize with scales and with sizes, coordinate transformations asymmetric,
    pytorch_half_pixel and align_corners), upsample_op9.onnx (Upsample of
    _UpsampleNearest) and resize1d_op13.onnx (_Resize1D over N×C×L), each
    with its .json of PyTorch's output and parameter gradients (the first
    convolutions' gradients pass through every resize's backward pass)."""
    g = torch.Generator().manual_seed(82)
    x, dy = torch.randn(2, 3, 8, 8, generator=g), torch.randn(2, 5, generator=g)
    for op in (11, 13):
        torch.manual_seed(81)
        net = _FPN()
        net.eval()
        torch.onnx.export(net, x, os.path.join(OUT, f"resize_op{op}.onnx"), opset_version=op,
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
        d = net.double()
        y = d(x.double())
        (y * dy.double()).sum().backward()
        _save_golden(f"resize_op{op}", x, dy, y, {k: v for k, v in d.named_parameters()})
    torch.manual_seed(83)
    net = _UpsampleNearest().eval()
    x9 = torch.randn(2, 3, 8, 12, generator=g)
    torch.onnx.export(net, x9, os.path.join(OUT, "upsample_op9.onnx"), opset_version=9,
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    d = net.double()
    y = d(x9.double())
    (y * dy.double()).sum().backward()
    _save_golden("upsample_op9", x9, dy, y, {k: v for k, v in d.named_parameters()})
    torch.manual_seed(84)
    _export_op13("resize1d_op13", _Resize1D(), torch.randn(2, 3, 10, generator=g), dy)


def _save_helper_graph(path, name, nodes, inits, in_shape, opset):
    """Writes OUT/path: graph name of nodes and initializers inits from an
    input x of N×in_shape to an output y of N×5, at opset (IR 8), unchecked:
    ONNX 1.12's checker stops at opset 17, and these are newer."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"] + in_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="scripts/onnx_opsets.py")
    m.ir_version = 8
    onnx.save_model(m, os.path.join(OUT, path))


def resize_new():
    """resize_op18.onnx and resize_op19.onnx (onnx.helper; ONNX 1.12's checker
    stops at 17, so they are not checked): Resize in opset 18's spelling, the
    spatial axes alone through the axes attribute, antialias 0 and
    keep_aspect_ratio_policy stretch written out: Conv, Resize linear
    half_pixel to sizes 9×8, Relu, Resize nearest half_pixel
    round_prefer_ceil by scales 0.5 (PyTorch's nearest-exact), Conv,
    GlobalAveragePool, Flatten, Gemm. The .json holds PyTorch's output and
    parameter gradients of the same network in torch.nn.functional."""
    g = torch.Generator().manual_seed(91)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"c1.weight": r(4, 3, 3, 3) * 0.3, "c1.bias": r(4) * 0.1,
         "c2.weight": r(4, 4, 3, 3) * 0.2, "c2.bias": r(4) * 0.1,
         "fc.weight": r(5, 4) * 0.3, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 6, 6), r(2, 5)
    for op in (18, 19):
        inits = [floats(k, v) for k, v in p.items()] + [ints("sizes", [9, 8]),
                                                        numpy_helper.from_array(np.array([0.5, 0.5], dtype=np.float32), "scales")]
        nodes = [
            helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("Resize", ["c1", "", "", "sizes"], ["u"], name="up", mode="linear",
                             coordinate_transformation_mode="half_pixel", axes=[2, 3], antialias=0,
                             keep_aspect_ratio_policy="stretch"),
            helper.make_node("Relu", ["u"], ["r"], name="relu"),
            helper.make_node("Resize", ["r", "", "scales"], ["v"], name="down", mode="nearest",
                             coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil", axes=[-2, -1]),
            helper.make_node("Conv", ["v", "c2.weight", "c2.bias"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("GlobalAveragePool", ["c2"], ["gp"], name="gap"),
            helper.make_node("Flatten", ["gp"], ["f"], name="flatten", axis=1),
            helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
        ]
        _save_helper_graph(f"resize_op{op}.onnx", "resize_new", nodes, inits, [3, 6, 6], op)
    d = {k: v.double().requires_grad_() for k, v in p.items()}
    h = F.conv2d(x.double(), d["c1.weight"], d["c1.bias"], padding=1)
    h = F.relu(F.interpolate(h, size=(9, 8), mode="bilinear", align_corners=False))
    h = F.interpolate(h, scale_factor=0.5, mode="nearest-exact")
    h = F.conv2d(h, d["c2.weight"], d["c2.bias"], padding=1)
    y = F.linear(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    for op in (18, 19):
        _save_golden(f"resize_op{op}", x, dy, y, d)


class _PadModes(nn.Module):
    """pad_modes_op9's and pad_modes_op13's network: nn.ReflectionPad2d
    (asymmetric), a convolution with padding_mode="reflect" (torch writes a
    reflect Pad before it), nn.ReplicationPad2d, a convolution, global
    average pooling and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3)
        self.rp = nn.ReflectionPad2d((1, 2, 0, 1))
        self.c2 = nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect")
        self.ep = nn.ReplicationPad2d((2, 0, 1, 2))
        self.c3 = nn.Conv2d(4, 4, 3)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))              # 4×6×6
        h = self.rp(h)                      # 4×7×9
        h = F.relu(self.c2(h))              # 4×7×9
        h = self.c3(self.ep(h))             # 4×8×9
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


class _PadModes1D(nn.Module):
    """pad_modes1d_op13's network over N×3×12: Conv1d, nn.ReflectionPad1d,
    Conv1d with padding_mode="replicate", Flatten and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 4, 3)
        self.rp = nn.ReflectionPad1d((2, 1))
        self.c2 = nn.Conv1d(4, 4, 3, padding=2, padding_mode="replicate")
        self.fc = nn.Linear(4 * 15, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))               # 4×10
        h = F.relu(self.c2(self.rp(h)))      # 4×15
        return self.fc(torch.flatten(h, 1))


def pad_modes():
    """pad_modes_op9.onnx and pad_modes_op13.onnx (torch.onnx.export of
    _PadModes: Pad with mode and pads as attributes at 9, pads as an input
    at 13), pad_modes_op18.onnx (the same network through onnx.helper in
    opset 18's spelling: pads for the spatial axes alone through the axes
    input; not checked, ONNX 1.12's checker stops at 17) and
    pad_modes1d_op13.onnx (_PadModes1D over N×C×L), each with its .json of
    PyTorch's output and parameter gradients."""
    g = torch.Generator().manual_seed(102)
    x, dy = torch.randn(2, 3, 8, 8, generator=g), torch.randn(2, 5, generator=g)
    torch.manual_seed(101)
    net = _PadModes().eval()
    for op in (9, 13):
        torch.onnx.export(net, x, os.path.join(OUT, f"pad_modes_op{op}.onnx"), opset_version=op,
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    p = {k: v.detach().clone() for k, v in net.named_parameters()}
    inits = [floats(k, v) for k, v in p.items()] + [
        ints("rp.pads", [0, 1, 1, 2]), ints("c2.pads", [1, 1, 1, 1]), ints("ep.pads", [1, 2, 2, 0]), ints("hw", [2, 3])]
    mode = lambda m: {"mode": m}
    nodes = [
        helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["a"], name="c1", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["a"], ["ar"], name="relu1"),
        helper.make_node("Pad", ["ar", "rp.pads", "", "hw"], ["b"], name="rp", **mode("reflect")),
        helper.make_node("Pad", ["b", "c2.pads", "", "hw"], ["bp"], name="c2.pad", **mode("reflect")),
        helper.make_node("Conv", ["bp", "c2.weight", "c2.bias"], ["c"], name="c2", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["cr"], name="relu2"),
        helper.make_node("Pad", ["cr", "ep.pads", "", "hw"], ["e"], name="ep", **mode("edge")),
        helper.make_node("Conv", ["e", "c3.weight", "c3.bias"], ["f"], name="c3", kernel_shape=[3, 3]),
        helper.make_node("GlobalAveragePool", ["f"], ["gp"], name="gap"),
        helper.make_node("Flatten", ["gp"], ["fl"], name="flatten", axis=1),
        helper.make_node("Gemm", ["fl", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    _save_helper_graph("pad_modes_op18.onnx", "pad_modes", nodes, inits, [3, 8, 8], 18)
    d = net.double()
    y = d(x.double())
    (y * dy.double()).sum().backward()
    for op in (9, 13, 18):
        _save_golden(f"pad_modes_op{op}", x, dy, y, {k: v for k, v in d.named_parameters()})
    torch.manual_seed(103)
    _export_op13("pad_modes1d_op13", _PadModes1D(), torch.randn(2, 3, 12, generator=g), dy)


class _Bicubic(nn.Module):
    """bicubic_op13's network: a convolution, F.interpolate bicubic ×2
    (align_corners=False), a strided convolution, bicubic to 5×7
    (align_corners=True), global average pooling and a linear layer."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 4, 3, stride=2)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        h = F.relu(self.c1(x))                                                    # 4×6×6
        h = F.interpolate(h, scale_factor=2, mode="bicubic", align_corners=False)  # 4×12×12
        h = F.relu(self.c2(h))                                                    # 4×5×5
        h = F.interpolate(h, size=(5, 7), mode="bicubic", align_corners=True)     # 4×5×7
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


def bicubic():
    """bicubic_op13.onnx: Resize mode cubic as torch.onnx.export writes
    F.interpolate(mode="bicubic") (cubic_coeff_a −0.75, by scales and by
    sizes), with bicubic_op13.json holding PyTorch's output and parameter
    gradients, as zoo_ops.json."""
    torch.manual_seed(111)
    net = _Bicubic()
    g = torch.Generator().manual_seed(112)
    x, dy = torch.randn(2, 3, 6, 6, generator=g), torch.randn(2, 5, generator=g)
    _export_op13("bicubic_op13", net, x, dy)


def _sym_matrix(n, s):
    """The Out×In matrix of a linear Resize with half_pixel_symmetric at
    scale s over n inputs, in float64 from ONNX's definition (opset 19):
    x = c·(1 − out/(s·n)) + (j + 0.5)/s − 0.5 with c = n/2, the neighbours
    floor(x) and floor(x)+1 blended, the edge repeated outside."""
    out = int(np.floor(n * s))
    off = n / 2 * (1 - out / (s * n))
    m = torch.zeros(out, n, dtype=torch.float64)
    for j in range(out):
        x = off + (j + 0.5) / s - 0.5
        f = int(np.floor(x))
        r = x - f
        m[j, min(max(f, 0), n - 1)] += 1 - r
        m[j, min(max(f + 1, 0), n - 1)] += r
    return m


def resize_sym():
    """resize_sym_op19.onnx (onnx.helper; not checked by ONNX 1.12's checker,
    which stops at 17): the coordinate transformations PyTorch does not
    export: Conv, Resize linear half_pixel_symmetric by scales 1.5 (5×5 to
    7×7, the grid centred on the input), Relu, Resize nearest
    tf_half_pixel_for_nn floor by scales 0.5 (7×7 to 3×3: PyTorch's
    nearest-exact), Conv, GlobalAveragePool, Flatten, Gemm. The .json's
    values come from PyTorch in float64: the first Resize as the product
    with _sym_matrix (ONNX's definition; PyTorch has no such mode), the
    second as F.interpolate(mode="nearest-exact")."""
    g = torch.Generator().manual_seed(121)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"c1.weight": r(4, 3, 3, 3) * 0.3, "c1.bias": r(4) * 0.1,
         "c2.weight": r(4, 4, 3, 3) * 0.2, "c2.bias": r(4) * 0.1,
         "fc.weight": r(5, 4) * 0.3, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 5, 5), r(2, 5)
    inits = [floats(k, v) for k, v in p.items()] + [
        numpy_helper.from_array(np.array([1, 1, 1.5, 1.5], dtype=np.float32), "up.scales"),
        numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], dtype=np.float32), "down.scales")]
    nodes = [
        helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["c1", "", "up.scales"], ["u"], name="up", mode="linear",
                         coordinate_transformation_mode="half_pixel_symmetric"),
        helper.make_node("Relu", ["u"], ["ur"], name="relu"),
        helper.make_node("Resize", ["ur", "", "down.scales"], ["v"], name="down", mode="nearest",
                         coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode="floor"),
        helper.make_node("Conv", ["v", "c2.weight", "c2.bias"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c2"], ["gp"], name="gap"),
        helper.make_node("Flatten", ["gp"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    _save_helper_graph("resize_sym_op19.onnx", "resize_sym", nodes, inits, [3, 5, 5], 19)
    d = {k: v.double().requires_grad_() for k, v in p.items()}
    a = _sym_matrix(5, 1.5)
    h = F.conv2d(x.double(), d["c1.weight"], d["c1.bias"], padding=1)
    h = F.relu(torch.einsum("yi,ncij,xj->ncyx", a, h, a))
    h = F.interpolate(h, scale_factor=0.5, mode="nearest-exact")
    h = F.conv2d(h, d["c2.weight"], d["c2.bias"], padding=1)
    y = F.linear(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    _save_golden("resize_sym_op19", x, dy, y, d)


class _LayerNorm2d(nn.LayerNorm):
    """torchvision's LayerNorm2d (ConvNeXt's stem, downsampling and final
    norm): a LayerNorm over the channels of N×C×H×W, written channels-last."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class _Permute(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return x.permute(*self.dims)


class _CNBlock(nn.Module):
    """torchvision's ConvNeXt block (stochastic depth off): a depthwise 7×7
    convolution, then channels-last LayerNorm, Linear to 4C, GELU, Linear
    back to C, the layer scale γ (C×1×1) and the residual join."""

    def __init__(self, dim):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(dim, dim, 7, padding=3, groups=dim), _Permute([0, 2, 3, 1]),
                                   nn.LayerNorm(dim, eps=1e-6), nn.Linear(dim, 4 * dim), nn.GELU(),
                                   nn.Linear(4 * dim, dim), _Permute([0, 3, 1, 2]))
        self.layer_scale = nn.Parameter(torch.rand(dim, 1, 1) + 0.5)

    def forward(self, x):
        return self.layer_scale * self.block(x) + x


class _ConvNeXt(nn.Module):
    """convnext_op13's and convnext_op17's network: torchvision's ConvNeXt
    scaled down to 3×32×32 inputs: a 4×4 stride-4 stem with LayerNorm2d, a
    block of 8 channels, the downsampling LayerNorm2d and 2×2 stride-2
    convolution, a block of 16, average pooling, LayerNorm2d and the
    linear head. Every norm's weight and bias are drawn at random (fresh
    ones are all equal, and torch.onnx.export then shares one initializer
    between them)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 4, stride=4), _LayerNorm2d(8, eps=1e-6))
        self.s1 = _CNBlock(8)
        self.down = nn.Sequential(_LayerNorm2d(8, eps=1e-6), nn.Conv2d(8, 16, 2, stride=2))
        self.s2 = _CNBlock(16)
        self.norm = _LayerNorm2d(16, eps=1e-6)
        self.head = nn.Linear(16, 5)
        for m in self.modules():
            if isinstance(m, nn.LayerNorm):
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.uniform_(m.bias, -0.5, 0.5)

    def forward(self, x):
        x = self.s2(self.down(self.s1(self.stem(x))))
        x = self.norm(F.adaptive_avg_pool2d(x, 1))
        return self.head(torch.flatten(x, 1))


def convnext():
    """convnext_op13.onnx and convnext_op17.onnx: _ConvNeXt as
    torch.onnx.export writes it at opset 13 (LayerNorm as ReduceMean, Sub,
    Pow, Sqrt, Div, Mul, Add) and 17 (LayerNormalization), with their .json
    as zoo_ops.json. Gradients are kept for the parameters cotrain trains,
    by its names: at 13 the norms' weights and biases are the constants of
    their Mul and Add; the layer scale γ is a scaleparam layer's weight."""
    for opset in (13, 17):
        torch.manual_seed(71)
        net = _ConvNeXt()
        g = torch.Generator().manual_seed(72)
        x, dy = torch.randn(2, 3, 32, 32, generator=g), torch.randn(2, 5, generator=g)
        norms = {n for n, m in net.named_modules() if isinstance(m, nn.LayerNorm)}
        keep = lambda k: opset == 17 or k.rsplit(".", 1)[0] not in norms
        rename = lambda k: k + ".weight" if k.endswith("layer_scale") else k
        _export_op(f"convnext_op{opset}", net, x, dy, opset, keep, rename)


class _ViT(nn.Module):
    """vit_op13's and vit_op17's network: torchvision's VisionTransformer
    scaled down (image 32², patch 8, dim 32, 2 heads, 2 layers, MLP 64):
    the patch embedding (Conv 8×8 stride 8, reshape, permute), the class
    token expanded over the batch and concatenated, the position embedding
    added, pre-norm encoder layers (nn.TransformerEncoderLayer with
    batch_first, norm_first and GELU: nn.MultiheadAttention's
    in_proj/out_proj, which PyTorch writes with the batch axis moved), the
    final LayerNorm, the class token's output and the linear head."""

    def __init__(self):
        super().__init__()
        dim, tokens = 32, 17
        self.conv_proj = nn.Conv2d(3, dim, 8, stride=8)
        self.class_token = nn.Parameter(torch.randn(1, 1, dim) * 0.5)
        self.pos_embedding = nn.Parameter(torch.randn(1, tokens, dim) * 0.5)
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(dim, 2, 64, dropout=0.0, activation="gelu",
                                                                batch_first=True, norm_first=True) for _ in range(2)])
        self.ln = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, 5)
        for m in self.modules():
            if isinstance(m, nn.LayerNorm):
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.uniform_(m.bias, -0.5, 0.5)
            if isinstance(m, nn.MultiheadAttention):
                nn.init.uniform_(m.in_proj_bias, -0.5, 0.5)
                nn.init.uniform_(m.out_proj.bias, -0.5, 0.5)

    def forward(self, x):
        n = x.shape[0]
        x = self.conv_proj(x)
        x = x.reshape(n, x.shape[1], -1).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        x = x + self.pos_embedding
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln(x)[:, 0])


def vit():
    """vit_op13.onnx and vit_op17.onnx: _ViT as torch.onnx.export writes it
    at opset 13 (LayerNorm as arithmetic) and 17 (LayerNormalization), with
    their .json as zoo_ops.json; the gradients are kept by cotrain's tensor
    names (_vit_names maps PyTorch's to them; a parameter it leaves out is a
    constant in cotrain)."""
    for opset in (13, 17):
        torch.manual_seed(81)
        net = _ViT()
        g = torch.Generator().manual_seed(82)
        x, dy = torch.randn(2, 3, 32, 32, generator=g), torch.randn(2, 5, generator=g)
        net.eval()
        name = f"vit_op{opset}"
        torch.onnx.export(net, x, os.path.join(OUT, name + ".onnx"), opset_version=opset,
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
        d = net.double()
        y = d(x.double())
        (y * dy.double()).sum().backward()
        ps = {}
        for k, v in d.named_parameters():
            to = _vit_names(k, opset)
            if to is not None:
                ps[to] = v
        _save_golden(name, x, dy, y, ps)


def _vit_names(k, opset):
    """cotrain's name of _ViT's parameter k at opset (None: a constant)."""
    if opset == 13 and ("norm" in k or k.startswith("ln.")):
        return None  # LayerNorm as arithmetic: its weight and bias are constants
    if k in ("pos_embedding", "class_token"):
        return k + ".weight"  # an addparam layer's tensor, a prepend layer's slices
    return k.replace("in_proj_weight", "in_proj.weight").replace("in_proj_bias", "in_proj.bias")


def resize_aa():
    """resize_aa_op18.onnx (onnx.helper, opset 18): Resize linear with
    antialias=1 and exclude_outside=1, 18×18 to 9×9 by sizes, then to 4×4
    by scales 0.5, what F.interpolate(mode="bilinear", antialias=True) computes: Conv,
    Resize, Relu, Resize, Conv, GlobalAveragePool, Flatten, Gemm; the .json
    holds PyTorch's output and parameter gradients of that network."""
    g = torch.Generator().manual_seed(131)
    r = lambda *s: torch.randn(*s, generator=g)
    p = {"c1.weight": r(4, 3, 3, 3) * 0.3, "c1.bias": r(4) * 0.1,
         "c2.weight": r(4, 4, 3, 3) * 0.2, "c2.bias": r(4) * 0.1,
         "fc.weight": r(5, 4) * 0.3, "fc.bias": r(5) * 0.1}
    x, dy = r(2, 3, 18, 18), r(2, 5)
    inits = [floats(k, v) for k, v in p.items()] + [ints("sizes", [2, 4, 9, 9]),
        numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], dtype=np.float32), "scales")]
    aa = dict(mode="linear", coordinate_transformation_mode="half_pixel", antialias=1, exclude_outside=1)
    nodes = [
        helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["c1", "", "", "sizes"], ["u"], name="down1", **aa),
        helper.make_node("Relu", ["u"], ["ur"], name="relu"),
        helper.make_node("Resize", ["ur", "", "scales"], ["v"], name="down2", **aa),
        helper.make_node("Conv", ["v", "c2.weight", "c2.bias"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c2"], ["gp"], name="gap"),
        helper.make_node("Flatten", ["gp"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    _save_helper_graph("resize_aa_op18.onnx", "resize_aa", nodes, inits, [3, 18, 18], 18)
    d = {k: v.double().requires_grad_() for k, v in p.items()}
    h = F.conv2d(x.double(), d["c1.weight"], d["c1.bias"], padding=1)
    h = F.relu(F.interpolate(h, size=(9, 9), mode="bilinear", align_corners=False, antialias=True))
    h = F.interpolate(h, scale_factor=0.5, mode="bilinear", align_corners=False, antialias=True)
    h = F.conv2d(h, d["c2.weight"], d["c2.bias"], padding=1)
    y = F.linear(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1), d["fc.weight"], d["fc.bias"])
    (y * dy.double()).sum().backward()
    _save_golden("resize_aa_op18", x, dy, y, d)


def main():
    os.makedirs(OUT, exist_ok=True)
    w = weights()
    for op in range(7, 22):
        onnx.save_model(ops_model(op, w), os.path.join(OUT, f"ops_op{op}.onnx"))
    np.save(os.path.join(OUT, "ops.x.npy"), w["x"].numpy().astype("<f4"))
    np.save(os.path.join(OUT, "ops.y.npy"), golden(w).numpy().astype("<f4"))
    print("ops_op7..21 written")
    cnn_op20()
    zoo_ops()
    zoo_lrn()
    zoo_alexnet()
    zoo_resnet()
    pad_value()
    dilated()
    dilated1d()
    convtranspose()
    matmul_acts()
    tile()
    resize()
    resize_new()
    pad_modes()
    dilated_pool()
    dilated_pool1d()
    avgpool_dilated()
    bicubic()
    convtranspose2()
    convtranspose1d()
    convtranspose_pads()
    resize_sym()
    convnext()
    matmul_bcast()
    pads1d()
    dilated_pool_pads()
    resize_aa()
    vit()


# The fixtures whose cotrain export `check` runs: no batch norm or dropout,
# so evaluation mode computes what the golden's training pass did.
CHECKED = ["pad_value_op9", "pad_value_op13", "dilated_op13", "dilated1d_op13", "convtranspose_op13", "matmul_op13",
           "tile_op13", "upsample_op9", "resize_op11", "resize_op13", "resize_op18", "resize_op19", "resize1d_op13", "pad_modes_op9", "pad_modes_op13", "pad_modes_op18",
           "pad_modes1d_op13", "dilatedpool_op13", "dilatedpool1d_op13", "avgpool_dilated_op19", "bicubic_op13",
           "convtranspose2_op13", "convtranspose1d_op13", "convtranspose_pads_op13",
           "resize_sym_op19",
           "convnext_op13", "convnext_op17", "matmul_bcast_op13", "resize_aa_op18",
           "vit_op13", "vit_op17", "pads1d_op13", "dilatedpool_pads_op13"]


def check(folder):
    """Checks cotrain's exports of CHECKED (models/onnx's
    TestExportZooOpsForPython writes them with COTRAIN_ONNX_EXPORT=folder):
    onnx.checker's full check (for the opsets ONNX 1.12 knows, up to 17),
    then scripts/onnx_fixtures.py's float64 evaluator against PyTorch's y
    of the golden, to a relative 1e-4."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from onnx_fixtures import evaluate
    for name in CHECKED:
        with open(os.path.join(OUT, name + ".json")) as fh:
            g = json.load(fh)
        path = os.path.join(folder, name + ".cotrain.onnx")
        model = onnx.load(path)
        opset = model.opset_import[0].version
        checked = "checker ok"
        if opset <= onnx.defs.onnx_opset_version():
            onnx.checker.check_model(model, full_check=True)
        else:
            checked = f"checker skipped (it knows opsets up to {onnx.defs.onnx_opset_version()})"
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]
        x = np.array(g["x"], dtype=np.float32).reshape([-1] + shape)
        want = np.array(g["y"], dtype=np.float64).reshape(x.shape[0], -1)
        got = evaluate(model, x).reshape(x.shape[0], -1)
        rel = np.abs(got - want).max() / np.abs(want).max()
        ops = sorted({n.op_type for n in model.graph.node})
        print(f"{path}: {checked}, opset {opset}, ops {ops}, max rel err {rel:.2e}")
        if not rel <= 1e-4:
            sys.exit(f"{path}: relative error {rel:.3g} > 1e-4")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    elif len(sys.argv) > 2 and sys.argv[1] == "only":
        # Rewrites the named fixtures' builders alone (resize, resize_new, ...).
        os.makedirs(OUT, exist_ok=True)
        for fn in sys.argv[2:]:
            globals()[fn]()
    else:
        main()
