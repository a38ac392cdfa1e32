package solver

import (
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
