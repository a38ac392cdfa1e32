package solver

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// TestPrependGrad checks the input's and the learned slices' gradients
// against finite differences: a class token before 5 tokens of 3, and 2
// slices along the middle axis of 2×3×4.
func TestPrependGrad(t *testing.T) {
	for _, c := range []struct {
		dims        []int
		axis, count int
	}{{[]int{5, 3}, 0, 1}, {[]int{2, 3, 4}, 1, 2}} {
		l := NewPrepend("tok", c.dims, c.axis, c.count)
		bad, err := gradCheck{Tol: 1e-2, Floor: 1e-2}.layer(l, []Shape{DimsShape(c.dims)}, 3)
		report(t, "prepend", bad, err)
	}
}

// TestPrependMatchesNaive compares the output with torch.cat([p.expand(N,
// ...), x], axis) written out, and the slices' gradient with the sum of
// dout's first rows over the batch.
func TestPrependMatchesNaive(t *testing.T) {
	const N, T, D = 3, 4, 2
	be := cpu.NewCPU()
	l := NewPrepend("tok", []int{T, D}, 0, 1)
	if _, err := l.Setup([]Shape{DimsShape([]int{T, D})}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	x, p, dy := make([]float32, N*T*D), make([]float32, D), make([]float32, N*(T+1)*D)
	for _, v := range [][]float32{x, p, dy} {
		uniform(v, r)
	}
	g := be.Alloc(D)
	l.Bind(be, []gpu.Buffer{uploaded(be, p)}, []gpu.Buffer{g}, nil)
	y := be.Alloc(N * (T + 1) * D)
	pass := &Pass{B: be, N: N, WS: be.Alloc(l.Workspace(N))}
	l.Forward(pass, y, []gpu.Buffer{uploaded(be, x)})
	got := download(be, y)
	for s := range N {
		for k := range (T + 1) * D {
			want := p[k%D]
			if k >= D {
				want = x[s*T*D+k-D]
			}
			if g := got[s*(T+1)*D+k]; g != want {
				t.Fatalf("sample %d element %d = %v, want %v", s, k, g, want)
			}
		}
	}
	dx := be.Alloc(N * T * D)
	l.Backward(pass, []gpu.Buffer{dx}, uploaded(be, dy), nil, nil, true)
	gg := download(be, g)
	for j := range D {
		var want float64
		for s := range N {
			want += float64(dy[s*(T+1)*D+j])
		}
		if abs64(float64(gg[j])-want) > 1e-6 {
			t.Fatalf("slice gradient %d = %v, want %v", j, gg[j], want)
		}
	}
}

// BenchmarkPrepend times a training pass of vit_b_16's class token: one
// slice of 768 before 196 patches, a batch of 8.
func BenchmarkPrepend(b *testing.B) {
	dims := []int{196, 768}
	net, err := NewNet(cpu.NewCPU(), DimsShape(dims), []Node{{Layer: NewPrepend("class_token", dims, 0, 1)}})
	if err != nil {
		b.Fatal(err)
	}
	benchNet(b, net, 8)
}

// TestAddParamGrad checks a learned position embedding's input and weight
// gradients against finite differences.
func TestAddParamGrad(t *testing.T) {
	dims := []int{5, 3}
	bad, err := gradCheck{Tol: 1e-2, Floor: 1e-2}.layer(NewAddParam("pos", dims), []Shape{DimsShape(dims)}, 3)
	report(t, "addparam", bad, err)
}

// BenchmarkAddParam times a training pass of vit_b_16's position
// embedding: 197×768 added to a batch of 8.
func BenchmarkAddParam(b *testing.B) {
	dims := []int{197, 768}
	net, err := NewNet(cpu.NewCPU(), DimsShape(dims), []Node{{Layer: NewAddParam("pos_embedding", dims)}})
	if err != nil {
		b.Fatal(err)
	}
	benchNet(b, net, 8)
}

// TestScaleParamGrad checks a learned layer scale's input and weight
// gradients against finite differences: per channel (C×1×1 of C×H×W) and
// whole.
func TestScaleParamGrad(t *testing.T) {
	for _, c := range [][2][]int{{{3, 2, 2}, {3, 1, 1}}, {{4, 3}, {4, 3}}} {
		l := NewScaleParam("gamma", c[0], c[1])
		bad, err := gradCheck{Tol: 1e-2, Floor: 1e-2}.layer(l, []Shape{DimsShape(c[0])}, 3)
		report(t, "scaleparam", bad, err)
	}
}

// BenchmarkScaleParam times a training pass of convnext_tiny's first layer
// scale: 96 channels of 56×56, a batch of 4.
func BenchmarkScaleParam(b *testing.B) {
	dims := []int{96, 56, 56}
	net, err := NewNet(cpu.NewCPU(), DimsShape(dims), []Node{{Layer: NewScaleParam("layer_scale", dims, []int{96, 1, 1})}})
	if err != nil {
		b.Fatal(err)
	}
	benchNet(b, net, 4)
}
