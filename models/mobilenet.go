package models

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/solver"
)

func init() {
	register(Spec{
		Name: "mobilenet-v1",
		Description: "MobileNet v1: conv 32@3x3/2, 13 depthwise-separable blocks, global avg pool, classes; " +
			"width multiplier α (train, hub and profile --width), channels max(int(c·α), 8) (4,231,976 parameters at α=1, 1000 classes)",
		Default: Config{Classes: 1000, Input: imagenet.Input, Width: 1},
		layers:  mobilenetV1(2),
	})
	register(Spec{
		Name: "mobilenet-small",
		Description: "MobileNet v1 for 32x32: the same 13 blocks with a stride-1 stem, α=0.5 by default " +
			"(823,722 parameters at 3x32x32, 10 classes)",
		Default: Config{Classes: 10, Input: cifar.Input, Width: 0.5},
		layers:  mobilenetV1(1),
	})
}

// mobilenetBlocks is the standard table of MobileNet v1's 13
// depthwise-separable blocks (Howard et al. 2017, table 1): the pointwise
// output channels at α=1 and the depthwise stride.
var mobilenetBlocks = [13]struct{ out, stride int }{
	{64, 1}, {128, 2}, {128, 1}, {256, 2}, {256, 1}, {512, 2},
	{512, 1}, {512, 1}, {512, 1}, {512, 1}, {512, 1},
	{1024, 2}, {1024, 1},
}

// MobileNetChannels applies the width multiplier α to a channel count the
// way TF-slim's mobilenet_v1 does (depth_multiplier with min_depth 8):
// max(int(c·α), 8), truncating. scripts/onnx_fixtures.py builds its PyTorch
// twin with the same rule.
func MobileNetChannels(c int, alpha float64) int {
	// The small epsilon keeps products that are integers in exact arithmetic
	// (0.75·64 = 48) from truncating one lower through float rounding.
	return max(int(math.Floor(float64(float64(c)*alpha)+1e-9)), 8) // float64(): not fused on any target
}

// mobilenetV1 returns MobileNet v1's layers with the given stem stride (2 for
// 224x224 inputs, 1 for 32x32 ones, where five stride-2 stages would leave
// 1x1 features after the stem's).
//
//	stem:   conv 3x3 s(stem) p1 → BN → ReLU6                   (name "stem")
//	block i (1..13): depthwise conv 3x3 s(table) p1 → BN → ReLU6 ("b<i>.dw")
//	                 pointwise conv 1x1 → BN → ReLU6              ("b<i>.pw")
//	global average pool, flatten, linear classes                  ("fc")
//
// Convolutions have no bias (BN follows each one); BN uses PyTorch's
// defaults, eps 1e-5 and momentum 0.1.
func mobilenetV1(stem int) func(c Config) ([]solver.Node, error) {
	return func(c Config) ([]solver.Node, error) {
		if !(c.Width > 0 && c.Width <= 4) {
			return nil, fmt.Errorf("width multiplier %g, want in (0, 4]", c.Width)
		}
		ch := MobileNetChannels(32, c.Width)
		layers := convBNReLU6("stem", solver.ConvConfig{Out: ch, KH: 3, StrideH: stem, StrideW: stem, PadH: 1, PadW: 1, NoBias: true})
		for i, b := range mobilenetBlocks {
			name := fmt.Sprintf("b%d", i+1)
			layers = append(layers, convBNReLU6(name+".dw", solver.ConvConfig{
				Out: ch, KH: 3, StrideH: b.stride, StrideW: b.stride, PadH: 1, PadW: 1, Groups: ch, NoBias: true})...)
			ch = MobileNetChannels(b.out, c.Width)
			layers = append(layers, convBNReLU6(name+".pw", solver.ConvConfig{Out: ch, KH: 1, NoBias: true})...)
		}
		layers = append(layers, solver.NewGlobalAvgPool("avgpool"), solver.NewFlatten("flatten"), solver.NewLinear("fc", c.Classes))
		return Stack(layers...), nil
	}
}

// convBNReLU6 is MobileNet's unit: a convolution named name+".conv", its
// batch norm name+".bn" and a ReLU6 name+".relu".
func convBNReLU6(name string, cfg solver.ConvConfig) []solver.Layer {
	return []solver.Layer{
		solver.NewConv2D(name+".conv", cfg),
		solver.NewBatchNorm(name+".bn", solver.DefaultBNEps, solver.DefaultBNMomentum),
		solver.NewReLU6(name + ".relu"),
	}
}
