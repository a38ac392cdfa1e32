package solver

import (
	"fmt"
	"math"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
)

// TestPReLUGrad checks PReLU's input and slope gradients against finite
// differences, with one slope and with one per channel, on images and on
// vectors.
func TestPReLUGrad(t *testing.T) {
	for _, c := range []struct {
		slopes int
		in     Shape
	}{{1, Shape{C: 3, H: 4, W: 5}}, {3, Shape{C: 3, H: 4, W: 5}}, {6, Shape{C: 6, H: 1, W: 1}}} {
		checkGrads(t, NewPReLU("prelu", c.slopes), c.in, 3, 1e-3)
	}
}

// TestPReLUForward checks the output against x > 0 ? x : w·x bit for bit
// (w·x rounded once), and that a slope count other than 1 or the channels
// is refused.
func TestPReLUForward(t *testing.T) {
	b := cpu.NewCPU()
	l := NewPReLU("p", 2)
	net, err := NewNet(b, Shape{C: 2, H: 3, W: 1}, []Node{{Layer: l}})
	if err != nil {
		t.Fatal(err)
	}
	w := []float32{0.25, -1.5}
	b.Upload(net.Params, w)
	x := []float32{-2, 0, 3, -0.5, 4, float32(math.Copysign(0, -1)), 1, -1, -3, 2, 0.1, -7}
	xb := b.Alloc(len(x))
	b.Upload(xb, x)
	got := make([]float32, len(x))
	b.Download(got, net.Forward(xb, 2, false))
	for i, v := range x {
		want := v
		if !(v > 0) {
			want = w[(i/3)%2] * v
		}
		if got[i] != want {
			t.Errorf("x[%d] = %v: %v, want %v", i, v, got[i], want)
		}
	}
	if _, err := NewNet(b, Shape{C: 3, H: 2, W: 2}, []Node{{Layer: NewPReLU("p", 2)}}); err == nil {
		t.Error("2 slopes for 3 channels: no error")
	}
}

// BenchmarkPReLU times a training forward and backward pass (slope
// gradients included) of a per-channel PReLU on 16×64×56×56, a ResNet
// stage's activation at batch 16, on the CPU backend.
func BenchmarkPReLU(b *testing.B) {
	benchTrainPass(b, NewPReLU("p", 64), Shape{C: 64, H: 56, W: 56}, 16)
}

// benchTrainPass times a training forward and backward pass of a network
// of the one layer l on n samples of shape in, on the CPU backend.
func benchTrainPass(b *testing.B, l Layer, in Shape, n int) {
	c := cpu.NewCPU()
	net, err := NewNet(c, in, []Node{{Layer: l}})
	if err != nil {
		b.Fatal(err)
	}
	x := make([]float32, n*in.Size())
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	xb, dy := c.Alloc(len(x)), c.Alloc(len(x))
	c.Upload(xb, x)
	c.Upload(dy, x)
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		net.Forward(xb, n, true)
		net.Backward(dy)
	}
}

// TestLayerNormGrad checks LayerNorm's input, weight and bias gradients
// against finite differences: over the last axis of an image read as
// C×H×W, over the last two, and over a vector. The input gradients of a
// normalisation are small (it removes the mean and the scale), so below
// 1e-2 they are compared absolutely (Floor; 1e-4, the float32 noise of the
// differences), not relatively to 1e-3; scripts/onnx_acts.py's ln fixtures
// check them against PyTorch's autograd.
func TestLayerNormGrad(t *testing.T) {
	for _, c := range []struct {
		dims []int
		axis int
		in   Shape
	}{{[]int{3, 4, 5}, 2, Shape{C: 3, H: 4, W: 5}}, {[]int{3, 4, 5}, 1, Shape{C: 3, H: 4, W: 5}}, {[]int{8}, 0, Shape{C: 8, H: 1, W: 1}}} {
		l := NewLayerNorm("ln", c.dims, c.axis, 1e-5)
		bad, err := gradCheck{Floor: 1e-2}.layer(l, []Shape{c.in}, 3)
		report(t, fmt.Sprintf("ln %v axis %d", c.dims, c.axis), bad, err)
	}
}

// TestGroupNormGrad checks GroupNorm's input, weight and bias gradients
// against finite differences (absolutely below 1e-2, as TestLayerNormGrad):
// two groups, an instance norm (a group per channel) and one group.
func TestGroupNormGrad(t *testing.T) {
	for _, g := range []int{2, 4, 1} {
		bad, err := gradCheck{Floor: 1e-2}.layer(NewGroupNorm("gn", g, 1e-5, nil), []Shape{{C: 4, H: 3, W: 5}}, 3)
		report(t, fmt.Sprintf("gn %d groups", g), bad, err)
	}
	// The input read as 6×10 (channels first), not its 3×4×5.
	bad, err := gradCheck{Floor: 1e-2}.layer(NewGroupNorm("gn", 3, 1e-5, []int{6, 10}), []Shape{{C: 3, H: 4, W: 5}}, 2)
	report(t, "gn over dims 6×10", bad, err)
}

// BenchmarkNorms times a training forward and backward pass (parameter
// gradients included) of a layer norm over the last axis and a group norm
// of 8 groups on 16×64×28×28, on the CPU backend.
func BenchmarkNorms(b *testing.B) {
	in := Shape{C: 64, H: 28, W: 28}
	for _, l := range []Layer{NewLayerNorm("ln", []int{64, 28, 28}, 2, 1e-5), NewGroupNorm("gn", 8, 1e-5, nil)} {
		b.Run(l.Kind(), func(b *testing.B) { benchTrainPass(b, l, in, 16) })
	}
}
