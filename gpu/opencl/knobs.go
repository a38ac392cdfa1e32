//go:build opencl

package opencl

// knobs are the backend-wide thresholds by which the backend chooses among
// kernels and launch shapes (those of one convolution algorithm are its
// fields: im2col, winograd, fftConv). Each was a package variable that
// tests and benchmarks changed; now each backend holds its own (OpenCL.kn),
// set when it opens (defaultKnobs, or Config.knobs in tests) and never
// changed after, so that two backends in one process never see each
// other's choices: a test that needs other values opens a backend with
// them (openCLWith in the tests). Most choices give the same bits either
// way; the ones that do not (redPartLen, biasColsMax, splitTiles and
// splitDepth: they set a summation order) must stay the same on every
// device of a cooperative run, so only tests and benchmarks choose others.
type knobs struct {
	// splitTiles and splitDepth are gemmSplits' targets: a C with fewer
	// blocks of 128×128 than splitTiles is split in k, into ranges at least
	// splitDepth deep. Changing them changes the bits of split products.
	splitTiles, splitDepth int
	// gemmSumWG is the work-group size of the split-k sum (gemm_sum).
	gemmSumWG int
	// redPartLen is the length of one part of a two-level reduction: a
	// channel of batch norm (or a depthwise filter tap) reducing over more
	// elements than twice this is split into parts that separate
	// work-groups reduce, and a second kernel adds the parts in order
	// (norm.cl). The same on every device, so that the split, and so the
	// summation order, depends on the shape alone. At 8192 elements a part
	// gives each item of a work-group of 256 at least 16 elements. Changing
	// it changes the bits of batch norm and depthwise filter gradients.
	redPartLen int
	// biasColsMax is the most elements per channel (n·hw) that BiasGrad
	// and ActivateBackwardBias sum with one item per channel. Changing it
	// changes the bits of bias gradients.
	biasColsMax int
	// keepBudget is the most bytes of kept column matrices alive at once
	// (ConvKeepColumns); 0: an eighth of the device's memory.
	keepBudget int64
}

// defaultKnobs are the choices every backend opens with.
func defaultKnobs() knobs {
	return knobs{splitTiles: 256, splitDepth: 256, gemmSumWG: 256, redPartLen: 8192,
		biasColsMax: 64}
}

// redParts splits a reduction over m elements: parts of l elements, the last
// one shorter; p is 1 (one work-group reduces it all) up to 2·redPartLen.
func (k *knobs) redParts(m int) (l, p int) {
	if m <= 2*k.redPartLen {
		return m, 1
	}
	return k.redPartLen, (m + k.redPartLen - 1) / k.redPartLen
}
