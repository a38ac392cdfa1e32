package gpu

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// Device selection. This file has no build tag: a binary built without
// -tags opencl still understands every --device value and says why it
// cannot honour "opencl".
//
// The OpenCL implementation registers itself through openCLDriver, set by an
// init function in opencl_register.go (build tag opencl). It is the only
// package-level variable of the package: it describes what was compiled in,
// never run-time state, so it does not break "no globals" (every backend is
// still created and passed explicitly).

// ErrNoOpenCL is returned when OpenCL cannot be used at all because the
// binary was built without it. (A binary built with -tags opencl links the
// OpenCL ICD loader, libOpenCL.so.1, and does not start without it; with the
// loader but no vendor driver, Open reports ErrNoDevice.)
var ErrNoOpenCL = errors.New("gpu: OpenCL unavailable")

// ErrNoDevice is returned when OpenCL is present but has no suitable device.
var ErrNoDevice = errors.New("gpu: no suitable OpenCL device")

// ErrDeviceSpec is returned for a --device value Open does not understand.
var ErrDeviceSpec = errors.New("gpu: bad device spec")

// DeviceInfo describes an OpenCL device as its driver reports it.
type DeviceInfo struct {
	Index        int    // N of "opencl:N": position over all platforms' devices
	Name         string // e.g. "NVIDIA H100 80GB HBM3"
	Vendor       string
	Platform     string
	Version      string // OpenCL version string of the device
	Driver       string
	Type         string // "gpu", "cpu", "accelerator" or "other"
	ComputeUnits int
	ClockMHz     int
	GlobalMem    int64 // bytes
	LocalMem     int64 // bytes of __local memory per work-group
	MaxWorkGroup int
	BaseAlign    int  // CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bits
	FP16         bool // cl_khr_fp16: half arithmetic (half storage needs only core OpenCL; see OpenOptions)
	FP64         bool // cl_khr_fp64: reductions accumulate in double when set
	// NVOptions is cl_nv_compiler_options: the compiler takes NVIDIA's
	// -cl-nv-* build options (the GEMM's register cap, gemmRegCap).
	NVOptions bool
	// CorrectDivSqrt is CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT: the device can
	// build with -cl-fp32-correctly-rounded-divide-sqrt, which the backend
	// then does, so that float division and sqrt round as Go's do (the Adam
	// step must match the CPU backend's bits; see kernels/elementwise.cl).
	CorrectDivSqrt bool
	// HostUnified is CL_DEVICE_HOST_UNIFIED_MEMORY: the device works in the
	// host's memory (an integrated or phone GPU, a CPU device) rather than
	// in memory of its own across a bus. Large transfers to and from a
	// device without it go through pinned memory (OpenCLConfig.Staging).
	HostUnified bool
}

// String is a one-line summary for logs.
func (d DeviceInfo) String() string {
	return fmt.Sprintf("opencl:%d %s (%s, %s, %d CU @ %d MHz, %d MiB, fp16=%v fp64=%v)",
		d.Index, d.Name, d.Type, d.Platform, d.ComputeUnits, d.ClockMHz, d.GlobalMem>>20, d.FP16, d.FP64)
}

// openCLRequest is what Open asks of the OpenCL driver.
type openCLRequest struct {
	Index   int  // device index, or -1 for the first suitable one
	GPUOnly bool // "auto": accept GPUs and accelerators only, never a CPU device
	Half    bool // OpenOptions.HalfStorage
	Log     *slog.Logger
}

// OpenOptions are OpenWith's options beyond the device spec.
type OpenOptions struct {
	Log *slog.Logger // where the choice and any fallback are logged; nil: nowhere
	// HalfStorage asks an OpenCL backend to store every tensor as IEEE
	// half floats (fp16), computing in float32: half the device memory and
	// memory traffic, for inference only (see StoresHalf). It needs no
	// cl_khr_fp16 (half loads and stores are core OpenCL), so every OpenCL
	// device honours it. The CPU backend stores float32 whatever this says;
	// when auto falls back to it, the log says so.
	HalfStorage bool
}

// StoresHalf reports whether b keeps its tensors as half floats (an OpenCL
// backend opened with OpenOptions.HalfStorage). Such a backend is for
// inference: weights rounded to half lose most optimizer steps (an update
// below half a unit in the last place, 2⁻¹¹ of the weight, leaves it
// unchanged), so the solver refuses to train on it.
func StoresHalf(b Backend) bool {
	h, ok := b.(interface{ HalfStorage() bool })
	return ok && h.HalfStorage()
}

// OverlapsUploads reports whether an Upload on b can run while kernels
// enqueued before it still run (an OpenCL backend with a transfer queue),
// provided none of them uses the uploaded buffer's allocation and a
// Download returned after the last one that did. A caller that uploads a
// batch every step hides the upload behind the previous step's work by
// alternating two input allocations; on any other backend the second
// allocation would be memory spent for nothing. Whatever it reports, an
// Upload is never seen by kernels enqueued before it and always by those
// enqueued after.
func OverlapsUploads(b Backend) bool {
	o, ok := b.(interface{ OverlapsUploads() bool })
	return ok && o.OverlapsUploads()
}

// ErrOpenCLConfig is wrapped by the errors of an OpenCL configuration that
// names something it cannot mean (a staging or Winograd mode, a
// COTRAIN_OPENCL_* variable's value): a user's mistake, which Open reports
// even for "auto" instead of falling back to the CPU.
var ErrOpenCLConfig = errors.New("gpu: opencl: bad configuration")

// openCLDriver is set when the package is built with -tags opencl.
var openCLDriver struct {
	open func(req openCLRequest) (Backend, error)
	list func() ([]DeviceInfo, error)
}

// Open returns the backend a --device value names:
//
//   - "cpu": the pure-Go CPU backend;
//   - "opencl": the first OpenCL GPU or accelerator, else the first OpenCL
//     device of any type (PoCL's CPU device included);
//   - "opencl:N": OpenCL device N, counted over all platforms (see Devices);
//   - "auto" (or ""): an OpenCL GPU or accelerator when one works, otherwise
//     the CPU backend, logging why at Info level. A CPU OpenCL device is never
//     chosen by auto: the pure-Go backend is the better CPU path.
//
// Errors wrap ErrNoOpenCL, ErrNoDevice, ErrDeviceSpec or an OpenCL failure.
func Open(spec string, log *slog.Logger) (Backend, error) {
	return OpenWith(spec, OpenOptions{Log: log})
}

// OpenWith is Open with options: Open(spec, log) is OpenWith(spec,
// OpenOptions{Log: log}).
func OpenWith(spec string, opts OpenOptions) (Backend, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cpu := func(reason string) Backend {
		if opts.HalfStorage {
			reason += "; it stores float32 (fp16 storage needs OpenCL)"
		}
		log.Info("gpu: using the CPU backend", "reason", reason)
		return NewCPU()
	}
	spec = strings.ToLower(strings.TrimSpace(spec))
	switch {
	case spec == "cpu":
		if opts.HalfStorage {
			return nil, fmt.Errorf("%w: fp16 storage needs an OpenCL device; the CPU backend stores float32", ErrDeviceSpec)
		}
		return NewCPU(), nil
	case spec == "auto" || spec == "":
		if openCLDriver.open == nil {
			return cpu("built without OpenCL support (rebuild with -tags opencl)"), nil
		}
		b, err := openCLDriver.open(openCLRequest{Index: -1, GPUOnly: true, Half: opts.HalfStorage, Log: log})
		if errors.Is(err, ErrOpenCLConfig) {
			return nil, err
		}
		if err != nil {
			return cpu(err.Error()), nil
		}
		log.Info("gpu: using OpenCL", "device", b.Name(), "fp16_storage", opts.HalfStorage)
		return b, nil
	case spec == "opencl" || strings.HasPrefix(spec, "opencl:"):
		idx := -1
		if n, ok := strings.CutPrefix(spec, "opencl:"); ok {
			v, err := strconv.Atoi(n)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%w: %q: want opencl:N with N a device index", ErrDeviceSpec, spec)
			}
			idx = v
		}
		if openCLDriver.open == nil {
			return nil, fmt.Errorf("%w: built without OpenCL support: rebuild with -tags opencl", ErrNoOpenCL)
		}
		return openCLDriver.open(openCLRequest{Index: idx, Half: opts.HalfStorage, Log: log})
	}
	return nil, fmt.Errorf("%w: %q (want auto, cpu, opencl or opencl:N)", ErrDeviceSpec, spec)
}

// Devices lists the OpenCL devices Open can address, in "opencl:N" order.
func Devices() ([]DeviceInfo, error) {
	if openCLDriver.list == nil {
		return nil, fmt.Errorf("%w: built without OpenCL support: rebuild with -tags opencl", ErrNoOpenCL)
	}
	return openCLDriver.list()
}
