package models

import (
	"fmt"

	"github.com/cotrain/cotrain/solver"
)

var imagenet = Config{Classes: 1000, Input: solver.Shape{C: 3, H: 224, W: 224}}

var cifar = Config{Classes: 10, Input: solver.Shape{C: 3, H: 32, W: 32}}

func init() {
	register(Spec{
		Name: "alexnet",
		Description: "AlexNet as torchvision builds it: 5 convs (64@11x11/4, 192@5x5, 384, 256, 256), " +
			"3 max pools, avg pool to 6x6, dropout, 4096, 4096, classes (61,100,840 parameters at 224x224, 1000 classes)",
		Default: imagenet,
		layers:  alexnet,
	})
	register(Spec{
		Name: "alexnet-small",
		Description: "AlexNet for 32x32: 5 convs 3x3 (32/2, 96, 192, 128, 128), 3 max pools 2x2, " +
			"dropout, 512, 512, classes (1,094,058 parameters at 3x32x32, 10 classes)",
		Default: cifar,
		layers:  alexnetSmall,
	})
}

// alexnet is torchvision.models.AlexNet: features, an adaptive average pool
// to 6x6 and the classifier. Layer names follow torchvision's module paths
// (features.0 is the first conv), so a weight file's tensor names match a
// torchvision state_dict's.
//
// The adaptive pool is built as a plain average pool, which is only possible
// when the feature map's side is a multiple of 6: at 224x224 the features are
// already 6x6 and the pool is the identity (left out); a side of 12, 18, ...
// pools k×k windows with stride k. Any other size is refused, because
// PyTorch's adaptive windows then overlap unevenly (or, below 6, repeat
// pixels), which no fixed window reproduces.
func alexnet(c Config) ([]solver.Node, error) {
	nodes := Stack(
		conv("features.0", 64, 11, 4, 2), solver.NewReLU("features.1"), maxPool("features.2", 3, 2),
		conv("features.3", 192, 5, 1, 2), solver.NewReLU("features.4"), maxPool("features.5", 3, 2),
		conv("features.6", 384, 3, 1, 1), solver.NewReLU("features.7"),
		conv("features.8", 256, 3, 1, 1), solver.NewReLU("features.9"),
		conv("features.10", 256, 3, 1, 1), solver.NewReLU("features.11"), maxPool("features.12", 3, 2),
	)
	h, w := alexnetFeatures(c.Input.H), alexnetFeatures(c.Input.W)
	switch {
	case h <= 0 || w <= 0:
		return nil, fmt.Errorf("input %v is too small for AlexNet's features (224x224 is the standard size)", c.Input)
	case h%6 != 0 || w%6 != 0:
		return nil, fmt.Errorf("input %v gives %dx%d features; adaptive average pooling to 6x6 is supported "+
			"only when it is a plain pooling, a side that is a multiple of 6 (224x224 gives 6x6)", c.Input, h, w)
	case h > 6 || w > 6:
		nodes = append(nodes, solver.Node{Layer: solver.NewAvgPool2D("avgpool", solver.PoolConfig{
			KH: h / 6, KW: w / 6, StrideH: h / 6, StrideW: w / 6, CountIncludePad: true})})
	}
	return append(nodes, Stack(
		solver.NewFlatten("flatten"),
		solver.NewDropout("classifier.0", 0.5), solver.NewLinear("classifier.1", 4096), solver.NewReLU("classifier.2"),
		solver.NewDropout("classifier.3", 0.5), solver.NewLinear("classifier.4", 4096), solver.NewReLU("classifier.5"),
		solver.NewLinear("classifier.6", c.Classes),
	)...), nil
}

// alexnetFeatures is the side of AlexNet's feature map for an input side,
// or 0 when a layer's window no longer fits.
func alexnetFeatures(side int) int {
	side = convOut(side, 11, 4, 2)
	side = convOut(side, 3, 2, 0)
	side = convOut(side, 3, 2, 0) // the 5x5 conv keeps the size (pad 2)
	return convOut(side, 3, 2, 0) // so do the three 3x3 convs (pad 1)
}

// convOut is the output side of a convolution or floor-mode pooling window,
// 0 when the window does not fit.
func convOut(in, k, stride, pad int) int {
	if in <= 0 || in+2*pad < k {
		return 0
	}
	return (in+2*pad-k)/stride + 1
}

// alexnetSmall is AlexNet's shape scaled to 32x32 inputs: the same five
// convolutions at half the channels with 3x3 kernels (the first with stride
// 2), 2x2 max pools after conv 1, 2 and 5, and a 512-512 classifier with
// dropout. On 3x32x32 the features are 128x2x2.
//
//	conv 32@3x3 s2 p1, ReLU, maxpool 2      32 -> 16 -> 8
//	conv 96@3x3 p1, ReLU, maxpool 2          8 -> 4
//	conv 192@3x3 p1, ReLU
//	conv 128@3x3 p1, ReLU
//	conv 128@3x3 p1, ReLU, maxpool 2         4 -> 2
//	flatten, dropout 0.5, linear 512, ReLU, dropout 0.5, linear 512, ReLU, linear classes
func alexnetSmall(c Config) ([]solver.Node, error) {
	return Stack(
		conv("features.0", 32, 3, 2, 1), solver.NewReLU("features.1"), maxPool("features.2", 2, 2),
		conv("features.3", 96, 3, 1, 1), solver.NewReLU("features.4"), maxPool("features.5", 2, 2),
		conv("features.6", 192, 3, 1, 1), solver.NewReLU("features.7"),
		conv("features.8", 128, 3, 1, 1), solver.NewReLU("features.9"),
		conv("features.10", 128, 3, 1, 1), solver.NewReLU("features.11"), maxPool("features.12", 2, 2),
		solver.NewFlatten("flatten"),
		solver.NewDropout("classifier.0", 0.5), solver.NewLinear("classifier.1", 512), solver.NewReLU("classifier.2"),
		solver.NewDropout("classifier.3", 0.5), solver.NewLinear("classifier.4", 512), solver.NewReLU("classifier.5"),
		solver.NewLinear("classifier.6", c.Classes),
	), nil
}
