package solver

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// TestDilatedConv2DGrad checks the dilated convolution's input, weight and
// bias gradients against finite differences: dilation 2 with padding, and
// dilation 2×3 in two groups with stride 2 and no bias. Gradients below
// 1e-2 are compared absolutely (Floor): an input element that few taps
// reach has a gradient of about 2e-3, where float32 differences are off by
// a few percent. (models/onnx's dilated_op13 checks the input gradient
// against PyTorch's autograd, through the first layer's weight gradient.)
func TestDilatedConv2DGrad(t *testing.T) {
	for _, c := range []struct {
		l  Layer
		in Shape
	}{
		{NewDilatedConv2D("d2", ConvConfig{Out: 3, KH: 3, PadH: 2, PadW: 2}, 2, 2), Shape{2, 7, 7}},
		{NewDilatedConv2D("d23", ConvConfig{Out: 4, KH: 2, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 2, Groups: 2, NoBias: true}, 2, 3),
			Shape{4, 8, 9}},
	} {
		bad, err := gradCheck{Tol: 1e-2, Floor: 1e-2}.layer(c.l, []Shape{c.in}, 2)
		report(t, c.l.Name(), bad, err)
	}
}

// TestDilatedConv2DMatchesNaive compares the layer's output with the
// definition, y[k][i][j] = b[k] + Σ w[k][c][r][s]·x[c][i·S-P+r·D][j·S-P+s·D],
// written as loops.
func TestDilatedConv2DMatchesNaive(t *testing.T) {
	const C, H, W, K, R, S, D, P, St = 2, 9, 8, 3, 3, 2, 3, 2, 2
	be := cpu.NewCPU()
	l := NewDilatedConv2D("d", ConvConfig{Out: K, KH: R, KW: S, StrideH: St, StrideW: St, PadH: P, PadW: P}, D, D)
	out, err := l.Setup([]Shape{{C, H, W}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	x, w, bias := make([]float32, C*H*W), make([]float32, K*C*R*S), make([]float32, K)
	for _, v := range [][]float32{x, w, bias} {
		uniform(v, r)
	}
	l.Bind(be, []gpu.Buffer{uploaded(be, w), uploaded(be, bias)}, []gpu.Buffer{be.Alloc(len(w)), be.Alloc(K)}, nil)
	l.Resize(be, 1)
	y := be.Alloc(out.Size())
	l.Forward(&Pass{B: be, N: 1, WS: be.Alloc(max(l.Workspace(1), 1))}, y, []gpu.Buffer{uploaded(be, x)})
	got := download(be, y)
	for k := range K {
		for i := range out.H {
			for j := range out.W {
				want := float64(bias[k])
				for c := range C {
					for rr := range R {
						for s := range S {
							yi, xj := i*St-P+rr*D, j*St-P+s*D
							if yi >= 0 && yi < H && xj >= 0 && xj < W {
								want += float64(w[((k*C+c)*R+rr)*S+s]) * float64(x[(c*H+yi)*W+xj])
							}
						}
					}
				}
				if g := got[(k*out.H+i)*out.W+j]; abs64(float64(g)-want) > 1e-5 {
					t.Fatalf("y[%d][%d][%d] = %g, want %g", k, i, j, g, want)
				}
			}
		}
	}
}

func abs64(v float64) float64 { return max(v, -v) }

// BenchmarkDilatedConv2D times a training pass (forward and backward) of a
// 3×3 convolution of dilation 2 next to the dense 5×5 one it runs and the
// dense 3×3 one of the same weights: the composition's price is the 5×5's
// arithmetic plus two small copies of the filter.
func BenchmarkDilatedConv2D(b *testing.B) {
	for _, c := range []struct {
		name string
		l    func() Layer
	}{
		{"dilated3x3d2", func() Layer { return NewDilatedConv2D("c", ConvConfig{Out: 32, KH: 3, PadH: 2, PadW: 2}, 2, 2) }},
		{"dense5x5", func() Layer { return NewConv2D("c", ConvConfig{Out: 32, KH: 5, PadH: 2, PadW: 2}) }},
		{"dense3x3", func() Layer { return NewConv2D("c", ConvConfig{Out: 32, KH: 3, PadH: 1, PadW: 1}) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			be := cpu.NewCPU()
			const n = 16
			net, err := NewNet(be, Shape{32, 28, 28}, []Node{{Layer: c.l()}})
			if err != nil {
				b.Fatal(err)
			}
			benchNet(b, net, n)
		})
	}
}
