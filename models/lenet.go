package models

import "github.com/cotrain/cotrain/solver"

var mnist = Config{Classes: 10, Input: solver.Shape{C: 1, H: 28, W: 28}}

func init() {
	register(Spec{
		Name:        "lenet5",
		Description: "LeNet-5: conv 6@5x5 pad 2, pool, conv 16@5x5, pool, 120, 84, classes (61,706 parameters on MNIST)",
		Default:     mnist,
		layers:      lenet5,
	})
	register(Spec{
		Name:        "lenet-caffe",
		Description: "Caffe's MNIST LeNet: conv 20@5x5, pool, conv 50@5x5, pool, 500, classes (431,080 parameters on MNIST)",
		Default:     mnist,
		layers:      lenetCaffe,
	})
}

func conv(name string, out, k, stride, pad int) *solver.Conv2D {
	return solver.NewConv2D(name, solver.ConvConfig{Out: out, KH: k, StrideH: stride, StrideW: stride, PadH: pad, PadW: pad})
}

func maxPool(name string, k, stride int) *solver.Pool2D {
	return solver.NewMaxPool2D(name, solver.PoolConfig{KH: k, KW: k, StrideH: stride, StrideW: stride})
}

// lenet5 is the LeNet-5 of PyTorch's tutorials, with ReLU and max pooling.
func lenet5(c Config) ([]solver.Node, error) {
	return Stack(
		conv("conv1", 6, 5, 1, 2), solver.NewReLU("relu1"), maxPool("pool1", 2, 2),
		conv("conv2", 16, 5, 1, 0), solver.NewReLU("relu2"), maxPool("pool2", 2, 2),
		solver.NewFlatten("flatten"),
		solver.NewLinear("fc1", 120), solver.NewReLU("relu3"),
		solver.NewLinear("fc2", 84), solver.NewReLU("relu4"),
		solver.NewLinear("fc3", c.Classes),
	), nil
}

// lenetCaffe is Caffe's examples/mnist/lenet.prototxt: no activation after
// the convolutions, one ReLU after ip1.
func lenetCaffe(c Config) ([]solver.Node, error) {
	return Stack(
		conv("conv1", 20, 5, 1, 0), maxPool("pool1", 2, 2),
		conv("conv2", 50, 5, 1, 0), maxPool("pool2", 2, 2),
		solver.NewFlatten("flatten"),
		solver.NewLinear("ip1", 500), solver.NewReLU("relu1"),
		solver.NewLinear("ip2", c.Classes),
	), nil
}
