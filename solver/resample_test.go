package solver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// resampleCases are layers of every mode over C×H×W and C×L, up, down,
// one axis unchanged, by scales and by sizes.
func resampleCases() []*Resample {
	return []*Resample{
		NewResample("up2", []int{2, 3, 4}, []int{2, 6, 8}, gpu.ResampleNearest, gpu.CoordAsymmetric, gpu.NearestFloor, []float32{2, 2}),
		NewResample("bilinear", []int{2, 3, 4}, []int{2, 7, 5}, gpu.ResampleLinear, gpu.CoordPytorchHalfPixel, "", nil),
		NewResample("corners", []int{1, 5, 3}, []int{1, 3, 6}, gpu.ResampleLinear, gpu.CoordAlignCorners, "", nil),
		NewResample("down", []int{2, 6, 5}, []int{2, 3, 5}, gpu.ResampleNearest, gpu.CoordHalfPixel, gpu.NearestRoundPreferFloor, nil),
		NewResample("1d", []int{3, 5}, []int{3, 12}, gpu.ResampleLinear, gpu.CoordHalfPixel, "", []float32{2.5}),
		NewResample("same", []int{2, 3, 3}, []int{2, 3, 3}, gpu.ResampleLinear, gpu.CoordHalfPixel, "", nil),
		{Base: Base{LayerName: "bicubic"}, In: []int{2, 4, 5}, Out: []int{2, 7, 3}, Mode: gpu.ResampleCubic,
			Coord: gpu.CoordPytorchHalfPixel, CubicA: -0.75},
		{Base: Base{LayerName: "antialias"}, In: []int{2, 9, 7}, Out: []int{2, 4, 3}, Mode: gpu.ResampleLinear,
			Coord: gpu.CoordHalfPixel, Antialias: true, Exclude: true},
	}
}

// TestResampleGrad checks the input gradient (the transposed passes)
// against finite differences.
func TestResampleGrad(t *testing.T) {
	for _, l := range resampleCases() {
		bad, err := gradCheck{Tol: 1e-2}.layer(l, []Shape{DimsShape(l.In)}, 2)
		report(t, l.LayerName, bad, err)
	}
}

// TestResampleMatchesDense compares the output with the definition: the
// product of every spatial axis's matrix (gpu.ResampleAxis.Taps) applied
// at once, in float64, for a batch of 2; and the gradient with the
// transposed product.
func TestResampleMatchesDense(t *testing.T) {
	be := cpu.NewCPU()
	r := rand.New(rand.NewPCG(5, 6))
	for _, l := range resampleCases() {
		if _, err := l.Setup([]Shape{DimsShape(l.In)}); err != nil {
			t.Fatal(err)
		}
		const n = 2
		l.Bind(be, nil, nil, nil)
		pass := &Pass{B: be, N: n, Train: true, WS: be.Alloc(max(l.Workspace(n), 1))}
		x, dy := make([]float32, n*prod(l.In)), make([]float32, n*prod(l.Out))
		uniform(x, r)
		uniform(dy, r)
		yb, dxb := be.Alloc(len(dy)), be.Alloc(len(x))
		l.Forward(pass, yb, []gpu.Buffer{uploaded(be, x)})
		l.Backward(pass, []gpu.Buffer{dxb}, uploaded(be, dy), nil, nil, true)
		y, dx := download(be, yb), download(be, dxb)
		// dense[k][j][i]: axis k's matrix.
		dense := make([][][]float64, len(l.In))
		for k := 1; k < len(l.In); k++ {
			a := gpu.ResampleAxis{In: l.In[k], Out: l.Out[k], Mode: l.Mode, Coord: l.Coord, Nearest: l.Nearest,
				A: float64(l.CubicA), ExcludeOutside: l.Exclude, Antialias: l.Antialias}
			if l.Scales != nil {
				a.Scale = float64(l.Scales[k-1])
			}
			m, err := a.Taps()
			if err != nil {
				t.Fatal(err)
			}
			dense[k] = make([][]float64, m.Out)
			for j := range m.Out {
				dense[k][j] = make([]float64, m.In)
				for q := m.Start[j]; q < m.Start[j+1]; q++ {
					dense[k][j][m.Index[q]] += float64(m.Weight[q])
				}
			}
		}
		inS, outS := gpu.ContiguousStrides(l.In), gpu.ContiguousStrides(l.Out)
		wantY, wantDX := make([]float64, len(y)), make([]float64, len(x))
		forAll(l.Out, func(o []int) {
			forAll(l.In, func(i []int) {
				if i[0] != o[0] {
					return
				}
				w := 1.0
				for k := 1; k < len(l.In); k++ {
					w *= dense[k][o[k]][i[k]]
				}
				for b := range n {
					yo, xi := b*len(y)/n+dotInt(o, outS), b*len(x)/n+dotInt(i, inS)
					wantY[yo] += w * float64(x[xi])
					wantDX[xi] += w * float64(dy[yo])
				}
			})
		})
		for what, c := range map[string]struct {
			got  []float32
			want []float64
		}{"output": {y, wantY}, "input gradient": {dx, wantDX}} {
			for e := range c.want {
				if d := math.Abs(float64(c.got[e]) - c.want[e]); d > 1e-6 {
					t.Fatalf("%s: %s element %d is %v, want %v", l.LayerName, what, e, c.got[e], c.want[e])
				}
			}
		}
	}
}

// forAll calls f with every index of dims in row-major order.
func forAll(dims []int, f func([]int)) {
	idx := make([]int, len(dims))
	for {
		f(idx)
		k := len(dims) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < dims[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

func dotInt(a, b []int) int {
	s := 0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestResampleOnGputestAxes runs every conformance axis as a C×L layer
// through finite differences too.
func TestResampleOnGputestAxes(t *testing.T) {
	for i, a := range gputest.ResampleAxes() {
		var sc []float32
		if a.Scale != 0 {
			sc = []float32{float32(a.Scale)}
		}
		l := NewResample(fmt.Sprint("axis", i), []int{2, a.In}, []int{2, a.Out}, a.Mode, a.Coord, a.Nearest, sc)
		l.CubicA, l.Exclude, l.Antialias = float32(a.A), a.ExcludeOutside, a.Antialias
		bad, err := gradCheck{Tol: 1e-2}.layer(l, []Shape{DimsShape(l.In)}, 2)
		report(t, l.LayerName, bad, err)
	}
}

// TestResampleRefuses: a change of channels, a wrong number of scales, an
// unknown mode or transformation, and a zero scale are errors.
func TestResampleRefuses(t *testing.T) {
	for _, l := range []*Resample{
		NewResample("c", []int{2, 3, 4}, []int{4, 3, 4}, gpu.ResampleNearest, gpu.CoordAsymmetric, gpu.NearestFloor, nil),
		NewResample("s", []int{2, 3, 4}, []int{2, 6, 8}, gpu.ResampleNearest, gpu.CoordAsymmetric, gpu.NearestFloor, []float32{2}),
		NewResample("m", []int{2, 3, 4}, []int{2, 6, 8}, "area", gpu.CoordAsymmetric, "", nil),
		NewResample("t", []int{2, 3, 4}, []int{2, 6, 8}, gpu.ResampleLinear, "tf_crop_and_resize", "", nil),
		NewResample("z", []int{2, 3, 4}, []int{2, 6, 8}, gpu.ResampleLinear, gpu.CoordHalfPixel, "", []float32{0, 2}),
		NewResample("r", []int{6}, []int{12}, gpu.ResampleLinear, gpu.CoordHalfPixel, "", nil),
	} {
		if _, err := l.Setup([]Shape{DimsShape(l.In)}); err == nil {
			t.Errorf("%s: no error", l.LayerName)
		}
	}
	if _, err := ResampleOut([]int{2, 3}, []float32{0.2}); err == nil {
		t.Error("ResampleOut: a length of 0 accepted")
	}
}

// BenchmarkResample times a training pass of a 64×28×28 map resized to
// 56×56 (a batch of 16), bilinear and nearest: forward two Resample
// passes, backward two by the transposed matrices.
func BenchmarkResample(b *testing.B) {
	for _, mode := range []string{gpu.ResampleLinear, gpu.ResampleNearest} {
		b.Run(mode, func(b *testing.B) {
			be := cpu.NewCPU()
			const n = 16
			in, out := []int{64, 28, 28}, []int{64, 56, 56}
			l := NewResample("up", in, out, mode, gpu.CoordAsymmetric, gpu.NearestFloor, []float32{2, 2})
			if mode == gpu.ResampleLinear {
				l.Coord = gpu.CoordPytorchHalfPixel
			}
			net, err := NewNet(be, DimsShape(in), []Node{{Layer: l}})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(4 * n * (net.In.Size() + net.Out.Size())))
			benchNet(b, net, n)
		})
	}
}
