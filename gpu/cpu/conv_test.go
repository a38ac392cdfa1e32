package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// convCases covers the lowering's corners: stride 1/2/3, padding 0/1/2 (and
// wider than a 1×1 kernel), groups 1/2/C with a channel multiplier, odd and
// non-square sizes and kernels, the 1×1 fast path, a kernel as large as the
// input.
var convCases = []gpu.ConvGeom{
	{N: 2, C: 3, H: 7, W: 7, K: 4, R: 3, S: 3},
	{N: 2, C: 3, H: 5, W: 6, K: 4, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 1, C: 2, H: 9, W: 7, K: 3, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	{N: 2, C: 1, H: 6, W: 5, K: 2, R: 5, S: 5, PadH: 2, PadW: 2},
	{N: 2, C: 2, H: 1, W: 1, K: 3, R: 5, S: 5, PadH: 2, PadW: 2}, // taps that read padding only (im2col once sliced before x)
	{N: 2, C: 3, H: 7, W: 6, K: 4, R: 3, S: 2, StrideH: 2, StrideW: 1, PadH: 1, PadW: 0},
	{N: 1, C: 2, H: 6, W: 7, K: 3, R: 2, S: 4, StrideH: 1, StrideW: 2, PadH: 0, PadW: 2},
	{N: 2, C: 4, H: 6, W: 5, K: 6, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 2},
	{N: 1, C: 4, H: 7, W: 7, K: 2, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 2, PadW: 1, Groups: 2},
	{N: 2, C: 3, H: 7, W: 6, K: 3, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 3},
	{N: 2, C: 4, H: 9, W: 8, K: 4, R: 3, S: 5, StrideH: 2, StrideW: 2, PadH: 1, PadW: 2, Groups: 4},
	{N: 1, C: 3, H: 6, W: 6, K: 6, R: 3, S: 3, StrideH: 2, StrideW: 1, PadH: 1, PadW: 1, Groups: 3},
	{N: 2, C: 5, H: 4, W: 3, K: 3, R: 1, S: 1},
	{N: 2, C: 4, H: 3, W: 3, K: 6, R: 1, S: 1, Groups: 2},
	{N: 1, C: 3, H: 5, W: 5, K: 2, R: 1, S: 1, StrideH: 2, StrideW: 2},
	{N: 1, C: 2, H: 3, W: 3, K: 2, R: 1, S: 1, PadH: 2, PadW: 1},
	{N: 2, C: 2, H: 4, W: 4, K: 3, R: 4, S: 4},
	{N: 2, C: 1, H: 5, W: 5, K: 3, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 1, C: 2, H: 8, W: 8, K: 2, R: 2, S: 2, StrideH: 3, StrideW: 3},
	{N: 2, C: 2, H: 3, W: 20, K: 3, R: 1, S: 17, PadW: 1}, // a kernel row wider than a vector
}

// naiveConv computes the convolution and its three gradients directly from
// the definition, in float64, together with Σ|term| for each output element
// (the scale of its rounding error).
type naiveConv struct {
	y, dx, dw, db             []float64
	yAbs, dxAbs, dwAbs, dbAbs []float64
}

func convNaive(g gpu.ConvGeom, x, w, bias, dy []float32) naiveConv {
	grp := max(g.Groups, 1)
	cg, kg := g.C/grp, g.K/grp
	r := naiveConv{
		y: make([]float64, g.N*g.K*g.OH*g.OW), yAbs: make([]float64, g.N*g.K*g.OH*g.OW),
		dx: make([]float64, len(x)), dxAbs: make([]float64, len(x)),
		dw: make([]float64, len(w)), dwAbs: make([]float64, len(w)),
		db: make([]float64, g.K), dbAbs: make([]float64, g.K),
	}
	for n := 0; n < g.N; n++ {
		for k := 0; k < g.K; k++ {
			gi := k / kg
			for oh := 0; oh < g.OH; oh++ {
				for ow := 0; ow < g.OW; ow++ {
					yi := ((n*g.K+k)*g.OH+oh)*g.OW + ow
					if bias != nil {
						r.y[yi] += float64(bias[k])
						r.yAbs[yi] += math.Abs(float64(bias[k]))
					}
					r.db[k] += float64(dy[yi])
					r.dbAbs[k] += math.Abs(float64(dy[yi]))
					for c := 0; c < cg; c++ {
						for i := 0; i < g.R; i++ {
							for j := 0; j < g.S; j++ {
								ih, iw := oh*g.StrideH-g.PadH+i, ow*g.StrideW-g.PadW+j
								if ih < 0 || ih >= g.H || iw < 0 || iw >= g.W {
									continue
								}
								xi := ((n*g.C+gi*cg+c)*g.H+ih)*g.W + iw
								wi := ((k*cg+c)*g.R+i)*g.S + j
								xv, wv, dv := float64(x[xi]), float64(w[wi]), float64(dy[yi])
								r.y[yi] += xv * wv
								r.yAbs[yi] += math.Abs(xv * wv)
								r.dx[xi] += dv * wv
								r.dxAbs[xi] += math.Abs(dv * wv)
								r.dw[wi] += dv * xv
								r.dwAbs[wi] += math.Abs(dv * xv)
							}
						}
					}
				}
			}
		}
	}
	return r
}

func nanSlice(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

// convClose reports the first element where got differs from want by more
// than tol·scale (scale: the element's Σ|term|, at least 1).
func convClose(got []float32, want, scale []float64, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*max(scale[i], 1)) {
			return fmt.Errorf("[%d] = %g, want %g (|diff| %.3g)", i, got[i], want[i], d)
		}
	}
	return nil
}

// convTol allows float32 accumulation error; an indexing mistake is off by
// a whole term.
const convTol = 1e-5

// TestConvAgainstNaive runs every case on the default paths and with the
// batched small-plane path off (colbatch.go: most cases here have small
// planes, so the per-sample lowering is checked too).
func TestConvAgainstNaive(t *testing.T) {
	for _, colOff := range []bool{false, true} {
		c := NewCPU()
		c.colOff = colOff
		t.Run(fmt.Sprintf("colOff=%v", colOff), func(t *testing.T) { convAgainstNaive(t, c, convCases) })
	}
}

// convAgainstNaive checks c's three passes on cases against convNaive.
func convAgainstNaive(t *testing.T, c *CPU, cases []gpu.ConvGeom) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, g := range cases {
		if err := g.Setup(); err != nil {
			t.Fatalf("%+v: %v", g, err)
		}
		for _, withBias := range []bool{true, false} {
			name := fmt.Sprintf("N%dC%d_%dx%d_K%d_%dx%d_s%dx%d_p%dx%d_g%d_bias%v", g.N, g.C, g.H, g.W, g.K, g.R, g.S,
				g.StrideH, g.StrideW, g.PadH, g.PadW, g.Groups, withBias)
			t.Run(name, func(t *testing.T) {
				x := gputest.Rand(rng, g.N*g.C*g.H*g.W)
				w := gputest.Rand(rng, g.K*g.C/g.Groups*g.R*g.S)
				dy := gputest.Rand(rng, g.N*g.K*g.OH*g.OW)
				var bias, db gpu.Buffer
				var bs []float32
				if withBias {
					bs = gputest.Rand(rng, g.K)
					bias, db = gpu.Host(bs), gpu.Host(nanSlice(g.K))
				}
				want := convNaive(g, x, w, bs, dy)
				// Exactly the advertised workspace, NaN-filled: no kernel may
				// read scratch it has not written.
				ws := gpu.Host(nanSlice(c.ConvWorkspace(g)))
				y, dx, dw := nanSlice(len(want.y)), nanSlice(len(x)), nanSlice(len(w))

				c.ConvForward(g, gpu.Host(y), gpu.Host(x), gpu.Host(w), bias, ws)
				if err := convClose(y, want.y, want.yAbs, convTol); err != nil {
					t.Errorf("forward: y%v", err)
				}
				c.ConvBackwardData(g, gpu.Host(dx), gpu.Host(dy), gpu.Host(w), ws)
				if err := convClose(dx, want.dx, want.dxAbs, convTol); err != nil {
					t.Errorf("backward data: dx%v", err)
				}
				c.ConvBackwardFilter(g, gpu.Host(dw), db, gpu.Host(dy), gpu.Host(x), ws)
				if err := convClose(dw, want.dw, want.dwAbs, convTol); err != nil {
					t.Errorf("backward filter: dw%v", err)
				}
				if withBias {
					if err := convClose(h(db), want.db, want.dbAbs, convTol); err != nil {
						t.Errorf("backward filter: dbias%v", err)
					}
				}
			})
		}
	}
}

func TestConvWorkspace(t *testing.T) {
	cases := []struct {
		g    gpu.ConvGeom
		want int
	}{
		{gpu.ConvGeom{N: 4, C: 3, H: 7, W: 7, K: 4, R: 3, S: 3}, 3 * 9 * 25},
		{gpu.ConvGeom{N: 4, C: 4, H: 6, W: 6, K: 4, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 2}, 2 * 9 * 36},
		{gpu.ConvGeom{N: 4, C: 4, H: 6, W: 6, K: 8, R: 3, S: 3, Groups: 4}, 0},       // depthwise: direct loop
		{gpu.ConvGeom{N: 4, C: 4, H: 6, W: 6, K: 8, R: 1, S: 1}, 0},                  // 1×1: the input is the column matrix
		{gpu.ConvGeom{N: 4, C: 4, H: 6, W: 6, K: 8, R: 1, S: 1, StrideH: 2}, 4 * 18}, // strided 1×1 needs lowering
	}
	c := NewCPU()
	for _, tc := range cases {
		if err := tc.g.Setup(); err != nil {
			t.Fatal(err)
		}
		if got := c.ConvWorkspace(tc.g); got != tc.want {
			t.Errorf("%+v: workspace %d, want %d", tc.g, got, tc.want)
		}
	}
}

func TestConvPanicsOnShortWorkspace(t *testing.T) {
	g := gpu.ConvGeom{N: 1, C: 2, H: 5, W: 5, K: 2, R: 3, S: 3}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	c := NewCPU()
	defer func() {
		if recover() == nil {
			t.Error("no panic for a workspace one element short")
		}
	}()
	c.ConvForward(g, c.Alloc(2*9), c.Alloc(50), c.Alloc(36), nil, c.Alloc(c.ConvWorkspace(g)-1))
}

// TestConvSameBitsAtAnyThreadCount runs the three passes (and the pooling
// and activation kernels, which split the same way) at GOMAXPROCS 1, 2 and
// 3 and requires identical bits: the cooperative nodes compare weight
// hashes, and a node's thread count must not show in them.
func TestConvSameBitsAtAnyThreadCount(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(4, 4))
	for _, g := range []gpu.ConvGeom{
		{N: 64, C: 20, H: 12, W: 12, K: 50, R: 5, S: 5},
		{N: 13, C: 4, H: 9, W: 9, K: 6, R: 3, S: 3, PadH: 1, PadW: 1, StrideH: 2, StrideW: 2, Groups: 2},
		{N: 9, C: 8, H: 6, W: 6, K: 16, R: 1, S: 1},
		{N: 9, C: 8, H: 6, W: 6, K: 16, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 8},
		{N: 7, C: 16, H: 10, W: 9, K: 20, R: 3, S: 3, PadH: 1, PadW: 1}, // Winograd
	} {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		x, w := gputest.Rand(rng, g.N*g.C*g.H*g.W), gputest.Rand(rng, g.K*g.C/g.Groups*g.R*g.S)
		bias, dy := gputest.Rand(rng, g.K), gputest.Rand(rng, g.N*g.K*g.OH*g.OW)
		pg := gpu.PoolGeom{N: g.N, C: g.K, H: g.OH, W: g.OW, KH: 2, KW: 2, CeilMode: true}
		if err := pg.Setup(); err != nil {
			t.Fatal(err)
		}
		var ref [][]float32
		for _, procs := range []int{1, 2, 3} {
			runtime.GOMAXPROCS(procs)
			c := NewCPU()
			y, dx, dw, db := c.Alloc(len(dy)), c.Alloc(len(x)), c.Alloc(len(w)), c.Alloc(g.K)
			ws := c.Alloc(c.ConvWorkspace(g))
			c.ConvForward(g, y, gpu.Host(x), gpu.Host(w), gpu.Host(bias), ws)
			c.ConvBackwardData(g, dx, gpu.Host(dy), gpu.Host(w), ws)
			c.ConvBackwardFilter(g, dw, db, gpu.Host(dy), gpu.Host(x), ws)
			r, p, dp := c.Alloc(len(dy)), c.Alloc(pg.N*pg.C*pg.OH*pg.OW), c.Alloc(len(dy))
			c.Activate(gpu.ReLU, r, y)
			c.MaxPoolForward(pg, p, r)
			c.MaxPoolBackward(pg, dp, p, r)
			c.ActivateBackward(gpu.ReLU, r, dp, y)
			got := [][]float32{h(y), h(dx), h(dw), h(db), h(r), h(p), h(dp)}
			if ref == nil {
				ref = got
				continue
			}
			for i := range got {
				if !slices.Equal(ref[i], got[i]) {
					t.Errorf("%+v: output %d at GOMAXPROCS=%d differs from GOMAXPROCS=1", g, i, procs)
				}
			}
		}
	}
}

// TestConvNoAllocs checks that the kernels allocate nothing once their
// scratch has grown, also when they run on two threads.
func TestConvNoAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	c := NewCPU()
	g := gpu.ConvGeom{N: 16, C: 4, H: 16, W: 16, K: 6, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 2}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	x, w, b := c.Alloc(16*4*256), c.Alloc(6*2*9), c.Alloc(6)
	y, ws := c.Alloc(16*6*256), c.Alloc(c.ConvWorkspace(g))
	allocs := testing.AllocsPerRun(5, func() {
		c.ConvForward(g, y, x, w, b, ws)
		c.ConvBackwardData(g, x, y, w, ws)
		c.ConvBackwardFilter(g, w, b, y, x, ws)
	})
	if allocs > 0 {
		t.Errorf("%v allocations per forward+backward", allocs)
	}
}

func TestSpan(t *testing.T) {
	// Brute force: every (out, stride, pad, tap, in) in a small range.
	for out := 1; out <= 5; out++ {
		for stride := 1; stride <= 3; stride++ {
			for pad := 0; pad <= 3; pad++ {
				for tap := 0; tap <= 4; tap++ {
					for in := 1; in <= 5; in++ {
						lo, hi := span(out, stride, pad, tap, in)
						for o := 0; o < out; o++ {
							i := o*stride - pad + tap
							inside := i >= 0 && i < in
							if got := o >= lo && o < hi; got != inside {
								t.Fatalf("span(%d,%d,%d,%d,%d) = [%d,%d): o=%d inside=%v", out, stride, pad, tap, in, lo, hi, o, inside)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkConvForward times forward and both backward kernels on layer
// shapes of the models cotrain trains.
func BenchmarkConvForward(b *testing.B) {
	cases := []struct {
		name string
		g    gpu.ConvGeom
	}{
		{"lenet5-conv1_b64_1to6_5x5p2_28x28", gpu.ConvGeom{N: 64, C: 1, H: 28, W: 28, K: 6, R: 5, S: 5, PadH: 2, PadW: 2}},
		{"lenet5-conv2_b64_6to16_5x5_14x14", gpu.ConvGeom{N: 64, C: 6, H: 14, W: 14, K: 16, R: 5, S: 5}},
		{"lenet-conv1_b64_1to20_5x5_28x28", gpu.ConvGeom{N: 64, C: 1, H: 28, W: 28, K: 20, R: 5, S: 5}},
		{"lenet-conv2_b64_20to50_5x5_12x12", gpu.ConvGeom{N: 64, C: 20, H: 12, W: 12, K: 50, R: 5, S: 5}},
		{"mobilenet-dw_b16_32ch_3x3_56x56", gpu.ConvGeom{N: 16, C: 32, H: 56, W: 56, K: 32, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 32}},
		{"mobilenet-pw_b16_32to64_1x1_56x56", gpu.ConvGeom{N: 16, C: 32, H: 56, W: 56, K: 64, R: 1, S: 1}},
		// resnet18 at 96×96, batch 16 (issue 29's CPU comparison): every
		// convolution shape it has, stem to layer4.
		{"resnet18-conv1_b16_3to64_7x7s2_96x96", gpu.ConvGeom{N: 16, C: 3, H: 96, W: 96, K: 64, R: 7, S: 7, StrideH: 2, StrideW: 2, PadH: 3, PadW: 3}},
		{"resnet18-l1_b16_64to64_3x3_24x24", gpu.ConvGeom{N: 16, C: 64, H: 24, W: 24, K: 64, R: 3, S: 3, PadH: 1, PadW: 1}},
		{"resnet18-l2a_b16_64to128_3x3s2_24x24", gpu.ConvGeom{N: 16, C: 64, H: 24, W: 24, K: 128, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
		{"resnet18-l2d_b16_64to128_1x1s2_24x24", gpu.ConvGeom{N: 16, C: 64, H: 24, W: 24, K: 128, R: 1, S: 1, StrideH: 2, StrideW: 2}},
		{"resnet18-l2_b16_128to128_3x3_12x12", gpu.ConvGeom{N: 16, C: 128, H: 12, W: 12, K: 128, R: 3, S: 3, PadH: 1, PadW: 1}},
		{"resnet18-l3a_b16_128to256_3x3s2_12x12", gpu.ConvGeom{N: 16, C: 128, H: 12, W: 12, K: 256, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
		{"resnet18-l3_b16_256to256_3x3_6x6", gpu.ConvGeom{N: 16, C: 256, H: 6, W: 6, K: 256, R: 3, S: 3, PadH: 1, PadW: 1}},
		{"resnet18-l4a_b16_256to512_3x3s2_6x6", gpu.ConvGeom{N: 16, C: 256, H: 6, W: 6, K: 512, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
		{"resnet18-l4_b16_512to512_3x3_3x3", gpu.ConvGeom{N: 16, C: 512, H: 3, W: 3, K: 512, R: 3, S: 3, PadH: 1, PadW: 1}},
	}
	c := NewCPU()
	for _, tc := range cases {
		g := tc.g
		if err := g.Setup(); err != nil {
			b.Fatal(err)
		}
		// Random data: gonum's Sgemm skips zero elements of A, so zeroed
		// buffers would time less work than a real layer does.
		rng := rand.New(rand.NewPCG(1, 2))
		x, w := gpu.Host(gputest.Rand(rng, g.N*g.C*g.H*g.W)), gpu.Host(gputest.Rand(rng, g.K*g.C/g.Groups*g.R*g.S))
		y, bias, ws := gpu.Host(gputest.Rand(rng, g.N*g.K*g.OH*g.OW)), gpu.Host(gputest.Rand(rng, g.K)), c.Alloc(c.ConvWorkspace(g))
		dx, dw := c.Alloc(x.Len()), c.Alloc(w.Len())
		flops := float64(2 * g.N * g.K * g.OH * g.OW * g.C / g.Groups * g.R * g.S)
		run := func(name string, f func()) {
			b.Run(tc.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				f() // first-use allocations, outside the CPU time
				start := cpuTime()
				for b.Loop() {
					f()
				}
				reportCPU(b, start)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		run("forward", func() { c.ConvForward(g, y, x, w, bias, ws) })
		run("backward-data", func() { c.ConvBackwardData(g, dx, y, w, ws) })
		run("backward-filter", func() { c.ConvBackwardFilter(g, dw, bias, y, x, ws) })
	}
}

// TestCol2imSameBitsAsScalarLoop: col2im's fast paths (shifted rows kept in
// a register, strided row adds) add every element's terms in the order of
// the plain loop over (c, r, s, oh, ow), so their bits match it exactly.
func TestCol2imSameBitsAsScalarLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for _, g := range []gpu.ConvGeom{
		{N: 1, C: 3, H: 12, W: 12, K: 1, R: 5, S: 5},
		{N: 1, C: 2, H: 14, W: 20, K: 1, R: 3, S: 5, StrideH: 2},
		{N: 1, C: 2, H: 9, W: 9, K: 1, R: 3, S: 3, PadH: 1, PadW: 1},
		{N: 1, C: 2, H: 9, W: 9, K: 1, R: 3, S: 3, StrideW: 2, PadW: 1},
	} {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		col := gputest.Rand(rng, cg(&g).ColRows()*g.OH*g.OW)
		got, want := gputest.Rand(rng, g.C*g.H*g.W), make([]float32, g.C*g.H*g.W)
		copy(want, got)
		cg(&g).col2im(got, col)
		for c := 0; c < g.C; c++ {
			for r := 0; r < g.R; r++ {
				for s := 0; s < g.S; s++ {
					for oh := 0; oh < g.OH; oh++ {
						for ow := 0; ow < g.OW; ow++ {
							ih, iw := oh*g.StrideH-g.PadH+r, ow*g.StrideW-g.PadW+s
							if ih >= 0 && ih < g.H && iw >= 0 && iw < g.W {
								want[(c*g.H+ih)*g.W+iw] += col[((c*g.R+r)*g.S+s)*g.OH*g.OW+oh*g.OW+ow]
							}
						}
					}
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v: col2im differs from the scalar loop", g)
		}
	}
}
