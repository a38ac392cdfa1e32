// Batch normalisation over N×C×HW: a reduction kernel with one work-group per
// channel writes per-channel coefficients into coef (4 floats a channel), then
// an elementwise kernel applies them. Sums use acc_t and a fixed tree.

// CHANNEL_WALK(o) runs the statement after it for o = the offset of
// element j of channel c in an N×C×HW tensor, j = l, l+RED_WG, ... < N·HW
// in that order (l, c, N, C and HW are the kernel's), carrying (j / HW,
// j % HW) from one j to the next instead of two integer divisions per
// element. The order, and so the bits, are those of the plain loop.
#define CHANNEL_WALK(o)                                                                                                \
	for (int n_ = l / HW, p_ = l % HW, o = (n_ * C + c) * HW + p_; n_ < N;                                           \
	     n_ += RED_WG / HW, p_ += RED_WG % HW, n_ += p_ >= HW, p_ -= p_ >= HW ? HW : 0, o = (n_ * C + c) * HW + p_)

// bn_stats: batch mean and biased variance (two passes, as the CPU), saved
// statistics, running statistics (unbiased variance) and y = (x-mean)*scale+shift.
__kernel void bn_stats(__global const store_t* x, int xoff, __global const store_t* gamma, int goff,
                       __global const store_t* beta, int boff, __global store_t* rm, int rmoff, __global store_t* rv, int rvoff,
                       __global store_t* sm, int smoff, __global store_t* si, int sioff, __global float* coef,
                       int N, int C, int HW, float eps, float momentum) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int c = get_group_id(0), l = get_local_id(0);
	int M = N * HW;
	acc_t s = 0, unused = 0;
	CHANNEL_WALK(o) s += LD(x, xoff + o);
	wg_sum2(sa, sb, &s, &unused);
	acc_t mean = s / M;
	acc_t ss = 0;
	CHANNEL_WALK(o) {
		acc_t d = (acc_t)LD(x, xoff + o) - mean;
		ss += d * d;
	}
	wg_sum2(sa, sb, &ss, &unused);
	if (l != 0) return;
	acc_t var = ss / M;
	acc_t corr = M > 1 ? (acc_t)M / (acc_t)(M - 1) : 1;
	acc_t inv = 1 / sqrt(var + (acc_t)eps);
	acc_t mom = momentum;
	ST(sm, smoff + c, mean);
	ST(si, sioff + c, inv);
	ST(rm, rmoff + c, (1 - mom) * (acc_t)LD(rm, rmoff + c) + mom * mean);
	ST(rv, rvoff + c, (1 - mom) * (acc_t)LD(rv, rvoff + c) + mom * var * corr);
	acc_t scale = (acc_t)LD(gamma, goff + c) * inv;
	float mean32 = (float)mean;
	coef[4 * c] = mean32;
	coef[4 * c + 1] = (float)scale;
	coef[4 * c + 2] = (float)((acc_t)LD(beta, boff + c) - (mean - (acc_t)mean32) * scale);
}

// bn_infer_coef: the coefficients of inference from the running statistics.
__kernel void bn_infer_coef(__global const store_t* gamma, int goff, __global const store_t* beta, int boff,
                            __global const store_t* rm, int rmoff, __global const store_t* rv, int rvoff,
                            __global float* coef, int C, float eps) {
	int c = get_global_id(0);
	if (c >= C) return;
	acc_t inv = 1 / sqrt((acc_t)LD(rv, rvoff + c) + (acc_t)eps);
	coef[4 * c] = LD(rm, rmoff + c);
	coef[4 * c + 1] = (float)((acc_t)LD(gamma, goff + c) * inv);
	coef[4 * c + 2] = LD(beta, boff + c);
}

__kernel void bn_apply(__global store_t* y, int yoff, __global const store_t* x, int xoff, __global const float* coef,
                       int N, int C, int HW) {
	int i = get_global_id(0);
	if (i >= N * C * HW) return;
	int c = (i / HW) % C;
	ST(y, yoff + i, (LD(x, xoff + i) - coef[4 * c]) * coef[4 * c + 1] + coef[4 * c + 2]);
}

// bn_backward_reduce: dbeta = Σdy, dgamma = invStd·Σdy(x-mean), and the dx
// coefficients k = gamma·invStd, b = k·Σdy/M, a = k·invStd·dgamma/M.
// want: bit 0 writes dgamma, bit 1 dbeta.
__kernel void bn_backward_reduce(__global const store_t* dy, int dyoff, __global const store_t* x, int xoff,
                                 __global const store_t* gamma, int goff, __global const store_t* sm, int smoff,
                                 __global const store_t* si, int sioff, __global store_t* dgamma, int dgoff,
                                 __global store_t* dbeta, int dboff, __global float* coef, int N, int C, int HW, int want) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int c = get_group_id(0), l = get_local_id(0);
	int M = N * HW;
	float mean = LD(sm, smoff + c);
	acc_t sdy = 0, sdyx = 0;
	CHANNEL_WALK(o) {
		float d = LD(dy, dyoff + o);
		sdy += d;
		sdyx += (acc_t)d * (acc_t)(LD(x, xoff + o) - mean);
	}
	wg_sum2(sa, sb, &sdy, &sdyx);
	if (l != 0) return;
	acc_t inv = LD(si, sioff + c);
	sdyx *= inv;
	if (want & 1) ST(dgamma, dgoff + c, sdyx);
	if (want & 2) ST(dbeta, dboff + c, sdy);
	acc_t k = (acc_t)LD(gamma, goff + c) * inv;
	coef[4 * c] = mean;
	coef[4 * c + 1] = (float)k;
	coef[4 * c + 2] = (float)(k * sdy / M);
	coef[4 * c + 3] = (float)(k * inv * sdyx / M);
}

__kernel void bn_backward_dx(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff, __global const store_t* x,
                             int xoff, __global const float* coef, int N, int C, int HW) {
	int i = get_global_id(0);
	if (i >= N * C * HW) return;
	int c = (i / HW) % C;
	ST(dx, dxoff + i, coef[4 * c + 1] * LD(dy, dyoff + i) - coef[4 * c + 2] - coef[4 * c + 3] * (LD(x, xoff + i) - coef[4 * c]));
}

// Two-level reductions for channels of many elements (the host's redParts):
// part p of channel c is the elements j in [p·L, min(M, (p+1)·L)) of its
// M = N·HW, reduced by one work-group of the *_part kernel (C·P groups, the
// group of channel c and part p is c·P + p) into part[], then a *_final
// kernel with one item per channel adds the P partial results in order p =
// 0, 1, ... The split depends on the shape alone, so the order is the same on
// every device with the same RED_WG. One work-group per channel left most of
// a large GPU idle: MobileNet's first layers at 224×224 have 32 channels of
// 401,408 elements at batch 32.

// PART_WALK(o) is CHANNEL_WALK over elements j0+l, j0+l+RED_WG, ... < j1.
#define PART_WALK(o)                                                                                                   \
	for (int j_ = j0 + l, n_ = j_ / HW, p_ = j_ % HW, o = (n_ * C + c) * HW + p_; j_ < j1; j_ += RED_WG,                 \
	         n_ += RED_WG / HW, p_ += RED_WG % HW, n_ += p_ >= HW, p_ -= p_ >= HW ? HW : 0, o = (n_ * C + c) * HW + p_)

// bn_stats_part: the part's sum and its sum of squared deviations from its
// own mean (two passes over the part, which the cache still holds).
__kernel void bn_stats_part(__global const store_t* x, int xoff, __global acc_t* part, int N, int C, int HW, int L, int P) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int g = get_group_id(0), l = get_local_id(0);
	int c = g / P, p = g % P;
	int j0 = p * L, j1 = min(N * HW, j0 + L);
	acc_t s = 0, unused = 0;
	PART_WALK(o) s += LD(x, xoff + o);
	wg_sum2(sa, sb, &s, &unused);
	acc_t mean = s / (j1 - j0);
	acc_t ss = 0;
	PART_WALK(o) {
		acc_t d = (acc_t)LD(x, xoff + o) - mean;
		ss += d * d;
	}
	wg_sum2(sa, sb, &ss, &unused);
	if (l == 0) {
		part[2 * g] = s;
		part[2 * g + 1] = ss;
	}
}

// bn_stats_final: the mean from the parts' sums, the variance from their
// squared deviations plus each part's count times the square of its mean's
// distance to the mean (exact in real arithmetic); then what bn_stats writes.
__kernel void bn_stats_final(__global const acc_t* part, __global const store_t* gamma, int goff, __global const store_t* beta,
                             int boff, __global store_t* rm, int rmoff, __global store_t* rv, int rvoff, __global store_t* sm,
                             int smoff, __global store_t* si, int sioff, __global float* coef, int N, int C, int HW, int L,
                             int P, float eps, float momentum) {
	int c = get_global_id(0);
	if (c >= C) return;
	int M = N * HW;
	__global const acc_t* pc = part + 2 * c * P;
	acc_t s = 0;
	for (int p = 0; p < P; p++) s += pc[2 * p];
	acc_t mean = s / M;
	acc_t ss = 0;
	for (int p = 0; p < P; p++) {
		acc_t cnt = min(M, (p + 1) * L) - p * L;
		acc_t d = pc[2 * p] / cnt - mean;
		ss += pc[2 * p + 1] + cnt * d * d;
	}
	acc_t var = ss / M;
	acc_t corr = M > 1 ? (acc_t)M / (acc_t)(M - 1) : 1;
	acc_t inv = 1 / sqrt(var + (acc_t)eps);
	acc_t mom = momentum;
	ST(sm, smoff + c, mean);
	ST(si, sioff + c, inv);
	ST(rm, rmoff + c, (1 - mom) * (acc_t)LD(rm, rmoff + c) + mom * mean);
	ST(rv, rvoff + c, (1 - mom) * (acc_t)LD(rv, rvoff + c) + mom * var * corr);
	acc_t scale = (acc_t)LD(gamma, goff + c) * inv;
	float mean32 = (float)mean;
	coef[4 * c] = mean32;
	coef[4 * c + 1] = (float)scale;
	coef[4 * c + 2] = (float)((acc_t)LD(beta, boff + c) - (mean - (acc_t)mean32) * scale);
}

// bn_backward_part: the part's Σdy and Σdy·(x-mean).
__kernel void bn_backward_part(__global const store_t* dy, int dyoff, __global const store_t* x, int xoff,
                               __global const store_t* sm, int smoff, __global acc_t* part, int N, int C, int HW, int L, int P) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int g = get_group_id(0), l = get_local_id(0);
	int c = g / P, p = g % P;
	int j0 = p * L, j1 = min(N * HW, j0 + L);
	float mean = LD(sm, smoff + c);
	acc_t sdy = 0, sdyx = 0;
	PART_WALK(o) {
		float d = LD(dy, dyoff + o);
		sdy += d;
		sdyx += (acc_t)d * (acc_t)(LD(x, xoff + o) - mean);
	}
	wg_sum2(sa, sb, &sdy, &sdyx);
	if (l == 0) {
		part[2 * g] = sdy;
		part[2 * g + 1] = sdyx;
	}
}

// bn_backward_final: the parts' sums in order, then what bn_backward_reduce writes.
__kernel void bn_backward_final(__global const acc_t* part, __global const store_t* gamma, int goff, __global const store_t* sm,
                                int smoff, __global const store_t* si, int sioff, __global store_t* dgamma, int dgoff,
                                __global store_t* dbeta, int dboff, __global float* coef, int N, int C, int HW, int P, int want) {
	int c = get_global_id(0);
	if (c >= C) return;
	int M = N * HW;
	__global const acc_t* pc = part + 2 * c * P;
	acc_t sdy = 0, sdyx = 0;
	for (int p = 0; p < P; p++) {
		sdy += pc[2 * p];
		sdyx += pc[2 * p + 1];
	}
	float mean = LD(sm, smoff + c);
	acc_t inv = LD(si, sioff + c);
	sdyx *= inv;
	if (want & 1) ST(dgamma, dgoff + c, sdyx);
	if (want & 2) ST(dbeta, dboff + c, sdy);
	acc_t k = (acc_t)LD(gamma, goff + c) * inv;
	coef[4 * c] = mean;
	coef[4 * c + 1] = (float)k;
	coef[4 * c + 2] = (float)(k * sdy / M);
	coef[4 * c + 3] = (float)(k * inv * sdyx / M);
}

// Four consecutive elements per item (bn_apply4, bn_backward_dx4, and act4,
// act_backward4 in elementwise.cl), for tensors whose length (for batch
// norm: plane) is a multiple of 4: vector loads keep more bytes in flight
// per item, what these memory-bound kernels need on a large GPU. Each element
// is computed by the scalar kernel's expression: the same bits.
// (LDV4 and STV4 are in common.cl.)

__kernel void bn_apply4(__global store_t* y, int yoff, __global const store_t* x, int xoff, __global const float* coef,
                        int N, int C, int HW) {
	int i = get_global_id(0) * 4;
	if (i >= N * C * HW) return;
	int c = (i / HW) % C;
	float4 v = LDV4(x, xoff + i);
	STV4(y, yoff + i, (v - coef[4 * c]) * coef[4 * c + 1] + coef[4 * c + 2]);
}

__kernel void bn_backward_dx4(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff, __global const store_t* x,
                              int xoff, __global const float* coef, int N, int C, int HW) {
	int i = get_global_id(0) * 4;
	if (i >= N * C * HW) return;
	int c = (i / HW) % C;
	float4 d = LDV4(dy, dyoff + i), v = LDV4(x, xoff + i);
	STV4(dx, dxoff + i, coef[4 * c + 1] * d - coef[4 * c + 2] - coef[4 * c + 3] * (v - coef[4 * c]));
}

// bias_grad_part: part p of channel c's bias gradient (group c·P + p): the
// sum of dy over the channel's elements [p·L, (p+1)·L), sample-major, in
// the order bias_grad's items take them (the same bits as bias_grad for one
// part). dw_backward_filter_final (conv.cl) adds each channel's P parts in
// order. act_bias_grad_part is act_bias_grad's part the same way. BiasGrad
// and ActivateBackwardBias split alike (redParts), so the fused gradient
// keeps the unfused bits.
__kernel void bias_grad_part(__global acc_t* part, __global const store_t* dy, int dyoff, int N, int C, int HW, int L, int P) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int g = get_group_id(0), l = get_local_id(0);
	int c = g / P, p = g % P;
	int j0 = p * L, j1 = min(N * HW, j0 + L);
	acc_t s = 0, unused = 0;
	PART_WALK(o) s += LD(dy, dyoff + o);
	wg_sum2(sa, sb, &s, &unused);
	if (l == 0) part[g] = s;
}

__kernel void act_bias_grad_part(int kind, __global store_t* dx, int dxoff, __global acc_t* part, __global const store_t* dy,
                                 int dyoff, __global const store_t* y, int yoff, int N, int C, int HW, int L, int P) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int g = get_group_id(0), l = get_local_id(0);
	int c = g / P, p = g % P;
	int j0 = p * L, j1 = min(N * HW, j0 + L);
	acc_t s = 0, unused = 0;
	PART_WALK(o) {
		float v = LD(y, yoff + o), d = LD(dy, dyoff + o);
		bool pass = v > 0 && (kind != 2 || v < 6);
		float r = pass ? d : 0.0f;
		ST(dx, dxoff + o, r);
		s += r;
	}
	wg_sum2(sa, sb, &s, &unused);
	if (l == 0) part[g] = s;
}
