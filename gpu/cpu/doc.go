// Package cpu is cotrain's pure-Go backend: every kernel of gpu.Backend on
// the host, its matrix products gpu/internal/sgemm's (assembly
// micro-kernels where the processor has them), split over up to GOMAXPROCS
// threads with results that do not depend on the thread count.
//
// Its optimizer steps (SGDStep, AdamStep) are the reference every other
// backend matches bit for bit: the hub and every worker apply them, so all
// weights stay identical. The whole training step gives the same bits on
// amd64 and arm64 (TestMobileNetStepBits): no Go code of the step fuses a
// multiply-add on any target (TestStepNotFused), and the GEMM's assembly
// families fuse alike.
//
// Caller's duties:
//  1. Create one backend per network instance (NewCPU, or gpu.Open("cpu")
//     once this package is imported: its init registers the driver "cpu").
//  2. Use it from one goroutine at a time; SetThreads caps the threads its
//     kernels use when several networks train in one process.
//  3. Its Buffers are gpu.Host slices: Download and Upload still copy, so
//     code written against gpu.Backend behaves the same on a device.
package cpu
