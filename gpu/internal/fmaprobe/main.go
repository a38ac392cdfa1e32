// Command fmaprobe links the CPU backend's optimizer kernels into a binary,
// so that gpu/cpu's TestOptimizerKernelsNotFused can build it for arm64 and look
// for fused multiply-add instructions in them. It is not meant to be run.
package main

import (
	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

func main() {
	b := cpu.NewCPU()
	p, g, m, v := gpu.Host{1}, gpu.Host{1}, gpu.Host{0}, gpu.Host{0}
	b.SGDStep(p, g, v, 0.1, 0.9, 0.01, true)
	b.AdamStep(p, g, m, v, 0.1, 0.9, 0.999, 1e-8, 0.01, 1)
}
