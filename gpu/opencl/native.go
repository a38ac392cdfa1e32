//go:build opencl

package opencl

// What github.com/jgillich/go-opencl lacks, called directly:
//
//   - program binaries for the disk cache: clGetProgramInfo
//     (CL_PROGRAM_BINARY_SIZES, CL_PROGRAM_BINARIES) and
//     clCreateProgramWithBinary;
//   - CL_DEVICE_SINGLE_FP_CONFIG (not exposed) and CL_DEVICE_EXTENSIONS of
//     any length (the cl package reads strings into 1024 bytes and panics on
//     longer ones);
//   - kernel launches without an event (the cl package asks the driver for
//     one per launch and gives it a finalizer; nothing here waits on
//     events) and without per-launch slices: enqueueKernel;
//   - the build log of a program that built (the cl package reads it only
//     on failure; NVIDIA's -cl-nv-verbose puts register use there);
//   - the status codes behind its error values (clCodes below), taken from
//     the Khronos headers rather than typed in.
//
// The C handles come from the cl package's Handle methods, and a program
// created from a binary becomes a *cl.Program (its kernels are created and
// enqueued through the cl package) by cl.ProgramFromHandle: the two things
// cotrain adds to the package, which the module builds from
// third_party/go-opencl (see COTRAIN.md there). Nothing here reads or
// writes another package's fields.
//
// This file links OpenCL exactly as the cl package does, so it adds no
// build or run-time requirement of its own.

/*
#cgo linux pkg-config: OpenCL
#cgo darwin LDFLAGS: -framework OpenCL
#cgo windows LDFLAGS: -lOpenCL
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#if defined(__APPLE__)
#include <OpenCL/cl.h>
#else
#include <CL/cl.h>
#endif

// binary_size and binary_get read CL_PROGRAM_BINARY_SIZES and
// CL_PROGRAM_BINARIES of a program built for exactly one device.
static cl_int binary_size(cl_program p, size_t* n) { return clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof(size_t), n, NULL); }
static cl_int binary_get(cl_program p, unsigned char* dst) { return clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof(dst), &dst, NULL); }
static cl_program binary_new(cl_context c, cl_device_id d, const unsigned char* bin, size_t n, cl_int* status, cl_int* err) {
	return clCreateProgramWithBinary(c, 1, &d, &n, &bin, status, err);
}

// enqueue launches k over dim dimensions of g grouped by l (l0 == 0: the
// driver chooses), asking for no event.
static cl_int enqueue(cl_command_queue q, cl_kernel k, cl_uint dim, size_t g0, size_t g1, size_t g2,
                      size_t l0, size_t l1, size_t l2) {
	size_t g[3] = {g0, g1, g2}, l[3] = {l0, l1, l2};
	return clEnqueueNDRangeKernel(q, k, dim, NULL, g, l0 ? l : NULL, 0, NULL, NULL);
}
*/
import "C"

import (
	"runtime"
	"strings"
	"unsafe"

	"github.com/jgillich/go-opencl/cl"
)

// Constants the backend needs from the headers.
const (
	clBuildProgramFailure          = int(C.CL_BUILD_PROGRAM_FAILURE)
	clFPCorrectlyRoundedDivideSqrt = uint64(C.CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
)

// enqueueKernel launches k on q over global work items grouped by loc (nil:
// the driver chooses), in up to 3 dimensions, without an event. done is
// false, and nothing was enqueued, when the sizes are not 1 to 3
// dimensions (the caller then goes through the cl package).
func enqueueKernel(q *cl.CommandQueue, k *cl.Kernel, global, loc []int) (done bool, err error) {
	if len(global) == 0 || len(global) > 3 || (loc != nil && len(loc) != len(global)) {
		return false, nil
	}
	var g, l [3]C.size_t
	for i, v := range global {
		g[i] = C.size_t(v)
	}
	for i, v := range loc {
		l[i] = C.size_t(v)
	}
	code := C.enqueue(C.cl_command_queue(q.Handle()), C.cl_kernel(k.Handle()), C.cl_uint(len(global)), g[0], g[1], g[2], l[0], l[1], l[2])
	runtime.KeepAlive(q)
	runtime.KeepAlive(k)
	if code != C.CL_SUCCESS {
		return true, clErr("clEnqueueNDRangeKernel", code)
	}
	return true, nil
}

// The handles of the cl package's objects.
func programHandle(p *cl.Program) C.cl_program { return C.cl_program(p.Handle()) }
func contextHandle(c *cl.Context) C.cl_context { return C.cl_context(c.Handle()) }
func deviceHandle(d *cl.Device) C.cl_device_id { return C.cl_device_id(d.Handle()) }

// programWithBinary creates (but does not build) a program for d from a
// binary that programBinary returned on an earlier run.
func programWithBinary(ctx *cl.Context, d *cl.Device, bin []byte) (*cl.Program, error) {
	const op = "clCreateProgramWithBinary"
	if len(bin) == 0 {
		return nil, clErr(op, int(C.CL_INVALID_VALUE))
	}
	var status, code C.cl_int
	// The driver copies the binary during the call; bin holds no Go pointers.
	h := C.binary_new(contextHandle(ctx), deviceHandle(d), (*C.uchar)(unsafe.Pointer(&bin[0])), C.size_t(len(bin)), &status, &code)
	if code != C.CL_SUCCESS {
		return nil, clErr(op, code)
	}
	if status != C.CL_SUCCESS {
		C.clReleaseProgram(h)
		return nil, clErr(op, status)
	}
	return cl.ProgramFromHandle(unsafe.Pointer(h), []*cl.Device{d}), nil
}

// programBinary returns the device binary of p, a program built for one
// device (empty when the driver keeps none).
func programBinary(p *cl.Program) ([]byte, error) {
	const op = "clGetProgramInfo"
	h := programHandle(p)
	var n C.size_t
	if code := C.binary_size(h, &n); code != C.CL_SUCCESS {
		return nil, clErr(op, code)
	}
	if n == 0 {
		return nil, nil
	}
	buf := make([]byte, n)
	if code := C.binary_get(h, (*C.uchar)(unsafe.Pointer(&buf[0]))); code != C.CL_SUCCESS {
		return nil, clErr(op, code)
	}
	runtime.KeepAlive(p)
	return buf, nil
}

// deviceExtensions returns CL_DEVICE_EXTENSIONS, however long, or "".
func deviceExtensions(d *cl.Device) string {
	h := deviceHandle(d)
	var n C.size_t
	if C.clGetDeviceInfo(h, C.CL_DEVICE_EXTENSIONS, 0, nil, &n) != C.CL_SUCCESS || n == 0 {
		return ""
	}
	buf := make([]byte, n)
	if C.clGetDeviceInfo(h, C.CL_DEVICE_EXTENSIONS, n, unsafe.Pointer(&buf[0]), nil) != C.CL_SUCCESS {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(string(buf), "\x00"))
}

// programBuildLog returns p's build log for device d (warnings, or what a
// verbose option asked the compiler to say), or "".
func programBuildLog(p *cl.Program, d *cl.Device) string {
	h, dev := programHandle(p), deviceHandle(d)
	var n C.size_t
	if C.clGetProgramBuildInfo(h, dev, C.CL_PROGRAM_BUILD_LOG, 0, nil, &n) != C.CL_SUCCESS || n == 0 {
		return ""
	}
	buf := make([]byte, n)
	if C.clGetProgramBuildInfo(h, dev, C.CL_PROGRAM_BUILD_LOG, n, unsafe.Pointer(&buf[0]), nil) != C.CL_SUCCESS {
		return ""
	}
	runtime.KeepAlive(p)
	return strings.TrimSpace(strings.TrimRight(string(buf), "\x00"))
}

// deviceSingleFPConfig returns CL_DEVICE_SINGLE_FP_CONFIG, or 0.
func deviceSingleFPConfig(d *cl.Device) uint64 {
	var v C.cl_device_fp_config
	if C.clGetDeviceInfo(deviceHandle(d), C.CL_DEVICE_SINGLE_FP_CONFIG, C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil) != C.CL_SUCCESS {
		return 0
	}
	return uint64(v)
}

// clCodes maps the cl package's error values back to the status codes they
// stand for (the package maps codes to values and keeps the map private).
// Codes it has no value for arrive as cl.ErrOther, which is the code itself.
var clCodes = map[error]int{
	cl.ErrDeviceNotFound: C.CL_DEVICE_NOT_FOUND, cl.ErrDeviceNotAvailable: C.CL_DEVICE_NOT_AVAILABLE,
	cl.ErrCompilerNotAvailable: C.CL_COMPILER_NOT_AVAILABLE, cl.ErrMemObjectAllocationFailure: C.CL_MEM_OBJECT_ALLOCATION_FAILURE,
	cl.ErrOutOfResources: C.CL_OUT_OF_RESOURCES, cl.ErrOutOfHostMemory: C.CL_OUT_OF_HOST_MEMORY,
	cl.ErrProfilingInfoNotAvailable: C.CL_PROFILING_INFO_NOT_AVAILABLE, cl.ErrMemCopyOverlap: C.CL_MEM_COPY_OVERLAP,
	cl.ErrImageFormatMismatch: C.CL_IMAGE_FORMAT_MISMATCH, cl.ErrImageFormatNotSupported: C.CL_IMAGE_FORMAT_NOT_SUPPORTED,
	cl.ErrBuildProgramFailure: C.CL_BUILD_PROGRAM_FAILURE, cl.ErrMapFailure: C.CL_MAP_FAILURE,
	cl.ErrMisalignedSubBufferOffset:          C.CL_MISALIGNED_SUB_BUFFER_OFFSET,
	cl.ErrExecStatusErrorForEventsInWaitList: C.CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
	cl.ErrCompileProgramFailure:              C.CL_COMPILE_PROGRAM_FAILURE, cl.ErrLinkerNotAvailable: C.CL_LINKER_NOT_AVAILABLE,
	cl.ErrLinkProgramFailure: C.CL_LINK_PROGRAM_FAILURE, cl.ErrDevicePartitionFailed: C.CL_DEVICE_PARTITION_FAILED,
	cl.ErrKernelArgInfoNotAvailable: C.CL_KERNEL_ARG_INFO_NOT_AVAILABLE,
	cl.ErrInvalidValue:              C.CL_INVALID_VALUE, cl.ErrInvalidDeviceType: C.CL_INVALID_DEVICE_TYPE,
	cl.ErrInvalidPlatform: C.CL_INVALID_PLATFORM, cl.ErrInvalidDevice: C.CL_INVALID_DEVICE,
	cl.ErrInvalidContext: C.CL_INVALID_CONTEXT, cl.ErrInvalidQueueProperties: C.CL_INVALID_QUEUE_PROPERTIES,
	cl.ErrInvalidCommandQueue: C.CL_INVALID_COMMAND_QUEUE, cl.ErrInvalidHostPtr: C.CL_INVALID_HOST_PTR,
	cl.ErrInvalidMemObject: C.CL_INVALID_MEM_OBJECT, cl.ErrInvalidImageFormatDescriptor: C.CL_INVALID_IMAGE_FORMAT_DESCRIPTOR,
	cl.ErrInvalidImageSize: C.CL_INVALID_IMAGE_SIZE, cl.ErrInvalidSampler: C.CL_INVALID_SAMPLER,
	cl.ErrInvalidBinary: C.CL_INVALID_BINARY, cl.ErrInvalidBuildOptions: C.CL_INVALID_BUILD_OPTIONS,
	cl.ErrInvalidProgram: C.CL_INVALID_PROGRAM, cl.ErrInvalidProgramExecutable: C.CL_INVALID_PROGRAM_EXECUTABLE,
	cl.ErrInvalidKernelName: C.CL_INVALID_KERNEL_NAME, cl.ErrInvalidKernelDefinition: C.CL_INVALID_KERNEL_DEFINITION,
	cl.ErrInvalidKernel: C.CL_INVALID_KERNEL, cl.ErrInvalidArgIndex: C.CL_INVALID_ARG_INDEX,
	cl.ErrInvalidArgValue: C.CL_INVALID_ARG_VALUE, cl.ErrInvalidArgSize: C.CL_INVALID_ARG_SIZE,
	cl.ErrInvalidKernelArgs: C.CL_INVALID_KERNEL_ARGS, cl.ErrInvalidWorkDimension: C.CL_INVALID_WORK_DIMENSION,
	cl.ErrInvalidWorkGroupSize: C.CL_INVALID_WORK_GROUP_SIZE, cl.ErrInvalidWorkItemSize: C.CL_INVALID_WORK_ITEM_SIZE,
	cl.ErrInvalidGlobalOffset: C.CL_INVALID_GLOBAL_OFFSET, cl.ErrInvalidEventWaitList: C.CL_INVALID_EVENT_WAIT_LIST,
	cl.ErrInvalidEvent: C.CL_INVALID_EVENT, cl.ErrInvalidOperation: C.CL_INVALID_OPERATION,
	cl.ErrInvalidGlObject: C.CL_INVALID_GL_OBJECT, cl.ErrInvalidBufferSize: C.CL_INVALID_BUFFER_SIZE,
	cl.ErrInvalidMipLevel: C.CL_INVALID_MIP_LEVEL, cl.ErrInvalidGlobalWorkSize: C.CL_INVALID_GLOBAL_WORK_SIZE,
	cl.ErrInvalidProperty: C.CL_INVALID_PROPERTY, cl.ErrInvalidImageDescriptor: C.CL_INVALID_IMAGE_DESCRIPTOR,
	cl.ErrInvalidCompilerOptions: C.CL_INVALID_COMPILER_OPTIONS, cl.ErrInvalidLinkerOptions: C.CL_INVALID_LINKER_OPTIONS,
	cl.ErrInvalidDevicePartitionCount: C.CL_INVALID_DEVICE_PARTITION_COUNT,
}
