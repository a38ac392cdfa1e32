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
