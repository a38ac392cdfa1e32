//go:build opencl

package opencl

import "github.com/cotrain/cotrain/gpu/cpu"

// The CPU backend is the reference the OpenCL kernels are checked against.
// It is reached through these names so that the tests' many local
// variables called cpu do not shadow the package.

// cpuBackend is the CPU backend's type.
type cpuBackend = cpu.CPU

// newCPU returns a CPU backend.
func newCPU() *cpuBackend { return cpu.NewCPU() }
