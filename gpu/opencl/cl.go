//go:build opencl

package opencl

// The OpenCL binding: github.com/jgillich/go-opencl's cl package, wrapped in
// the few types the backend uses (clDevice, clContext, clMem, clProgram,
// clKernel). No cl type and no jgillich error leaves these wrappers: failing
// calls become *CLError (clWrap), failed builds *BuildError.
//
// The cl package links libOpenCL at build time (pkg-config OpenCL on Linux
// and Android), so a binary built with -tags opencl needs the OpenCL ICD
// loader (libOpenCL.so.1) to start at all. Once started, no platform, no
// suitable device or a kernel that does not build are ordinary errors, which
// Open("auto") answers with the CPU backend.
//
// What the cl package lacks (program binaries for the disk cache, device info
// it does not expose or truncates) is filled in by native.go.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unsafe"

	"github.com/cotrain/cotrain/gpu"
	"github.com/jgillich/go-opencl/cl"
)

// Device type bits of CL_DEVICE_TYPE (OpenCL 1.2 ABI).
const (
	clDeviceTypeCPU         = 1 << 1
	clDeviceTypeGPU         = 1 << 2
	clDeviceTypeAccelerator = 1 << 3
)

// clDevice is one device of one platform, as enumerated by listDevices.
type clDevice struct {
	d        *cl.Device
	platform string
}

// listDevices returns every device of every platform, platforms in the ICD's
// order: the index into this list is the N of "opencl:N".
func listDevices() ([]clDevice, error) {
	plats, err := cl.GetPlatforms()
	if err != nil {
		var code cl.ErrOther
		if errors.As(err, &code) && code == -1001 { // CL_PLATFORM_NOT_FOUND_KHR: ICD loader with no vendor
			return nil, fmt.Errorf("%w: no OpenCL platform installed", gpu.ErrNoDevice)
		}
		return nil, clWrap("clGetPlatformIDs", err)
	}
	if len(plats) == 0 {
		return nil, fmt.Errorf("%w: no OpenCL platform installed", gpu.ErrNoDevice)
	}
	var out []clDevice
	for _, p := range plats {
		name := strings.TrimSpace(orZero(p.Name))
		devs, err := p.GetDevices(cl.DeviceTypeAll)
		if err != nil {
			if errors.Is(err, cl.ErrDeviceNotFound) {
				continue // a platform without devices
			}
			return nil, clWrap("clGetDeviceIDs", err)
		}
		for _, d := range devs {
			out = append(out, clDevice{d: d, platform: name})
		}
	}
	return out, nil
}

// orZero calls one of the cl package's info getters, which panic when the
// driver fails the query, and returns the zero value instead (the old
// binding's behaviour for a query a driver does not answer).
func orZero[T any](get func() T) (v T) {
	defer func() { _ = recover() }() // v stays zero when get panics
	return get()
}

// info gathers what the backend and the log need to know about d.
func (d clDevice) info() gpu.DeviceInfo {
	typ := orZero(d.d.Type)
	kind := "other"
	switch {
	case typ&clDeviceTypeGPU != 0:
		kind = "gpu"
	case typ&clDeviceTypeCPU != 0:
		kind = "cpu"
	case typ&clDeviceTypeAccelerator != 0:
		kind = "accelerator"
	}
	// The extension list can exceed the cl package's 1024-byte string
	// buffer (NVIDIA's nearly does), and CL_DEVICE_SINGLE_FP_CONFIG is not
	// exposed by it: both are read natively.
	ext := deviceExtensions(d.d)
	return gpu.DeviceInfo{
		Name: strings.TrimSpace(orZero(d.d.Name)), Vendor: strings.TrimSpace(orZero(d.d.Vendor)), Platform: d.platform,
		Version: strings.TrimSpace(orZero(d.d.Version)), Driver: strings.TrimSpace(orZero(d.d.DriverVersion)), Type: kind,
		ComputeUnits: orZero(d.d.MaxComputeUnits), ClockMHz: orZero(d.d.MaxClockFrequency),
		GlobalMem: orZero(d.d.GlobalMemSize), LocalMem: orZero(d.d.LocalMemSize),
		MaxWorkGroup: orZero(d.d.MaxWorkGroupSize), BaseAlign: orZero(d.d.MemBaseAddrAlign),
		FP16: strings.Contains(ext, "cl_khr_fp16"), FP64: strings.Contains(ext, "cl_khr_fp64"),
		NVOptions:      strings.Contains(ext, "cl_nv_compiler_options"),
		CorrectDivSqrt: deviceSingleFPConfig(d.d)&clFPCorrectlyRoundedDivideSqrt != 0,
		HostUnified:    orZero(d.d.HostUnifiedMemory),
	}
}

// clContext owns a context and its in-order queues on one device, and
// tracks the allocations made in it (mem.go).
type clContext struct {
	dev   clDevice
	ctx   *cl.Context
	queue *cl.CommandQueue // the compute queue: kernels, copies, reads, writes that must follow kernels
	// xfer, when not nil, is the transfer queue: writes to buffers that no
	// unfinished command of queue uses go there, so that they overlap the
	// kernels (xfer.go). nil: everything goes on queue.
	xfer *cl.CommandQueue
	// seq numbers the commands of queue that name buffers (each clMem's use
	// is the last one naming it); syncEv is an event of queue, flushed, that
	// follows every such command up to doneSeq (xfer.go).
	seq, doneSeq uint64
	syncEv       *cl.Event
	xferUp       int64 // bytes written through xfer (tests check the overlapping path ran)
	launches     int   // kernels enqueued so far (tests count a layer's launches)
	mem          memTracker
	// prof, when not nil, times every launch by waiting for it (slow: for
	// finding where a step's time goes, see OpenCL.Profile).
	prof map[string]*KernelTime
	// profShapes keys the profile by kernel and global size (OpenCL.ProfileShapes).
	profShapes bool
	// profSections prefixes each key with section, the part of the work the
	// caller said it runs (OpenCL.ProfileSection).
	profSections bool
	section      string
	// up and down count the bytes written to and read from the device
	// (OpenCL.Transferred).
	up, down int64
	// st stages large transfers through pinned memory (stage.go).
	st stager
}

// KernelTime is the wall time of one kernel's launches, each waited for.
type KernelTime struct {
	Name     string
	Launches int
	Total    time.Duration
}

func newContext(d clDevice) (*clContext, error) {
	ctx, err := cl.CreateContext([]*cl.Device{d.d})
	if err != nil {
		return nil, clWrap("clCreateContext", err)
	}
	q, err := ctx.CreateCommandQueue(d.d, 0)
	if err != nil {
		ctx.Release()
		return nil, clWrap("clCreateCommandQueue", err)
	}
	c := &clContext{dev: d, ctx: ctx, queue: q}
	// The transfer queue is an optimisation: a driver that refuses a second
	// queue gets every command on the first, as before it existed.
	if x, err := ctx.CreateCommandQueue(d.d, 0); err == nil {
		c.xfer = x
	}
	return c, nil
}

// oneQueue gives up the transfer queue (Config.OneQueue): every
// command goes on the compute queue from now on.
func (c *clContext) oneQueue() error {
	if c.xfer == nil {
		return nil
	}
	err := clWrap("clFinish", c.xfer.Finish())
	c.xfer.Release()
	c.xfer = nil
	return err
}

// release waits for the queues, frees every allocation still alive, then
// the queues and the context. A second call does nothing.
func (c *clContext) release() error {
	if c.queue == nil {
		return nil
	}
	err := errors.Join(c.finish(), c.releaseStage())
	c.mem.freeAll()
	if c.syncEv != nil {
		c.syncEv.Release()
		c.syncEv = nil
	}
	err = errors.Join(err, c.oneQueue())
	c.queue.Release()
	c.ctx.Release()
	c.queue, c.ctx = nil, nil
	return err
}

// done releases the event the cl package creates for every enqueued command
// (it cannot be asked not to) when nothing will wait on it: holding events
// until their finalizers run would only pile up driver objects between
// garbage collections. (Writes and reads keep theirs: xfer.go.)
func done(op string, ev *cl.Event, err error) error {
	if ev != nil {
		ev.Release()
	}
	return clWrap(op, err)
}

// read is blocking, so the Go memory it fills needs no pinning beyond the
// call; so is write (xfer.go). Offsets and sizes are in bytes. Large
// transfers go through the pinned slots when the context stages
// (stage.go); the bytes are counted once either way. A read is a
// point where the host knows every command of the compute queue before it
// is done: its event becomes syncEv.
func (c *clContext) read(dst unsafe.Pointer, m *clMem, off, bytes int) error {
	if m.freed {
		return errFreed
	}
	c.down += int64(bytes)
	seq := c.use(m)
	var ev *cl.Event
	var err error
	if c.staging(bytes) {
		ev, err = c.readStaged(goBytes(dst, bytes), m, off)
	} else {
		ev, err = c.queue.EnqueueReadBuffer(m.mem, true, off, bytes, dst, nil)
		err = clWrap("clEnqueueReadBuffer", err)
	}
	if err != nil {
		if ev != nil {
			ev.Release()
		}
		return err
	}
	c.synced(ev, seq)
	return nil
}

func (c *clContext) copy(dst *clMem, doff int, src *clMem, soff, bytes int) error {
	if dst.freed || src.freed {
		return errFreed
	}
	c.use(dst)
	c.use(src)
	ev, err := c.queue.EnqueueCopyBuffer(src.mem, dst.mem, soff, doff, bytes, nil)
	return done("clEnqueueCopyBuffer", ev, err)
}

// finish waits for both queues.
func (c *clContext) finish() error {
	if c.queue == nil {
		return errClosed
	}
	err := clWrap("clFinish", c.queue.Finish())
	if c.xfer != nil {
		err = errors.Join(err, clWrap("clFinish", c.xfer.Finish()))
	}
	return err
}

// clProgram is a built program.
type clProgram struct{ p *cl.Program }

// buildSource compiles src with opts; a compiler error carries its log.
func (c *clContext) buildSource(src, opts string) (*clProgram, error) {
	p, err := c.ctx.CreateProgramWithSource([]string{src})
	if err != nil {
		return nil, clWrap("clCreateProgramWithSource", err)
	}
	return c.build(p, opts)
}

// buildBinary loads a binary saved by binary; the driver may refuse it (a
// new driver, another device), which the caller answers by building source.
func (c *clContext) buildBinary(bin []byte, opts string) (*clProgram, error) {
	p, err := programWithBinary(c.ctx, c.dev.d, bin)
	if err != nil {
		return nil, err
	}
	return c.build(p, opts)
}

// build runs the compiler (or, for a binary, the driver's final link) on p.
// The cl package reports a failed build as its log alone, without the
// status code: the *CLError inside the *BuildError is then
// CL_BUILD_PROGRAM_FAILURE whatever the cause, and the log says which.
func (c *clContext) build(p *cl.Program, opts string) (*clProgram, error) {
	err := p.BuildProgram([]*cl.Device{c.dev.d}, opts)
	if err == nil {
		return &clProgram{p: p}, nil
	}
	p.Release()
	var be cl.BuildError
	if errors.As(err, &be) {
		return nil, &BuildError{Err: clErr("clBuildProgram", clBuildProgramFailure), Log: strings.TrimRight(string(be), "\x00\n ")}
	}
	return nil, &BuildError{Err: clWrap("clBuildProgram", err)}
}

// binary returns the program's device binary (empty when the driver keeps none).
func (p *clProgram) binary() ([]byte, error) { return programBinary(p.p) }

func (p *clProgram) release() { p.p.Release() }

// buildLog is the compiler's log for a program that built (see programBuildLog).
func (c *clContext) buildLog(p *clProgram) string { return programBuildLog(p.p, c.dev.d) }

// clKernel is one kernel of a built program with its work-group limit.
type clKernel struct {
	k     *cl.Kernel
	name  string
	args  string // the declared argument kinds (kernels.go)
	maxWG int
	// vals holds the scalar arguments while clSetKernelArg copies them. The
	// cl package's SetArgInt32 and SetArgFloat32 take the address of their
	// parameter, which moves every scalar to the heap: one allocation per
	// argument per launch, avoided by passing a slot of vals instead.
	vals []uint32
	// set and bufs remember what each argument was last set to (kinds
	// below; bufs for buffers, vals for scalars): OpenCL keeps a kernel's
	// arguments between launches, so an unchanged one is not set again.
	// A GEMM in a training step changes a few of its 25 arguments. Holding
	// the last buffer keeps it from being collected (and its address from
	// being reused by another) while the cache refers to it.
	set  []uint8
	bufs []*clMem
}

// Kinds of a cached argument in clKernel.set.
const (
	argUnset uint8 = iota
	argBuf
	argScalar
)

// kernel creates kernel name of p, declared with the argument kinds args
// (kernels.go): a program whose kernel takes another number of arguments
// is an error, so a declaration that drifted from its source fails when
// the backend starts.
func (c *clContext) kernel(p *clProgram, name, args string) (*clKernel, error) {
	k, err := p.p.CreateKernel(name)
	if err != nil {
		return nil, clWrap("clCreateKernel "+name, err)
	}
	n, err := k.NumArgs()
	if err != nil {
		k.Release()
		return nil, clWrap("clGetKernelInfo "+name, err)
	}
	if n != len(args) {
		k.Release()
		return nil, fmt.Errorf("gpu: opencl: kernel %s takes %d arguments in the program, %d in its declaration (%s)", name, n, len(args), args)
	}
	wg, err := k.WorkGroupSize(c.dev.d)
	if err != nil {
		k.Release()
		return nil, clWrap("clGetKernelWorkGroupInfo "+name, err)
	}
	return &clKernel{k: k, name: name, args: args, maxWG: wg}, nil
}

func (k *clKernel) release() {
	k.k.Release()
	k.set, k.bufs = nil, nil
}

// setScalar sets 32-bit argument i unless it already holds bits.
func (k *clKernel) setScalar(i int, bits uint32) error {
	if k.set[i] == argScalar && k.vals[i] == bits {
		return nil
	}
	k.vals[i] = bits
	k.set[i], k.bufs[i] = argScalar, nil
	return k.k.SetArgUnsafe(i, 4, unsafe.Pointer(&k.vals[i]))
}

// local asks for a __local argument of the given bytes.
type local int

// launch sets k's arguments and enqueues it over global work items grouped by
// loc (nil: the driver chooses). Arguments are *clMem, int (passed as a
// 32-bit int, the kernels' type), uint32, float32 or local, as k's
// declaration says (kernels.go): arguments that differ from it in number
// or kind are an error naming the kernel, and nothing is enqueued.
func (c *clContext) launch(k *clKernel, global, loc []int, args ...any) error {
	if c.queue == nil || k == nil { // Close released the kernels
		return errClosed
	}
	if err := checkArgs(k.name, k.args, args); err != nil {
		return err
	}
	c.seq++ // the launch's number: every buffer argument is used by it (xfer.go)
	if len(k.vals) < len(args) {
		k.vals = make([]uint32, len(args))
		k.set = make([]uint8, len(args))
		k.bufs = make([]*clMem, len(args))
	}
	for i, a := range args {
		var err error
		switch v := a.(type) {
		case *clMem:
			if v.freed {
				return fmt.Errorf("gpu: opencl: kernel %s argument %d: %w", k.name, i, errFreed)
			}
			v.use = c.seq
			if k.set[i] == argBuf && k.bufs[i] == v {
				continue
			}
			err = k.k.SetArgBuffer(i, v.mem)
			k.set[i], k.bufs[i] = argBuf, v
		case int:
			err = k.setScalar(i, uint32(int32(v)))
		case uint32:
			err = k.setScalar(i, v)
		case float32:
			err = k.setScalar(i, math.Float32bits(v))
		case local:
			err = k.k.SetArgLocal(i, int(v))
			k.set[i], k.bufs[i] = argUnset, nil
		default:
			panic(fmt.Sprintf("gpu: opencl: kernel %s argument %d of type %T", k.name, i, a))
		}
		if err != nil {
			k.set[i], k.bufs[i] = argUnset, nil
			return clWrap(fmt.Sprintf("clSetKernelArg %s #%d", k.name, i), err)
		}
	}
	c.launches++
	var t0 time.Time
	if c.prof != nil {
		if err := c.finish(); err != nil {
			return err
		}
		t0 = time.Now()
	}
	// Natively, without the event the cl package would create; through the
	// cl package for sizes enqueueKernel does not take (native.go).
	native, err := enqueueKernel(c.queue, k.k, global, loc)
	if !native {
		ev, eerr := c.queue.EnqueueNDRangeKernel(k.k, nil, global, loc, nil)
		err = done("clEnqueueNDRangeKernel", ev, eerr)
	}
	if err != nil { // the operation's name is built only on failure: launches are hot
		return fmt.Errorf("kernel %s: %w", k.name, err)
	}
	if c.prof != nil {
		if err := c.finish(); err != nil {
			return err
		}
		name := k.name
		if c.profShapes {
			name = fmt.Sprintf("%s %v", k.name, global)
		}
		if c.profSections {
			name = c.section + gpu.SectionSep + name
		}
		kt := c.prof[name]
		if kt == nil {
			kt = &KernelTime{Name: name}
			c.prof[name] = kt
		}
		kt.Launches++
		kt.Total += time.Since(t0)
	}
	return nil
}
