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

// Tensor storage. Every Buffer a kernel reads or writes is an array of
// store_t: float, or half when the host builds with -D STORE_HALF (the
// backend's fp16 storage mode). LD converts one element to float as it is
// loaded and ST rounds a float to the nearest half (ties to even) as it is
// stored, so the arithmetic is float in both modes; in float mode they are
// plain array accesses and the kernels compile exactly as before.
// vload_half and vstore_half are core OpenCL: half storage does not need
// cl_khr_fp16 (half arithmetic would). LD4/ST4 move 4 consecutive elements
// aligned to 4 elements (16 bytes in float, 8 in half: vloada_half4, one
// 64-bit access, where vload_half4 may be four 16-bit ones). The backend's own scratch (batch-norm
// coefficients, loss pairs, split-k partial sums, labels) stays float or int.
#ifdef STORE_HALF
typedef half store_t;
#define LD(p, i) vload_half((i), (p))
#define ST(p, i, v) vstore_half_rte((float)(v), (i), (p))
#define LD4(p) vloada_half4(0, (p))
#define ST4(p, v) vstorea_half4_rte((v), 0, (p))
#else
typedef float store_t;
#define LD(p, i) ((p)[i])
#define ST(p, i, v) ((p)[i] = (float)(v))
#define LD4(p) (*(__global const float4*)(p))
#define ST4(p, v) (*(__global float4*)(p) = (v))
#endif

// LDV4/STV4 move elements i..i+3 with no alignment beyond the element's own
// (vload4, vload_half4), for views at any offset.
#ifdef STORE_HALF
#define LDV4(p, i) vload_half4(0, (p) + (i))
#define STV4(p, i, v) vstore_half4_rte((v), 0, (p) + (i))
#else
#define LDV4(p, i) vload4(0, (p) + (i))
#define STV4(p, i, v) vstore4((v), 0, (p) + (i))
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

// act_relu applies ReLU (kind 1) or ReLU6 (kind 2) as act does, NaN
// passing through; kind 0 returns v. The fused kernels (bias_act,
// wino_output, the GEMM epilogue of gemm.cl) apply it before their one
// store: clipping at 0 and 6, both representable, commutes with rounding
// to store_t, so the bits are those of a store, then act.
inline float act_relu(float v, int kind) {
	if (kind == 0) return v;
	float r = v > 0 ? v : 0;
	if (kind == 2 && r > 6) r = 6;
	if (v != v) r = v;
	return r;
}
