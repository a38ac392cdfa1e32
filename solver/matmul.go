package solver

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// MatMul multiplies two activations as matrices (ONNX's MatMul between
// activations, torch.matmul of two tensors: attention's Q·Kᵀ and its
// weights by V). A's per-sample dims are batch…×M×K and B's batch…×K×P,
// with the same leading batch dims; the output is batch…×M×P, one product
// per sample and batch position. No broadcasting between A's and B's
// leading dims: the importer refuses that.
//
// Forward is a Gemm per product; Backward two: dA = dY·Bᵀ and dB = Aᵀ·dY.
// The products are small (a head's T×d by d×T) and many, one backend call
// each; a batched Gemm in the backend contract would make them one.
type MatMul struct {
	Base
	A, B []int // per-sample dims of the operands

	count, m, k, p int // products per sample; each is M×K by K×P
}

var _ Layer = (*MatMul)(nil)

// NewMatMul returns the product of operands of per-sample dims a and b.
func NewMatMul(name string, a, b []int) *MatMul {
	return &MatMul{Base: Base{LayerName: name}, A: a, B: b}
}

// Kind implements Layer.
func (*MatMul) Kind() string { return "matmul" }

// OutDims returns the per-sample dims of the product.
func (l *MatMul) OutDims() []int {
	out := slices.Clone(l.A)
	out[len(out)-1] = l.B[len(l.B)-1]
	return out
}

// Setup implements Layer.
func (l *MatMul) Setup(in []Shape) (Shape, error) {
	if len(in) != 2 {
		return Shape{}, fmt.Errorf("solver: matmul %s: %d inputs, want 2", l.LayerName, len(in))
	}
	if err := checkDims("matmul", l.LayerName, l.A, in[0]); err != nil {
		return Shape{}, err
	}
	if err := checkDims("matmul", l.LayerName, l.B, in[1]); err != nil {
		return Shape{}, err
	}
	r := len(l.A)
	if r < 2 || len(l.B) != r || !slices.Equal(l.A[:r-2], l.B[:r-2]) || l.A[r-1] != l.B[r-2] {
		return Shape{}, fmt.Errorf("solver: matmul %s: operands %v and %v (batch…×M×K by batch…×K×P)", l.LayerName, l.A, l.B)
	}
	l.count, l.m, l.k, l.p = prod(l.A[:r-2]), l.A[r-2], l.A[r-1], l.B[r-1]
	out := l.OutDims()
	if err := boundedDims("matmul", l.LayerName, "product dimensions", out); err != nil {
		return Shape{}, err
	}
	return DimsShape(out), nil
}

// Forward implements Layer: out_i = A_i·B_i for every product i.
func (l *MatMul) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	b, m, k, q := p.B, l.m, l.k, l.p
	for i := range p.N * l.count {
		b.Gemm(false, false, m, q, k, 1, b.View(in[0], i*m*k, m*k), b.View(in[1], i*k*q, k*q), 0, b.View(out, i*m*q, m*q))
	}
}

// BackwardReads implements BackwardReader: both operands.
func (*MatMul) BackwardReads(bool) (in, out bool) { return true, false }

// Backward implements Layer: dA_i = dY_i·B_iᵀ and dB_i = A_iᵀ·dY_i.
func (l *MatMul) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, _ gpu.Buffer, _ bool) {
	b, m, k, q := p.B, l.m, l.k, l.p
	for i := range p.N * l.count {
		dy := b.View(dout, i*m*q, m*q)
		if din[0] != nil {
			b.Gemm(false, true, m, k, q, 1, dy, b.View(in[1], i*k*q, k*q), 0, b.View(din[0], i*m*k, m*k))
		}
		if din[1] != nil {
			b.Gemm(true, false, k, q, m, 1, b.View(in[0], i*m*k, m*k), dy, 0, b.View(din[1], i*k*q, k*q))
		}
	}
}
