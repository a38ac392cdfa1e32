package solver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// TestConvTranspose2DGrad checks the transposed convolution's input,
// weight and bias gradients against finite differences: stride 2 with
// padding and output padding, and a grouped one without bias.
func TestConvTranspose2DGrad(t *testing.T) {
	for _, c := range []struct {
		l  Layer
		in Shape
	}{
		{NewConvTranspose2D("t1", ConvConfig{Out: 3, KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, 1, 1), Shape{2, 4, 3}},
		{NewConvTranspose2D("t2", ConvConfig{Out: 4, KH: 2, KW: 3, StrideH: 2, StrideW: 1, Groups: 2, NoBias: true}, 0, 0), Shape{4, 3, 3}},
		{dilatedT("t3", ConvConfig{Out: 4, KH: 3, KW: 2, StrideH: 2, StrideW: 1, PadH: 1, Groups: 2}, 1, 0, 2, 3), Shape{2, 3, 3}},
	} {
		bad, err := gradCheck{Tol: 1e-2, Floor: 1e-2}.layer(c.l, []Shape{c.in}, 2)
		report(t, c.l.Name(), bad, err)
	}
}

// dilatedT is a transposed convolution with dilations dh, dw.
func dilatedT(name string, cfg ConvConfig, oph, opw, dh, dw int) *ConvTranspose2D {
	l := NewConvTranspose2D(name, cfg, oph, opw)
	l.DH, l.DW = dh, dw
	return l
}

// TestConvTranspose2DMatchesNaive compares the layer's output with the
// definition as loops: every input element x[c][i][j] adds
// x·w[c][o][r][s] at output position (i·S−P+r·DH, j·S−P+s·DW) of channel o
// of its group, plus the bias; undilated and dilated.
func TestConvTranspose2DMatchesNaive(t *testing.T) {
	for _, d := range [][2]int{{1, 1}, {2, 3}} {
		t.Run(fmt.Sprintf("dilation%dx%d", d[0], d[1]), func(t *testing.T) { testConvTransposeNaive(t, d[0], d[1]) })
	}
}

func testConvTransposeNaive(t *testing.T, DH, DW int) {
	const C, H, W, O, G, R, S, St, P, OP = 4, 3, 4, 6, 2, 3, 2, 2, 1, 1
	be := cpu.NewCPU()
	l := dilatedT("t", ConvConfig{Out: O, KH: R, KW: S, StrideH: St, StrideW: St, PadH: P, PadW: P, Groups: G}, OP, OP, DH, DW)
	out, err := l.Setup([]Shape{{C, H, W}})
	if err != nil {
		t.Fatal(err)
	}
	if wantH, wantW := (H-1)*St-2*P+(R-1)*DH+1+OP, (W-1)*St-2*P+(S-1)*DW+1+OP; out != (Shape{O, wantH, wantW}) {
		t.Fatalf("output %v, want %v", out, Shape{O, wantH, wantW})
	}
	r := rand.New(rand.NewPCG(5, 6))
	x, w, bias := make([]float32, C*H*W), make([]float32, C*O/G*R*S), make([]float32, O)
	for _, v := range [][]float32{x, w, bias} {
		uniform(v, r)
	}
	l.Bind(be, []gpu.Buffer{uploaded(be, w), uploaded(be, bias)}, []gpu.Buffer{be.Alloc(len(w)), be.Alloc(O)}, nil)
	l.Resize(be, 1)
	y := be.Alloc(out.Size())
	l.Forward(&Pass{B: be, N: 1, WS: be.Alloc(max(l.Workspace(1), 1))}, y, []gpu.Buffer{uploaded(be, x)})
	got := download(be, y)
	want := make([]float64, out.Size())
	for o := range O {
		for k := range out.H * out.W {
			want[o*out.H*out.W+k] = float64(bias[o])
		}
	}
	cg, og := C/G, O/G
	for c := range C {
		for i := range H {
			for j := range W {
				for ol := range og {
					o := c/cg*og + ol
					for rr := range R {
						for s := range S {
							yi, yj := i*St-P+rr*DH, j*St-P+s*DW
							if yi >= 0 && yi < out.H && yj >= 0 && yj < out.W {
								want[(o*out.H+yi)*out.W+yj] += float64(x[(c*H+i)*W+j]) * float64(w[((c*og+ol)*R+rr)*S+s])
							}
						}
					}
				}
			}
		}
	}
	for i := range want {
		if abs64(float64(got[i])-want[i]) > 1e-5 {
			t.Fatalf("y[%d] = %g, want %g", i, got[i], want[i])
		}
	}
}

// BenchmarkConvTranspose2D times a training pass of a stride-2 3×3
// transposed convolution (a decoder's upsampling step, 16×32×14×14 to
// 16×16×28×28) next to the convolution it is the adjoint of, whose passes
// run the same three kernels.
func BenchmarkConvTranspose2D(b *testing.B) {
	for _, c := range []struct {
		name string
		in   Shape
		l    func() Layer
	}{
		{"transposed", Shape{32, 14, 14}, func() Layer {
			return NewConvTranspose2D("t", ConvConfig{Out: 16, KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, 1, 1)
		}},
		{"dilated-transposed", Shape{32, 14, 14}, func() Layer {
			return dilatedT("t", ConvConfig{Out: 16, KH: 3, StrideH: 2, StrideW: 2, PadH: 2, PadW: 2}, 1, 1, 2, 2)
		}},
		{"adjoint-conv", Shape{16, 28, 28}, func() Layer {
			return NewConv2D("c", ConvConfig{Out: 32, KH: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			be := cpu.NewCPU()
			const n = 16
			net, err := NewNet(be, c.in, []Node{{Layer: c.l()}})
			if err != nil {
				b.Fatal(err)
			}
			benchNet(b, net, n)
		})
	}
}
