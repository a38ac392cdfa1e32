//go:build opencl

package opencl

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/cotrain/cotrain/gpu"
)

// OpenCL is the Backend on one OpenCL device: one context, an in-order
// queue for kernels and a second one for uploads (xfer.go), every
// kernel built once at creation (from the disk cache when it can). It is
// safe for use by one network at a time, like CPU.
//
// Buffers live on the device; only Upload, Download and the loss value of
// SoftmaxCrossEntropy cross to the host. Kernels are enqueued without
// waiting, so a training step runs as one stream of launches; Download (a
// blocking read) is where the host waits. An Upload into an allocation that
// no kernel has used since the last Download runs beside the kernels still
// queued (OverlapsUploads); one into an allocation used since waits for
// them, as with one queue.
//
// A failing OpenCL call after creation (out of device memory in Alloc, a lost
// device) panics with a *CLError: the Backend interface has no error returns,
// and such a failure leaves nothing sensible to continue with.
type OpenCL struct {
	ctx   *clContext
	info  gpu.DeviceInfo
	log   *slog.Logger
	redWG int // work-group size of the reduction kernels (RED_WG)

	// half: every Buffer holds half floats (Config.HalfStorage);
	// Upload and Download then go through the float buffer stage.
	half  bool
	stage *clMem

	progs []*clProgram
	k     []*clKernel // by kernelID, then the FFT kernels (fftKernelIndex)
	// gemms are the built GEMM variants (gemm.go), by increasing tile
	// area; tuner chooses among them (gemm_tune.go).
	gemms []*gemmVariant
	tuner *gemmTuner

	coef    *clMem // per-channel batch-norm coefficients (4 per channel)
	splitWS *clMem // partial sums of split-k products (gemm.go)
	redPart *clMem // partial results of two-level reductions (redParts)
	poolIdx *clMem // int offsets of max-pool windows' maxima (MaxPoolBackward)
	loss    *clMem // per-row losses of SoftmaxCrossEntropy, then their sum
	// Two int32 label buffers, reused across calls, and the labels each
	// holds: new labels go into the one the last step did not use, which
	// the step's loss read has left idle, so their upload need not wait
	// for the kernels still running (xfer.go).
	labels [2]labelBuf
	curLb  int // the buffer holding the labels of the last call

	// noFuse runs the ActFuser methods unfused (Config.NoFuse).
	noFuse bool
	// noEpilogue keeps bias and activation out of the GEMMs' store
	// (Config.NoEpilogue; epilogueOn).
	noEpilogue bool

	// The convolution algorithms beside im2col (conv_algo.go), each
	// with its mode (Config.Winograd, Config.FFT) and scratch.
	cols    *im2col
	wino    *winograd
	fftConv *fftConv

	// kn are the backend's thresholds and switches (knobs.go).
	kn knobs

	// Column matrices kept from forward to backward (conv_keep.go):
	// the bytes of those alive, and the most they may take (set by New).
	keepBytes  atomic.Int64
	keepBudget int64
}

var (
	_ gpu.Backend = (*OpenCL)(nil)
	_ io.Closer   = (*OpenCL)(nil)
)

// clBuf is an OpenCL Buffer: elements [off, off+n) of an allocation. Views
// are plain (allocation, offset, length) triples, and kernels take the offset
// as an argument: clCreateSubBuffer would need offsets aligned to
// CL_DEVICE_MEM_BASE_ADDR_ALIGN (often 4096 bits), which our views are not.
type clBuf struct {
	m      *clMem
	off, n int
	owner  *OpenCL
}

// Len implements Buffer.
func (b *clBuf) Len() int { return b.n }

// Info describes the device.
func (o *OpenCL) Info() gpu.DeviceInfo { return o.info }

// HalfStorage reports whether the backend stores its Buffers as half
// floats (Config.HalfStorage): an inference backend (see StoresHalf).
func (o *OpenCL) HalfStorage() bool { return o.half }

// esize is the size in bytes of one Buffer element.
func (o *OpenCL) esize() int {
	if o.half {
		return 2
	}
	return 4
}

// Name implements Backend: "opencl:N <device name>".
func (o *OpenCL) Name() string { return fmt.Sprintf("opencl:%d %s", o.info.Index, o.info.Name) }

// Close waits for the queues, then releases every buffer the backend
// allocated (those still referenced included), the kernels, the programs,
// the queues and the context. The backend and its buffers must not be used
// afterwards: an operation on them panics with an error saying so. Owners
// find Close through io.Closer (gpu.Backend has none: the CPU backend holds
// nothing to release). A second Close does nothing.
func (o *OpenCL) Close() error {
	if o.ctx.queue == nil {
		return nil
	}
	// Both queues drain before the kernels and programs their commands use
	// are released: OpenCL lets a driver keep released objects alive for
	// queued commands, and waiting first does not rely on it.
	finished := o.ctx.finish()
	for _, k := range o.k {
		k.release()
	}
	for _, v := range o.gemms {
		v.release()
	}
	for _, p := range o.progs {
		p.release()
	}
	o.k, o.gemms, o.progs = nil, nil, nil
	return errors.Join(finished, o.ctx.release())
}

// Profile turns per-kernel timing on or off and returns what was timed
// since the last call, longest first. While on, every launch waits for the
// previous work of both queues and for itself, so a step runs slower, but each kernel's
// time is its own (plus a launch's latency). GEMMs are named by their
// transpose case (gemm_nn...), the split-k sum gemm_sum.
func (o *OpenCL) Profile(on bool) []KernelTime {
	var out []KernelTime
	for _, kt := range o.ctx.prof {
		out = append(out, *kt)
	}
	slices.SortFunc(out, func(a, b KernelTime) int { return cmp.Compare(b.Total, a.Total) })
	o.ctx.prof = nil
	if on {
		o.ctx.prof = map[string]*KernelTime{}
	}
	return out
}

// ProfileShapes makes a profile that Profile turns on tell launches apart by
// their global size as well as their kernel ("gemm_nn [512 3136 1]"), to
// find which layer's launches take the time.
func (o *OpenCL) ProfileShapes(on bool) { o.ctx.profShapes = on }

// ProfileSections makes a profile that Profile turns on name each launch
// after the section of work it belongs to as well ("conv2 backward" +
// SectionSep + "gemm_nt"), as the solver marks them (ProfileSection), to
// set a step's time layer by layer beside another framework's.
func (o *OpenCL) ProfileSections(on bool) { o.ctx.profSections = on }

// ProfileSection names the section of work the launches from now on belong
// to (see MarkSection).
func (o *OpenCL) ProfileSection(name string) { o.ctx.section = name }

// Transferred returns the bytes written to the device (Upload, labels) and
// read from it (Download, the loss) since the backend opened: everything that
// crossed between host and device. Kernels, fills and copies stay on the
// device and are not counted.
func (o *OpenCL) Transferred() (up, down int64) { return o.ctx.up, o.ctx.down }

// Finish blocks until every enqueued kernel and transfer has run (for timing).
func (o *OpenCL) Finish() error { return o.ctx.finish() }

// OverlapsUploads reports whether an Upload can run while kernels enqueued
// before it still run: true unless the driver refused a second queue or
// Config.OneQueue asked for one. It does so when none of those
// kernels uses the uploaded buffer's allocation and a Download (or the loss
// of SoftmaxCrossEntropy) returned after the last one that did; otherwise
// the upload waits for them. A caller that alternates two input
// allocations meets that (see gpu.OverlapsUploads).
func (o *OpenCL) OverlapsUploads() bool { return o.ctx.xfer != nil }

// buf unwraps a buffer of this backend; nil stays nil. A foreign buffer is our bug.
func (o *OpenCL) buf(b gpu.Buffer) *clBuf {
	if b == nil {
		return nil
	}
	cb, ok := b.(*clBuf)
	if !ok || cb.owner != o {
		panic(fmt.Sprintf("gpu: OpenCL backend given a %T buffer of another backend", b))
	}
	return cb
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func sameN(op string, a, b *clBuf) {
	if a.n != b.n {
		panic(fmt.Sprintf("gpu: %s: length %d != %d", op, a.n, b.n))
	}
}

// kernel returns the kernel id; a closed backend panics with errClosed.
func (o *OpenCL) kernel(id kernelID) *clKernel {
	if o.k == nil {
		panic(errClosed) // Close emptied the table
	}
	return o.k[id]
}

// run1 launches a one-dimensional kernel over n items, in groups of up to 128.
func (o *OpenCL) run1(id kernelID, n int, args ...any) {
	if n <= 0 {
		return
	}
	k := o.kernel(id)
	wg := min(128, k.maxWG)
	must(o.ctx.launch(k, []int{(n + wg - 1) / wg * wg}, []int{wg}, args...))
}

// runVec4 launches kernel id over n elements, or its four-elements-per-item
// twin id4 when n is a multiple of 4 (the same bits; see norm.cl).
func (o *OpenCL) runVec4(id, id4 kernelID, n int, args ...any) {
	if n%4 == 0 {
		o.run1(id4, n/4, args...)
		return
	}
	o.run1(id, n, args...)
}

// runPlanes launches a 3-D grid: n items (in work-groups of up to 128)
// for each of d1·d2 planes.
func (o *OpenCL) runPlanes(id kernelID, n, d1, d2 int, args ...any) {
	if n <= 0 || d1 <= 0 || d2 <= 0 {
		return
	}
	k := o.kernel(id)
	wg := min(128, k.maxWG)
	if n < wg { // small planes: a work-group no wider than needed
		wg = max(32, 1<<bits.Len(uint(n-1)))
		wg = min(wg, min(128, k.maxWG))
	}
	must(o.ctx.launch(k, []int{(n + wg - 1) / wg * wg, d1, d2}, []int{wg, 1, 1}, args...))
}

// runGroups launches groups work-groups of redWG items (one per channel, tap...).
func (o *OpenCL) runGroups(id kernelID, groups int, args ...any) {
	if groups <= 0 {
		return
	}
	must(o.ctx.launch(o.kernel(id), []int{groups * o.redWG}, []int{o.redWG}, args...))
}

// scratch returns s grown to at least n elements.
func (o *OpenCL) scratch(s **clMem, n int) *clMem {
	if *s == nil || (*s).n < n {
		m, err := o.ctx.alloc(max(n, 64))
		must(err)
		*s = m
	}
	return *s
}

// Alloc implements Backend. Zero-length buffers hold no device memory.
func (o *OpenCL) Alloc(n int) gpu.Buffer {
	if n < 0 || n > math.MaxInt32 {
		panic(fmt.Sprintf("gpu: OpenCL Alloc of %d elements", n))
	}
	b := &clBuf{n: n, owner: o}
	if n > 0 {
		m, err := o.ctx.allocSized(n, o.esize())
		must(err)
		b.m = m
		o.run1(kFill, n, m, 0, n, float32(0))
	}
	return b
}

// View implements Backend.
func (o *OpenCL) View(b gpu.Buffer, off, n int) gpu.Buffer {
	cb := o.buf(b)
	if off < 0 || n < 0 || off+n > cb.n {
		panic(fmt.Sprintf("gpu: View [%d, %d) of a buffer of %d", off, off+n, cb.n))
	}
	return &clBuf{m: cb.m, off: cb.off + off, n: n, owner: o}
}

// Upload implements Backend.
func (o *OpenCL) Upload(dst gpu.Buffer, src []float32) {
	d := o.buf(dst)
	if len(src) != d.n {
		panic(fmt.Sprintf("gpu: Upload: length %d != %d", len(src), d.n))
	}
	switch {
	case d.n == 0:
	case o.half:
		// Converted on the device: converting on the host made a whole
		// mobilenet inference batch 12× slower (docs/opencl.md).
		st := o.scratch(&o.stage, d.n)
		must(o.ctx.write(st, 0, unsafe.Pointer(&src[0]), 4*d.n))
		o.run1(kFromFloat, d.n, d.m, d.off, st, d.n)
	default:
		must(o.ctx.write(d.m, 4*d.off, unsafe.Pointer(&src[0]), 4*d.n))
	}
}

// Download implements Backend.
func (o *OpenCL) Download(dst []float32, src gpu.Buffer) {
	s := o.buf(src)
	if len(dst) != s.n {
		panic(fmt.Sprintf("gpu: Download: length %d != %d", len(dst), s.n))
	}
	switch {
	case s.n == 0:
	case o.half:
		st := o.scratch(&o.stage, s.n)
		o.run1(kToFloat, s.n, st, s.m, s.off, s.n)
		must(o.ctx.read(unsafe.Pointer(&dst[0]), st, 0, 4*s.n))
	default:
		must(o.ctx.read(unsafe.Pointer(&dst[0]), s.m, 4*s.off, 4*s.n))
	}
}

// Fill implements Backend.
func (o *OpenCL) Fill(dst gpu.Buffer, v float32) {
	d := o.buf(dst)
	o.run1(kFill, d.n, d.m, d.off, d.n, v)
}

// Copy implements Backend. Overlapping views of one allocation are refused
// (clEnqueueCopyBuffer's rule); our layers never copy onto themselves.
func (o *OpenCL) Copy(dst, src gpu.Buffer) {
	d, s := o.buf(dst), o.buf(src)
	sameN("Copy", d, s)
	if d.n == 0 || (d.m == s.m && d.off == s.off) {
		return
	}
	if d.m == s.m && d.off < s.off+s.n && s.off < d.off+d.n {
		panic("gpu: Copy between overlapping views")
	}
	e := o.esize()
	must(o.ctx.copy(d.m, e*d.off, s.m, e*s.off, e*d.n))
}

// Axpy implements Backend.
func (o *OpenCL) Axpy(alpha float32, x, y gpu.Buffer) {
	xs, ys := o.buf(x), o.buf(y)
	sameN("Axpy", xs, ys)
	o.run1(kAxpy, xs.n, alpha, xs.m, xs.off, ys.m, ys.off, xs.n)
}

// Scale implements Backend.
func (o *OpenCL) Scale(x gpu.Buffer, alpha float32) {
	xs := o.buf(x)
	o.run1(kScale, xs.n, xs.m, xs.off, xs.n, alpha)
}

// Mul implements Backend.
func (o *OpenCL) Mul(dst, a, b gpu.Buffer) {
	d, as, bs := o.buf(dst), o.buf(a), o.buf(b)
	sameN("Mul", d, as)
	sameN("Mul", d, bs)
	o.run1(kMul, d.n, d.m, d.off, as.m, as.off, bs.m, bs.off, d.n)
}

// DropoutMask implements Backend: one work-item per four elements, the
// four words of one Philox block (kernels/dropout.cl).
func (o *OpenCL) DropoutMask(mask gpu.Buffer, seed uint64, p float32) {
	m := o.buf(mask)
	thr, keep := gpu.DropoutParams(p)
	o.run1(kDropoutMask, (m.n+3)/4, m.m, m.off, m.n, uint32(seed), uint32(seed>>32), thr, keep)
}

// AddBias implements Backend.
func (o *OpenCL) AddBias(x, bias gpu.Buffer, n, c, hw int) {
	xs, bs := o.buf(x), o.buf(bias)
	if xs.n != n*c*hw || bs.n != c {
		panic("gpu: AddBias: shape mismatch")
	}
	o.run1(kAddBias, xs.n, xs.m, xs.off, bs.m, bs.off, c, hw, xs.n)
}

// BiasGrad implements Backend: one work-group per channel; where a channel
// has more than 2·redPartLen elements (AlexNet's first two convolutions),
// parts of redPartLen that separate work-groups sum, added in order by a
// second kernel (norm.cl's bias_grad_part): one work-group per channel left
// most of a large GPU idle; where it has biasColsMax or fewer (a linear
// layer's batch), one item per channel (bias_grad_cols).
func (o *OpenCL) BiasGrad(dbias, dy gpu.Buffer, n, c, hw int) {
	db, ds := o.buf(dbias), o.buf(dy)
	if ds.n != n*c*hw || db.n != c {
		panic("gpu: BiasGrad: shape mismatch")
	}
	if ds.n == 0 {
		o.Fill(dbias, 0)
		return
	}
	if n*hw <= o.kn.biasColsMax {
		o.run1(kBiasGradCols, c, db.m, db.off, ds.m, ds.off, n, c, hw)
		return
	}
	if l, p := o.kn.redParts(n * hw); p > 1 {
		part := o.scratch(&o.redPart, 2*c*p) // acc_t: room for double
		o.runGroups(kBiasGradPart, c*p, part, ds.m, ds.off, n, c, hw, l, p)
		o.run1(kDwBackwardFilterFinal, c, db.m, db.off, part, c, p)
		return
	}
	o.runGroups(kBiasGrad, c, db.m, db.off, ds.m, ds.off, n, c, hw)
}

// Activate implements Backend. ReLU and ReLU6 run elementwise.cl's act,
// the other kinds act_param, generated from the operator table (actgen.go).
func (o *OpenCL) Activate(a gpu.Act, y, x gpu.Buffer) {
	ys, xs := o.buf(y), o.buf(x)
	sameN("Activate", ys, xs)
	a.MustValid()
	if a.Kind == gpu.KindReLU || a.Kind == gpu.KindReLU6 {
		o.runVec4(kAct, kAct4, xs.n, int(a.Kind), ys.m, ys.off, xs.m, xs.off, xs.n)
		return
	}
	o.run1(kActParam, xs.n, int(a.Kind), a.Alpha, a.Beta, ys.m, ys.off, xs.m, xs.off, xs.n)
}

// ActivateBackward implements Backend.
func (o *OpenCL) ActivateBackward(a gpu.Act, dx, dy, t gpu.Buffer) {
	dxs, dys, ts := o.buf(dx), o.buf(dy), o.buf(t)
	sameN("ActivateBackward", dxs, dys)
	sameN("ActivateBackward", dxs, ts)
	a.MustValid()
	if a.Kind == gpu.KindReLU || a.Kind == gpu.KindReLU6 {
		o.runVec4(kActBackward, kActBackward4, ts.n, int(a.Kind), dxs.m, dxs.off, dys.m, dys.off, ts.m, ts.off, ts.n)
		return
	}
	o.run1(kActParamBackward, ts.n, int(a.Kind), a.Alpha, a.Beta, dxs.m, dxs.off, dys.m, dys.off, ts.m, ts.off, ts.n)
}

// Softmax implements Backend: one work item per (outer, inner) position.
func (o *OpenCL) Softmax(y, x gpu.Buffer, outer, c, inner int) {
	ys, xs := o.buf(y), o.buf(x)
	if outer < 0 || c <= 0 || inner <= 0 || xs.n != outer*c*inner || ys.n != xs.n {
		panic(fmt.Sprintf("gpu: Softmax: %d and %d elements for %d×%d×%d", ys.n, xs.n, outer, c, inner))
	}
	o.run1(kSoftmaxAxis, outer*inner, ys.m, ys.off, xs.m, xs.off, outer, c, inner)
}

// SoftmaxBackward implements Backend.
func (o *OpenCL) SoftmaxBackward(dx, dy, y gpu.Buffer, outer, c, inner int) {
	dxs, dys, ys := o.buf(dx), o.buf(dy), o.buf(y)
	if outer < 0 || c <= 0 || inner <= 0 || ys.n != outer*c*inner || dxs.n != ys.n || dys.n != ys.n {
		panic(fmt.Sprintf("gpu: SoftmaxBackward: %d, %d and %d elements for %d×%d×%d", dxs.n, dys.n, ys.n, outer, c, inner))
	}
	o.run1(kSoftmaxAxisBackward, outer*inner, dxs.m, dxs.off, dys.m, dys.off, ys.m, ys.off, outer, c, inner)
}

// labelBuf is a device buffer of int32 labels and the labels it holds.
type labelBuf struct {
	m    *clMem
	vals []int32
}

// putLabels returns a device buffer holding labels: the one that holds them
// already if either does (the backward pass normally follows the forward
// pass with the same labels, so a step uploads them once), else the other
// buffer than last time's, with labels uploaded into it. Labels out of range
// are the caller's bug, checked here because a kernel would read out of
// bounds.
func (o *OpenCL) putLabels(labels []int32, classes int) *clMem {
	for _, l := range labels {
		if l < 0 || int(l) >= classes {
			panic(fmt.Sprintf("gpu: label %d out of [0, %d)", l, classes))
		}
	}
	for _, i := range []int{o.curLb, 1 - o.curLb} {
		if lb := &o.labels[i]; lb.m != nil && len(lb.vals) == len(labels) && equalInt32(lb.vals, labels) {
			o.curLb = i
			return lb.m
		}
	}
	o.curLb = 1 - o.curLb
	lb := &o.labels[o.curLb]
	m := o.scratch(&lb.m, len(labels))
	must(o.ctx.write(m, 0, unsafe.Pointer(&labels[0]), 4*len(labels)))
	lb.vals = append(lb.vals[:0], labels...)
	return m
}

func equalInt32(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// SoftmaxCrossEntropy implements Backend: row losses are reduced on the
// device and one (hi, lo) float pair is read back.
func (o *OpenCL) SoftmaxCrossEntropy(probs, logits gpu.Buffer, labels []int32, n, classes int) float64 {
	ps, ls := o.buf(probs), o.buf(logits)
	if ps.n != n*classes || ls.n != n*classes || len(labels) != n {
		panic("gpu: SoftmaxCrossEntropy: shape mismatch")
	}
	if n == 0 {
		return 0
	}
	lb := o.putLabels(labels, classes)
	loss := o.scratch(&o.loss, 2*n+2)
	o.runGroups(kSoftmaxXent, n, ps.m, ps.off, ls.m, ls.off, lb, loss, n, classes)
	// The sum lands after the row pairs: elements 2n and 2n+1 (float
	// whatever the storage: the loss buffer is the backend's own).
	o.runGroups(kSumPairs, 1, loss, 2*n, loss, n)
	var out [2]float32
	must(o.ctx.read(unsafe.Pointer(&out[0]), loss, 4*2*n, 8))
	return float64(out[0]) + float64(out[1])
}

// SoftmaxCrossEntropyBackward implements Backend.
func (o *OpenCL) SoftmaxCrossEntropyBackward(dlogits, probs gpu.Buffer, labels []int32, n, classes int, scale float32) {
	ds, ps := o.buf(dlogits), o.buf(probs)
	if ps.n != n*classes || ds.n != n*classes || len(labels) != n {
		panic("gpu: SoftmaxCrossEntropyBackward: shape mismatch")
	}
	if n == 0 {
		return
	}
	lb := o.putLabels(labels, classes)
	o.run1(kSoftmaxXentBackward, n*classes, ds.m, ds.off, ps.m, ps.off, lb, n, classes, scale)
}

// SGDStep implements Backend.
func (o *OpenCL) SGDStep(p, g, v gpu.Buffer, lr, momentum, weightDecay float32, nesterov bool) {
	ps, gs := o.buf(p), o.buf(g)
	sameN("SGDStep", ps, gs)
	vs := gs // not read when momentum is 0
	if momentum != 0 {
		vs = o.buf(v)
		sameN("SGDStep", ps, vs)
	}
	nest := 0
	if nesterov {
		nest = 1
	}
	o.run1(kSgdStep, ps.n, ps.m, ps.off, gs.m, gs.off, vs.m, vs.off, ps.n, lr, momentum, weightDecay, nest)
}

// AdamStep implements Backend, with the bias corrections computed in float64
// on the host exactly as the CPU backend does.
func (o *OpenCL) AdamStep(p, g, m, v gpu.Buffer, lr, beta1, beta2, eps, weightDecay float32, t int) {
	ps, gs, ms, vs := o.buf(p), o.buf(g), o.buf(m), o.buf(v)
	sameN("AdamStep", ps, gs)
	sameN("AdamStep", ps, ms)
	sameN("AdamStep", ps, vs)
	bc1 := 1 - math.Pow(float64(beta1), float64(t))
	bc2 := 1 - math.Pow(float64(beta2), float64(t))
	step := float32(float64(lr) / bc1)
	bc2Sqrt := float32(math.Sqrt(bc2))
	o.run1(kAdamStep, ps.n, ps.m, ps.off, gs.m, gs.off, ms.m, ms.off, vs.m, vs.off, ps.n,
		step, beta1, beta2, eps, weightDecay, bc2Sqrt)
}
