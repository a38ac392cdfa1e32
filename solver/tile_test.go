package solver

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// TestTileGrad checks the input gradient (the sum over the copies) against
// finite differences, repeating every axis, some, and an axis of one.
func TestTileGrad(t *testing.T) {
	for _, c := range []struct{ in, rep []int }{
		{[]int{2, 3, 2}, []int{2, 1, 3}},
		{[]int{3, 1, 2}, []int{1, 4, 1}},
		{[]int{5}, []int{3}},
	} {
		bad, err := gradCheck{Tol: 1e-2}.layer(NewTile("tile", c.in, c.rep), []Shape{DimsShape(c.in)}, 2)
		report(t, "tile", bad, err)
	}
}

// TestTileMatchesNaive compares the output with the definition, out[i][j][k]
// = x[i mod C][j mod H][k mod W], for a batch of 2.
func TestTileMatchesNaive(t *testing.T) {
	const N, C, H, W = 2, 2, 3, 2
	rep := []int{3, 1, 2}
	be := cpu.NewCPU()
	l := NewTile("tile", []int{C, H, W}, rep)
	out, err := l.Setup([]Shape{{C, H, W}})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, N*C*H*W)
	uniform(x, rand.New(rand.NewPCG(9, 10)))
	y := be.Alloc(N * out.Size())
	l.Forward(&Pass{B: be, N: N}, y, []gpu.Buffer{uploaded(be, x)})
	got := download(be, y)
	OC, OH, OW := C*rep[0], H*rep[1], W*rep[2]
	for n := range N {
		for i := range OC {
			for j := range OH {
				for k := range OW {
					want := x[((n*C+i%C)*H+j%H)*W+k%W]
					if g := got[((n*OC+i)*OH+j)*OW+k]; g != want {
						t.Fatalf("y[%d][%d][%d][%d] = %g, want %g", n, i, j, k, g, want)
					}
				}
			}
		}
	}
}

// TestTileRefuses: a repeat of 0, a repeat count of the wrong length and a
// tiling that needs more axes than the kernels have are errors.
func TestTileRefuses(t *testing.T) {
	for _, c := range []struct{ in, rep []int }{
		{[]int{2, 3}, []int{0, 1}}, {[]int{2, 3}, []int{2}}, {[]int{2, 3, 4}, []int{2, 2, 2}},
	} {
		if _, err := NewTile("tile", c.in, c.rep).Setup([]Shape{DimsShape(c.in)}); err == nil {
			t.Errorf("%v repeated %v: no error", c.in, c.rep)
		}
	}
}

// BenchmarkTile times a training pass of a 64×14×14 map tiled 2×2 over its
// positions (a batch of 16): one strided copy forward, one sum backward.
func BenchmarkTile(b *testing.B) {
	be := cpu.NewCPU()
	const n = 16
	in := []int{64, 14, 14}
	net, err := NewNet(be, DimsShape(in), []Node{{Layer: NewTile("tile", in, []int{1, 2, 2})}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(4 * n * (net.In.Size() + net.Out.Size())))
	benchNet(b, net, n)
}
