// Shared prologue of every cotrain program. Contraction of a*b+c into fma is
// off so that each kernel rounds exactly as written (GEMM uses fma()
// explicitly, in a fixed order, which keeps it deterministic across tile
// variants). Reductions accumulate in acc_t: double where the device has
// cl_khr_fp64, float otherwise (most phone GPUs).
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

// Reductions run in work-groups of RED_WG items (a power of two, set by the
// host to fit the device).
#ifndef RED_WG
#define RED_WG 256
#endif

// wg_sum2 reduces two values over the work-group in a fixed tree order, so the
// result does not depend on scheduling. Every item must call it.
inline void wg_sum2(__local acc_t* sa, __local acc_t* sb, acc_t* a, acc_t* b) {
	int l = get_local_id(0);
	sa[l] = *a;
	sb[l] = *b;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (int s = RED_WG / 2; s > 0; s >>= 1) {
		if (l < s) {
			sa[l] += sa[l + s];
			sb[l] += sb[l + s];
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	*a = sa[0];
	*b = sb[0];
	barrier(CLK_LOCAL_MEM_FENCE);
}
