package cpu

import "github.com/cotrain/cotrain/gpu"

import "github.com/cotrain/cotrain/gpu/internal/sgemm"

// Threading of the CPU kernels.
//
// A kernel that is worth splitting fills the backend's one job descriptor
// (cpuJob) and hands it to sgemm's worker pool, which calls Run for every
// part on up to GOMAXPROCS threads; with one thread the parts run in order on
// the caller, with no synchronisation. The descriptor lives in the backend,
// so a call allocates nothing.
//
// Every split is over independent outputs: samples of a batch, planes,
// channels (batch norm, depthwise filter gradients), ranges of elements. The one reduction over the batch (a
// convolution's filter gradient) is cut into chunks whose bounds depend on
// the batch size alone and summed in chunk order, so results have the same
// bits whatever the thread count, as the cooperative nodes' weight hashes
// require.

// cpuOp names the kernel a cpuJob runs.
type cpuOp uint8

const (
	opConvForward cpuOp = iota + 1
	opConvBackwardData
	opConvBackwardFilter
	opMaxPoolForward
	opMaxPoolBackward
	opAvgPoolForward
	opAvgPoolBackward
	opActivate
	opActivateBackward
	opBiasGrad
	opBNTrain
	opBNBackward
	opDepthwiseFilter
	opSumPartials
	opSoftmax
	opSoftmaxBackward
	opStrided   // CopyStrided (tensor.go)
	opBroadcast // Broadcast
	opPartial   // BroadcastPartial
	opReduce    // ReduceSum
	opDropoutMask
	opWinoIn  // a batched Winograd pass's input transform (winograd.go)
	opWinoOut // its output transform
	opResample
)

// cpuJob is one parallel kernel call: the operands the kernel needs (each op
// uses some of them) and how its n items are cut into parts.
type cpuJob struct {
	op    cpuOp
	n     int // items: samples, planes, channels or elements
	parts int

	conv       convGeom
	pool       poolGeom
	act        gpu.Act
	x, y, w, b []float32 // inputs and outputs, named as in the kernels
	dx, dy     []float32
	ws         []float32 // the caller's conv workspace
	batch, hw  int       // BiasGrad: samples, and elements per channel and sample; sumPartials: chunks; softmax: c, inner
	bn         gpu.BNGeom
	per        [6][]float32 // batch norm's per-channel buffers, in the kernel's order
	cpu        *CPU         // packed filters and partial sums of the conv kernels
	ten        tensorJob    // the structural kernels' operands (rows are the items)
	rs         resampleJob  // Resample's operands (output rows are the items)
	seed       uint64       // DropoutMask's seed, threshold and kept value (y is the mask)
	thr        uint32
	keep       float32
}

// span returns the items [lo, hi) of part i: n cut into parts nearly equal
// runs, a function of n and parts alone.
func (j *cpuJob) span(i int) (lo, hi int) {
	return i * j.n / j.parts, (i + 1) * j.n / j.parts
}

// Run implements sgemm.Task.
func (j *cpuJob) Run(th *sgemm.Thread, i int) {
	lo, hi := j.span(i)
	switch j.op {
	case opConvForward:
		j.cpu.convForward(th, &j.conv, j.y, j.x, j.w, j.b, j.ws, lo, hi)
	case opConvBackwardData:
		j.cpu.convBackwardData(th, &j.conv, j.dx, j.dy, j.w, j.ws, lo, hi)
	case opConvBackwardFilter:
		j.cpu.convBackwardFilterChunk(th, &j.conv, i, j.w, j.dy, j.x, j.ws, lo, hi)
	case opMaxPoolForward:
		j.pool.maxForward(j.y, j.x, lo, hi)
	case opMaxPoolBackward:
		j.pool.maxBackward(j.dx, j.dy, j.x, lo, hi)
	case opAvgPoolForward:
		j.pool.avgForward(j.y, j.x, lo, hi)
	case opAvgPoolBackward:
		j.pool.avgBackward(j.dx, j.dy, lo, hi)
	case opActivate:
		activate(j.act, j.y[lo:hi], j.x[lo:hi])
	case opActivateBackward:
		activateBackward(j.act, j.dx[lo:hi], j.dy[lo:hi], j.x[lo:hi])
	case opBiasGrad:
		biasGrad(j.b, j.dy, j.batch, j.hw, lo, hi)
	case opBNTrain:
		bnTrain(&j.bn, j.y, j.x, &j.per, lo, hi)
	case opBNBackward:
		bnBackward(&j.bn, j.dx, j.dy, j.x, &j.per, lo, hi)
	case opSoftmax:
		softmax(j.y, j.x, j.batch, j.hw, lo, hi)
	case opSoftmaxBackward:
		softmaxBackward(j.dx, j.dy, j.y, j.batch, j.hw, lo, hi)
	case opStrided, opBroadcast, opPartial, opReduce:
		j.ten.run(j.op, lo, hi)
	case opWinoIn:
		j.conv.winoInPart(th, j.dy, j.x, j.batch == 1, lo, hi)
	case opResample:
		j.rs.rows(lo, hi)
	case opWinoOut:
		j.conv.winoOutPart(th, j.y, j.dy, j.b, j.batch == 1, lo, hi)
	case opDropoutMask:
		gpu.DropoutMaskBlocks(j.y, j.seed, j.thr, j.keep, lo, hi)
	case opSumPartials:
		j.cpu.sumPartials(j.w, j.batch, lo, hi)
	case opDepthwiseFilter:
		if j.conv.dw3Padded() {
			j.conv.depthwise3x3PaddedFilter(th, j.w, j.dy, j.x, lo, hi)
		} else if j.conv.dw3() {
			j.conv.depthwise3x3BackwardFilter(j.w, j.dy, j.x, lo, hi)
		} else {
			j.conv.depthwiseBackwardFilter(j.w, j.dy, j.x, lo, hi)
		}
	default:
		panic("gpu: cpuJob without an op")
	}
}

// minPart is the least work, in elements touched, worth a part of its own:
// below it, waking a helper thread costs more than the part.
const minPart = 1 << 14

// run cuts n items of independent work into parts and runs j over them;
// work is the total number of elements touched, which bounds the number of
// parts. Small work, and any work on one thread, runs on the caller alone
// as a single part.
func (c *CPU) run(j *cpuJob, n, work int) {
	parts := 1
	if t := c.th.Threads(); t > 1 {
		parts = max(1, min(n, work/minPart, 4*t))
	}
	c.runParts(j, n, parts)
}

// runParts runs j over n items cut into exactly parts parts.
func (c *CPU) runParts(j *cpuJob, n, parts int) {
	j.n, j.parts, j.cpu = n, parts, c
	c.th.Parallel(parts, j)
	*j = cpuJob{} // drop the operands
}
