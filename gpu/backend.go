// Package gpu is cotrain's compute seam: the contract every backend keeps
// (the Backend interface, Buffer, the geometry types and their checks,
// activations, the optional interfaces a backend may add) and the registry
// binaries open backends from. The backends are packages of their own: the
// pure-Go CPU backend gpu/cpu, and the OpenCL backend gpu/opencl (built with
// the tag opencl). Each registers a Driver in its init function, as
// database/sql drivers do.
//
// Caller's duties:
//  1. Import the backends the binary offers (gpu/cpu; gpu/opencl in a file
//     built with -tags opencl), then create one Backend per network
//     instance (Open with a --device value, or the backend package's
//     constructor) and pass it explicitly; there is no global backend,
//     because the simulator runs many phones in one process.
//  2. Allocate every tensor with Alloc and address parts of it with View; a
//     Buffer belongs to the backend that made it and must not be mixed.
//  3. Move data across the host boundary only with Upload and Download. On the
//     CPU backend these are copies too, so code written against the interface
//     behaves the same on a device.
//  4. Size workspaces with ConvWorkspace before calling the convolution kernels.
//
// All tensors are float32, row-major, NCHW. Kernels write their destination
// (the first argument) and never read it unless documented ("adds into").
// A kernel given inconsistent lengths panics: that is a bug in our own layer
// code, never something a peer or a file can cause (they are validated earlier).
package gpu

import (
	"errors"
	"fmt"

	"github.com/cotrain/cotrain/internal/limits"
)

// Buffer is float32 memory owned by a Backend. Len is in elements.
type Buffer interface {
	Len() int
}

// Host is a Buffer in host memory: the CPU backend's buffers are Host values.
type Host []float32

// Len returns the number of elements.
func (h Host) Len() int { return len(h) }

// SectionSep separates a section from the kernel in a profile's names
// (OpenCL.ProfileSections).
const SectionSep = " | "

// MarkSection tells a backend that profiles by sections of work (the OpenCL
// backend) which section the work it is given from now on belongs to: the
// solver marks each layer's forward and backward, the loss and the
// optimizer step. Other backends ignore it. It costs a type assertion.
func MarkSection(b Backend, name string) {
	if s, ok := b.(interface{ ProfileSection(string) }); ok {
		s.ProfileSection(name)
	}
}

// Backend is the set of kernels cotrain's solver runs on. Implementations must
// be deterministic: the same inputs give bit-identical outputs on the same
// backend, so that a seeded run reproduces its weights hash.
type Backend interface {
	// Name describes the backend and device, e.g. "cpu" or "opencl:0 NVIDIA H100".
	Name() string

	// Alloc returns a zeroed buffer of n elements.
	Alloc(n int) Buffer
	// View returns elements [off, off+n) of b, sharing its memory.
	View(b Buffer, off, n int) Buffer
	// Upload copies src into dst (len(src) == dst.Len()).
	Upload(dst Buffer, src []float32)
	// Download copies src into dst (len(dst) == src.Len()).
	Download(dst []float32, src Buffer)
	// Fill sets every element of dst to v.
	Fill(dst Buffer, v float32)
	// Copy copies src into dst (equal lengths).
	Copy(dst, src Buffer)
	// Axpy adds alpha*x into y.
	Axpy(alpha float32, x, y Buffer)
	// Scale multiplies every element of x by alpha.
	Scale(x Buffer, alpha float32)
	// Mul sets dst = a * b elementwise.
	Mul(dst, a, b Buffer)
	// DropoutMask sets every element of mask to 0 with probability p and to
	// float32(1/(1-p)) otherwise (0 <= p < 1), decided for element i (counted
	// from the start of the view) by a counter-based generator of (seed, i)
	// alone: word i%4 of Philox4x32-10 of the counter (i/4, 0, 0, 0) under the
	// key (seed's low 32 bits, its high 32 bits) is below uint32(p·2³²)
	// (gpu/dropout.go). Every backend makes the same mask from the same seed,
	// with no host memory and no transfer.
	DropoutMask(mask Buffer, seed uint64, p float32)

	// Gemm computes C = alpha*op(A)*op(B) + beta*C for row-major, contiguous
	// matrices: op(A) is m×k, op(B) is k×n, C is m×n; op transposes when the
	// flag is set (A is then stored k×m, B n×k).
	Gemm(transA, transB bool, m, n, k int, alpha float32, a, b Buffer, beta float32, c Buffer)

	// AddBias adds bias[c] to every element of channel c of x (n×c×hw).
	AddBias(x, bias Buffer, n, c, hw int)
	// BiasGrad sets dbias[c] to the sum over n and hw of dy (n×c×hw).
	BiasGrad(dbias, dy Buffer, n, c, hw int)

	// ConvWorkspace is the number of scratch elements the convolution kernels
	// need for g.
	ConvWorkspace(g ConvGeom) int
	// ConvForward sets y = conv(x, w) + bias (bias may be nil).
	// x: N×C×H×W, w: K×(C/G)×R×S, y: N×K×OH×OW.
	ConvForward(g ConvGeom, y, x, w, bias, ws Buffer)
	// ConvBackwardData sets dx from dy and w.
	ConvBackwardData(g ConvGeom, dx, dy, w, ws Buffer)
	// ConvBackwardFilter sets dw (and dbias, when not nil) from dy and x.
	ConvBackwardFilter(g ConvGeom, dw, dbias, dy, x, ws Buffer)

	// MaxPoolForward sets y to the window maxima of x.
	MaxPoolForward(g PoolGeom, y, x Buffer)
	// MaxPoolBackward sets dx: each window's dy goes to the first position in
	// the window that holds the maximum (recomputed from x), summed over
	// overlapping windows.
	MaxPoolBackward(g PoolGeom, dx, dy, x Buffer)
	// AvgPoolForward sets y to the window means of x.
	AvgPoolForward(g PoolGeom, y, x Buffer)
	// AvgPoolBackward sets dx, spreading each dy evenly over its window.
	AvgPoolBackward(g PoolGeom, dx, dy Buffer)

	// BatchNormTrain normalises x with the batch statistics of each channel,
	// writes y = gamma*xhat + beta, saves the batch mean and inverse standard
	// deviation for the backward pass, and updates the running statistics
	// (running = (1-momentum)*running + momentum*batch, with the unbiased
	// variance, as PyTorch does).
	BatchNormTrain(g BNGeom, y, x, gamma, beta, runMean, runVar, saveMean, saveInvStd Buffer)
	// BatchNormInfer normalises x with the running statistics.
	BatchNormInfer(g BNGeom, y, x, gamma, beta, runMean, runVar Buffer)
	// BatchNormBackward sets dx (when not nil) and dgamma, dbeta (when not nil)
	// for a BatchNormTrain forward pass.
	BatchNormBackward(g BNGeom, dx, dgamma, dbeta, dy, x, gamma, saveMean, saveInvStd Buffer)

	// Activate sets y = act(x). a must be valid (Act.Validate).
	Activate(a Act, y, x Buffer)
	// ActivateBackward sets dx = dy * act'(x), where t is x, or y = act(x)
	// when a.FromOutput(). At a kink the derivative is PyTorch's: 0 for
	// ReLU at 0, ReLU6 and Clip at their bounds, HardSigmoid where
	// alpha*x+beta reaches 0 or 1; HardSwish's is x/3 + 0.5 on [-3, 3];
	// SiLU's s·(1 + x·(1 - s)) with s = sigmoid(x).
	ActivateBackward(a Act, dx, dy, t Buffer)

	// Softmax sets y to the softmax of x along the middle axis of x read as
	// outer×c×inner: for each (o, i), y[o, :, i] = exp(x - max) / sum. Over
	// the channels of N×C×H×W it is outer N, c C, inner H·W.
	Softmax(y, x Buffer, outer, c, inner int)
	// SoftmaxBackward sets dx = y * (dy - sum_c dy*y) for a Softmax forward
	// pass with the same geometry that output y.
	SoftmaxBackward(dx, dy, y Buffer, outer, c, inner int)

	// LRN sets y to the local response normalization of x (LRNGeom).
	LRN(g LRNGeom, y, x Buffer)
	// LRNBackward sets dx from dy for an LRN forward pass of x that gave
	// y: dx[c] = dy[c]·s[c]^-Beta − 2·Alpha·Beta/Size · x[c] ·
	// Σ dy[j]·y[j]/s[j] over the channels j whose window holds c (s is
	// recomputed from x).
	LRNBackward(g LRNGeom, dx, dy, x, y Buffer)

	// ResampleTable returns the backend's copy of t (which must pass
	// Check), a Buffer to hand to Resample and nothing else; its Len is the
	// number of taps. A layer asks for it once and keeps it.
	ResampleTable(t *ResampleTaps) Buffer
	// Resample sets dst (outer×Out×inner) to src (outer×In×inner) resampled
	// along its middle axis by the matrix of table (resample.go):
	// dst[o,j,i] = Σ Weight[k]·src[o,Index[k],i] over row j's taps, summed
	// in float32 from zero in tap order, each product and each sum rounded
	// (no fused multiply-add), so every backend gives the same bits.
	Resample(dst, src, table Buffer, outer, inner int)

	// CopyStrided sets (or, with add, adds into) the destination elements of
	// a strided index space from the source's (tensor.go: transposes, slices,
	// padding, concatenation along any axis, broadcasting copies).
	CopyStrided(dst, src Buffer, g StridedGeom, add bool)
	// Broadcast sets the contiguous dst to op(a, b) with numpy broadcasting
	// expressed as strides (zero on broadcast axes). dst may be a itself
	// when a is read with dst's own (contiguous) strides.
	Broadcast(op BinOp, dst, a, b Buffer, g BroadcastGeom)
	// BroadcastPartial sets the contiguous dst to operand wrt's share of
	// the gradient of Broadcast(op, y, a, b, g): dst[i] = BinaryOp.Partial
	// (wrt, dy[i], a[..], b[..], y[i]) over g's index space, dy and y being
	// contiguous like dst (y may be nil where the entry's Reads says the
	// partial does not read it). Summing dst over the axes where the
	// operand was broadcast (ReduceSum) gives the operand's gradient.
	BroadcastPartial(op BinOp, wrt int, dst, dy, a, b, y Buffer, g BroadcastGeom)
	// ReduceSum sets dst to alpha times the sum of src over the axes that g
	// reduces to 1, summing in row-major order of those axes.
	ReduceSum(dst, src Buffer, g ReduceGeom, alpha float32)

	// SoftmaxCrossEntropy sets probs to softmax(logits) row by row (n rows of
	// classes) and returns the summed negative log-likelihood of labels.
	SoftmaxCrossEntropy(probs, logits Buffer, labels []int32, n, classes int) float64
	// SoftmaxCrossEntropyBackward sets dlogits = scale * (probs - onehot(labels)).
	SoftmaxCrossEntropyBackward(dlogits, probs Buffer, labels []int32, n, classes int, scale float32)

	// SGDStep applies one SGD step to p with gradient g and velocity v, as
	// PyTorch's torch.optim.SGD (dampening 0): d = g + wd*p; v = momentum*v + d;
	// d = nesterov ? d + momentum*v : v (when momentum > 0); p -= lr*d.
	SGDStep(p, g, v Buffer, lr, momentum, weightDecay float32, nesterov bool)
	// AdamStep applies one Adam step (PyTorch's torch.optim.Adam, L2 weight
	// decay added to the gradient) at step t (1-based) with moments m and v.
	AdamStep(p, g, m, v Buffer, lr, beta1, beta2, eps, weightDecay float32, t int)
}

// ConvColumnKeeper is implemented by backends whose convolutions expand a
// whole batch into one column matrix (OpenCL; not CPU, which expands one
// sample at a time into a small scratch): the filter gradient can then read
// the matrix the forward pass built instead of expanding x a second time.
// The column matrix depends on x and the geometry only, not on the weights.
//
// Caller's duties (solver.Conv2D keeps to them):
//  1. Ask ConvKeepColumns(g) once per layer and batch capacity; keep the
//     buffer for that layer alone (two layers never share one, unlike the
//     workspace). nil means no column matrix for g (depthwise, pointwise),
//     a forward that builds none (OpenCL's Winograd path), or no room under
//     the backend's budget: use ConvForward and ConvBackwardFilter as usual.
//  2. ConvForwardKeep(g, y, x, w, bias, ws, cols) is ConvForward(g, y, x,
//     w, bias, ws) with the same bits, and leaves x's columns in cols. g.N
//     may be smaller than the batch the buffer was asked for.
//  3. ConvBackwardFilterCols(g, dw, dbias, dy, ws, cols) is
//     ConvBackwardFilter(g, dw, dbias, dy, x, ws) with the same bits, for the
//     x and the g of the last ConvForwardKeep into cols. It reads no x, so it
//     is correct only while x is what it was then and nothing else wrote
//     cols: a caller that cannot tell runs ConvBackwardFilter. The
//     workspace ws is still needed (its size sets how the batch is chunked).
type ConvColumnKeeper interface {
	ConvKeepColumns(g ConvGeom) Buffer
	ConvForwardKeep(g ConvGeom, y, x, w, bias, ws, cols Buffer)
	ConvBackwardFilterCols(g ConvGeom, dw, dbias, dy, ws, cols Buffer)
}

// MaxPoolIndexer is implemented by backends whose max-pool backward finds
// each window's first maximum in a pass of its own (OpenCL's
// maxpool_argmax; not CPU, which finds it in the sweep that routes the
// gradient): a training forward can record those positions while it
// finds the maxima, and the backward then skips that pass.
//
// Caller's duties (solver.Pool2D keeps to them):
//  1. Ask MaxPoolIndices(g) once per layer and batch capacity; keep the
//     buffer for that layer alone. It holds positions, not values: pass it
//     to MaxPoolForwardIdx and MaxPoolBackwardIdx only (the backend may
//     refuse it anywhere else). nil means no room: use MaxPoolForward and
//     MaxPoolBackward as usual.
//  2. MaxPoolForwardIdx(g, y, idx, x) is MaxPoolForward(g, y, x) with the
//     same bits, and leaves in idx the position of each window's first
//     maximum (the last NaN where there is one). g.N may be smaller than
//     the batch the buffer was asked for.
//  3. MaxPoolBackwardIdx(g, dx, dy, idx) is MaxPoolBackward(g, dx, dy, x)
//     with the same bits, for the x and the g of the last MaxPoolForwardIdx
//     into idx. It reads no x, so it is correct only while x is what it
//     was then and nothing else wrote idx: a caller that cannot tell runs
//     MaxPoolBackward.
type MaxPoolIndexer interface {
	MaxPoolIndices(g PoolGeom) Buffer
	MaxPoolForwardIdx(g PoolGeom, y, idx, x Buffer)
	MaxPoolBackwardIdx(g PoolGeom, dx, dy, idx Buffer)
}

// ErrGeometry is returned when a layer geometry cannot be computed.
var ErrGeometry = errors.New("gpu: invalid geometry")

// ConvGeom describes a 2-D convolution. Setup validates it and fills OH, OW.
type ConvGeom struct {
	N, C, H, W       int // input batch, channels, height, width
	K, R, S          int // output channels, kernel height, kernel width
	StrideH, StrideW int
	PadH, PadW       int
	Groups           int // C and K are multiples of Groups; Groups == C is depthwise
	OH, OW           int // output height and width, set by Setup
}

// Setup checks g and computes the output size. Zero strides and Groups
// mean 1 (an in-code default of this package's tests and benchmarks; the
// layer descriptions read from files and messages refuse zeros before they
// get here, models.GraphNodes). Every size is checked against the limits of
// internal/limits first, and the sizes derived from them (a sample's input
// and output, the weights, one sample's column matrix) must stay within
// limits.MaxElements, so that no kernel indexes with an overflowed product.
func (g *ConvGeom) Setup() error {
	if g.Groups == 0 {
		g.Groups = 1
	}
	if g.StrideH == 0 {
		g.StrideH = 1
	}
	if g.StrideW == 0 {
		g.StrideW = 1
	}
	switch {
	case g.C <= 0 || g.H <= 0 || g.W <= 0 || g.K <= 0 || g.R <= 0 || g.S <= 0:
		return fmt.Errorf("%w: conv sizes must be positive (C=%d H=%d W=%d K=%d R=%d S=%d)", ErrGeometry, g.C, g.H, g.W, g.K, g.R, g.S)
	case g.PadH < 0 || g.PadW < 0 || g.StrideH < 0 || g.StrideW < 0 || g.Groups < 0:
		return fmt.Errorf("%w: conv stride, padding and groups must not be negative", ErrGeometry)
	}
	if err := geomLimits("conv", g.N, g.C, g.K, g.Groups, g.H, g.W, g.R, g.S, g.StrideH, g.StrideW, g.PadH, g.PadW); err != nil {
		return err
	}
	if g.C%g.Groups != 0 || g.K%g.Groups != 0 {
		return fmt.Errorf("%w: conv channels in %d and out %d are not multiples of groups %d", ErrGeometry, g.C, g.K, g.Groups)
	}
	// Every term is at most limits.MaxExtent: these sums cannot overflow.
	g.OH = (g.H+2*g.PadH-g.R)/g.StrideH + 1
	g.OW = (g.W+2*g.PadW-g.S)/g.StrideW + 1
	if g.H+2*g.PadH < g.R || g.W+2*g.PadW < g.S || g.OH <= 0 || g.OW <= 0 {
		return fmt.Errorf("%w: conv kernel %dx%d larger than padded input %dx%d", ErrGeometry, g.R, g.S, g.H+2*g.PadH, g.W+2*g.PadW)
	}
	for _, p := range [][]int{{g.C, g.H, g.W}, {g.K, g.OH, g.OW}, {g.K, g.C / g.Groups, g.R, g.S}, {g.C / g.Groups, g.R, g.S, g.OH, g.OW}} {
		if _, err := limits.Product("conv sizes", p...); err != nil {
			return fmt.Errorf("%w: %w", ErrGeometry, err)
		}
	}
	return nil
}

// geomLimits checks a geometry's counts (batch, channels, groups) and
// extents (sizes, kernel, strides, pads) against internal/limits; v holds
// the four counts first.
func geomLimits(what string, v ...int) error {
	for i, x := range v {
		check, name := limits.Extent, "extent"
		if i < 4 {
			check, name = limits.Count, "count"
		}
		if _, err := check(what+" "+name, int64(x), false); err != nil {
			return fmt.Errorf("%w: %w", ErrGeometry, err)
		}
	}
	return nil
}

// GroupCount is Groups, or 1 before Setup has set it.
func (g *ConvGeom) GroupCount() int { return max(g.Groups, 1) }

// Depthwise reports whether every group has one input channel.
func (g *ConvGeom) Depthwise() bool { return g.GroupCount() == g.C && g.C > 1 }

// Pointwise reports whether the column matrix equals the input (a 1×1
// filter at stride 1 without padding).
func (g *ConvGeom) Pointwise() bool {
	return g.R == 1 && g.S == 1 && g.StrideH == 1 && g.StrideW == 1 && g.PadH == 0 && g.PadW == 0
}

// ColRows is the number of rows of a group's column matrix: C/G·R·S.
func (g *ConvGeom) ColRows() int { return g.C / g.GroupCount() * g.R * g.S }

// PoolGeom describes a 2-D pooling window. Setup validates it and fills OH, OW.
type PoolGeom struct {
	N, C, H, W       int
	KH, KW           int
	StrideH, StrideW int
	PadH, PadW       int
	// DilH and DilW space the window's taps (PyTorch's dilation): tap
	// (i, j) of the window at (oh, ow) reads input row oh·StrideH - PadH
	// + i·DilH and column ow·StrideW - PadW + j·DilW. Zero means 1.
	DilH, DilW int
	CeilMode   bool // round the output size up, as PyTorch's ceil_mode
	// CountIncludePad makes average pooling divide by the full window size,
	// padding included (PyTorch's default); otherwise by the valid elements.
	CountIncludePad bool
	OH, OW          int
}

// Setup checks g and computes the output size the way PyTorch does
// (aten's pooling_output_shape): the window spans (K-1)·Dil+1 input
// elements, and in ceil mode the last window must start inside the input
// or the left padding. Zero strides mean the window size, zero dilations 1.
// Every window must read at least one input element: an undilated window
// always does (the padding is at most half the window), a dilated one can
// step over the whole input from the padding, which is refused (PyTorch
// would output -inf there).
func (g *PoolGeom) Setup() error {
	if g.StrideH == 0 {
		g.StrideH = g.KH
	}
	if g.StrideW == 0 {
		g.StrideW = g.KW
	}
	if g.DilH == 0 {
		g.DilH = 1
	}
	if g.DilW == 0 {
		g.DilW = 1
	}
	switch {
	case g.C <= 0 || g.H <= 0 || g.W <= 0 || g.KH <= 0 || g.KW <= 0 || g.StrideH <= 0 || g.StrideW <= 0:
		return fmt.Errorf("%w: pool sizes must be positive", ErrGeometry)
	case g.PadH < 0 || g.PadW < 0:
		return fmt.Errorf("%w: pool padding %dx%d must not be negative", ErrGeometry, g.PadH, g.PadW)
	case g.DilH < 0 || g.DilW < 0:
		return fmt.Errorf("%w: pool dilation %dx%d must be positive", ErrGeometry, g.DilH, g.DilW)
	}
	if err := geomLimits("pool", g.N, g.C, 0, 0, g.H, g.W, g.KH, g.KW, g.StrideH, g.StrideW, g.PadH, g.PadW, g.DilH, g.DilW); err != nil {
		return err
	}
	if 2*g.PadH > g.KH || 2*g.PadW > g.KW {
		return fmt.Errorf("%w: pool padding %dx%d must be at most half the window %dx%d", ErrGeometry, g.PadH, g.PadW, g.KH, g.KW)
	}
	// The window's extent (K-1)·Dil+1, in 64 bits (a 32-bit int overflows
	// on a product of two extents), is an extent itself: then every sum
	// of it with sizes and pads below stays small.
	ekh, err := limits.Extent("pool window height", int64(g.KH-1)*int64(g.DilH)+1, true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGeometry, err)
	}
	ekw, err := limits.Extent("pool window width", int64(g.KW-1)*int64(g.DilW)+1, true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGeometry, err)
	}
	g.OH = poolOut(g.H, ekh, g.StrideH, g.PadH, g.CeilMode)
	g.OW = poolOut(g.W, ekw, g.StrideW, g.PadW, g.CeilMode)
	if g.OH <= 0 || g.OW <= 0 {
		return fmt.Errorf("%w: pool window %dx%d (dilation %dx%d) larger than input %dx%d", ErrGeometry, g.KH, g.KW, g.DilH, g.DilW, g.H, g.W)
	}
	for _, p := range [][]int{{g.C, g.H, g.W}, {g.C, g.OH, g.OW}} {
		if _, err := limits.Product("pool sizes", p...); err != nil {
			return fmt.Errorf("%w: %w", ErrGeometry, err)
		}
	}
	if o, ok := emptyWindow(g.OH, g.StrideH, g.PadH, g.KH, g.DilH, g.H); !ok {
		return fmt.Errorf("%w: pool window of output row %d reads only padding (window %d, dilation %d, padding %d)", ErrGeometry, o, g.KH, g.DilH, g.PadH)
	}
	if o, ok := emptyWindow(g.OW, g.StrideW, g.PadW, g.KW, g.DilW, g.W); !ok {
		return fmt.Errorf("%w: pool window of output column %d reads only padding (window %d, dilation %d, padding %d)", ErrGeometry, o, g.KW, g.DilW, g.PadW)
	}
	return nil
}

// Dilated reports whether the window's taps are spaced (DilH or DilW
// above 1).
func (g *PoolGeom) Dilated() bool { return g.DilH > 1 || g.DilW > 1 }

// PoolTaps returns the taps of output o's window along one axis (stride s,
// padding p, k taps d apart, an input of n): the first input index lo that
// a tap reads, the bound hi past the last one (taps lo, lo+d, ... below
// hi), and the taps that lie in the padded input [-p, n+p) (average
// pooling's divisor when it counts the padding; ceil mode's last window can
// overrun the padding, and those taps never count). For d = 1 these are
// the window's rows [lo, hi) and its size clipped to the padded input.
func PoolTaps(o, s, p, k, d, n int) (lo, hi, padded int) {
	start := o*s - p
	end := start + (k-1)*d + 1 // past the last tap
	hi = min(end, n)
	padded = min(k, (n+p-start+d-1)/d)
	lo = start
	if lo < 0 {
		lo += (-lo + d - 1) / d * d
	}
	return lo, hi, padded
}

// emptyWindow returns the first of out windows along one axis that reads
// no input element, and false; true when every window reads one. Only
// windows that start in the left padding can be empty (the last window
// starts inside the input).
func emptyWindow(out, s, p, k, d, n int) (int, bool) {
	for o := 0; o < out && o*s < p; o++ {
		if lo, hi, _ := PoolTaps(o, s, p, k, d, n); lo >= hi {
			return o, false
		}
	}
	return 0, true
}

func poolOut(in, k, s, p int, ceil bool) int {
	span := in + 2*p - k
	if span < 0 {
		return 0
	}
	o := span/s + 1
	if ceil && span%s != 0 {
		o++
		// PyTorch: the last window must start inside the input or left padding.
		if (o-1)*s >= in+p {
			o--
		}
	}
	return o
}

// BNGeom describes batch normalisation over N×C×HW (HW is 1 after a linear layer).
type BNGeom struct {
	N, C, HW int
	Eps      float32 // PyTorch default 1e-5
	Momentum float32 // PyTorch default 0.1
}
