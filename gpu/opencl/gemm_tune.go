//go:build opencl

package opencl

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cotrain/cotrain/gpu"
)

// The GEMM tuner: which built variant (gemm.go) runs each product.
//
// The choice is the tuner's, the timing the backend's: a gemmTuner holds
// the per-size winners of square products (timed once per device and
// driver, or read from the tuning file), the per-shape winners of the
// products networks run (gemmFor times a new shape with every variant) and
// of the batched launches of Winograd and FFT (batchedGemm), and where the
// tuning is saved. It never touches the device; the backend times and
// hands it what it measured. Because every variant sums in the same order
// (see gemm.cl), its choices change speed only, never the bits.
//
// A backend builds its tuner in New from Config.CacheDir and Config.Tune
// (tuneGemm); a test that needs another one builds it with newGemmTuner
// and load, and runs its products with it (OpenCL.withTuner in the tests).

// gemmTuner chooses GEMM variants. It is used by one backend at a time,
// like the backend itself.
type gemmTuner struct {
	vars  []*gemmVariant // the built variants, by increasing tile area
	key   string         // their build options and names (buildGemms), in the file's name
	units int            // the device's compute units (pick's occupancy rule)
	kn    *knobs         // gemmSplits' targets (occupancy counts the split-k layers)
	log   *slog.Logger

	sel     int                        // index of the default variant in vars
	bySize  []gemmSizeChoice           // the winner per timed size, by size
	rates   map[int]map[string]float64 // GFLOPS per timed size and variant
	byShape map[gemmShape]int          // the measured winner per product shape
	// timeShapes says whether a new shape is timed (gemmFor, batchedGemm).
	timeShapes bool
	tuned      gemmTuning // the tuning as saved, shapes included
	path       string     // the tuning file; "" keeps it in memory
	// batched is the variant of each batched launch's shape: Winograd's
	// and FFT's products (batchedGemm), in this process only.
	batched map[batchShape]int
}

// newGemmTuner returns a tuner over vars (built, by increasing tile area)
// that saves to path ("" for nowhere) and, when timeShapes, lets new
// product shapes be timed. Until load or apply installs winners, every
// size takes the largest variant.
func newGemmTuner(vars []*gemmVariant, info gpu.DeviceInfo, kn *knobs, log *slog.Logger, path string, timeShapes bool) *gemmTuner {
	return &gemmTuner{vars: vars, units: info.ComputeUnits, kn: kn, log: log, sel: len(vars) - 1, path: path,
		timeShapes: timeShapes && len(vars) > 1}
}

// gemmTuning is the tuner's saved result.
type gemmTuning struct {
	Device string `json:"device"`
	Driver string `json:"driver"`
	// Best names the fastest variant per timed size (n of n×n×n products).
	Best map[int]string `json:"best"`
	// GFLOPS per size and variant, as measured.
	GFLOPS map[int]map[string]float64 `json:"gflops"`
	// Shapes names the fastest variant per product shape (gemmShape's
	// String), as timed by gemmFor.
	Shapes map[string]string `json:"shapes,omitempty"`
}

// gemmSizeChoice is one tuned size and the index of its winner in vars.
type gemmSizeChoice struct{ size, index int }

// tuningPath is where dir keeps the tuning of device info for the GEMM
// programs built with key (their extra options and candidates,
// buildGemms); the name covers the kernel source too, so a change to any
// of them retunes.
func tuningPath(dir string, info gpu.DeviceInfo, key string) string {
	return filepath.Join(dir, "gemm-"+hashKey(deviceKey(info), kernelSource("gemm.cl"), key)+".json")
}

// load installs the tuning saved at t.path, if there is one that names a
// built variant, and reports whether it did.
func (t *gemmTuner) load() bool {
	if t.path == "" {
		return false
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return false
	}
	var tn gemmTuning
	return json.Unmarshal(data, &tn) == nil && t.apply(tn)
}

// apply installs tn's per-size winners (those that were built) and its
// shapes; the largest size's winner becomes the default. It reports
// whether any size applied (if none, nothing changed).
func (t *gemmTuner) apply(tn gemmTuning) bool {
	var by []gemmSizeChoice
	for size, name := range tn.Best {
		if i := t.index(name); i >= 0 && size > 0 {
			by = append(by, gemmSizeChoice{size, i})
		}
	}
	if len(by) == 0 {
		return false
	}
	slices.SortFunc(by, func(a, b gemmSizeChoice) int { return a.size - b.size })
	t.bySize, t.sel = by, by[len(by)-1].index
	t.rates = tn.GFLOPS
	t.tuned, t.byShape = tn, map[gemmShape]int{}
	for key, name := range tn.Shapes {
		var s gemmShape
		var ta, tb, as, bs, cs int
		_, err := fmt.Sscanf(key, "%dx%dx%d/t%1d%1d/v%1d%1d%1d/s%1d%1d%1d", &s.m, &s.n, &s.k, &ta, &tb, &s.avec, &s.bvec, &s.cvec,
			&as, &bs, &cs)
		s.ta, s.tb, s.aseg, s.bseg, s.cseg = ta == 1, tb == 1, as == 1, bs == 1, cs == 1
		if i := t.index(name); err == nil && i >= 0 && s.String() == key { // else not a shape this version writes
			t.byShape[s] = i
		}
	}
	return true
}

// save writes the tuning, shapes included, to t.path (when there is one);
// a failure only costs timing again next time.
func (t *gemmTuner) save() {
	if t.path == "" || len(t.tuned.Best) == 0 {
		return
	}
	data, _ := json.MarshalIndent(t.tuned, "", "  ")
	if err := writeAtomic(t.path, data); err != nil {
		t.log.Debug("gpu: opencl: gemm tuning not saved", "err", err)
	}
}

// index is the index of the variant named name, or -1.
func (t *gemmTuner) index(name string) int {
	for i, v := range t.vars {
		if v.Name == name {
			return i
		}
	}
	return -1
}

// Per-shape tuning. The square sizes the tuner times say little about the
// products networks run: on the H100, AlexNet's filter gradients (192×1600
// with k = 23,328, a few blocks of C cut into k-ranges) ran at 25 TFLOPS with
// the variant pick's rule chose and at 34 with the 64×64 one; fully
// connected layers at batch 32 differ as much. So, as cuDNN's benchmark
// mode does, the first product of each shape (sizes, transposes and how the
// operands load: plain or segmented, float4 or not) big enough to time
// (gemmShapeMinFlops) runs once with every variant, and the fastest serves
// that shape from then on. The variants sum in the same order (gemm.cl), so
// the choice changes speed only, never the bits. Timing writes C with beta
// 0, so a product with beta ≠ 0, or whose C shares memory with A or B, is
// not timed (pick's rule serves it). The winners join the tuning file,
// so a later process on the same device times nothing.

// gemmShape identifies a product for per-shape tuning.
type gemmShape struct {
	ta, tb           bool
	m, n, k          int
	avec, bvec, cvec int
	aseg, bseg, cseg bool
}

func (s gemmShape) String() string {
	return fmt.Sprintf("%dx%dx%d/t%d%d/v%d%d%d/s%d%d%d", s.m, s.n, s.k, b2i(s.ta), b2i(s.tb), s.avec, s.bvec, s.cvec,
		b2i(s.aseg), b2i(s.bseg), b2i(s.cseg))
}

// gemmShapeMinFlops is the least work (2·m·n·k) a product needs for its
// shape to be timed: below it launches, not the tiling, set the pace.
const gemmShapeMinFlops = 1e8

// mayTime reports whether a product or batched launch of flops work whose
// shape has no winner yet is to be timed.
func (t *gemmTuner) mayTime(flops float64) bool { return t.timeShapes && flops >= gemmShapeMinFlops }

// setShape records best as key's winner and saves the tuning.
func (t *gemmTuner) setShape(key gemmShape, best int) {
	if t.byShape == nil {
		t.byShape = map[gemmShape]int{}
	}
	t.byShape[key] = best
	if t.tuned.Shapes == nil {
		t.tuned.Shapes = map[string]string{}
	}
	t.tuned.Shapes[key.String()] = t.vars[best].Name
	t.save()
}

// gemmFor returns the index of the variant for a product: the shape's
// measured winner, timing the shape first when it is new and may be timed,
// else the tuner's pick.
func (o *OpenCL) gemmFor(ta, tb bool, m, n, k int, a, b mat, beta float32, c mat) int {
	aLen, bLen := k, n
	if ta {
		aLen = m
	}
	if tb {
		bLen = k
	}
	key := gemmShape{ta: ta, tb: tb, m: m, n: n, k: k, avec: a.vec(aLen), bvec: b.vec(bLen), cvec: c.vec(n),
		aseg: a.segl > 0, bseg: b.segl > 0, cseg: c.segl > 0}
	t := o.tuner
	if i, ok := t.byShape[key]; ok {
		return i
	}
	if !t.mayTime(2*float64(m)*float64(n)*float64(k)) || beta != 0 || c.m == a.m || c.m == b.m {
		return t.pick(m, n, k)
	}
	best, times, err := o.timeShape(ta, tb, m, n, k, a, b, c)
	if err != nil {
		t.log.Debug("gpu: opencl: gemm shape not timed", "shape", key.String(), "err", err)
		t.timeShapes = false // the device is in trouble; the launch that follows reports it
		return t.pick(m, n, k)
	}
	t.log.Debug("gpu: opencl: gemm shape timed", "shape", key.String(), "best", t.vars[best].Name, "times", times)
	t.setShape(key, best)
	return best
}

// batchShape is a batched launch of layers m×n×kc products over the GEMM's
// split-k layers (Winograd's 16 per tile element, FFT's one per frequency).
type batchShape struct{ layers, m, n, kc int }

// batchedGemm returns the GEMM variant for the batched launch of shape s
// that launch runs (what names the path in the log): as gemmFor does for a
// single product, the first launch of each shape large enough is timed with
// every variant, when the tuner times shapes and mayTime says the launch
// may (it writes C with beta 0), and the fastest serves the shape from then
// on (in this process: the tuning file holds single products only); else
// pick's variant does. Every variant sums in the same order, so the choice
// changes no bit.
func (o *OpenCL) batchedGemm(what string, s batchShape, pick func() int, mayTime bool, launch func(*gemmVariant)) *gemmVariant {
	t := o.tuner
	if i, ok := t.batched[s]; ok {
		return t.vars[i]
	}
	i := pick()
	if mayTime && t.mayTime(2*float64(s.layers)*float64(s.m)*float64(s.n)*float64(s.kc)) {
		shape := fmt.Sprintf("%dx%dx%dx%d", s.layers, s.m, s.n, s.kc)
		best, times, err := o.timeVariants(launch)
		if err != nil {
			t.log.Debug("gpu: opencl: "+what+" products not timed", "shape", shape, "err", err)
			return t.vars[i] // the device is in trouble; the launch that follows reports it
		}
		i = best
		t.log.Debug("gpu: opencl: "+what+" products timed", "shape", shape, "best", t.vars[i].Name, "times", times)
	}
	if t.batched == nil {
		t.batched = map[batchShape]int{}
	}
	t.batched[s] = i
	return t.vars[i]
}

// timeShape times the product with every variant (timeVariants).
func (o *OpenCL) timeShape(ta, tb bool, m, n, k int, a, b, c mat) (int, map[string]time.Duration, error) {
	return o.timeVariants(func(v *gemmVariant) { o.gemmRun(v, ta, tb, m, n, k, 1, a, b, 0, c, epilogue{}) })
}

// timeVariants runs launch with every variant of the tuner (once to warm
// up, then repeated to fill about 1 ms; the faster timing counts) and
// returns the fastest, ties to the smaller tile, with every variant's
// time. What was queued before is waited for first and not timed.
func (o *OpenCL) timeVariants(launch func(*gemmVariant)) (int, map[string]time.Duration, error) {
	if err := o.ctx.finish(); err != nil {
		return 0, nil, err
	}
	times := map[string]time.Duration{}
	best := -1
	vars := o.tuner.vars
	for i, v := range vars {
		run := func(reps int) (time.Duration, error) {
			t0 := time.Now()
			for r := 0; r < reps; r++ {
				launch(v)
			}
			err := o.ctx.finish()
			return time.Since(t0) / time.Duration(reps), err
		}
		if _, err := run(1); err != nil {
			return 0, nil, err
		}
		t, err := run(1)
		if err != nil {
			return 0, nil, err
		}
		if t < time.Millisecond {
			again, err := run(min(20, int(time.Millisecond/max(t, time.Microsecond))+1))
			if err != nil {
				return 0, nil, err
			}
			t = min(t, again)
		}
		times[v.Name] = t
		if best < 0 || t < times[vars[best].Name] {
			best = i
		}
	}
	return best, times, nil
}

// pick returns the index of the variant for an m×n×k product: the tuned
// winner at the tuned size nearest (in log scale) to the cube root of m·n·k,
// then smaller tiles while the grid (its split-k layers included) would
// leave more than half of the compute units idle. (The winners were timed
// on square products, whose occupancy they reflect; a thin product needs
// the step down.)
func (t *gemmTuner) pick(m, n, k int) int {
	i, size := t.sel, 0
	if len(t.bySize) > 0 {
		s := math.Cbrt(float64(m) * float64(n) * float64(max(k, 1)))
		best := math.Inf(1)
		for _, c := range t.bySize {
			if d := math.Abs(math.Log(s / float64(c.size))); d < best {
				best, i, size = d, c.index, c.size
			}
		}
	}
	splits, _ := t.kn.gemmSplits(m, n, k)
	for i > 0 && 2*blocks(t.vars[i], m, n)*splits < t.units {
		i--
	}
	// A C that the tile does not divide (AlexNet's 64 and 192 filters
	// against 128-row tiles; a 64×32 filter gradient cut into many
	// k-ranges): a smaller tile, when the padded area of C it computes,
	// divided by its measured rate at this size, takes at least 5% less time.
	// Without measured rates, the variant that pads least, when it at least
	// halves the padded area.
	best := i
	if rates := t.rates[size]; rates[t.vars[i].Name] > 0 {
		cost := func(j int) float64 { return float64(padded(t.vars[j], m, n)) / rates[t.vars[j].Name] }
		for j := i - 1; j >= 0; j-- {
			if rates[t.vars[j].Name] > 0 && cost(j) < 0.95*cost(best) {
				best = j
			}
		}
		return best
	}
	return t.leastPadded(i, m, n)
}

// leastPadded returns, among the variants up to i, the one that covers an
// m×n C with the least padded area when it at least halves i's, else i.
func (t *gemmTuner) leastPadded(i, m, n int) int {
	best := i
	for j := i - 1; j >= 0; j-- {
		if padded(t.vars[j], m, n) < padded(t.vars[best], m, n) {
			best = j
		}
	}
	if 2*padded(t.vars[best], m, n) <= padded(t.vars[i], m, n) {
		return best
	}
	return i
}

func blocks(v *gemmVariant, m, n int) int {
	return ((m + v.TSM - 1) / v.TSM) * ((n + v.TSN - 1) / v.TSN)
}

// padded is the area of C that v's work-groups cover for an m×n C.
func padded(v *gemmVariant, m, n int) int { return blocks(v, m, n) * v.TSM * v.TSN }

// tuneGemm returns a tuner over o's variants, built with key (buildGemms),
// saving to dir (none when ""): with the per-size choice from dir's saved
// tuning when there is one, else by timing (when tune is set), else the
// largest variant for every size; new shapes are timed when tune is set.
// Timing stays within about 2 s.
func (o *OpenCL) tuneGemm(key, dir string, tune bool) *gemmTuner {
	t := o.newTuner(key, dir, tune)
	if t.load() || !tune || len(o.gemms) == 1 {
		return t
	}
	tn, err := o.timeGemms(2 * time.Second)
	if err != nil {
		o.log.Debug("gpu: opencl: gemm tuning failed", "err", err)
		return t
	}
	t.apply(tn)
	o.log.Debug("gpu: opencl: gemm tuned", "best", tn.Best, "gflops", tn.GFLOPS)
	t.save()
	return t
}

// newTuner returns a tuner over o's variants, built with key, whose file
// lives in dir ("": none), timing new shapes when tune is set; nothing is
// loaded yet.
func (o *OpenCL) newTuner(key, dir string, tune bool) *gemmTuner {
	path := ""
	if dir != "" {
		path = tuningPath(dir, o.info, key)
	}
	t := newGemmTuner(o.gemms, o.info, &o.kn, o.log, path, tune)
	t.key = key
	return t
}

// timeGemms times each variant on n×n×n products (the values do not change
// the work) for n = 256, 512, 1024, 2048 while the budget lasts: a size is
// kept only when every variant finished it. The first size is always
// finished, whatever the budget: it is the least that yields a choice, and on
// a loaded machine (or a driver that compiles each kernel at its first
// launch) it may alone take longer than the budget; giving up there would
// throw away the time spent and leave the untuned default. The budget then
// decides whether a larger size is started and when one is abandoned. A
// variant is run once, then, if that took under 2 ms, repeated to fill about
// 2 ms; the faster of the two timings counts.
func (o *OpenCL) timeGemms(budget time.Duration) (gemmTuning, error) {
	start := time.Now()
	t := gemmTuning{Device: o.info.Name, Driver: o.info.Driver, Best: map[int]string{}, GFLOPS: map[int]map[string]float64{}}
	for i, size := range []int{256, 512, 1024, 2048} {
		a, errA := o.ctx.allocSized(size*size, o.esize())
		b, errB := o.ctx.allocSized(size*size, o.esize())
		c, errC := o.ctx.allocSized(size*size, o.esize())
		if err := errors.Join(errA, errB, errC); err != nil {
			if i == 0 {
				return t, fmt.Errorf("gpu: opencl: tuning at %d×%d: %w", size, size, err)
			}
			break
		}
		o.run1(kFill, size*size, a, 0, size*size, float32(0.5))
		o.run1(kFill, size*size, b, 0, size*size, float32(0.25))
		res := map[string]float64{}
		sizeStart := time.Now()
		for _, v := range o.gemms {
			run := func(reps int) (time.Duration, error) {
				t0 := time.Now()
				for r := 0; r < reps; r++ {
					o.gemmRun(v, false, false, size, size, size, 1, plainMat(a, 0, size), plainMat(b, 0, size), 0, plainMat(c, 0, size), epilogue{})
				}
				err := o.ctx.finish()
				return time.Since(t0) / time.Duration(reps), err
			}
			if _, err := run(1); err != nil { // warm-up
				return t, err
			}
			best, err := run(1)
			if err != nil {
				return t, err
			}
			if best < 2*time.Millisecond {
				reps := min(50, int(2*time.Millisecond/max(best, time.Microsecond))+1)
				again, err := run(reps)
				if err != nil {
					return t, err
				}
				best = min(best, again)
			}
			res[v.Name] = 2 * float64(size) * float64(size) * float64(size) / best.Seconds() / 1e9
			if i > 0 && time.Since(start) > budget {
				break
			}
		}
		if len(res) < len(o.gemms) {
			break // this size did not finish for every variant
		}
		t.GFLOPS[size] = res
		for _, v := range o.gemms { // ties go to the smaller tile
			if w, ok := t.Best[size]; !ok || res[v.Name] > res[w] {
				t.Best[size] = v.Name
			}
		}
		// The next size costs about 8 times as much.
		if time.Since(start)+8*time.Since(sizeStart) > budget {
			break
		}
	}
	return t, nil
}

// GemmVariants lists the built variants, by increasing tile size, and the
// default (the tuned winner at the largest tuned size).
func (o *OpenCL) GemmVariants() (names []string, selected string) {
	for _, v := range o.gemms {
		names = append(names, v.Name)
	}
	return names, o.gemms[o.tuner.sel].Name
}

// GemmVariantFor names the variant an m×n×k product runs with (when its
// shape was not timed).
func (o *OpenCL) GemmVariantFor(m, n, k int) string { return o.tuner.variantFor(m, n, k) }

// variantFor names the variant pick gives an m×n×k product.
func (t *gemmTuner) variantFor(m, n, k int) string { return t.vars[t.pick(m, n, k)].Name }
