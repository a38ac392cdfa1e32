package cpu

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// CPU is the pure-Go backend. It is safe for use by one network at a time;
// create one per network instance.
//
// Its matrix products are gpu/internal/sgemm's (assembly micro-kernels where
// the processor has them), on up to GOMAXPROCS threads of that package's
// worker pool when large enough; results do not depend on the thread count.
type CPU struct {
	th      sgemm.Thread      // the calling goroutine's pack buffers and parallel job
	job     cpuJob            // the kernel being run in parallel (par.go)
	packed  []sgemm.PackedA   // the convolution's filters, one per group
	partial []float32         // the backward filter pass's chunk sums
	wino    [16]sgemm.PackedA // a Winograd convolution's transformed filters (winograd.go)
	winoU   []float32         // the same before packing
	winoV   []float32         // a batched Winograd pass's transformed input
	winoM   []float32         // and its products
	colB    []float32         // a batched small-plane pass's column matrix (colbatch.go)
	colY    []float32         // and its outputs (or output gradients) side by side
	// colOff turns the batched small-plane path off (benchmarks and tests
	// compare it with the per-sample path).
	colOff bool
	// im2colOnly turns the Winograd path off (benchmarks and tests compare
	// the two paths).
	im2colOnly bool
}

var _ gpu.Backend = (*CPU)(nil)

// NewCPU returns a CPU backend.
func NewCPU() *CPU { return &CPU{} }

// SetThreads caps at n the threads this backend's kernels use (n <= 0: up
// to GOMAXPROCS, the default), for several networks that train at once in
// one process, each on its share of the cores. Results do not depend on it.
// Call it between kernel calls.
func (c *CPU) SetThreads(n int) { c.th.SetThreads(n) }

// Name implements Backend.
func (*CPU) Name() string { return "cpu" }

// h unwraps a buffer of this backend. A foreign buffer is our own bug.
func h(b gpu.Buffer) []float32 {
	if b == nil {
		return nil
	}
	hb, ok := b.(gpu.Host)
	if !ok {
		panic(fmt.Sprintf("gpu: CPU backend given a %T buffer", b))
	}
	return hb
}

func sameLen(op string, a, b []float32) {
	if len(a) != len(b) {
		panic(fmt.Sprintf("gpu: %s: length %d != %d", op, len(a), len(b)))
	}
}

// Alloc implements Backend.
func (*CPU) Alloc(n int) gpu.Buffer { return gpu.Host(make([]float32, n)) }

// View implements Backend.
func (*CPU) View(b gpu.Buffer, off, n int) gpu.Buffer {
	s := h(b)
	return gpu.Host(s[off : off+n : off+n])
}

// Upload implements Backend.
func (*CPU) Upload(dst gpu.Buffer, src []float32) {
	d := h(dst)
	sameLen("Upload", d, src)
	copy(d, src)
}

// Download implements Backend.
func (*CPU) Download(dst []float32, src gpu.Buffer) {
	s := h(src)
	sameLen("Download", dst, s)
	copy(dst, s)
}

// Fill implements Backend.
func (*CPU) Fill(dst gpu.Buffer, v float32) {
	d := h(dst)
	for i := range d {
		d[i] = v
	}
}

// Copy implements Backend.
func (*CPU) Copy(dst, src gpu.Buffer) {
	d, s := h(dst), h(src)
	sameLen("Copy", d, s)
	copy(d, s)
}

// Axpy implements Backend.
func (*CPU) Axpy(alpha float32, x, y gpu.Buffer) {
	xs, ys := h(x), h(y)
	sameLen("Axpy", xs, ys)
	for i, v := range xs {
		ys[i] += float32(alpha * v) // rounded: no fused multiply-add on any target
	}
}

// Scale implements Backend.
func (*CPU) Scale(x gpu.Buffer, alpha float32) {
	xs := h(x)
	for i := range xs {
		xs[i] *= alpha
	}
}

// Mul implements Backend.
func (*CPU) Mul(dst, a, b gpu.Buffer) {
	d, as, bs := h(dst), h(a), h(b)
	sameLen("Mul", d, as)
	sameLen("Mul", d, bs)
	for i := range d {
		d[i] = as[i] * bs[i]
	}
}

// Gemm implements Backend.
func (c *CPU) Gemm(transA, transB bool, m, n, k int, alpha float32, a, b gpu.Buffer, beta float32, cb gpu.Buffer) {
	as, bs, cs := h(a), h(b), h(cb)
	if len(as) < m*k || len(bs) < k*n || len(cs) < m*n {
		panic(fmt.Sprintf("gpu: Gemm %dx%dx%d: buffers of %d, %d, %d elements", m, n, k, len(as), len(bs), len(cs)))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		c.Scale(gpu.Host(cs[:m*n]), beta)
		return
	}
	c.gemm(transA, transB, m, n, k, alpha, as, bs, beta, cs)
}

// gemm is Gemm on host slices: C = alpha*op(A)*op(B) + beta*C, row-major
// and contiguous, on up to GOMAXPROCS threads.
func (c *CPU) gemm(transA, transB bool, m, n, k int, alpha float32, a, b []float32, beta float32, cs []float32) {
	gemmOn(&c.th, true, transA, transB, m, n, k, alpha, a, b, beta, cs)
}

// gemmOn is gemm with th's buffers: in parallel when allowed, else on th's
// goroutine alone (inside a part of a parallel kernel).
func gemmOn(th *sgemm.Thread, parallel, transA, transB bool, m, n, k int, alpha float32, a, b []float32, beta float32, cs []float32) {
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	if parallel {
		th.GemmParallel(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cs, n)
		return
	}
	th.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cs, n)
}

// AddBias implements Backend.
func (*CPU) AddBias(x, bias gpu.Buffer, n, c, hw int) {
	xs, bs := h(x), h(bias)
	if len(xs) != n*c*hw || len(bs) != c {
		panic("gpu: AddBias: shape mismatch")
	}
	addBias(xs, bs, n, c, hw)
}

// addBias adds bias[j] to channel j of x (n×c×hw).
func addBias(x, bias []float32, n, c, hw int) {
	for i := 0; i < n; i++ {
		for j, bv := range bias[:c] {
			vec.AddScalar(x[(i*c+j)*hw:(i*c+j+1)*hw], bv)
		}
	}
}

// BiasGrad implements Backend. Channels are independent, so it is split
// over them; each channel's sum runs over the samples in order.
func (c *CPU) BiasGrad(dbias, dy gpu.Buffer, n, ch, hw int) {
	db, ds := h(dbias), h(dy)
	if len(ds) != n*ch*hw || len(db) != ch {
		panic("gpu: BiasGrad: shape mismatch")
	}
	j := &c.job
	j.op, j.b, j.dy, j.batch, j.hw = opBiasGrad, db, ds, n, hw
	c.run(j, ch, len(ds))
}

// biasGrad sets db[j] for channels [lo, hi) of dy (n×len(db)×hw): over
// the samples in order, each sample's hw elements summed by vec.Sum. After
// a linear layer (hw 1) that is a sum of rows, done as strided row adds.
func biasGrad(db, dy []float32, n, hw, lo, hi int) {
	ch := len(db)
	if hw == 1 {
		clear(db[lo:hi])
		vec.AddRows(db[lo:hi], 0, dy[lo:], ch, n, hi-lo)
		return
	}
	for j := lo; j < hi; j++ {
		var s float32
		for i := 0; i < n; i++ {
			s += vec.Sum(dy[(i*ch+j)*hw : (i*ch+j+1)*hw])
		}
		db[j] = s
	}
}

func init() { gpu.Register("cpu", driver{}) }

// driver opens CPU backends for gpu.Open("cpu") and for "auto"'s fallback.
type driver struct{}

// Open implements gpu.Driver: a new CPU backend. The CPU backend has no
// configuration; req.Config must be nil.
func (driver) Open(req gpu.OpenRequest) (gpu.Backend, error) {
	if req.Config != nil {
		return nil, fmt.Errorf("%w: cpu takes no configuration, got a %T", gpu.ErrConfig, req.Config)
	}
	return NewCPU(), nil
}

// Devices implements gpu.Driver: the CPU backend has no device list.
func (driver) Devices() ([]gpu.DeviceInfo, error) { return nil, nil }
