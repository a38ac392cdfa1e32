//go:build opencl

package opencl

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// gemmShapes are odd sizes, none a multiple of the tiles, plus a few that are.
var gemmShapes = []struct{ m, n, k int }{
	{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {64, 64, 64}, {130, 70, 257}, {1, 200, 31}, {200, 1, 300}, {129, 129, 16}, {6, 576, 25},
	{132, 260, 36}, {257, 131, 45}, {4, 8, 0},
	{20, 50, 1024}, {33, 65, 1537}, {200, 130, 2500}, {36, 44, 600}, // split in k: 4, 4, 8 and 2 ranges
	{5, 6, 17000}, // 32 ranges (more than 8: a filter gradient over a large image)
}

func TestOpenCLGemm(t *testing.T) { bothStorages(t, testOpenCLGemm) }

func testOpenCLGemm(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(11, 12))
	for _, s := range gemmShapes {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, ab := range [][2]float32{{1, 0}, {0.5, -1.5}} {
				name := fmt.Sprintf("%dx%dx%d/ta=%v/tb=%v/alpha=%v/beta=%v", s.m, s.n, s.k, tr[0], tr[1], ab[0], ab[1])
				a, b := newTwin(o, gputest.Rand(r, s.m*s.k)), newTwin(o, gputest.Rand(r, s.k*s.n))
				c := newTwin(o, gputest.Rand(r, s.m*s.n))
				cpu.Gemm(tr[0], tr[1], s.m, s.n, s.k, ab[0], a.cpu, b.cpu, ab[1], c.cpu)
				o.Gemm(tr[0], tr[1], s.m, s.n, s.k, ab[0], a.cl, b.cl, ab[1], c.cl)
				c.check(t, o, name)
			}
		}
	}
}

// TestOpenCLGemmVariantsAgree checks that every tiling gives the same bits,
// on views at offsets: the tuner's choice must not change results. Offset 3
// takes the scalar loads, offset 4 (with sizes that are multiples of 4) the
// float4 ones.
func TestOpenCLGemmVariantsAgree(t *testing.T) { bothStorages(t, testOpenCLGemmVariantsAgree) }

func testOpenCLGemmVariantsAgree(t *testing.T, o *OpenCL) {
	r := rand.New(rand.NewPCG(13, 14))
	names, _ := o.GemmVariants()
	if len(names) < 2 {
		t.Skipf("only %v built", names)
	}
	for _, s := range gemmShapes {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, off := range []int{3, 4} {
				all := o.Alloc(off + s.m*s.k + s.k*s.n + 4)
				o.Upload(all, gputest.Rand(r, all.Len()))
				a := o.buf(o.View(all, off, s.m*s.k))
				b := o.buf(o.View(all, off+s.m*s.k, s.k*s.n))
				prods := variantProducts(o, s.m, s.n, s.k, tr, a, b, 0.75)
				for i, got := range prods[1:] {
					if !slices.Equal(got, prods[0]) {
						t.Errorf("%+v %v offset %d: variant %s differs from %s", s, tr, off, o.gemms[i+1].Name, o.gemms[0].Name)
					}
				}
			}
		}
	}
}

// tuningTest returns the shared test backend (skipping where one GEMM
// variant built: nothing to choose), a fresh folder and the tuning file
// the backend's tuner would keep there.
func tuningTest(t *testing.T) (o *OpenCL, dir, path string) {
	o = openCLForTest(t)
	if len(o.gemms) < 2 {
		t.Skip("one variant built")
	}
	dir = t.TempDir()
	return o, dir, tuningPath(dir, o.info, o.tuner.key)
}

// TestOpenCLGemmShapeTuning checks per-shape tuning (gemmFor): a new shape
// big enough is timed once with every variant, its winner serves it, gives
// the bits of any variant and joins the tuning file, which a later open
// reads without timing; products with beta ≠ 0, small ones, and any with
// tuning off are not timed.
func TestOpenCLGemmShapeTuning(t *testing.T) {
	o, dir, path := tuningTest(t)
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`{"best": {"256": %q}}`, o.gemms[0].Name)), 0o644); err != nil {
		t.Fatal(err)
	}
	useTuner(t, o, o.tuneGemm(o.tuner.key, dir, true)) // the sizes from the file, shapes timed from now on
	r := rand.New(rand.NewPCG(19, 20))
	const m, n, k = 512, 516, 508 // 2.7e8 flops
	a, b := o.Alloc(m*k), o.Alloc(k*n)
	o.Upload(a, forStorage(o, gputest.Rand(r, m*k)))
	o.Upload(b, forStorage(o, gputest.Rand(r, k*n)))
	c := o.Alloc(m * n)
	o.Gemm(false, false, m, n, k, 1, a, b, 0, c)
	if len(o.tuner.byShape) != 1 {
		t.Fatalf("after one product of a new shape: %d shapes timed, want 1", len(o.tuner.byShape))
	}
	got := download(o, c)
	as, bs, cs := o.buf(a), o.buf(b), o.buf(c)
	for _, v := range o.gemms {
		o.gemmRun(v, false, false, m, n, k, 1, plainMat(as.m, as.off, k), plainMat(bs.m, bs.off, n), 0, plainMat(cs.m, cs.off, n), epilogue{})
		if !slices.Equal(download(o, c), got) {
			t.Fatalf("variant %s gives other bits than the timed choice", v.Name)
		}
	}
	o.Gemm(false, false, m, n, k, 1, a, b, 1, c)    // the same shape: known
	o.Gemm(true, false, m, n, k, 1, a, b, 0.5, c)   // a new shape, but beta ≠ 0: not timed
	o.Gemm(false, false, 64, 64, 64, 1, a, b, 0, c) // small: not timed
	// A new shape, beta 0 and large, but C shares an allocation with A and
	// with B (views side by side): not timed either; the product is right.
	const n2 = n + 4
	ab := o.Alloc(m*k + k*n2 + m*n2)
	a2, b2, c2 := o.View(ab, 0, m*k), o.View(ab, m*k, k*n2), o.View(ab, m*k+k*n2, m*n2)
	o.Copy(a2, a)
	o.Upload(b2, forStorage(o, gputest.Rand(r, k*n2)))
	o.Gemm(false, false, m, n2, k, 1, a2, b2, 0, c2)
	want2 := o.Alloc(m * n2)
	o.gemmRun(o.gemms[0], false, false, m, n2, k, 1, plainMat(as.m, as.off, k), plainMat(o.buf(b2).m, o.buf(b2).off, n2), 0,
		plainMat(o.buf(want2).m, 0, n2), epilogue{})
	if !slices.Equal(download(o, c2), download(o, want2)) {
		t.Error("product whose C shares an allocation with A and B: wrong result")
	}
	if len(o.tuner.byShape) != 1 {
		t.Errorf("%d shapes timed, want 1: %v", len(o.tuner.byShape), o.tuner.byShape)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var saved gemmTuning
	if err := json.Unmarshal(data, &saved); err != nil || len(saved.Shapes) != 1 {
		t.Fatalf("tuning file %s: %v, shapes %v", data, err, saved.Shapes)
	}
	// A later open reads the shape and, tuning off, times nothing new.
	useTuner(t, o, o.tuneGemm(o.tuner.key, dir, false))
	if len(o.tuner.byShape) != 1 {
		t.Fatalf("from the file: %d shapes, want 1", len(o.tuner.byShape))
	}
	o.Gemm(true, false, m, n, k, 1, a, b, 0, c)
	if len(o.tuner.byShape) != 1 {
		t.Errorf("tuning off: a new shape was timed")
	}
}

// TestOpenCLGemmTuningFileShapes: the tuning file's shapes come from disk,
// which an older version or a hand may have written: entries whose key is
// not one this version writes (another layout, a transpose flag of 2,
// trailing text, no key at all) or whose variant was not built are
// skipped, the rest serve their shapes, and a "shapes" that is not a map
// makes the whole file ignored rather than half applied.
func TestOpenCLGemmTuningFileShapes(t *testing.T) {
	o, dir, path := tuningTest(t)
	good := gemmShape{m: 512, n: 516, k: 508, avec: 1, bvec: 1, cvec: 1}
	v0, v1 := o.gemms[0].Name, o.gemms[1].Name
	shapes := map[string]string{
		good.String():                  v1,
		"512x516x508/t00/v111":         v0, // an older layout
		"512x516x508/t20/v111/s000":    v0,
		"512x516x508/t00/v111/s000x":   v0,
		"512x516x508/t00/v111/s0001":   v0,
		"":                             v0,
		"garbage":                      v0,
		"64x64x64/t00/v111/s000":       "nope/1x1/k1", // not built
		"1x2x3/t11/v000/s111":          v0,
		"99999999999999999999x1x1/t00": v0,
	}
	data, err := json.Marshal(map[string]any{"best": map[string]string{"256": v0}, "shapes": shapes})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	useTuner(t, o, o.tuneGemm(o.tuner.key, dir, false))
	want := map[gemmShape]int{good: 1, {ta: true, tb: true, m: 1, n: 2, k: 3, aseg: true, bseg: true, cseg: true}: 0}
	if len(o.tuner.byShape) != len(want) {
		t.Fatalf("shapes from the file: %v, want %v", o.tuner.byShape, want)
	}
	for s, i := range want {
		if got, ok := o.tuner.byShape[s]; !ok || got != i {
			t.Errorf("shape %v: variant %d (present %v), want %d", s, got, ok, i)
		}
	}
	if i := o.gemmFor(false, false, 512, 516, 508, plainMat(nil, 0, 508), plainMat(nil, 0, 516), 0, plainMat(nil, 0, 516)); i != 1 {
		t.Errorf("gemmFor of the saved shape: variant %d, want 1 (the file's)", i)
	}
	// "shapes" of the wrong type: the file is not used at all.
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`{"best": {"256": %q}, "shapes": 5}`, v0)), 0o644); err != nil {
		t.Fatal(err)
	}
	tn := o.tuneGemm(o.tuner.key, dir, false)
	if len(tn.byShape) != 0 || len(tn.bySize) != 0 {
		t.Errorf("a file whose shapes is not a map: sizes %v, shapes %v applied", tn.bySize, tn.byShape)
	}
}

// segOperand stores a rows×(nb·hw) matrix as channels [1, 1+rows) of an
// nb×(rows+2)×hw tensor at element 4 of a buffer, the way a convolution's
// batch tensors enter a GEMM, and gives the matrix both ways.
type segOperand struct {
	buf   gpu.Buffer
	plain []float32 // the logical matrix, row-major
	m     mat
}

func newSegOperand(o *OpenCL, r *rand.Rand, rows, cols, hw int) segOperand {
	nb, chans := cols/hw, rows+2
	data := forStorage(o, gputest.Rand(r, 4+nb*chans*hw))
	buf := o.Alloc(len(data))
	o.Upload(buf, data)
	plain := make([]float32, rows*cols)
	for i := 0; i < rows; i++ {
		for c := 0; c < cols; c++ {
			plain[i*cols+c] = data[4+(c/hw*chans+1+i)*hw+c%hw]
		}
	}
	cb := o.buf(o.View(buf, 4, len(data)-4))
	return segOperand{buf: buf, plain: plain, m: batchMat(cb, 0, nb, 1, chans, hw)}
}

// gather reads the logical matrix back from the device tensor.
func (s segOperand) gather(o *OpenCL, rows, cols, hw int) []float32 {
	data := download(o, s.buf)
	chans := rows + 2
	out := make([]float32, rows*cols)
	for i := 0; i < rows; i++ {
		for c := 0; c < cols; c++ {
			out[i*cols+c] = data[4+(c/hw*chans+1+i)*hw+c%hw]
		}
	}
	return out
}

// TestOpenCLGemmSegmented checks products whose three operands are all
// segmented (batch tensors read as one matrix) against the CPU on the same
// matrices stored plainly: segments of 16 (float4 loads) and of 7 (scalar).
func TestOpenCLGemmSegmented(t *testing.T) { bothStorages(t, testOpenCLGemmSegmented) }

func testOpenCLGemmSegmented(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(15, 16))
	for _, c := range []struct{ hw, m, n, k int }{{16, 3, 5, 9}, {7, 3, 5, 9}, {32, 2, 3, 40}} { // the last is split in k
		hw, m, n, k := c.hw, c.m*c.hw, c.n*c.hw, c.k*c.hw
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			ar, ac := m, k
			if tr[0] {
				ar, ac = k, m
			}
			br, bc := k, n
			if tr[1] {
				br, bc = n, k
			}
			a, b := newSegOperand(o, r, ar, ac, hw), newSegOperand(o, r, br, bc, hw)
			for _, v := range o.gemms {
				c := newSegOperand(o, r, m, n, hw) // beta -1: C is read too
				want := append([]float32(nil), c.plain...)
				cpu.Gemm(tr[0], tr[1], m, n, k, 0.5, gpu.Host(a.plain), gpu.Host(b.plain), -1, gpu.Host(want))
				o.gemmRun(v, tr[0], tr[1], m, n, k, 0.5, a.m, b.m, -1, c.m, epilogue{})
				assertCloseFor(t, o, fmt.Sprintf("hw %d %v %s", hw, tr, v.Name), c.gather(o, m, n, hw), want)
			}
		}
	}
}

func TestGemmSplits(t *testing.T) {
	for _, c := range []struct{ m, n, k, splits int }{
		{1024, 1024, 1024, 4}, {2048, 2048, 2048, 1}, {1536, 1536, 1536, 2}, {50, 500, 4096, 16}, {20, 25, 36864, 128},
		{64, 500, 800, 2}, {64, 500, 511, 1}, {20, 50, 512, 2}, {20, 50, 1023, 2}, {20, 50, 1024, 4}, {1, 1, 1 << 20, 256},
		{64, 32, 32 * 112 * 112, 256}, {192, 1600, 32 * 27 * 27, 16}, {1024, 1024, 32 * 7 * 7, 4},
		{4, 8, 0, 1},
	} {
		kn := defaultKnobs()
		s, kc := kn.gemmSplits(c.m, c.n, c.k)
		if s != c.splits || kc%32 != 0 || s*kc < c.k || (s > 1 && (s-1)*kc >= c.k) {
			t.Errorf("%dx%dx%d: %d ranges of %d, want %d ranges of a multiple of 32 covering k", c.m, c.n, c.k, s, kc, c.splits)
		}
	}
}

func TestGemmVariantNames(t *testing.T) {
	for _, v := range gemmCandidates {
		got, err := parseGemmVariant(v.Name)
		if err != nil {
			t.Errorf("%s: %v", v.Name, err)
			continue
		}
		got.k = v.k
		if got != v {
			t.Errorf("%s parses as %+v, want %+v", v.Name, got, v)
		}
	}
	for _, bad := range []string{"", "128x128", "128x128/8x8", "128x128/8x8/k16x", "128x128/6x8/k16", "128x128/8x8/k6",
		"100x128/8x8/k16", "32x32/4x4/k4", "128x128/8x8/k16/w", "128x128/8x8/k16/w3", "64x64/8x4/k16/w2", "128x128/8x8/k16/w2x", "0x0/4x4/k4", "-4x4/4x4/k4"} {
		if _, err := parseGemmVariant(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	list, err := gemmCandidateList([]string{"128x128/8x8/k8", " 32x32/4x4/k16"})
	if err != nil || len(list) != 2 || list[0].Name != "32x32/4x4/k16" {
		t.Errorf("list %+v, %v: want two, smallest tile first", list, err)
	}
}

// TestOpenCLTuner checks the tuner keeps to its budget and that its choice
// is saved and read back. The budget is checked by what the tuner decided,
// not by the wall clock (which a loaded machine stretches at will): a spent
// budget still finishes the first size, every variant of it, and starts no
// other.
func TestOpenCLTuner(t *testing.T) {
	o := openCLForTest(t)
	tn, err := o.timeGemms(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tn.Best) != 1 || tn.Best[256] == "" || len(tn.GFLOPS) != 1 || len(tn.GFLOPS[256]) != len(o.gemms) {
		t.Fatalf("tuning with no budget: %+v, want every variant at 256 and no other size", tn)
	}
	t.Logf("device %s: GFLOPS %v, best %v", o.info.Name, tn.GFLOPS, tn.Best)

	dir := t.TempDir()
	o.tuneGemm(o.tuner.key, dir, true)
	files, _ := filepath.Glob(filepath.Join(dir, "gemm-*.json"))
	if len(files) != 1 {
		t.Fatalf("tuning files %v", files)
	}
	// A saved choice is taken without timing (tune false): write one naming
	// the smallest variant for 256 and the largest for 2048, and check that
	// products are routed by size (the largest only where its grid has at
	// least one block per compute unit).
	small, large := o.gemms[0].Name, o.gemms[len(o.gemms)-1].Name
	data := []byte(fmt.Sprintf(`{"best": {"256": %q, "2048": %q}}`, small, large))
	if err := os.WriteFile(files[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	tuner := o.tuneGemm(o.tuner.key, dir, false)
	if got := tuner.variantFor(200, 300, 250); got != small {
		t.Errorf("200x300x250 runs %s, want %s", got, small)
	}
	big := 128 * (o.info.ComputeUnits + 1)
	if got := tuner.variantFor(big, 2048, 2048); got != large {
		t.Errorf("%dx2048x2048 runs %s, want %s", big, got, large)
	}
	if sel := tuner.vars[tuner.sel].Name; sel != large {
		t.Errorf("default variant %s, want %s", sel, large)
	}
	// With measured rates, a C of 64 rows runs with the small tile when
	// the large one would compute twice its area at less than twice the
	// rate; 128·k rows stay with the large one.
	data = []byte(fmt.Sprintf(`{"best": {"256": %q, "2048": %q}, "gflops": {"2048": {%q: 30000, %q: 40000}}}`,
		small, large, small, large))
	if err := os.WriteFile(files[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	tuner = o.tuneGemm(o.tuner.key, dir, false)
	if got := tuner.variantFor(64, big, 1<<16); got != small && small != large {
		t.Errorf("64x%dx65536 runs %s, want %s", big, got, small)
	}
	if got := tuner.variantFor(big, big, 1<<16); got != large {
		t.Errorf("%dx%dx65536 runs %s, want %s", big, big, got, large)
	}
	// A file naming no built variant is ignored.
	os.WriteFile(files[0], []byte(`{"best": {"256": "9x9/1x1"}}`), 0o644)
	tuner = o.tuneGemm(o.tuner.key, dir, false)
	if tuner.bySize != nil || tuner.sel != len(o.gemms)-1 {
		t.Errorf("unknown variant applied: %v", tuner.bySize)
	}
}

// TestOpenCLProgramCache builds a backend twice on a fresh cache folder: the
// second loads the binaries, and a corrupted binary falls back to source.
func TestOpenCLProgramCache(t *testing.T) {
	openCLForTest(t) // skips without a device
	dir := t.TempDir()
	cfg := envConfig()
	cfg.CacheDir, cfg.Tune = dir, false
	cfg.Index = openCLForTest(t).info.Index
	// A device whose reduction kernels refuse the first work-group size
	// builds (and caches) the main program more than once on a fresh cache:
	// at least 1+variants binaries, and the later rounds add none.
	first := 0
	for round := 0; round < 3; round++ {
		o, err := New(cfg)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		x := o.Alloc(5)
		o.Fill(x, 3)
		o.Scale(x, 2)
		if got := download(o, x); got[4] != 6 {
			t.Errorf("round %d: %v", round, got)
		}
		variants := len(o.gemms)
		o.Close()
		bins, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
		if round == 0 {
			first = len(bins)
		}
		if len(bins) < 1+variants || len(bins) != first {
			t.Fatalf("round %d: %d binaries cached, want %d as in round 0, at least %d", round, len(bins), first, 1+variants)
		}
		if round == 1 {
			for _, b := range bins {
				os.WriteFile(b, []byte("not a binary"), 0o644)
			}
		}
	}
}

// benchOpenCL opens the device COTRAIN_TEST_DEVICE names (opencl:N), else
// the first GPU, with the GEMM tuned; COTRAIN_OPENCL_DEBUG=1 logs the build
// (with COTRAIN_OPENCL_GEMM_OPTS=-cl-nv-verbose, NVIDIA's register counts)
// and the tuning.
func benchOpenCL(b *testing.B) *OpenCL { return benchOpenCLKnobs(b, func(*knobs) {}) }

// benchOpenCLKnobs is benchOpenCL with the knobs set changes.
func benchOpenCLKnobs(b *testing.B, set func(kn *knobs)) *OpenCL {
	cfg := envConfig()
	kn := defaultKnobs()
	set(&kn)
	cfg.knobs = &kn
	if d := os.Getenv("COTRAIN_TEST_DEVICE"); d != "" {
		fmt.Sscanf(d, "opencl:%d", &cfg.Index)
	}
	if os.Getenv("COTRAIN_OPENCL_DEBUG") == "1" {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o, err := New(cfg)
	if err != nil {
		b.Skip(err)
	}
	return o
}

// sgemmBench times C = op(A)·op(B) for n×n×n products with variant v (nil:
// the backend's own choice) and reports GFLOPS.
func sgemmBench(b *testing.B, o *OpenCL, v *gemmVariant, n int, ta, tb bool) {
	r := rand.New(rand.NewPCG(1, 1))
	a, bb, c := o.Alloc(n*n), o.Alloc(n*n), o.Alloc(n*n)
	o.Upload(a, gputest.Rand(r, n*n))
	o.Upload(bb, gputest.Rand(r, n*n))
	as, bs, cs := o.buf(a), o.buf(bb), o.buf(c)
	run := func() {
		if v == nil {
			o.Gemm(ta, tb, n, n, n, 1, a, bb, 0, c)
		} else {
			o.gemmRun(v, ta, tb, n, n, n, 1, plainMat(as.m, 0, n), plainMat(bs.m, 0, n), 0, plainMat(cs.m, 0, n), epilogue{})
		}
	}
	run() // warm-up
	must(o.Finish())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	// The host's share: when enqueueing takes about as long as the whole
	// run, launches, not the kernel, set the pace.
	enqueued := b.Elapsed()
	must(o.Finish())
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	b.ReportMetric(float64(enqueued.Microseconds())/float64(b.N), "enqueue-µs/op")
}

// BenchmarkOpenCLSgemm times C = A·B for square sizes with the tuned choice
// and reports GFLOPS; nt, tn and tt are the transposed cases at 2048. It
// logs the device (compute units and maximum clock, for the FP32 peak:
// units × FP32 lanes per unit × 2 × clock; the lanes per unit come from the
// vendor's architecture, 128 per SM on an H100).
func BenchmarkOpenCLSgemm(b *testing.B) {
	o := benchOpenCL(b)
	defer o.Close()
	_, sel := o.GemmVariants()
	b.Logf("device: %s; gemm default %s", o.info, sel)
	for _, n := range []int{1024, 2048, 4096} {
		b.Run(fmt.Sprintf("%d/%s", n, o.GemmVariantFor(n, n, n)), func(b *testing.B) { sgemmBench(b, o, nil, n, false, false) })
	}
	for _, tr := range []struct {
		name   string
		ta, tb bool
	}{{"tn", true, false}, {"nt", false, true}, {"tt", true, true}} {
		b.Run(fmt.Sprintf("2048%s/%s", tr.name, o.GemmVariantFor(2048, 2048, 2048)), func(b *testing.B) { sgemmBench(b, o, nil, 2048, tr.ta, tr.tb) })
	}
}

// BenchmarkOpenCLSgemmVariants times every built variant at 1024, 2048 and
// 4096 (what the tuner chooses from).
func BenchmarkOpenCLSgemmVariants(b *testing.B) {
	o := benchOpenCL(b)
	defer o.Close()
	for _, v := range o.gemms {
		for _, n := range []int{1024, 2048, 4096} {
			b.Run(fmt.Sprintf("%s/%d", v.Name, n), func(b *testing.B) { sgemmBench(b, o, v, n, false, false) })
		}
	}
}

// BenchmarkOpenCLSgemmSplit times 1024³ with every variant, split in k as
// gemmSplits says with targets of 128 blocks and ranges of 512 (2 ranges at
// 1024³), 256 and 256 (4 ranges, the defaults) or 512 and 128 (8 ranges),
// all in one run.
func BenchmarkOpenCLSgemmSplit(b *testing.B) {
	for _, t := range [][2]int{{128, 512}, {256, 256}, {512, 128}} {
		o := benchOpenCLKnobs(b, func(kn *knobs) { kn.splitTiles, kn.splitDepth = t[0], t[1] })
		for _, v := range o.gemms {
			s, _ := o.kn.gemmSplits(1024, 1024, 1024)
			b.Run(fmt.Sprintf("split=%d/%s", s, v.Name), func(b *testing.B) { sgemmBench(b, o, v, 1024, false, false) })
		}
		o.Close()
	}
	// Where the time of 4 ranges (the default targets, 256 and 256) goes:
	// the product kernel alone (no sum), and gemm_sum in work-groups of
	// 64, 128 and 256.
	o := benchOpenCL(b)
	defer o.Close()
	name := "128x128/8x8/k16"
	if o.tuner.index(name) < 0 {
		name = o.gemms[len(o.gemms)-1].Name
	}
	v := o.gemms[o.tuner.index(name)]
	b.Run("split=4/body-only/"+v.Name, func(b *testing.B) {
		s, kc := o.kn.gemmSplits(1024, 1024, 1024)
		ws := o.scratch(&o.splitWS, s*1024*1024)
		a, bb := o.buf(o.Alloc(1024*1024)), o.buf(o.Alloc(1024*1024))
		run := func() {
			o.gemmWith(v, false, false, 1024, 1024, 1024, 1, plainMat(a.m, 0, 1024), plainMat(bb.m, 0, 1024), 0, plainMat(ws, 0, 1024), kc, s, ws, epilogue{})
		}
		run()
		must(o.Finish())
		b.ResetTimer()
		for range b.N {
			run()
		}
		must(o.Finish())
		b.ReportMetric(2*1024*1024*1024*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	})
	for _, wg := range []int{64, 128, 256} {
		ow := benchOpenCLKnobs(b, func(kn *knobs) { kn.gemmSumWG = wg })
		v := ow.gemms[ow.tuner.index(name)]
		b.Run(fmt.Sprintf("split=4/sum-wg=%d/%s", wg, v.Name), func(b *testing.B) { sgemmBench(b, ow, v, 1024, false, false) })
		ow.Close()
	}
}

func TestRedParts(t *testing.T) {
	for _, c := range []struct{ m, l, p int }{
		{1, 1, 1}, {16384, 16384, 1}, {16385, 8192, 3}, {18000, 8192, 3}, {32 * 112 * 112, 8192, 49},
	} {
		kn := defaultKnobs()
		if l, p := kn.redParts(c.m); l != c.l || p != c.p || (p > 1 && ((p-1)*l >= c.m || p*l < c.m)) {
			t.Errorf("redParts(%d) = %d, %d; want %d, %d", c.m, l, p, c.l, c.p)
		}
	}
}

// TestOpenCLGemmOrderAgrees checks that the order of the register block's
// products (gemm.cl's GEMM_ZIGZAG, on by default) changes no bits: a
// backend built with -D GEMM_ZIGZAG=0 gives every product of gemmShapes,
// in every transpose case, exactly as the default one does.
func TestOpenCLGemmOrderAgrees(t *testing.T) {
	def := openCLForTest(t) // skips without a device
	cfg := envConfig()
	cfg.CacheDir, cfg.Tune = t.TempDir(), false
	cfg.Index = def.info.Index
	cfg.GemmVariants = []string{"32x32/4x4/k16", "128x128/8x8/k16"}
	cfg.GemmOptions = "-D GEMM_ZIGZAG=0"
	rows, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	r := rand.New(rand.NewPCG(15, 16))
	for _, s := range gemmShapes {
		if s.k == 0 {
			continue // nothing to order
		}
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			a, b := gputest.Rand(r, s.m*s.k), gputest.Rand(r, s.k*s.n)
			var want []float32
			for _, o := range []*OpenCL{def, rows} {
				ab, bb := o.Alloc(len(a)), o.Alloc(len(b))
				o.Upload(ab, a)
				o.Upload(bb, b)
				for i, got := range variantProducts(o, s.m, s.n, s.k, tr, o.buf(ab), o.buf(bb), 1) {
					if want == nil {
						want = got
					} else if !slices.Equal(got, want) {
						t.Errorf("%+v %v: variant %s with GEMM_ZIGZAG=%v differs", s, tr, o.gemms[i].Name, o == def)
					}
				}
			}
		}
	}
}

// TestGemmRegCap checks which variants get NVIDIA's register cap: work-groups
// of 256 items, capped so that two share 65,536 registers, on devices that
// take NVIDIA's build options only.
func TestGemmRegCap(t *testing.T) {
	nv := gpu.DeviceInfo{NVOptions: true}
	for _, c := range []struct {
		name string
		info gpu.DeviceInfo
		want string
	}{
		{"128x128/8x8/k16", nv, "-D GEMM_WG_HINT -cl-nv-maxrregcount=128"},
		{"128x128/8x8/k16/w2", nv, "-D GEMM_WG_HINT -cl-nv-maxrregcount=128"},
		{"128x128/4x8/k16", nv, "-D GEMM_WG_HINT -cl-nv-maxrregcount=64"}, // 512 items
		{"64x64/8x4/k16/w4", nv, ""},                                      // 128 items fit twice uncapped
		{"32x32/4x4/k16", nv, ""},
		{"128x128/8x8/k16", gpu.DeviceInfo{}, ""}, // not NVIDIA
	} {
		v, err := parseGemmVariant(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := gemmRegCap(c.info, &v); got != c.want {
			t.Errorf("%s, NVOptions %v: %q, want %q", c.name, c.info.NVOptions, got, c.want)
		}
	}
}

// variantProducts returns alpha·op(A)·op(B) as every built variant computes
// it (op transposes where tr says: A stored k×m, B n×k), in o.gemms' order.
func variantProducts(o *OpenCL, m, n, k int, tr [2]bool, a, b *clBuf, alpha float32) [][]float32 {
	lda, ldb := k, n
	if tr[0] {
		lda = m
	}
	if tr[1] {
		ldb = k
	}
	var out [][]float32
	for _, v := range o.gemms {
		c := o.buf(o.Alloc(m * n))
		o.gemmRun(v, tr[0], tr[1], m, n, k, alpha, plainMat(a.m, a.off, lda), plainMat(b.m, b.off, ldb), 0, plainMat(c.m, c.off, n), epilogue{})
		out = append(out, download(o, c))
	}
	return out
}
