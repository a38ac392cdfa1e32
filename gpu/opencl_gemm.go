//go:build opencl

package gpu

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// GEMM variants and the auto-tuner.
//
// gemm.cl is compiled once per variant. The tuner times every variant that
// built and fits the device on a few square sizes, once per device and
// driver, and saves its choice as JSON next to the program binaries; later
// runs read the file. Because every variant sums in the same order (see
// gemm.cl), the choice affects speed only, never the bits.

// gemmVariant is one compiled tiling of gemm.cl.
type gemmVariant struct {
	Name       string // "64x64/4x4": block of C per work-group / per item
	TSM, TSN   int
	WPTM, WPTN int
	k          *clKernel
}

// gemmTSK is the tile depth of every variant (equal, so results are equal).
const gemmTSK = 16

// gemmCandidates are the tilings tried, by increasing tile area: a plain
// 16×16 tiling, small register blocks for small or mobile GPUs, and 128×128
// blocks with 8×8 registers per item for large desktop GPUs.
var gemmCandidates = []gemmVariant{
	{Name: "16x16/1x1", TSM: 16, TSN: 16, WPTM: 1, WPTN: 1},
	{Name: "32x32/4x4", TSM: 32, TSN: 32, WPTM: 4, WPTN: 4},
	{Name: "64x64/4x4", TSM: 64, TSN: 64, WPTM: 4, WPTN: 4},
	{Name: "128x128/8x8", TSM: 128, TSN: 128, WPTM: 8, WPTN: 8},
}

func (v *gemmVariant) options() string {
	return fmt.Sprintf("-D TSM=%d -D TSN=%d -D TSK=%d -D WPTM=%d -D WPTN=%d", v.TSM, v.TSN, gemmTSK, v.WPTM, v.WPTN)
}

func (v *gemmVariant) items() int { return (v.TSM / v.WPTM) * (v.TSN / v.WPTN) }

// fits reports whether the device can run the variant's work-group and tiles.
func (v *gemmVariant) fits(info DeviceInfo) bool {
	localBytes := int64(4 * gemmTSK * (v.TSM + 1 + v.TSN + 1))
	return v.items() <= info.MaxWorkGroup && (info.LocalMem == 0 || localBytes <= info.LocalMem)
}

// buildGemms compiles every candidate that fits; a variant the compiler or
// the kernel's own work-group limit refuses is skipped and logged.
func (o *OpenCL) buildGemms(dir string) error {
	src := kernelSource("gemm.cl")
	for _, cand := range gemmCandidates {
		v := cand
		if !v.fits(o.info) {
			continue
		}
		p, _, err := o.ctx.buildCached(o.info, dir, src, v.options(), o.log)
		if err != nil {
			o.log.Debug("gpu: opencl: gemm variant not built", "variant", v.Name, "err", err)
			continue
		}
		o.progs = append(o.progs, p)
		k, err := o.ctx.kernel(p, "gemm")
		if err != nil {
			return err
		}
		if k.maxWG < v.items() {
			k.release()
			continue
		}
		v.k = k
		o.gemms = append(o.gemms, &v)
	}
	if len(o.gemms) == 0 {
		return fmt.Errorf("%w: no GEMM variant builds on %s", ErrNoDevice, o.info.Name)
	}
	return nil
}

// gemm enqueues C = alpha*op(A)*op(B) + beta*C on allocations with element
// offsets. It takes the tuned variant, stepping down to smaller tiles while
// the grid would leave compute units idle.
func (o *OpenCL) gemm(ta, tb bool, m, n, k int, alpha float32, a *clMem, aoff int, b *clMem, boff int, beta float32, c *clMem, coff int) {
	if m == 0 || n == 0 {
		return
	}
	i := o.gemmSel
	for i > 0 && blocks(o.gemms[i], m, n) < o.info.ComputeUnits {
		i--
	}
	o.gemmWith(o.gemms[i], ta, tb, m, n, k, alpha, a, aoff, b, boff, beta, c, coff)
}

func blocks(v *gemmVariant, m, n int) int {
	return ((m + v.TSM - 1) / v.TSM) * ((n + v.TSN - 1) / v.TSN)
}

func (o *OpenCL) gemmWith(v *gemmVariant, ta, tb bool, m, n, k int, alpha float32, a *clMem, aoff int, b *clMem, boff int, beta float32, c *clMem, coff int) {
	rm, rn := v.TSM/v.WPTM, v.TSN/v.WPTN
	global := []int{(n + v.TSN - 1) / v.TSN * rn, (m + v.TSM - 1) / v.TSM * rm}
	must(o.ctx.launch(v.k, global, []int{rn, rm}, m, n, k, alpha, a, aoff, b2i(ta), b, boff, b2i(tb), beta, c, coff))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Gemm implements Backend.
func (o *OpenCL) Gemm(transA, transB bool, m, n, k int, alpha float32, a, b Buffer, beta float32, c Buffer) {
	as, bs, cs := o.buf(a), o.buf(b), o.buf(c)
	if as.n < m*k || bs.n < k*n || cs.n < m*n {
		panic(fmt.Sprintf("gpu: Gemm %dx%dx%d: buffers of %d, %d, %d elements", m, n, k, as.n, bs.n, cs.n))
	}
	o.gemm(transA, transB, m, n, k, alpha, as.m, as.off, bs.m, bs.off, beta, cs.m, cs.off)
}

// gemmTuning is the tuner's saved choice.
type gemmTuning struct {
	Device  string             `json:"device"`
	Driver  string             `json:"driver"`
	Variant string             `json:"variant"`
	Size    int                `json:"size"`   // the largest size every variant was timed at
	GFLOPS  map[string]float64 `json:"gflops"` // per variant at Size
}

// tuneGemm sets gemmSel: from dir's saved choice when there is one, else by
// timing (when tune is set), else the largest variant. It stays within about
// 1.5 s: sizes grow 256, 512, 1024 while the budget lasts.
func (o *OpenCL) tuneGemm(dir string, tune bool) {
	o.gemmSel = len(o.gemms) - 1
	path := ""
	if dir != "" {
		path = filepath.Join(dir, "gemm-"+hashKey(deviceKey(o.info), kernelSource("gemm.cl"))+".json")
		if data, err := os.ReadFile(path); err == nil {
			var t gemmTuning
			if json.Unmarshal(data, &t) == nil && o.selectGemm(t.Variant) {
				return
			}
		}
	}
	if !tune || len(o.gemms) == 1 {
		return
	}
	t, err := o.timeGemms(1500 * time.Millisecond)
	if err != nil {
		o.log.Debug("gpu: opencl: gemm tuning failed", "err", err)
		return
	}
	o.selectGemm(t.Variant)
	o.log.Debug("gpu: opencl: gemm tuned", "variant", t.Variant, "size", t.Size, "gflops", t.GFLOPS)
	if path != "" {
		data, _ := json.MarshalIndent(t, "", "  ")
		if err := writeAtomic(path, data); err != nil {
			o.log.Debug("gpu: opencl: gemm tuning not saved", "err", err)
		}
	}
}

func (o *OpenCL) selectGemm(name string) bool {
	for i, v := range o.gemms {
		if v.Name == name {
			o.gemmSel = i
			return true
		}
	}
	return false
}

// timeGemms times each variant on n×n×n products of random-free data (the
// values do not change the work) and picks the fastest at the largest size
// all of them completed.
func (o *OpenCL) timeGemms(budget time.Duration) (gemmTuning, error) {
	start := time.Now()
	t := gemmTuning{Device: o.info.Name, Driver: o.info.Driver}
	for _, size := range []int{256, 512, 1024} {
		a, err := o.ctx.alloc(size * size)
		if err != nil {
			return t, err
		}
		b, _ := o.ctx.alloc(size * size)
		c, err := o.ctx.alloc(size * size)
		if err != nil || b == nil {
			return t, fmt.Errorf("gpu: opencl: tuning buffers: %w", err)
		}
		res := map[string]float64{}
		for _, v := range o.gemms {
			o.gemmWith(v, false, false, size, size, size, 1, a, 0, b, 0, 0, c, 0) // warm-up
			if err := o.ctx.finish(); err != nil {
				return t, err
			}
			t0 := time.Now()
			o.gemmWith(v, false, false, size, size, size, 1, a, 0, b, 0, 0, c, 0)
			if err := o.ctx.finish(); err != nil {
				return t, err
			}
			res[v.Name] = 2 * float64(size*size*size) / time.Since(t0).Seconds() / 1e9
			if time.Since(start) > budget {
				break
			}
		}
		if len(res) < len(o.gemms) {
			break // this size did not finish for every variant: keep the last full one
		}
		t.Size, t.GFLOPS = size, res
		if time.Since(start) > budget/3 {
			break // the next size costs about 8 times as much
		}
	}
	if t.GFLOPS == nil {
		return t, fmt.Errorf("gpu: opencl: tuning exceeded %v at the first size", budget)
	}
	best := 0.0
	for name, g := range t.GFLOPS {
		if g > best || (g == best && name < t.Variant) {
			best, t.Variant = g, name
		}
	}
	return t, nil
}

// GemmVariants lists the built variants, by increasing tile size, and the
// tuned one (for tests and benchmarks).
func (o *OpenCL) GemmVariants() (names []string, selected string) {
	for _, v := range o.gemms {
		names = append(names, v.Name)
	}
	return names, o.gemms[o.gemmSel].Name
}

// setGemmVariant forces a variant (tests compare them bit for bit).
func (o *OpenCL) setGemmVariant(name string) bool { return o.selectGemm(name) }
