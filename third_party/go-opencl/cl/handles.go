package cl

// This file is cotrain's addition to upstream commit a0efba3e5257 (see
// ../COTRAIN.md): the C handles this package keeps unexported, for the
// calls it does not wrap, which cotrain's gpu/opencl/native.go makes
// itself, and a Program around a handle such a call created.

// #include "cl.h"
import "C"

import (
	"runtime"
	"unsafe"
)

// Handle returns the program's cl_program (nil once released).
func (p *Program) Handle() unsafe.Pointer { return unsafe.Pointer(p.clProgram) }

// Handle returns the context's cl_context (nil once released).
func (ctx *Context) Handle() unsafe.Pointer { return unsafe.Pointer(ctx.clContext) }

// Handle returns the device's cl_device_id.
func (d *Device) Handle() unsafe.Pointer { return unsafe.Pointer(d.id) }

// Handle returns the kernel's cl_kernel (nil once released).
func (k *Kernel) Handle() unsafe.Pointer { return unsafe.Pointer(k.clKernel) }

// Handle returns the queue's cl_command_queue (nil once released).
func (q *CommandQueue) Handle() unsafe.Pointer { return unsafe.Pointer(q.clQueue) }

// ProgramFromHandle returns a Program for h, a cl_program created for
// devices outside this package (by clCreateProgramWithBinary, say), as
// CreateProgramWithSource returns one: it takes over the caller's
// reference, which Release, or else a finalizer, releases.
func ProgramFromHandle(h unsafe.Pointer, devices []*Device) *Program {
	program := &Program{clProgram: C.cl_program(h), devices: devices}
	runtime.SetFinalizer(program, releaseProgram)
	return program
}
