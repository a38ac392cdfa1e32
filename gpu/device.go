package gpu

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Device selection: a registry of drivers, as database/sql has.
//
// Each backend package registers a Driver under its name in an init
// function (gpu/cpu as "cpu"; gpu/opencl as "opencl", in a build with -tags
// opencl), and a binary picks backends by importing their packages. The
// registry is the only package-level variable of the package: it describes
// what was compiled in, never run-time state, so it does not break "no
// globals" (every backend is still created and passed explicitly, and what
// each one is opened with comes in OpenOptions).
//
// This file has no build tag: a binary built without -tags opencl still
// understands every --device value and says why it cannot honour "opencl".

// ErrNoOpenCL is returned when OpenCL cannot be used at all because the
// binary was built without it (no "opencl" driver is registered). (A
// binary built with -tags opencl links the
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
	// step must match the CPU backend's bits; see gpu/opencl/kernels/elementwise.cl).
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

// DeviceBytes reports, for a backend that counts its device allocations
// (OpenCL), the bytes they hold now and the most they held at once since
// the backend opened; ok is false for one that does not (the CPU backend,
// whose buffers are the process's memory: measure its resident set).
func DeviceBytes(b Backend) (live, peak int64, ok bool) {
	d, ok := b.(interface{ DeviceBytes() (live, peak int64) })
	if !ok {
		return 0, 0, false
	}
	live, peak = d.DeviceBytes()
	return live, peak, true
}

// ErrConfig is wrapped by the errors of a backend configuration that names
// something it cannot mean (an OpenCL staging or Winograd mode, a value
// the binary read from a COTRAIN_OPENCL_* variable): a user's mistake,
// which Open reports even for "auto" instead of falling back to the CPU.
var ErrConfig = errors.New("gpu: bad backend configuration")

// OpenRequest is what Open asks of a Driver.
type OpenRequest struct {
	Index       int  // N of "name:N", or -1 for the first suitable device
	GPUOnly     bool // "auto": accept GPUs and accelerators only, never a CPU device
	HalfStorage bool // OpenOptions.HalfStorage
	Log         *slog.Logger
	// Config is OpenOptions.Config[name] for the driver's name: a value of
	// the type the driver documents (opencl.Config), or nil for its
	// defaults. A driver refuses a value of another type with ErrConfig.
	Config any
}

// Driver opens the backends of one kind. Backend packages implement it and
// register it with Register in an init function.
type Driver interface {
	// Open returns the backend req asks for. Errors wrap ErrNoDevice when
	// no device fits, ErrConfig for a configuration the driver cannot mean.
	Open(req OpenRequest) (Backend, error)
	// Devices lists the devices the driver can open, in "name:N" order
	// (nil for a driver with a single device, such as "cpu").
	Devices() ([]DeviceInfo, error)
}

// drivers holds the registered drivers by name (Register).
var drivers struct {
	mu sync.RWMutex
	m  map[string]Driver
}

// Register makes a driver available under name to Open. It panics when
// called twice for one name or with a nil driver, as sql.Register does:
// both are bugs of the program, caught when it starts.
func Register(name string, d Driver) {
	drivers.mu.Lock()
	defer drivers.mu.Unlock()
	if d == nil {
		panic("gpu: Register driver is nil")
	}
	if _, dup := drivers.m[name]; dup {
		panic("gpu: Register called twice for driver " + name)
	}
	if drivers.m == nil {
		drivers.m = map[string]Driver{}
	}
	drivers.m[name] = d
}

// Drivers returns the names of the registered drivers, sorted.
func Drivers() []string {
	drivers.mu.RLock()
	defer drivers.mu.RUnlock()
	return slices.Sorted(maps.Keys(drivers.m))
}

func driver(name string) Driver {
	drivers.mu.RLock()
	defer drivers.mu.RUnlock()
	return drivers.m[name]
}

// OpenOptions are Open's options beyond the device spec.
type OpenOptions struct {
	Log *slog.Logger // where the choice and any fallback are logged; nil: nowhere
	// HalfStorage asks an OpenCL backend to store every tensor as IEEE
	// half floats (fp16), computing in float32: half the device memory and
	// memory traffic, for inference only (see StoresHalf). It needs no
	// cl_khr_fp16 (half loads and stores are core OpenCL), so every OpenCL
	// device honours it. The CPU backend stores float32 whatever this says;
	// when auto falls back to it, the log says so.
	HalfStorage bool
	// Config holds each driver's configuration by driver name, e.g.
	// {"opencl": opencl.Config{...}} (the binaries build it from their
	// flags and environment: cmd/internal/cli). A driver without an entry
	// opens with its defaults.
	Config map[string]any
}

// Open returns the backend a --device value names:
//
//   - "cpu": the pure-Go CPU backend (package gpu/cpu);
//   - "opencl": the first OpenCL GPU or accelerator, else the first OpenCL
//     device of any type (PoCL's CPU device included);
//   - "opencl:N": OpenCL device N, counted over all platforms (see Devices);
//   - "auto" (or ""): a GPU or accelerator of a registered driver other than
//     "cpu" when one works, otherwise the CPU backend, logging why at Info
//     level. A CPU OpenCL device is never chosen by auto: the pure-Go
//     backend is the better CPU path.
//
// Any other registered driver's name (and "name:N") is understood as
// "opencl" is. The binary must import the backends it names (gpu/cpu;
// gpu/opencl, built with -tags opencl). Errors wrap ErrNoOpenCL,
// ErrNoDevice, ErrDeviceSpec, ErrConfig or the driver's failure.
func Open(spec string, opts OpenOptions) (Backend, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	req := func(name string, idx int, gpuOnly bool) OpenRequest {
		return OpenRequest{Index: idx, GPUOnly: gpuOnly, HalfStorage: opts.HalfStorage, Log: log, Config: opts.Config[name]}
	}
	cpu := func(reason string) (Backend, error) {
		d := driver("cpu")
		if d == nil {
			return nil, fmt.Errorf("%w: %s, and the CPU backend is not linked in (import gpu/cpu)", ErrNoDevice, reason)
		}
		if opts.HalfStorage {
			reason += "; it stores float32 (fp16 storage needs OpenCL)"
		}
		log.Info("gpu: using the CPU backend", "reason", reason)
		return d.Open(req("cpu", -1, false))
	}
	spec = strings.ToLower(strings.TrimSpace(spec))
	switch spec {
	case "cpu":
		if opts.HalfStorage {
			return nil, fmt.Errorf("%w: fp16 storage needs an OpenCL device; the CPU backend stores float32", ErrDeviceSpec)
		}
		if driver("cpu") == nil {
			return nil, fmt.Errorf("%w: %q: the CPU backend is not linked in (import gpu/cpu)", ErrDeviceSpec, spec)
		}
		return driver("cpu").Open(req("cpu", -1, false))
	case "auto", "":
		var reasons []string
		for _, name := range Drivers() {
			if name == "cpu" {
				continue
			}
			b, err := driver(name).Open(req(name, -1, true))
			if errors.Is(err, ErrConfig) {
				return nil, err
			}
			if err != nil {
				reasons = append(reasons, err.Error())
				continue
			}
			log.Info("gpu: using "+name, "device", b.Name(), "fp16_storage", opts.HalfStorage)
			return b, nil
		}
		if len(reasons) == 0 {
			return cpu("built without OpenCL support (rebuild with -tags opencl)")
		}
		return cpu(strings.Join(reasons, "; "))
	}
	name, n, indexed := strings.Cut(spec, ":")
	idx := -1
	if indexed {
		v, err := strconv.Atoi(n)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%w: %q: want %s:N with N a device index", ErrDeviceSpec, spec, name)
		}
		idx = v
	}
	d := driver(name)
	switch {
	case d == nil && name == "opencl":
		return nil, fmt.Errorf("%w: built without OpenCL support: rebuild with -tags opencl", ErrNoOpenCL)
	case d == nil || name == "cpu":
		return nil, fmt.Errorf("%w: %q (want auto, cpu, opencl or opencl:N)", ErrDeviceSpec, spec)
	}
	return d.Open(req(name, idx, false))
}

// Devices lists the OpenCL devices Open can address, in "opencl:N" order.
func Devices() ([]DeviceInfo, error) {
	d := driver("opencl")
	if d == nil {
		return nil, fmt.Errorf("%w: built without OpenCL support: rebuild with -tags opencl", ErrNoOpenCL)
	}
	return d.Devices()
}
