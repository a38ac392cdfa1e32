//go:build opencl

package opencl

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/cotrain/cotrain/gpu"
)

// Creating an OpenCL backend, and registering it with Open.

func init() { gpu.Register("opencl", driver{}) }

// driver opens OpenCL backends for gpu.Open ("opencl", "opencl:N", "auto").
type driver struct{}

// Open implements gpu.Driver: New with req.Config (a Config; nil:
// DefaultConfig()) and the device, GPU-only rule, storage and logger of req.
func (driver) Open(req gpu.OpenRequest) (gpu.Backend, error) {
	cfg := DefaultConfig()
	if req.Config != nil {
		c, ok := req.Config.(Config)
		if !ok {
			return nil, fmt.Errorf("%w: opencl takes an opencl.Config, got a %T", gpu.ErrConfig, req.Config)
		}
		cfg = c
	}
	cfg.Index, cfg.GPUOnly, cfg.HalfStorage, cfg.Log = req.Index, req.GPUOnly, req.HalfStorage, req.Log
	return New(cfg)
}

// Devices implements gpu.Driver.
func (driver) Devices() ([]gpu.DeviceInfo, error) { return listDeviceInfo() }

// Config says which device to use and how to prepare it.
type Config struct {
	Index    int    // device index over all platforms, or -1 for the first suitable one
	GPUOnly  bool   // with Index -1: accept GPUs and accelerators only
	CacheDir string // program binaries and tuning; "" for none
	Tune     bool   // time the GEMM variants when no saved choice exists
	// GemmVariants names the GEMM tilings to build ("128x128/8x8/k16": see
	// parseGemmVariant); empty means the built-in candidates.
	GemmVariants []string
	// GemmOptions is appended to the GEMM programs' build options (a
	// vendor's flags, e.g. NVIDIA's -cl-nv-verbose or -cl-nv-maxrregcount=N).
	GemmOptions string
	// ReductionWG caps the work-group size of the reduction kernels (bias
	// and batch-norm gradients and statistics: one work-group per channel);
	// 0 means 256. The largest power of two up to it that the device and
	// every reduction kernel accept is used. It sets the reductions' summation
	// tree, so devices that end with the same size give the same bits. (1024
	// was no faster on the H100: docs/opencl.md.)
	ReductionWG int
	// HalfStorage stores every Buffer as half floats (OpenOptions.HalfStorage):
	// the kernels are built with -D STORE_HALF (kernels/common.cl), Upload
	// and Download convert on the device through a float staging buffer,
	// and split products keep float partial sums.
	HalfStorage bool
	// Staging says whether Upload and Download move large buffers (32 MiB
	// and more) through pinned host memory, in chunks whose copies overlap
	// the bus transfers (stage.go): StagingAuto (or "") where the
	// device has memory of its own, StagingOn, StagingOff. Where the driver
	// refuses pinned memory, transfers go straight from Go memory.
	Staging string
	// OneQueue puts uploads on the kernels' queue, as before the transfer
	// queue existed (xfer.go): for measuring what the second queue
	// gains, and for a driver that mishandles two queues.
	OneQueue bool
	// NoFuse runs the ActFuser methods (fuse.go) as the separate
	// kernels they stand for (Unfused): the same bits, more launches and
	// passes over memory. For measuring what fusing gains.
	NoFuse bool
	// NoEpilogue keeps the GEMMs of convolutions and fully connected layers
	// from adding the bias and applying a fused activation as they store
	// their output (gemm.cl's epilogue): a bias_act or add_bias pass
	// follows them instead, as before the epilogue existed. The same bits;
	// for measuring what the epilogue gains. Half storage never uses it.
	NoEpilogue bool
	// Winograd says where 3×3 stride-1 ungrouped convolutions run their
	// forward and data gradient by Winograd F(2×2, 3×3)
	// (winograd.go): WinogradAuto (or "") where enough channels and
	// large enough planes make it win, WinogradOn everywhere it applies,
	// WinogradOff nowhere. Never with HalfStorage.
	Winograd string
	// FFT says where stride-1 ungrouped convolutions whose padded plane
	// fits 32×32 run their three passes by FFT (fft.go): FFTAuto
	// (or "") for filters of 5×5 and larger with enough channels, FFTOn
	// everywhere it applies (before Winograd), FFTOff nowhere. Never with
	// HalfStorage.
	FFT string
	Log *slog.Logger

	// knobs, when not nil, replaces defaultKnobs() (tests and benchmarks
	// only: openCLWith, WithRedPartLen); the backend copies it.
	knobs *knobs
}

// ErrEnv is returned by ConfigFromEnv when a COTRAIN_OPENCL_* variable
// holds a value it does not take (COTRAIN_OPENCL_TUNE=false would
// otherwise have meant tuning on).
var ErrEnv = fmt.Errorf("%w: environment variable", gpu.ErrConfig)

// DefaultConfig is the first suitable device of any type, the user's cache
// folder (DefaultCacheDir), GEMM tuning on, the built-in GEMM candidates,
// staging, Winograd and FFT as their auto modes say, two queues, bias and
// activation fused and the GEMMs' epilogue on. It reads no environment:
// ConfigFromEnv adds the COTRAIN_OPENCL_* variables the binaries honour.
func DefaultConfig() Config {
	return Config{Index: -1, CacheDir: DefaultCacheDir(), Tune: true}
}

// ConfigFromEnv is DefaultConfig changed by the COTRAIN_OPENCL_* variables
// that lookup (os.LookupEnv in the binaries: cmd/internal/cli) returns:
//
//   - COTRAIN_OPENCL_CACHE: the cache folder (CacheDir); "off": none;
//   - COTRAIN_OPENCL_TUNE: 0 turns GEMM tuning off (Tune); 1 or unset: on;
//   - COTRAIN_OPENCL_GEMM: comma-separated GEMM tilings (GemmVariants);
//   - COTRAIN_OPENCL_GEMM_OPTS: the GEMM programs' extra build options;
//   - COTRAIN_OPENCL_RED_WG: a positive cap of the reductions' work-groups;
//   - COTRAIN_OPENCL_STAGING: on, off or auto (Staging);
//   - COTRAIN_OPENCL_ONE_QUEUE: 1 puts uploads on the kernels' queue;
//   - COTRAIN_OPENCL_WINOGRAD, COTRAIN_OPENCL_FFT: 0, 1 or auto;
//   - COTRAIN_OPENCL_FUSE: 0 runs the fusers unfused (NoFuse);
//   - COTRAIN_OPENCL_EPILOGUE: 0 turns the GEMM epilogue off (NoEpilogue).
//
// A 0/1 variable with another value, or a RED_WG that is not a positive
// number, is an error wrapping ErrEnv naming the variable and its value
// (all of them, joined); the modes are checked by New (ErrStaging,
// ErrWinograd, ErrFFT), which Open reports even for "auto".
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return v
	}
	flag := func(name string, def bool) (bool, error) {
		switch v := get(name); v {
		case "":
			return def, nil
		case "0":
			return false, nil
		case "1":
			return true, nil
		default:
			return def, fmt.Errorf("%w: %s=%q: want 0 or 1", ErrEnv, name, v)
		}
	}
	cfg := DefaultConfig()
	switch d := get("COTRAIN_OPENCL_CACHE"); d {
	case "":
	case "off":
		cfg.CacheDir = ""
	default:
		cfg.CacheDir = d
	}
	cfg.GemmOptions, cfg.Staging = get("COTRAIN_OPENCL_GEMM_OPTS"), get("COTRAIN_OPENCL_STAGING")
	cfg.Winograd, cfg.FFT = get("COTRAIN_OPENCL_WINOGRAD"), get("COTRAIN_OPENCL_FFT")
	var errTune, errQueue, errWG, errFuse, errEpi error
	cfg.Tune, errTune = flag("COTRAIN_OPENCL_TUNE", true)
	cfg.OneQueue, errQueue = flag("COTRAIN_OPENCL_ONE_QUEUE", false)
	fuse, errFuse := flag("COTRAIN_OPENCL_FUSE", true)
	cfg.NoFuse = !fuse
	epi, errEpi := flag("COTRAIN_OPENCL_EPILOGUE", true)
	cfg.NoEpilogue = !epi
	if v := get("COTRAIN_OPENCL_RED_WG"); v != "" { // sets ReductionWG
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errWG = fmt.Errorf("%w: COTRAIN_OPENCL_RED_WG=%q: want a positive work-group size", ErrEnv, v)
		}
		cfg.ReductionWG = n
	}
	if v := get("COTRAIN_OPENCL_GEMM"); v != "" {
		cfg.GemmVariants = strings.Split(v, ",")
	}
	return cfg, errors.Join(errTune, errQueue, errWG, errFuse, errEpi)
}

// storeHalfOption builds the programs for half storage (kernels/common.cl).
const storeHalfOption = "-D STORE_HALF"

// reductionKernels run in work-groups of redWG items.
var reductionKernels = []kernelID{kBiasGrad, kActBiasGrad, kBiasGradPart, kActBiasGradPart, kSumPairs, kDwBackwardFilter, kBnStats, kBnBackwardReduce, kDwBackwardFilterPart, kDwBackwardFilter3Part, kBnStatsPart, kBnBackwardPart, kSoftmaxXent}

func listDeviceInfo() ([]gpu.DeviceInfo, error) {
	devs, err := listDevices()
	if err != nil {
		return nil, err
	}
	out := make([]gpu.DeviceInfo, len(devs))
	for i, d := range devs {
		out[i] = d.info()
		out[i].Index = i
	}
	return out, nil
}

// pickDevice applies cfg's Index and GPUOnly rules.
func pickDevice(cfg Config) (clDevice, gpu.DeviceInfo, error) {
	devs, err := listDevices()
	if err != nil {
		return clDevice{}, gpu.DeviceInfo{}, err
	}
	if len(devs) == 0 {
		return clDevice{}, gpu.DeviceInfo{}, fmt.Errorf("%w: the OpenCL platforms list no device", gpu.ErrNoDevice)
	}
	infos := make([]gpu.DeviceInfo, len(devs))
	for i, d := range devs {
		infos[i] = d.info()
		infos[i].Index = i
	}
	if cfg.Index >= 0 {
		if cfg.Index >= len(devs) {
			return clDevice{}, gpu.DeviceInfo{}, fmt.Errorf("%w: opencl:%d requested, %d devices present", gpu.ErrNoDevice, cfg.Index, len(devs))
		}
		return devs[cfg.Index], infos[cfg.Index], nil
	}
	for i, in := range infos {
		if in.Type == "gpu" || in.Type == "accelerator" {
			return devs[i], in, nil
		}
	}
	if cfg.GPUOnly {
		return clDevice{}, gpu.DeviceInfo{}, fmt.Errorf("%w: no GPU among %d OpenCL device(s) (first: %s, a %s device; the Go CPU backend is preferred over it)",
			gpu.ErrNoDevice, len(infos), infos[0].Name, infos[0].Type)
	}
	return devs[0], infos[0], nil
}

// New opens a device, builds (or loads) every kernel and tunes GEMM.
// Errors wrap ErrNoOpenCL, ErrNoDevice, a *CLError or a *BuildError.
func New(cfg Config) (*OpenCL, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cands, err := gemmCandidateList(cfg.GemmVariants)
	if err != nil {
		return nil, err
	}
	if _, err := stagingOn(cfg.Staging, gpu.DeviceInfo{}); err != nil {
		return nil, err
	}
	wino, err := winogradMode(cfg.Winograd)
	if err != nil {
		return nil, err
	}
	fftSetting, err := fftMode(cfg.FFT)
	if err != nil {
		return nil, err
	}
	dev, info, err := pickDevice(cfg)
	if err != nil {
		return nil, err
	}
	staging, _ := stagingOn(cfg.Staging, info) // checked above
	ctx, err := newContext(dev)
	if err != nil {
		return nil, fmt.Errorf("gpu: opencl: %s: %w", info.Name, err)
	}
	// Collect dropped buffers before the live ones pass half the device's
	// memory (mem.go).
	ctx.mem.budget = info.GlobalMem / 2
	_ = ctx.setupStaging(staging, defaultStageMin, defaultStageChunk, defaultStageSlots, cfg.Log) // nothing to release yet
	if cfg.OneQueue {
		_ = ctx.oneQueue() // nothing enqueued yet
	}
	o := &OpenCL{ctx: ctx, info: info, log: cfg.Log, half: cfg.HalfStorage, kn: defaultKnobs(),
		noFuse: cfg.NoFuse, noEpilogue: cfg.NoEpilogue}
	if cfg.knobs != nil {
		o.kn = *cfg.knobs
	}
	o.cols, o.wino, o.fftConv = newIm2col(o), newWinograd(o, wino), newFFTConv(o, fftSetting)
	o.keepBudget = cmp.Or(o.kn.keepBudget, info.GlobalMem/8) // ConvKeepColumns
	gemmOpts := cfg.GemmOptions
	if o.half {
		gemmOpts += " " + storeHalfOption
	}
	start := time.Now()
	if err := o.buildMain(cfg.CacheDir, cfg.ReductionWG); err != nil {
		o.Close()
		return nil, fmt.Errorf("gpu: opencl: %s: kernels: %w", info.Name, err)
	}
	gemmKey, err := o.buildGemms(cfg.CacheDir, cands, gemmOpts)
	if err != nil {
		o.Close()
		return nil, fmt.Errorf("gpu: opencl: %s: gemm: %w", info.Name, err)
	}
	built := time.Since(start)
	o.tuner = o.tuneGemm(gemmKey, cfg.CacheDir, cfg.Tune)
	_, sel := o.GemmVariants()
	cfg.Log.Debug("gpu: opencl: ready", "device", info.String(), "build", built, "gemm", sel, "reduction_wg", o.redWG, "fp16_storage", o.half, "staging", staging, "transfer_queue", ctx.xfer != nil, "winograd", wino, "fft", fftSetting, "fuse", !cfg.NoFuse, "epilogue", o.epilogueOn())
	return o, nil
}

// mainSource is the main program's source for a device (fft.cl's sizes
// depend on its local memory): the kernels of kernelDecls and fftDecls.
func mainSource(info gpu.DeviceInfo) string {
	return kernelSource("elementwise.cl", "conv.cl", "pool.cl", "norm.cl", "tensor.cl", "activation.cl", "winograd.cl",
		"dropout.cl", "lrn.cl", "resample.cl") + actSource() + fftSource(info)
}

// buildMain builds the main program with the largest reduction work-group
// (maxWG, or 256 when 0, then halving down to 16) that the device and every
// reduction kernel accept.
func (o *OpenCL) buildMain(dir string, maxWG int) error {
	src := mainSource(o.info)
	if maxWG <= 0 {
		maxWG = 256
	}
	wg := 16
	for wg*2 <= maxWG {
		wg *= 2
	}
	for wg > o.info.MaxWorkGroup && wg > 16 {
		wg /= 2
	}
	// Correctly rounded float division and sqrt where the device offers
	// them: the Adam step then rounds as the CPU backend's does (see
	// kernels/elementwise.cl). Never -cl-mad-enable or -cl-fast-relaxed-math.
	var opts string
	if o.info.CorrectDivSqrt {
		opts = " -cl-fp32-correctly-rounded-divide-sqrt"
	}
	if o.half {
		opts += " " + storeHalfOption
	}
	for ; wg >= 16; wg /= 2 {
		p, _, err := o.ctx.buildCached(o.info, dir, src, fmt.Sprintf("-D RED_WG=%d", wg)+opts, o.log)
		if err != nil {
			return err
		}
		// The main kernels by kernelID, then each FFT kernel at each size
		// (fftKernelIndex).
		ks := make([]*clKernel, 0, int(numKernels)+int(numFFTKernels)*len(fftSizes))
		for _, d := range kernelDecls {
			k, err := o.ctx.kernel(p, d.name, d.args)
			if err != nil {
				releaseAll(ks)
				p.release()
				return err
			}
			ks = append(ks, k)
		}
		for _, d := range fftDecls {
			for _, size := range fftSizes {
				k, err := o.ctx.kernel(p, fmt.Sprintf("%s_%d", d.name, size), d.args)
				if err != nil {
					releaseAll(ks)
					p.release()
					return err
				}
				ks = append(ks, k)
			}
		}
		fits := true
		for _, id := range reductionKernels {
			fits = fits && ks[id].maxWG >= wg
		}
		if fits {
			o.progs, o.k, o.redWG = append(o.progs, p), ks, wg
			return nil
		}
		releaseAll(ks)
		p.release()
	}
	return errors.New("no reduction work-group size fits the device")
}

func releaseAll(ks []*clKernel) {
	for _, k := range ks {
		k.release()
	}
}
