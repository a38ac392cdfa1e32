//go:build opencl

package gpu

// The OpenCL runtime is loaded at run time with dlopen, not linked: a binary
// built with -tags opencl starts on a phone or host without libOpenCL.so and
// falls back to the CPU (Open says why), and cross builds for Android need
// neither the vendor library nor the Khronos headers. The few types and
// constants used are declared below; their values are fixed by the OpenCL 1.2
// ABI. Every C handle stays in this package (clHandles wrap them).

/*
#cgo linux LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_ulong cl_bitfield;
typedef struct _cl_platform_id* cl_platform_id;
typedef struct _cl_device_id* cl_device_id;
typedef struct _cl_context* cl_context;
typedef struct _cl_command_queue* cl_command_queue;
typedef struct _cl_mem* cl_mem;
typedef struct _cl_program* cl_program;
typedef struct _cl_kernel* cl_kernel;
typedef struct _cl_event* cl_event;
typedef intptr_t cl_context_properties;

#define LOAD(name) if (!(p_##name = (void*)dlsym(h, #name))) return #name;

static cl_int (*p_clGetPlatformIDs)(cl_uint, cl_platform_id*, cl_uint*);
static cl_int (*p_clGetPlatformInfo)(cl_platform_id, cl_uint, size_t, void*, size_t*);
static cl_int (*p_clGetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id*, cl_uint*);
static cl_int (*p_clGetDeviceInfo)(cl_device_id, cl_uint, size_t, void*, size_t*);
static cl_context (*p_clCreateContext)(const cl_context_properties*, cl_uint, const cl_device_id*, void*, void*, cl_int*);
static cl_int (*p_clReleaseContext)(cl_context);
static cl_command_queue (*p_clCreateCommandQueue)(cl_context, cl_device_id, cl_bitfield, cl_int*);
static cl_int (*p_clReleaseCommandQueue)(cl_command_queue);
static cl_mem (*p_clCreateBuffer)(cl_context, cl_bitfield, size_t, void*, cl_int*);
static cl_int (*p_clReleaseMemObject)(cl_mem);
static cl_program (*p_clCreateProgramWithSource)(cl_context, cl_uint, const char**, const size_t*, cl_int*);
static cl_program (*p_clCreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id*, const size_t*, const unsigned char**, cl_int*, cl_int*);
static cl_int (*p_clBuildProgram)(cl_program, cl_uint, const cl_device_id*, const char*, void*, void*);
static cl_int (*p_clGetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void*, size_t*);
static cl_int (*p_clGetProgramInfo)(cl_program, cl_uint, size_t, void*, size_t*);
static cl_int (*p_clReleaseProgram)(cl_program);
static cl_kernel (*p_clCreateKernel)(cl_program, const char*, cl_int*);
static cl_int (*p_clReleaseKernel)(cl_kernel);
static cl_int (*p_clGetKernelWorkGroupInfo)(cl_kernel, cl_device_id, cl_uint, size_t, void*, size_t*);
static cl_int (*p_clSetKernelArg)(cl_kernel, cl_uint, size_t, const void*);
static cl_int (*p_clEnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*, cl_uint, const cl_event*, cl_event*);
static cl_int (*p_clEnqueueReadBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, void*, cl_uint, const cl_event*, cl_event*);
static cl_int (*p_clEnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void*, cl_uint, const cl_event*, cl_event*);
static cl_int (*p_clEnqueueCopyBuffer)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event*, cl_event*);
static cl_int (*p_clFinish)(cl_command_queue);

// cl_load opens the first library of the colon-free list that loads and
// resolves every symbol; it returns NULL or a static description of the failure.
static const char* cl_load(const char* path) {
	void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
	LOAD(clGetPlatformIDs) LOAD(clGetPlatformInfo) LOAD(clGetDeviceIDs) LOAD(clGetDeviceInfo)
	LOAD(clCreateContext) LOAD(clReleaseContext) LOAD(clCreateCommandQueue) LOAD(clReleaseCommandQueue)
	LOAD(clCreateBuffer) LOAD(clReleaseMemObject) LOAD(clCreateProgramWithSource)
	LOAD(clCreateProgramWithBinary) LOAD(clBuildProgram) LOAD(clGetProgramBuildInfo)
	LOAD(clGetProgramInfo) LOAD(clReleaseProgram) LOAD(clCreateKernel) LOAD(clReleaseKernel)
	LOAD(clGetKernelWorkGroupInfo) LOAD(clSetKernelArg) LOAD(clEnqueueNDRangeKernel)
	LOAD(clEnqueueReadBuffer) LOAD(clEnqueueWriteBuffer) LOAD(clEnqueueCopyBuffer) LOAD(clFinish)
	return NULL;
}

static cl_int cl_platforms(cl_uint n, cl_platform_id* ids, cl_uint* got) { return p_clGetPlatformIDs(n, ids, got); }
static cl_int cl_platform_info(cl_platform_id p, cl_uint what, size_t n, void* v, size_t* got) { return p_clGetPlatformInfo(p, what, n, v, got); }
static cl_int cl_devices(cl_platform_id p, cl_uint n, cl_device_id* ids, cl_uint* got) { return p_clGetDeviceIDs(p, 0xFFFFFFFF, n, ids, got); }
static cl_int cl_device_info(cl_device_id d, cl_uint what, size_t n, void* v, size_t* got) { return p_clGetDeviceInfo(d, what, n, v, got); }
static cl_context cl_context_new(cl_device_id d, cl_int* err) { return p_clCreateContext(NULL, 1, &d, NULL, NULL, err); }
static cl_int cl_context_release(cl_context c) { return p_clReleaseContext(c); }
static cl_command_queue cl_queue_new(cl_context c, cl_device_id d, cl_int* err) { return p_clCreateCommandQueue(c, d, 0, err); }
static cl_int cl_queue_release(cl_command_queue q) { return p_clReleaseCommandQueue(q); }
static cl_mem cl_buffer_new(cl_context c, size_t bytes, cl_int* err) { return p_clCreateBuffer(c, 1, bytes, NULL, err); }
static cl_int cl_buffer_release(cl_mem m) { return p_clReleaseMemObject(m); }
static cl_program cl_program_source(cl_context c, const char* src, cl_int* err) { return p_clCreateProgramWithSource(c, 1, &src, NULL, err); }
static cl_program cl_program_binary(cl_context c, cl_device_id d, const unsigned char* bin, size_t n, cl_int* status, cl_int* err) {
	return p_clCreateProgramWithBinary(c, 1, &d, &n, &bin, status, err);
}
static cl_int cl_program_build(cl_program p, cl_device_id d, const char* opts) { return p_clBuildProgram(p, 1, &d, opts, NULL, NULL); }
static cl_int cl_program_log(cl_program p, cl_device_id d, size_t n, void* v, size_t* got) { return p_clGetProgramBuildInfo(p, d, 0x1183, n, v, got); }
// cl_program_binary_size and cl_program_binary_get read CL_PROGRAM_BINARY_SIZES
// and CL_PROGRAM_BINARIES of a program built for exactly one device.
static cl_int cl_program_binary_size(cl_program p, size_t* n) { return p_clGetProgramInfo(p, 0x1165, sizeof(size_t), n, NULL); }
static cl_int cl_program_binary_get(cl_program p, unsigned char* dst) { return p_clGetProgramInfo(p, 0x1166, sizeof(dst), &dst, NULL); }
static cl_int cl_program_release(cl_program p) { return p_clReleaseProgram(p); }
static cl_kernel cl_kernel_new(cl_program p, const char* name, cl_int* err) { return p_clCreateKernel(p, name, err); }
static cl_int cl_kernel_release(cl_kernel k) { return p_clReleaseKernel(k); }
static cl_int cl_kernel_wg_size(cl_kernel k, cl_device_id d, size_t* n) { return p_clGetKernelWorkGroupInfo(k, d, 0x11B0, sizeof(size_t), n, NULL); }
static cl_int cl_arg_mem(cl_kernel k, cl_uint i, cl_mem m) { return p_clSetKernelArg(k, i, sizeof(cl_mem), &m); }
static cl_int cl_arg_int(cl_kernel k, cl_uint i, cl_int v) { return p_clSetKernelArg(k, i, sizeof(cl_int), &v); }
static cl_int cl_arg_float(cl_kernel k, cl_uint i, float v) { return p_clSetKernelArg(k, i, sizeof(float), &v); }
static cl_int cl_arg_local(cl_kernel k, cl_uint i, size_t bytes) { return p_clSetKernelArg(k, i, bytes, NULL); }
static cl_int cl_run(cl_command_queue q, cl_kernel k, cl_uint dims, size_t g0, size_t g1, size_t g2, size_t l0, size_t l1, size_t l2) {
	size_t g[3] = {g0, g1, g2}, l[3] = {l0, l1, l2};
	return p_clEnqueueNDRangeKernel(q, k, dims, NULL, g, l0 ? l : NULL, 0, NULL, NULL);
}
static cl_int cl_read(cl_command_queue q, cl_mem m, size_t off, size_t n, void* dst) { return p_clEnqueueReadBuffer(q, m, 1, off, n, dst, 0, NULL, NULL); }
static cl_int cl_write(cl_command_queue q, cl_mem m, size_t off, size_t n, const void* src) { return p_clEnqueueWriteBuffer(q, m, 1, off, n, src, 0, NULL, NULL); }
static cl_int cl_copy(cl_command_queue q, cl_mem src, cl_mem dst, size_t so, size_t do_, size_t n) { return p_clEnqueueCopyBuffer(q, src, dst, so, do_, n, 0, NULL, NULL); }
static cl_int cl_finish(cl_command_queue q) { return p_clFinish(q); }
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// Device info and type constants of the OpenCL 1.2 ABI.
const (
	clDeviceTypeCPU         = 1 << 1
	clDeviceTypeGPU         = 1 << 2
	clDeviceTypeAccelerator = 1 << 3

	clDeviceType            = 0x1000
	clDeviceMaxComputeUnits = 0x1002
	clDeviceMaxWorkGroup    = 0x1004
	clDeviceMaxClock        = 0x100C
	clDeviceMemBaseAlign    = 0x1019
	clDeviceSingleFPConfig  = 0x101B
	clDeviceGlobalMemSize   = 0x101F
	clDeviceLocalMemSize    = 0x1023
	clDeviceName            = 0x102B
	clDeviceVendor          = 0x102C
	clDriverVersion         = 0x102D
	clDeviceVersion         = 0x102F
	clDeviceExtensions      = 0x1030
	clPlatformName          = 0x0902

	clFPCorrectlyRoundedDivideSqrt = 1 << 7
)

var (
	loadOnce sync.Once
	loadErr  error
)

// libraryPaths are tried in order; COTRAIN_OPENCL_LIB, when set, is tried first.
var libraryPaths = []string{
	"libOpenCL.so", "libOpenCL.so.1",
	"/vendor/lib64/libOpenCL.so", "/system/vendor/lib64/libOpenCL.so", "/system/lib64/libOpenCL.so",
	"/vendor/lib/libOpenCL.so", "/system/vendor/lib/libOpenCL.so",
}

// loadLibrary loads the OpenCL runtime once per process (the function pointers
// are process state, like the dynamic loader's). It reports every path tried.
func loadLibrary() error {
	loadOnce.Do(func() {
		paths := libraryPaths
		if p := os.Getenv("COTRAIN_OPENCL_LIB"); p != "" {
			paths = append([]string{p}, paths...)
		}
		var why []string
		for _, p := range paths {
			cp := C.CString(p)
			msg := C.cl_load(cp)
			C.free(unsafe.Pointer(cp))
			if msg == nil {
				return
			}
			why = append(why, C.GoString(msg))
		}
		loadErr = fmt.Errorf("%w: %s", ErrNoOpenCL, strings.Join(why, "; "))
	})
	return loadErr
}

// clDevice is one device of one platform, as enumerated by listDevices.
type clDevice struct {
	id       C.cl_device_id
	platform string
}

// listDevices returns every device of every platform, platforms in the ICD's
// order: the index into this list is the N of "opencl:N".
func listDevices() ([]clDevice, error) {
	if err := loadLibrary(); err != nil {
		return nil, err
	}
	var np C.cl_uint
	if code := C.cl_platforms(0, nil, &np); code != 0 || np == 0 {
		if code == 0 || code == -1001 { // CL_PLATFORM_NOT_FOUND_KHR: ICD with no vendor
			return nil, fmt.Errorf("%w: no OpenCL platform installed", ErrNoDevice)
		}
		return nil, clErr("clGetPlatformIDs", code)
	}
	plats := make([]C.cl_platform_id, np)
	if code := C.cl_platforms(np, &plats[0], nil); code != 0 {
		return nil, clErr("clGetPlatformIDs", code)
	}
	var out []clDevice
	for _, p := range plats {
		name := platformString(p, clPlatformName)
		var nd C.cl_uint
		if code := C.cl_devices(p, 0, nil, &nd); code != 0 || nd == 0 {
			continue // CL_DEVICE_NOT_FOUND: a platform without devices
		}
		ids := make([]C.cl_device_id, nd)
		if code := C.cl_devices(p, nd, &ids[0], nil); code != 0 {
			return nil, clErr("clGetDeviceIDs", code)
		}
		for _, id := range ids {
			out = append(out, clDevice{id: id, platform: name})
		}
	}
	return out, nil
}

func platformString(p C.cl_platform_id, what C.cl_uint) string {
	var n C.size_t
	if C.cl_platform_info(p, what, 0, nil, &n) != 0 || n == 0 {
		return ""
	}
	buf := make([]byte, n)
	C.cl_platform_info(p, what, n, unsafe.Pointer(&buf[0]), nil)
	return strings.TrimRight(string(buf), "\x00 ")
}

func (d clDevice) str(what C.cl_uint) string {
	var n C.size_t
	if C.cl_device_info(d.id, what, 0, nil, &n) != 0 || n == 0 {
		return ""
	}
	buf := make([]byte, n)
	C.cl_device_info(d.id, what, n, unsafe.Pointer(&buf[0]), nil)
	return strings.TrimSpace(strings.TrimRight(string(buf), "\x00"))
}

// num reads an integer property of size bytes (4 for cl_uint, 8 for
// cl_ulong and size_t on 64-bit hosts).
func (d clDevice) num(what C.cl_uint, size int) uint64 {
	var v uint64
	if C.cl_device_info(d.id, what, C.size_t(size), unsafe.Pointer(&v), nil) != 0 {
		return 0
	}
	if size == 4 {
		return v & 0xFFFFFFFF
	}
	return v
}

// info gathers what the backend and the log need to know about d.
func (d clDevice) info() DeviceInfo {
	typ := d.num(clDeviceType, 8)
	kind := "other"
	switch {
	case typ&clDeviceTypeGPU != 0:
		kind = "gpu"
	case typ&clDeviceTypeCPU != 0:
		kind = "cpu"
	case typ&clDeviceTypeAccelerator != 0:
		kind = "accelerator"
	}
	ext := d.str(clDeviceExtensions)
	return DeviceInfo{
		Name: d.str(clDeviceName), Vendor: d.str(clDeviceVendor), Platform: d.platform,
		Version: d.str(clDeviceVersion), Driver: d.str(clDriverVersion), Type: kind,
		ComputeUnits: int(d.num(clDeviceMaxComputeUnits, 4)), ClockMHz: int(d.num(clDeviceMaxClock, 4)),
		GlobalMem: int64(d.num(clDeviceGlobalMemSize, 8)), LocalMem: int64(d.num(clDeviceLocalMemSize, 8)),
		MaxWorkGroup: int(d.num(clDeviceMaxWorkGroup, int(unsafe.Sizeof(C.size_t(0))))),
		BaseAlign:    int(d.num(clDeviceMemBaseAlign, 4)),
		FP16:         strings.Contains(ext, "cl_khr_fp16"), FP64: strings.Contains(ext, "cl_khr_fp64"),
		CorrectDivSqrt: d.num(clDeviceSingleFPConfig, 8)&clFPCorrectlyRoundedDivideSqrt != 0,
	}
}

// clContext owns a context and its one in-order queue on one device.
type clContext struct {
	dev   clDevice
	ctx   C.cl_context
	queue C.cl_command_queue
}

func newContext(d clDevice) (*clContext, error) {
	var code C.cl_int
	ctx := C.cl_context_new(d.id, &code)
	if code != 0 {
		return nil, clErr("clCreateContext", code)
	}
	q := C.cl_queue_new(ctx, d.id, &code)
	if code != 0 {
		C.cl_context_release(ctx)
		return nil, clErr("clCreateCommandQueue", code)
	}
	return &clContext{dev: d, ctx: ctx, queue: q}, nil
}

func (c *clContext) release() {
	if c.queue != nil {
		C.cl_finish(c.queue)
		C.cl_queue_release(c.queue)
		C.cl_context_release(c.ctx)
		c.queue, c.ctx = nil, nil
	}
}

// clMem is one allocation; a cleanup releases it once no Buffer refers to it.
type clMem struct {
	mem C.cl_mem
	n   int // elements of 4 bytes
}

func (c *clContext) alloc(n int) (*clMem, error) {
	var code C.cl_int
	m := C.cl_buffer_new(c.ctx, C.size_t(4*n), &code)
	if code != 0 {
		return nil, clErr("clCreateBuffer", code)
	}
	cm := &clMem{mem: m, n: n}
	runtime.AddCleanup(cm, func(m C.cl_mem) { C.cl_buffer_release(m) }, m)
	return cm, nil
}

// write and read are blocking, so the Go memory they touch needs no pinning
// beyond the call. Offsets and sizes are in bytes.
func (c *clContext) write(m *clMem, off int, src unsafe.Pointer, bytes int) error {
	return clErr("clEnqueueWriteBuffer", C.cl_write(c.queue, m.mem, C.size_t(off), C.size_t(bytes), src))
}

func (c *clContext) read(dst unsafe.Pointer, m *clMem, off, bytes int) error {
	return clErr("clEnqueueReadBuffer", C.cl_read(c.queue, m.mem, C.size_t(off), C.size_t(bytes), dst))
}

func (c *clContext) copy(dst *clMem, doff int, src *clMem, soff, bytes int) error {
	return clErr("clEnqueueCopyBuffer", C.cl_copy(c.queue, src.mem, dst.mem, C.size_t(soff), C.size_t(doff), C.size_t(bytes)))
}

func (c *clContext) finish() error { return clErr("clFinish", C.cl_finish(c.queue)) }

// clProgram is a built program and the binary the driver produced for it.
type clProgram struct{ p C.cl_program }

// buildSource compiles src with opts; a compiler error carries its log.
func (c *clContext) buildSource(src, opts string) (*clProgram, error) {
	cs := C.CString(src)
	defer C.free(unsafe.Pointer(cs))
	var code C.cl_int
	p := C.cl_program_source(c.ctx, cs, &code)
	if code != 0 {
		return nil, clErr("clCreateProgramWithSource", code)
	}
	return c.build(p, opts)
}

// buildBinary loads a binary saved by binary; the driver may refuse it (a
// new driver, another device), which the caller answers by building source.
func (c *clContext) buildBinary(bin []byte, opts string) (*clProgram, error) {
	if len(bin) == 0 {
		return nil, clErr("clCreateProgramWithBinary", -30)
	}
	cb := C.CBytes(bin)
	defer C.free(cb)
	var status, code C.cl_int
	p := C.cl_program_binary(c.ctx, c.dev.id, (*C.uchar)(cb), C.size_t(len(bin)), &status, &code)
	if code != 0 {
		return nil, clErr("clCreateProgramWithBinary", code)
	}
	if status != 0 {
		C.cl_program_release(p)
		return nil, clErr("clCreateProgramWithBinary", status)
	}
	return c.build(p, opts)
}

func (c *clContext) build(p C.cl_program, opts string) (*clProgram, error) {
	co := C.CString(opts)
	defer C.free(unsafe.Pointer(co))
	if code := C.cl_program_build(p, c.dev.id, co); code != 0 {
		var n C.size_t
		C.cl_program_log(p, c.dev.id, 0, nil, &n)
		log := ""
		if n > 1 {
			buf := make([]byte, n)
			C.cl_program_log(p, c.dev.id, n, unsafe.Pointer(&buf[0]), nil)
			log = strings.TrimRight(string(buf), "\x00")
		}
		C.cl_program_release(p)
		return nil, &BuildError{Err: clErr("clBuildProgram", code), Log: log}
	}
	return &clProgram{p: p}, nil
}

// binary returns the program's device binary (empty when the driver keeps none).
func (p *clProgram) binary() ([]byte, error) {
	var n C.size_t
	if code := C.cl_program_binary_size(p.p, &n); code != 0 {
		return nil, clErr("clGetProgramInfo", code)
	}
	if n == 0 {
		return nil, nil
	}
	buf := C.malloc(n)
	defer C.free(buf)
	if code := C.cl_program_binary_get(p.p, (*C.uchar)(buf)); code != 0 {
		return nil, clErr("clGetProgramInfo", code)
	}
	return C.GoBytes(buf, C.int(n)), nil
}

func (p *clProgram) release() { C.cl_program_release(p.p) }

// clKernel is one kernel of a built program with its work-group limit.
type clKernel struct {
	k     C.cl_kernel
	name  string
	maxWG int
}

func (c *clContext) kernel(p *clProgram, name string) (*clKernel, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	var code C.cl_int
	k := C.cl_kernel_new(p.p, cn, &code)
	if code != 0 {
		return nil, clErr("clCreateKernel "+name, code)
	}
	var wg C.size_t
	if code := C.cl_kernel_wg_size(k, c.dev.id, &wg); code != 0 {
		return nil, clErr("clGetKernelWorkGroupInfo "+name, code)
	}
	return &clKernel{k: k, name: name, maxWG: int(wg)}, nil
}

func (k *clKernel) release() { C.cl_kernel_release(k.k) }

// local asks for a __local argument of the given bytes.
type local int

// launch sets k's arguments and enqueues it over global work items grouped by
// loc (nil: the driver chooses). Arguments are *clMem, int, float32 or local.
func (c *clContext) launch(k *clKernel, global, loc []int, args ...any) error {
	for i, a := range args {
		var code C.cl_int
		switch v := a.(type) {
		case *clMem:
			code = C.cl_arg_mem(k.k, C.cl_uint(i), v.mem)
		case int:
			code = C.cl_arg_int(k.k, C.cl_uint(i), C.cl_int(v))
		case float32:
			code = C.cl_arg_float(k.k, C.cl_uint(i), C.float(v))
		case local:
			code = C.cl_arg_local(k.k, C.cl_uint(i), C.size_t(v))
		default:
			panic(fmt.Sprintf("gpu: opencl: kernel %s argument %d of type %T", k.name, i, a))
		}
		if code != 0 {
			return clErr(fmt.Sprintf("clSetKernelArg %s #%d", k.name, i), code)
		}
	}
	var g, l [3]C.size_t
	for i, v := range global {
		g[i] = C.size_t(v)
	}
	for i, v := range loc {
		l[i] = C.size_t(v)
	}
	code := C.cl_run(c.queue, k.k, C.cl_uint(len(global)), g[0], g[1], g[2], l[0], l[1], l[2])
	return clErr("clEnqueueNDRangeKernel "+k.name, code)
}
