package models

import "github.com/cotrain/cotrain/solver"

// har is the default input of har-cnn: 3 channels (an accelerometer's x, y,
// z) × 128 steps, UCI HAR's window (2.56 s at 50 Hz; data.DefaultWindow),
// as a 1-D input N×C×L stored as C×1×L.
var har = Config{Classes: 6, Input: solver.Shape{C: 3, H: 1, W: 128}}

func init() {
	register(Spec{
		Name: "har-cnn",
		Description: "1-D CNN for sensor windows (C channels × L steps, default 3×128): " +
			"conv 32@7, BN, ReLU, pool 2, conv 64@5, BN, ReLU, pool 2, conv 64@3, BN, ReLU, global avg pool, classes " +
			"(23,910 parameters at 3×128, 6 classes)",
		Default: har,
		layers:  harCNN,
	})
}

// conv1d is a 1-D convolution of kernel k, stride 1 and "same" padding
// (k odd): PyTorch's nn.Conv1d(kernel_size=k, padding=k//2, bias=False) as
// a 1×k convolution over a C×1×L input.
func conv1d(name string, out, k int) *solver.Conv2D {
	return solver.NewConv2D(name, solver.ConvConfig{Out: out, KH: 1, KW: k, StrideH: 1, StrideW: 1, PadW: k / 2, NoBias: true})
}

// maxPool1d is nn.MaxPool1d(k) (stride k) as a 1×k pooling.
func maxPool1d(name string, k int) *solver.Pool2D {
	return solver.NewMaxPool2D(name, solver.PoolConfig{KH: 1, KW: k, StrideH: 1, StrideW: k})
}

// harCNN is a small fully convolutional network over sensor windows, in
// the line of Wang, Yan and Oates' time-series FCN (2017: three
// convolution–batch-norm–ReLU blocks of kernels 8, 5, 3, then global
// average pooling), made lighter for phones:
//
//	conv1: Conv1d(C, 32, 7, pad 3, no bias) → BatchNorm1d → ReLU → MaxPool1d(2)
//	conv2: Conv1d(32, 64, 5, pad 2, no bias) → BatchNorm1d → ReLU → MaxPool1d(2)
//	conv3: Conv1d(64, 64, 3, pad 1, no bias) → BatchNorm1d → ReLU
//	global average pool over L, flatten, Linear(64, classes)
//
// Why this shape: the kernels span 7, then (after a pool) 5×2 and 3×4 input
// steps, a receptive field of 26 steps (0.52 s at 50 Hz, a step's
// impact and swing) at the last layer, and global pooling then sums over
// the whole window, so what is recognised is a gait's texture wherever it
// falls in the window; the pools quarter the work of the wider layers;
// batch norm lets it train with plain SGD at a high learning rate from
// any normalisation. Global pooling also frees the window length: the same
// layers take any L ≥ 4 (--window), and the parameter count does not
// depend on it. About 24 thousand parameters and 2.3 MFLOP (multiply-adds counted twice) a 3×128 window:
// a phone computes a batch of 64 in milliseconds.
func harCNN(c Config) ([]solver.Node, error) {
	const eps, momentum = 1e-5, 0.1 // PyTorch's BatchNorm1d defaults
	return Stack(
		conv1d("conv1", 32, 7), solver.NewBatchNorm("bn1", eps, momentum), solver.NewReLU("relu1"), maxPool1d("pool1", 2),
		conv1d("conv2", 64, 5), solver.NewBatchNorm("bn2", eps, momentum), solver.NewReLU("relu2"), maxPool1d("pool2", 2),
		conv1d("conv3", 64, 3), solver.NewBatchNorm("bn3", eps, momentum), solver.NewReLU("relu3"),
		solver.NewGlobalAvgPool("gap"), solver.NewFlatten("flatten"),
		solver.NewLinear("fc", c.Classes),
	), nil
}
