package solver

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// rowwise returns a linear layer applied to the last of dims.
func rowwise(name string, out int, dims []int, noBias bool) *Linear {
	l := NewLinear(name, out)
	l.Dims, l.NoBias = dims, noBias
	return l
}

// TestLinearRowwiseGrad checks a linear layer over the last axis (nn.Linear
// of a tensor of rank 3 and 4) against finite differences: input, weight
// and bias gradients.
func TestLinearRowwiseGrad(t *testing.T) {
	for _, c := range []struct {
		dims   []int
		out    int
		noBias bool
	}{{[]int{5, 3}, 4, false}, {[]int{2, 3, 4}, 6, false}, {[]int{3, 4}, 2, true}} {
		l := rowwise("fc", c.out, c.dims, c.noBias)
		bad, err := gradCheck{Tol: 1e-2, Floor: 1e-2}.layer(l, []Shape{DimsShape(c.dims)}, 2)
		report(t, "linear over the last axis", bad, err)
	}
}

// TestLinearRowwiseMatchesNaive compares the layer with the definition's
// loops, y[s, r, o] = b[o] + Σ_i x[s, r, i]·W[o, i], and its output dims.
func TestLinearRowwiseMatchesNaive(t *testing.T) {
	const N, H, W, In, Out = 2, 3, 2, 5, 4
	be := cpu.NewCPU()
	l := rowwise("fc", Out, []int{H, W, In}, false)
	s, err := l.Setup([]Shape{{H, W, In}})
	if err != nil {
		t.Fatal(err)
	}
	if s != (Shape{H, W, Out}) {
		t.Fatalf("output %v, want %v", s, Shape{H, W, Out})
	}
	r := rand.New(rand.NewPCG(3, 4))
	x, w, b := make([]float32, N*H*W*In), make([]float32, Out*In), make([]float32, Out)
	for _, v := range [][]float32{x, w, b} {
		uniform(v, r)
	}
	l.Bind(be, []gpu.Buffer{uploaded(be, w), uploaded(be, b)}, nil, nil)
	y := be.Alloc(N * H * W * Out)
	l.Forward(&Pass{B: be, N: N}, y, []gpu.Buffer{uploaded(be, x)})
	got := download(be, y)
	for row := range N * H * W {
		for o := range Out {
			want := float64(b[o])
			for i := range In {
				want += float64(x[row*In+i]) * float64(w[o*In+i])
			}
			if g := got[row*Out+o]; abs64(float64(g)-want) > 1e-5 {
				t.Fatalf("row %d unit %d = %g, want %g", row, o, g, want)
			}
		}
	}
}

// TestLinearRowwiseRefusesDims: dims that are not the input's are an error.
func TestLinearRowwiseRefusesDims(t *testing.T) {
	if _, err := rowwise("fc", 3, []int{4, 5}, false).Setup([]Shape{{4, 6, 1}}); err == nil {
		t.Error("dims [4 5] for an input of 24: no error")
	}
}

// BenchmarkLinearRowwise times a training pass of a ConvNeXt block's first
// pointwise layer on a 14×14 map: 96 channels to 384 at every position,
// channels last, a batch of 4 (one Gemm of 784 rows each way).
func BenchmarkLinearRowwise(b *testing.B) {
	dims := []int{14, 14, 96}
	net, err := NewNet(cpu.NewCPU(), DimsShape(dims), []Node{{Layer: rowwise("fc", 384, dims, false)}})
	if err != nil {
		b.Fatal(err)
	}
	benchNet(b, net, 4)
}
