package solver

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// MatMul multiplies two activations as matrices (ONNX's MatMul between
// activations, torch.matmul of two tensors: attention's Q·Kᵀ and its
// weights by V). A's per-sample dims are batch…×M×K and B's batch…×K×P,
// of the same rank; the leading batch dims broadcast as numpy's do (each
// pair equal, or one of them 1), and the output is batch…×M×P with the
// larger of each pair, one product per sample and batch position.
//
// Forward is a Gemm per product; Backward two: dA = dY·Bᵀ and dB = Aᵀ·dY,
// an operand that was broadcast summing its products' gradients (in
// product order: the same bits every run).
// The products are small (a head's T×d by d×T) and many, one backend call
// each; a batched Gemm in the backend contract would make them one.
type MatMul struct {
	Base
	A, B []int // per-sample dims of the operands

	count, m, k, p int // products per sample; each is M×K by K×P
	// ia and ib give each product's A and B matrix within a sample (nil:
	// the product's own index, no broadcasting); na and nb are the
	// matrices of A and B per sample.
	ia, ib []int
	na, nb int
}

var _ Layer = (*MatMul)(nil)

// NewMatMul returns the product of operands of per-sample dims a and b.
func NewMatMul(name string, a, b []int) *MatMul {
	return &MatMul{Base: Base{LayerName: name}, A: a, B: b}
}

// Kind implements Layer.
func (*MatMul) Kind() string { return "matmul" }

// OutDims returns the per-sample dims of the product: the leading dims
// broadcast, then M×P.
func (l *MatMul) OutDims() []int {
	out := slices.Clone(l.A)
	for i := range len(out) - 2 {
		out[i] = max(l.A[i], l.B[i])
	}
	out[len(out)-1] = l.B[len(l.B)-1]
	return out
}

// broadcasts reports whether the leading dims of a and b broadcast: the
// same rank, each pair equal or one of them 1.
func broadcasts(a, b []int) bool {
	if len(a) != len(b) || len(a) < 2 {
		return false
	}
	for i := range len(a) - 2 {
		if a[i] != b[i] && a[i] != 1 && b[i] != 1 {
			return false
		}
	}
	return true
}

// operandIndex returns, for each product in the row-major order of the
// output's leading dims out, the index of the operand's matrix (leading
// dims d, 1 where broadcast), or nil when d is out.
func operandIndex(d, out []int) []int {
	if slices.Equal(d, out) {
		return nil
	}
	idx := make([]int, prod(out))
	for j := range idx {
		// j's coordinates in out, as an index into d (0 where d has 1).
		rem, at, stride := j, 0, 1
		for i := len(out) - 1; i >= 0; i-- {
			c := rem % out[i]
			rem /= out[i]
			if d[i] != 1 {
				at += c * stride
			}
			stride *= d[i]
		}
		idx[j] = at
	}
	return idx
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
	if !broadcasts(l.A, l.B) || l.A[r-1] != l.B[r-2] {
		return Shape{}, fmt.Errorf("solver: matmul %s: operands %v and %v (batch…×M×K by batch…×K×P, the batch dims equal or 1)", l.LayerName, l.A, l.B)
	}
	out := l.OutDims()
	if err := boundedDims("matmul", l.LayerName, "product dimensions", out); err != nil {
		return Shape{}, err
	}
	l.count, l.m, l.k, l.p = prod(out[:r-2]), l.A[r-2], l.A[r-1], l.B[r-1]
	l.na, l.nb = prod(l.A[:r-2]), prod(l.B[:r-2])
	l.ia, l.ib = operandIndex(l.A[:r-2], out[:r-2]), operandIndex(l.B[:r-2], out[:r-2])
	return DimsShape(out), nil
}

// operands returns the matrices of A and B that product i (over the
// batch) multiplies.
func (l *MatMul) operands(i int) (a, b int) {
	s, j := i/l.count, i%l.count
	a, b = j, j
	if l.ia != nil {
		a = l.ia[j]
	}
	if l.ib != nil {
		b = l.ib[j]
	}
	return s*l.na + a, s*l.nb + b
}

// Forward implements Layer: out_i = A_a(i)·B_b(i) for every product i.
func (l *MatMul) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	b, m, k, q := p.B, l.m, l.k, l.p
	for i := range p.N * l.count {
		ia, ib := l.operands(i)
		b.Gemm(false, false, m, q, k, 1, b.View(in[0], ia*m*k, m*k), b.View(in[1], ib*k*q, k*q), 0, b.View(out, i*m*q, m*q))
	}
}

// BackwardReads implements BackwardReader: both operands.
func (*MatMul) BackwardReads(bool) (in, out bool) { return true, false }

// Backward implements Layer: dA_a(i) += dY_i·B_b(i)ᵀ and dB_b(i) +=
// A_a(i)ᵀ·dY_i; an operand that is not broadcast has one product per
// matrix, which sets its gradient; a broadcast one's is cleared first and
// summed.
func (l *MatMul) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, _ gpu.Buffer, _ bool) {
	b, m, k, q := p.B, l.m, l.k, l.p
	betaA, betaB := float32(0), float32(0)
	if din[0] != nil && l.ia != nil {
		b.Fill(b.View(din[0], 0, p.N*l.na*m*k), 0)
		betaA = 1
	}
	if din[1] != nil && l.ib != nil {
		b.Fill(b.View(din[1], 0, p.N*l.nb*k*q), 0)
		betaB = 1
	}
	for i := range p.N * l.count {
		ia, ib := l.operands(i)
		dy := b.View(dout, i*m*q, m*q)
		if din[0] != nil {
			b.Gemm(false, true, m, k, q, 1, dy, b.View(in[1], ib*k*q, k*q), betaA, b.View(din[0], ia*m*k, m*k))
		}
		if din[1] != nil {
			b.Gemm(true, false, k, q, m, 1, b.View(in[0], ia*m*k, m*k), dy, betaB, b.View(din[1], ib*k*q, k*q))
		}
	}
}
