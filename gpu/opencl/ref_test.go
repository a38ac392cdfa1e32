//go:build opencl

package opencl

import (
	"os"

	"github.com/cotrain/cotrain/gpu/cpu"
)

// The CPU backend is the reference the OpenCL kernels are checked against.
// It is reached through these names so that the tests' many local
// variables called cpu do not shadow the package.

// cpuBackend is the CPU backend's type.
type cpuBackend = cpu.CPU

// newCPU returns a CPU backend.
func newCPU() *cpuBackend { return cpu.NewCPU() }

// envConfig is the configuration the tests and benchmarks open with:
// DefaultConfig changed by the COTRAIN_OPENCL_* variables, as the binaries
// read them (scripts/bench_gpu.sh sets some). A bad value is the run's
// mistake: it panics.
func envConfig() Config {
	cfg, err := ConfigFromEnv(os.LookupEnv)
	if err != nil {
		panic(err)
	}
	return cfg
}
