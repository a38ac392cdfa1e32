package solver

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// benchNet times a training pass (Forward, then Backward) of net on a
// batch of n random inputs and output gradients, with its parameters
// initialised: random data, as training gives (zeros would time ReLU's and
// the products' best case).
func benchNet(b *testing.B, net *Net, n int) {
	b.Helper()
	net.InitParams(rand.New(rand.NewPCG(1, 1)))
	r := rand.New(rand.NewPCG(2, 2))
	x, dy := net.B.Alloc(n*net.In.Size()), net.B.Alloc(n*net.Out.Size())
	for _, buf := range []gpu.Buffer{x, dy} {
		v := make([]float32, buf.Len())
		uniform(v, r)
		net.B.Upload(buf, v)
	}
	for b.Loop() {
		net.Forward(x, n, true)
		net.Backward(dy)
	}
}

// uploaded returns a new buffer of be holding v.
func uploaded(be gpu.Backend, v []float32) gpu.Buffer {
	buf := be.Alloc(len(v))
	be.Upload(buf, v)
	return buf
}
