//go:build !purego

package sgemm

import "golang.org/x/sys/cpu"

// asmArchs returns the x86 families the processor and OS support, fastest
// first. AVX-512 needs only AVX512F (the OS saving the ZMM state is part of
// cpu.X86.HasAVX512F); AVX2 needs FMA as well.
func asmArchs() []*arch {
	var s []*arch
	if cpu.X86.HasAVX512F {
		// 6×64: 24 ZMM accumulators, four B vectors and two broadcasts.
		s = append(s, &arch{name: "avx512", mr: 6, nr: 64, vl: 16, mc: 144, nc: 512, kern: avx512Kernels})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		// 6×16: 12 YMM accumulators, the classic Haswell tile.
		s = append(s, &arch{name: "avx2", mr: 6, nr: 16, vl: 8, mc: 144, nc: 512, kern: avx2Kernels})
	}
	return s
}
