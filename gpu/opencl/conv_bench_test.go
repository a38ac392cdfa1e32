//go:build opencl

package opencl

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// The lowering kernels of a convolution at AlexNet's sizes (torchvision's
// layout, 224×224 inputs), each beside the kernel it replaced, in one run:
//
//	go test -c -tags opencl -o .dev/gpu.test ./gpu
//	.dev/gpu.test -test.run '^$' -test.bench 'OpenCLIm2col|OpenCLCol2im|OpenCLMaxPoolBackward' -test.benchtime 50x
//
// The ratio of a layer's "old" to its "new" time is the speed-up; GB/s is
// the column matrix written (im2col) or read (col2im) per second, or dx
// written (pooling). COTRAIN_BENCH_BATCH sets the batch (default 32, the
// batch of issue 19's table); on PoCL (OpenCL on the CPU) a smaller one
// keeps a run short, and its ratios say little about a GPU's.
// COTRAIN_BENCH_IM2COL_TAPS=1,121 also times im2col_win with other block
// sizes (im2col.winTaps).

// alexConvs are AlexNet's five convolutions at batch 32.
var alexConvs = []struct {
	name string
	g    gpu.ConvGeom
}{
	{"conv1", gpu.ConvGeom{N: 32, C: 3, H: 224, W: 224, K: 64, R: 11, S: 11, StrideH: 4, StrideW: 4, PadH: 2, PadW: 2}},
	{"conv2", gpu.ConvGeom{N: 32, C: 64, H: 27, W: 27, K: 192, R: 5, S: 5, PadH: 2, PadW: 2}},
	{"conv3", gpu.ConvGeom{N: 32, C: 192, H: 13, W: 13, K: 384, R: 3, S: 3, PadH: 1, PadW: 1}},
	{"conv4", gpu.ConvGeom{N: 32, C: 384, H: 13, W: 13, K: 256, R: 3, S: 3, PadH: 1, PadW: 1}},
	{"conv5", gpu.ConvGeom{N: 32, C: 256, H: 13, W: 13, K: 256, R: 3, S: 3, PadH: 1, PadW: 1}},
}

// alexPools are AlexNet's three 3×3/2 max pools at batch 32.
var alexPools = []struct {
	name string
	g    gpu.PoolGeom
}{
	{"pool1", gpu.PoolGeom{N: 32, C: 64, H: 55, W: 55, KH: 3, KW: 3, StrideH: 2, StrideW: 2}},
	{"pool2", gpu.PoolGeom{N: 32, C: 192, H: 27, W: 27, KH: 3, KW: 3, StrideH: 2, StrideW: 2}},
	{"pool3", gpu.PoolGeom{N: 32, C: 256, H: 13, W: 13, KH: 3, KW: 3, StrideH: 2, StrideW: 2}},
}

// poolBench is g at batch nb, set up, with its input x (random), its input
// gradient dx and its output gradient dy (all ones) on o: what the max-pool
// benchmarks run on.
func poolBench(b *testing.B, o *OpenCL, g gpu.PoolGeom, nb int) (_ gpu.PoolGeom, x, dx, dy gpu.Buffer) {
	b.Helper()
	g.N = nb
	if err := g.Setup(); err != nil {
		b.Fatal(err)
	}
	x, dx = o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.N*g.C*g.H*g.W)
	dy = o.Alloc(g.N * g.C * g.OH * g.OW)
	o.Upload(x, gputest.Rand(newBenchRand(), x.Len()))
	o.Fill(dy, 1)
	return g, x, dx, dy
}

// benchBatch is COTRAIN_BENCH_BATCH, or 32.
func benchBatch(b *testing.B) int {
	if v := os.Getenv("COTRAIN_BENCH_BATCH"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("COTRAIN_BENCH_BATCH=%q: want a positive batch", v)
		}
		return n
	}
	return 32
}

// benchKernel times launch (one call's kernels) over b.N calls, waiting for
// the device at the end, and reports bytes moved per second (when not 0).
func benchKernel(b *testing.B, o *OpenCL, bytes int64, launch func()) {
	launch() // warm: first-launch costs are not the kernel's
	must(o.Finish())
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		launch()
	}
	must(o.Finish())
	if bytes == 0 {
		return
	}
	b.ReportMetric(float64(bytes)*float64(b.N)/time.Since(start).Seconds()/1e9, "GB/s")
}

func BenchmarkOpenCLIm2col(b *testing.B) {
	o := openCLForTest(b)
	nb := benchBatch(b)
	for _, c := range alexConvs {
		g := c.g
		g.N = nb
		if err := g.Setup(); err != nil {
			b.Fatal(err)
		}
		rows, ohw := g.ColRows(), g.OH*g.OW
		x, col := o.buf(o.Alloc(g.N*g.C*g.H*g.W)), o.buf(o.Alloc(rows*g.N*ohw))
		o.Fill(x, 1)
		bytes := int64(col.n) * int64(o.esize())
		args := append([]any{col.m, col.off, x.m, x.off}, colArgs(g, g.N)...)
		b.Run(c.name+"/old", func(b *testing.B) {
			benchKernel(b, o, bytes, func() { o.runPlanes(kIm2colPlanes, ohw, rows, g.N, args...) })
		})
		b.Run(c.name+"/new", func(b *testing.B) {
			benchKernel(b, o, bytes, func() { o.cols.expand(&g, rows, g.N, ohw, col.m, col.off, x.m, x.off) })
		})
		for _, taps := range benchTaps(b) {
			b.Run(fmt.Sprintf("%s/new-taps=%d", c.name, taps), func(b *testing.B) {
				cols := newIm2col(o)
				cols.winTaps = taps
				benchKernel(b, o, bytes, func() { cols.expand(&g, rows, g.N, ohw, col.m, col.off, x.m, x.off) })
			})
		}
	}
}

// benchTaps is COTRAIN_BENCH_IM2COL_TAPS, a comma-separated list of
// im2col.winTaps values that BenchmarkOpenCLIm2col times besides the default
// (1: one filter row per item; 121: AlexNet conv1's whole window).
func benchTaps(b *testing.B) []int {
	var out []int
	for _, f := range strings.FieldsFunc(os.Getenv("COTRAIN_BENCH_IM2COL_TAPS"), func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("COTRAIN_BENCH_IM2COL_TAPS: %q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out
}

func BenchmarkOpenCLCol2im(b *testing.B) {
	o := openCLForTest(b)
	nb := benchBatch(b)
	for _, c := range alexConvs[1:] { // conv1's input needs no gradient
		g := c.g
		g.N = nb
		if err := g.Setup(); err != nil {
			b.Fatal(err)
		}
		rows, ohw := g.ColRows(), g.OH*g.OW
		dx, col := o.buf(o.Alloc(g.N*g.C*g.H*g.W)), o.buf(o.Alloc(rows*g.N*ohw))
		o.Fill(col, 1)
		bytes := int64(col.n) * int64(o.esize())
		b.Run(c.name+"/old", func(b *testing.B) {
			args := append([]any{dx.m, dx.off, col.m, col.off}, colArgs(g, g.N)...)
			benchKernel(b, o, bytes, func() { o.run1(kCol2im, dx.n, args...) })
		})
		b.Run(c.name+"/new", func(b *testing.B) {
			benchKernel(b, o, bytes, func() { o.cols.col2im(&g, g.N, dx.m, dx.off, col.m, col.off) })
		})
	}
}

func BenchmarkOpenCLMaxPoolBackward(b *testing.B) {
	o := openCLForTest(b)
	nb := benchBatch(b)
	for _, c := range alexPools {
		g, x, dx, dy := poolBench(b, o, c.g, nb)
		xs, dxs, dys := o.buf(x), o.buf(dx), o.buf(dy)
		bytes := int64(dx.Len()) * int64(o.esize())
		b.Run(c.name+"/old", func(b *testing.B) {
			idx := o.scratch(&o.poolIdx, dys.n)
			benchKernel(b, o, bytes, func() {
				o.run1(kMaxpoolArgmax, dys.n, append([]any{idx, xs.m, xs.off}, poolArgs(g)...)...)
				o.run1(kMaxpoolBackwardIdx, dxs.n, append([]any{dxs.m, dxs.off, dys.m, dys.off, idx}, poolArgs(g)...)...)
			})
		})
		b.Run(c.name+"/new", func(b *testing.B) {
			benchKernel(b, o, bytes, func() { o.MaxPoolBackward(g, dx, dy, x) })
		})
	}
}

// BenchmarkOpenCLConvKeep times AlexNet's convolutions' forward and filter
// gradient (no bias, no backward data) at batch 32 with the column matrix
// expanded twice (ConvForward, ConvBackwardFilter) and kept from the
// forward (ConvForwardKeep, ConvBackwardFilterCols): the difference is one
// im2col per layer.
func BenchmarkOpenCLConvKeep(b *testing.B) {
	o := openCLForTest(b)
	nb := benchBatch(b)
	for _, c := range alexConvs {
		g := c.g
		g.N = nb
		if err := g.Setup(); err != nil {
			b.Fatal(err)
		}
		x, w := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.K*g.ColRows())
		y := o.Alloc(g.N * g.K * g.OH * g.OW)
		dw := o.Alloc(w.Len())
		for _, z := range []gpu.Buffer{x, w, y} {
			o.Fill(z, 0.5)
		}
		ws := o.Alloc(o.ConvWorkspace(g))
		b.Run(c.name+"/twice", func(b *testing.B) {
			benchKernel(b, o, 0, func() {
				o.ConvForward(g, y, x, w, nil, ws)
				o.ConvBackwardFilter(g, dw, nil, y, x, ws)
			})
		})
		cols := o.ConvKeepColumns(g)
		if cols == nil {
			b.Logf("%s: no room to keep %d elements of columns", c.name, convKeepLen(g))
			continue
		}
		b.Run(c.name+"/kept", func(b *testing.B) {
			benchKernel(b, o, 0, func() {
				o.ConvForwardKeep(g, y, x, w, nil, ws, cols)
				o.ConvBackwardFilterCols(g, dw, nil, y, ws, cols)
			})
		})
	}
}

// newBenchRand is a fixed generator for benchmark data.
func newBenchRand() *rand.Rand { return rand.New(rand.NewPCG(7, 8)) }
