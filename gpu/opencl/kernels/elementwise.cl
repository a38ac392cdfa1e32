// Elementwise kernels. Every buffer argument is followed by its offset in
// elements: a Buffer view is (allocation, offset, length), because sub-buffers
// would need offsets aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN.

__kernel void fill(__global store_t* d, int doff, int n, float v) {
	int i = get_global_id(0);
	if (i < n) ST(d, doff + i, v);
}

// from_float and to_float convert between the host's float32 and the
// storage (Upload and Download with half storage, through a float staging
// buffer): rounding on the device costs nothing next to the transfer, and
// rounds exactly as every kernel's ST does.
__kernel void from_float(__global store_t* d, int doff, __global const float* s, int n) {
	int i = get_global_id(0);
	if (i < n) ST(d, doff + i, s[i]);
}

__kernel void to_float(__global float* d, __global const store_t* s, int soff, int n) {
	int i = get_global_id(0);
	if (i < n) d[i] = LD(s, soff + i);
}

__kernel void axpy(float alpha, __global const store_t* x, int xoff, __global store_t* y, int yoff, int n) {
	int i = get_global_id(0);
	if (i < n) ST(y, yoff + i, LD(y, yoff + i) + alpha * LD(x, xoff + i));
}

__kernel void scale(__global store_t* x, int xoff, int n, float alpha) {
	int i = get_global_id(0);
	if (i < n) ST(x, xoff + i, LD(x, xoff + i) * alpha);
}

__kernel void mul(__global store_t* d, int doff, __global const store_t* a, int aoff, __global const store_t* b, int boff,
                  int n) {
	int i = get_global_id(0);
	if (i < n) ST(d, doff + i, LD(a, aoff + i) * LD(b, boff + i));
}

// add_bias: x is n×c×hw; total = n*c*hw.
__kernel void add_bias(__global store_t* x, int xoff, __global const store_t* b, int boff, int c, int hw, int total) {
	int i = get_global_id(0);
	if (i < total) ST(x, xoff + i, LD(x, xoff + i) + LD(b, boff + (i / hw) % c));
}

// bias_act: x = act_relu(x + b[(i/hw)%c]) in place (add_bias then act in
// one pass); hasBias 0 adds no bias. x is n×c×hw; total = n*c*hw.
__kernel void bias_act(int kind, __global store_t* x, int xoff, __global const store_t* b, int boff, int hasBias, int c,
                       int hw, int total) {
	int i = get_global_id(0);
	if (i >= total) return;
	float v = LD(x, xoff + i);
	if (hasBias) v = v + LD(b, boff + (i / hw) % c);
	ST(x, xoff + i, act_relu(v, kind));
}

// bias_act_planes: bias_act over a grid of hw positions (dimension 0) by
// n·c planes (dimension 1), without a division per element.
__kernel void bias_act_planes(int kind, __global store_t* x, int xoff, __global const store_t* b, int boff, int hasBias,
                              int c, int hw) {
	int p = get_global_id(0), plane = get_global_id(1);
	if (p >= hw) return;
	int i = xoff + plane * hw + p;
	float v = LD(x, i);
	if (hasBias) v = v + LD(b, boff + plane % c);
	ST(x, i, act_relu(v, kind));
}

// act_bias_grad: act_backward from the output y (kind 1 ReLU, 2 ReLU6),
// dx = dy where y passes, and bias_grad of that dx in one pass: one
// work-group per channel, each dx summed as bias_grad sums it (in the same
// order, the value stored: dy's as loaded, or 0), so db has its bits. dy
// is loaded whether or not it passes: a select, not a conditional load,
// which kept PoCL from vectorising the loop (5× slower there).
__kernel void act_bias_grad(int kind, __global store_t* dx, int dxoff, __global store_t* db, int dboff,
                            __global const store_t* dy, int dyoff, __global const store_t* y, int yoff, int n, int c,
                            int hw) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int ch = get_group_id(0), l = get_local_id(0);
	acc_t s = 0, unused = 0;
	for (int j = l; j < n * hw; j += RED_WG) {
		int i = ((j / hw) * c + ch) * hw + j % hw;
		float v = LD(y, yoff + i), d = LD(dy, dyoff + i);
		bool pass = v > 0 && (kind != 2 || v < 6);
		float r = pass ? d : 0.0f;
		ST(dx, dxoff + i, r);
		s += r;
	}
	wg_sum2(sa, sb, &s, &unused);
	if (l == 0) ST(db, dboff + ch, s);
}

// bias_grad: one work-group per channel; the CPU sums each (n, c) row in
// float and adds the rows, this sums all of them in acc_t.
__kernel void bias_grad(__global store_t* db, int dboff, __global const store_t* dy, int dyoff, int n, int c, int hw) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int ch = get_group_id(0), l = get_local_id(0);
	acc_t s = 0, unused = 0;
	for (int j = l; j < n * hw; j += RED_WG) {
		int b = j / hw, p = j % hw;
		s += LD(dy, dyoff + (b * c + ch) * hw + p);
	}
	wg_sum2(sa, sb, &s, &unused);
	if (l == 0) ST(db, dboff + ch, s);
}

// act: kind 1 is ReLU, 2 is ReLU6 (gpu.Act).
__kernel void act(int kind, __global store_t* y, int yoff, __global const store_t* x, int xoff, int n) {
	int i = get_global_id(0);
	if (i >= n) return;
	float v = LD(x, xoff + i);
	float r = v > 0 ? v : 0;
	if (kind == 2 && r > 6) r = 6;
	if (v != v) r = v; // NaN passes through, as Go's max does
	ST(y, yoff + i, r);
}

__kernel void act_backward(int kind, __global store_t* dx, int dxoff, __global const store_t* dy, int dyoff,
                           __global const store_t* x, int xoff, int n) {
	int i = get_global_id(0);
	if (i >= n) return;
	float v = LD(x, xoff + i);
	bool pass = v > 0 && (kind != 2 || v < 6);
	ST(dx, dxoff + i, pass ? LD(dy, dyoff + i) : 0.0f);
}

// act4 and act_backward4: act and act_backward on four consecutive
// elements per item, for lengths that are a multiple of 4 (see bn_apply4 in
// norm.cl). The selects are act's conditions element by element (not
// fmax, which may return -0 for max(-0, 0) where act gives +0).
__kernel void act4(int kind, __global store_t* y, int yoff, __global const store_t* x, int xoff, int n) {
	int i = get_global_id(0) * 4;
	if (i >= n) return;
	float4 v = LDV4(x, xoff + i);
	float4 r = select((float4)(0.0f), v, v > 0.0f);
	if (kind == 2) r = select(r, (float4)(6.0f), r > 6.0f);
	r = select(r, v, isnan(v)); // NaN passes through, as Go's max does
	STV4(y, yoff + i, r);
}

__kernel void act_backward4(int kind, __global store_t* dx, int dxoff, __global const store_t* dy, int dyoff,
                            __global const store_t* x, int xoff, int n) {
	int i = get_global_id(0) * 4;
	if (i >= n) return;
	float4 v = LDV4(x, xoff + i), d = LDV4(dy, dyoff + i);
	int4 pass = v > 0.0f;
	if (kind == 2) pass = pass & (v < 6.0f);
	STV4(dx, dxoff + i, select((float4)(0.0f), d, pass));
}

// softmax_xent: one work-group of RED_WG items per row (one item per row
// left a large GPU idle: 0.3 ms for 32 rows of 1000 classes on an H100);
// writes probs and the row's loss in acc_t precision split in two floats
// (hi, lo) into loss[2*row]. The maximum and the sum of the exponentials are
// reduced in a fixed tree. The exponentials are computed twice rather than
// stored and reread: probs may be half, and the normalisation must see them
// unrounded.
__kernel void softmax_xent(__global store_t* probs, int poff, __global const store_t* logits, int loff,
                           __global const int* labels, __global float* loss, int n, int classes) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int r = get_group_id(0), l = get_local_id(0);
	__global const store_t* row = logits + loff + r * classes;
	__global store_t* prow = probs + poff + r * classes;
	float m = -INFINITY;
	for (int j = l; j < classes; j += RED_WG) m = fmax(m, LD(row, j));
	// The maximum through the same tree (max is exact in any order).
	sa[l] = m;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (int s = RED_WG / 2; s > 0; s >>= 1) {
		if (l < s) sa[l] = fmax(sa[l], sa[l + s]);
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	m = (float)sa[0];
	barrier(CLK_LOCAL_MEM_FENCE);
	acc_t sum = 0, unused = 0;
	for (int j = l; j < classes; j += RED_WG) sum += exp((acc_t)(LD(row, j) - m));
	wg_sum2(sa, sb, &sum, &unused);
	acc_t inv = 1 / sum;
	for (int j = l; j < classes; j += RED_WG) ST(prow, j, (acc_t)(float)exp((acc_t)(LD(row, j) - m)) * inv);
	if (l == 0) {
		acc_t lo = log(sum) - (acc_t)(LD(row, labels[r]) - m);
		float hi = (float)lo;
		loss[2 * r] = hi;
		loss[2 * r + 1] = (float)(lo - (acc_t)hi);
	}
}

// sum_pairs: one work-group adds n (hi, lo) pairs into out[ooff], out[ooff+1].
__kernel void sum_pairs(__global float* out, int ooff, __global const float* in, int n) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int l = get_local_id(0);
	acc_t s = 0, unused = 0;
	for (int j = l; j < n; j += RED_WG) s += (acc_t)in[2 * j] + (acc_t)in[2 * j + 1];
	wg_sum2(sa, sb, &s, &unused);
	if (l == 0) {
		float hi = (float)s;
		out[ooff] = hi;
		out[ooff + 1] = (float)(s - (acc_t)hi);
	}
}

__kernel void softmax_xent_backward(__global store_t* d, int doff, __global const store_t* p, int poff,
                                    __global const int* labels, int n, int classes, float scale) {
	int i = get_global_id(0);
	if (i >= n * classes) return;
	float v = scale * LD(p, poff + i);
	if (labels[i / classes] == i % classes) v -= scale;
	ST(d, doff + i, v);
}

// The optimizer steps must give the CPU backend's bits (CPU.SGDStep and
// CPU.AdamStep in gpu/cpu/optim.go): every cooperative worker applies the
// hub's merged gradient to its own weights, and one differing bit fails the
// per-iteration hash check and costs a full weight download. So:
//   - the operations and their order mirror the Go code exactly;
//   - no a*b+c may become an fma: FP_CONTRACT is off (again here, besides
//     common.cl, so the rule stays next to the code that depends on it), and
//     each product is its own statement: C allows contraction only within
//     one expression, so this holds even where a compiler ignores the pragma;
//   - the program is built without -cl-mad-enable or -cl-fast-relaxed-math;
//   - sqrt and division must be correctly rounded, as Go's are. OpenCL allows
//     float sqrt 3 ulp and division 2.5 ulp of error (NVIDIA's defaults are
//     approximate: on an H100 30-39% of the weights after 8 Adam steps differed
//     in the last bits) unless the program is built with
//     -cl-fp32-correctly-rounded-divide-sqrt, which buildMain passes when
//     the device reports CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT. Computing them
//     in double and rounding once is no substitute: on the H100 that still
//     left 28-37% of the weights different, as a compiler may narrow
//     (float)sqrt((double)x) back to a float sqrt.
//     On a device without the flag (some phone GPUs) Adam may differ from
//     the CPU in the last bit; the hash check then resyncs the worker
//     (docs/opencl.md, "Determinism"). SGD has no division or sqrt and is
//     bit-identical everywhere.
#pragma OPENCL FP_CONTRACT OFF

// sgd_step follows torch.optim.SGD with dampening 0 (see Backend.SGDStep).
__kernel void sgd_step(__global store_t* p, int poff, __global const store_t* g, int goff, __global store_t* v, int voff,
                       int n, float lr, float momentum, float wd, int nesterov) {
	int i = get_global_id(0);
	if (i >= n) return;
	float pi = LD(p, poff + i);
	float wp = wd * pi;
	float d = LD(g, goff + i) + wp;
	if (momentum != 0) {
		float mv = momentum * LD(v, voff + i);
		float vi = mv + d;
		ST(v, voff + i, vi);
		if (nesterov) {
			float mvi = momentum * vi;
			d = d + mvi;
		} else {
			d = vi;
		}
	}
	float step = lr * d;
	ST(p, poff + i, pi - step);
}

// adam_step follows torch.optim.Adam; step and bc2sqrt are computed on the
// host in double, as the CPU backend does.
__kernel void adam_step(__global store_t* p, int poff, __global const store_t* g, int goff, __global store_t* m, int moff,
                        __global store_t* v, int voff, int n, float step, float beta1, float beta2, float eps,
                        float wd, float bc2sqrt) {
	int i = get_global_id(0);
	if (i >= n) return;
	float pi = LD(p, poff + i);
	float wp = wd * pi;
	float gv = LD(g, goff + i) + wp;
	float c1 = 1 - beta1, c2 = 1 - beta2;
	float bm = beta1 * LD(m, moff + i);
	float cg = c1 * gv;
	float mi = bm + cg;
	float bv = beta2 * LD(v, voff + i);
	float cgg = c2 * gv;
	cgg = cgg * gv;
	float vi = bv + cgg;
	ST(m, moff + i, mi);
	ST(v, voff + i, vi);
	float denom = sqrt(vi) / bc2sqrt;
	denom = denom + eps;
	float num = step * mi;
	ST(p, poff + i, pi - num / denom);
}

// bias_grad_cols and act_bias_grad_cols: bias_grad and act_bias_grad with
// one item per channel, summing the channel's few elements (a linear
// layer's batch: BiasGrad's biasColsMax) in order; a work-group per
// channel spent most of its time in its reduction tree there.
__kernel void bias_grad_cols(__global store_t* db, int dboff, __global const store_t* dy, int dyoff, int n, int c, int hw) {
	int ch = get_global_id(0);
	if (ch >= c) return;
	acc_t s = 0;
	for (int b = 0; b < n; b++)
		for (int p = 0; p < hw; p++) s += LD(dy, dyoff + (b * c + ch) * hw + p);
	ST(db, dboff + ch, s);
}

__kernel void act_bias_grad_cols(int kind, __global store_t* dx, int dxoff, __global store_t* db, int dboff,
                                 __global const store_t* dy, int dyoff, __global const store_t* y, int yoff, int n, int c,
                                 int hw) {
	int ch = get_global_id(0);
	if (ch >= c) return;
	acc_t s = 0;
	for (int b = 0; b < n; b++)
		for (int p = 0; p < hw; p++) {
			int i = (b * c + ch) * hw + p;
			float v = LD(y, yoff + i), d = LD(dy, dyoff + i);
			bool pass = v > 0 && (kind != 2 || v < 6);
			float r = pass ? d : 0.0f;
			ST(dx, dxoff + i, r);
			s += r;
		}
	ST(db, dboff + ch, s);
}
