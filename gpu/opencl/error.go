//go:build opencl

package opencl

import (
	"errors"
	"fmt"

	"github.com/jgillich/go-opencl/cl"
)

// CLError is an OpenCL call that returned an error code.
type CLError struct {
	// Code is the cl_int the call returned, e.g. -5 (CL_OUT_OF_RESOURCES).
	// 0 means the call reported success but returned no object.
	Code int
	Op   string // the OpenCL function, with the kernel name where there is one
}

// Error implements error: "gpu: opencl: clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11)".
func (e *CLError) Error() string {
	return fmt.Sprintf("gpu: opencl: %s: %s (%d)", e.Op, e.Name(), e.Code)
}

// Name returns the code's symbolic name, or "CL_ERROR" for an unknown code
// (and CL_SUCCESS_WITHOUT_OBJECT, not an OpenCL name, for code 0).
func (e *CLError) Name() string {
	if n, ok := clErrorNames[e.Code]; ok {
		return n
	}
	return "CL_ERROR"
}

// Is makes errors.Is(err, &CLError{Code: c}) match on the code alone.
func (e *CLError) Is(target error) bool {
	var t *CLError
	return errors.As(target, &t) && t.Code == e.Code && t.Op == ""
}

// clErr returns nil for CL_SUCCESS and a *CLError otherwise.
func clErr[T ~int32 | ~int](op string, code T) error {
	if code == 0 {
		return nil
	}
	return &CLError{Code: int(code), Op: op}
}

// clWrap turns an error of the cl package into a *CLError for op: its error
// values become their status codes again (clCodes), cl.ErrOther is the code
// itself, cl.ErrUnknown (success without an object) is code 0. An error of
// no known kind is wrapped as it is, with op (it cannot be a device status).
func clWrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if code, ok := clCodes[err]; ok {
		return &CLError{Code: code, Op: op}
	}
	var other cl.ErrOther
	if errors.As(err, &other) {
		return &CLError{Code: int(other), Op: op}
	}
	if errors.Is(err, cl.ErrUnknown) {
		return &CLError{Code: 0, Op: op}
	}
	return fmt.Errorf("gpu: opencl: %s: %w", op, err)
}

var clErrorNames = map[int]string{
	0:  "CL_SUCCESS_WITHOUT_OBJECT",
	-1: "CL_DEVICE_NOT_FOUND", -2: "CL_DEVICE_NOT_AVAILABLE", -3: "CL_COMPILER_NOT_AVAILABLE",
	-4: "CL_MEM_OBJECT_ALLOCATION_FAILURE", -5: "CL_OUT_OF_RESOURCES", -6: "CL_OUT_OF_HOST_MEMORY",
	-7: "CL_PROFILING_INFO_NOT_AVAILABLE", -8: "CL_MEM_COPY_OVERLAP", -9: "CL_IMAGE_FORMAT_MISMATCH",
	-10: "CL_IMAGE_FORMAT_NOT_SUPPORTED", -11: "CL_BUILD_PROGRAM_FAILURE",
	-12: "CL_MAP_FAILURE", -13: "CL_MISALIGNED_SUB_BUFFER_OFFSET", -14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
	-15: "CL_COMPILE_PROGRAM_FAILURE", -16: "CL_LINKER_NOT_AVAILABLE", -17: "CL_LINK_PROGRAM_FAILURE",
	-18: "CL_DEVICE_PARTITION_FAILED", -19: "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
	-30: "CL_INVALID_VALUE", -31: "CL_INVALID_DEVICE_TYPE", -32: "CL_INVALID_PLATFORM", -33: "CL_INVALID_DEVICE",
	-34: "CL_INVALID_CONTEXT", -35: "CL_INVALID_QUEUE_PROPERTIES", -36: "CL_INVALID_COMMAND_QUEUE",
	-37: "CL_INVALID_HOST_PTR", -38: "CL_INVALID_MEM_OBJECT", -39: "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
	-40: "CL_INVALID_IMAGE_SIZE", -41: "CL_INVALID_SAMPLER", -42: "CL_INVALID_BINARY",
	-43: "CL_INVALID_BUILD_OPTIONS", -44: "CL_INVALID_PROGRAM", -45: "CL_INVALID_PROGRAM_EXECUTABLE",
	-46: "CL_INVALID_KERNEL_NAME", -47: "CL_INVALID_KERNEL_DEFINITION", -48: "CL_INVALID_KERNEL",
	-49: "CL_INVALID_ARG_INDEX", -50: "CL_INVALID_ARG_VALUE", -51: "CL_INVALID_ARG_SIZE",
	-52: "CL_INVALID_KERNEL_ARGS", -53: "CL_INVALID_WORK_DIMENSION", -54: "CL_INVALID_WORK_GROUP_SIZE",
	-55: "CL_INVALID_WORK_ITEM_SIZE", -56: "CL_INVALID_GLOBAL_OFFSET", -57: "CL_INVALID_EVENT_WAIT_LIST",
	-58: "CL_INVALID_EVENT", -59: "CL_INVALID_OPERATION", -60: "CL_INVALID_GL_OBJECT",
	-61: "CL_INVALID_BUFFER_SIZE", -62: "CL_INVALID_MIP_LEVEL", -63: "CL_INVALID_GLOBAL_WORK_SIZE",
	-64: "CL_INVALID_PROPERTY", -65: "CL_INVALID_IMAGE_DESCRIPTOR", -66: "CL_INVALID_COMPILER_OPTIONS",
	-67: "CL_INVALID_LINKER_OPTIONS", -68: "CL_INVALID_DEVICE_PARTITION_COUNT",
	-1001: "CL_PLATFORM_NOT_FOUND_KHR",
}

// BuildError is a program that failed to compile, with the compiler's log.
type BuildError struct {
	Err error  // the *CLError of clBuildProgram
	Log string // the build log for the device
}

// Error implements error.
func (e *BuildError) Error() string { return fmt.Sprintf("%v\n%s", e.Err, e.Log) }

// Unwrap returns the *CLError.
func (e *BuildError) Unwrap() error { return e.Err }
