//go:build !purego

package sgemm

// asmArchs returns the NEON family: Advanced SIMD is part of every arm64
// processor.
func asmArchs() []*arch {
	// 8×12: 24 accumulators of four lanes, three B vectors, A in two.
	return []*arch{{name: "neon", mr: 8, nr: 12, vl: 4, mc: 128, nc: 504, kern: neonKernels}}
}
