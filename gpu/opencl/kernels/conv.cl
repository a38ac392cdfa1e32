// Convolution helpers: im2col/col2im for the GEMM path and direct depthwise
// kernels. Geometry arguments follow gpu.ConvGeom; Cg is C/Groups. The
// summation orders follow the CPU backend's loops element by element.

// im2col writes the column matrix of nb samples of one group: (Cg·R·S) rows
// of nb·OH·OW columns, sample n's output positions in columns [n·OH·OW,
// (n+1)·OH·OW), so one GEMM covers the batch. Samples lie xs apart in x.
__kernel void im2col(__global store_t* col, int coloff, __global const store_t* x, int xoff, int nb, int xs, int Cg, int H,
                     int W, int R, int S, int sh, int sw, int ph, int pw, int OH, int OW) {
	int i = get_global_id(0);
	int ohw = OH * OW, cols = nb * ohw;
	if (i >= Cg * R * S * cols) return;
	int row = i / cols, j = i % cols;
	int n = j / ohw, p = j % ohw;
	int c = row / (R * S), r = (row / S) % R, s = row % S;
	int ih = (p / OW) * sh - ph + r, iw = (p % OW) * sw - pw + s;
	float v = 0.0f;
	if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = LD(x, xoff + n * xs + (c * H + ih) * W + iw);
	ST(col, coloff + i, v);
}

// col2im sets dx (nb samples of Cg×H×W, xs apart) to the sum of the column
// entries (laid out as im2col writes them) that read each input element,
// gathered in (r, s) order: no two items write one element.
__kernel void col2im(__global store_t* dx, int dxoff, __global const store_t* col, int coloff, int nb, int xs, int Cg, int H,
                     int W, int R, int S, int sh, int sw, int ph, int pw, int OH, int OW) {
	int i = get_global_id(0);
	int chw = Cg * H * W;
	if (i >= nb * chw) return;
	int n = i / chw, e = i % chw;
	int c = e / (H * W), ih = (e / W) % H, iw = e % W;
	int ohw = OH * OW, cols = nb * ohw;
	__global const store_t* cn = col + coloff + n * ohw;
	// The taps that reach (ih, iw), in increasing r, then s (see
	// dw_backward_data): no test and no division per tap.
	int th = ih + ph, tw = iw + pw;
	int rlo = max(0, th - (OH - 1) * sh), slo = max(0, tw - (OW - 1) * sw);
	int r0 = rlo + (th - rlo) % sh, s0 = slo + (tw - slo) % sw;
	int r1 = min(R - 1, th), s1 = min(S - 1, tw);
	float acc = 0.0f;
	for (int r = r0, oh = (th - r0) / sh; r <= r1; r += sh, oh--) {
		for (int s = s0, ow = (tw - s0) / sw; s <= s1; s += sw, ow--) acc += LD(cn, ((c * R + r) * S + s) * cols + oh * OW + ow);
	}
	ST(dx, dxoff + n * xs + e, acc);
}

// Depthwise: output channel k reads input channel k/m, m = K/C.
__kernel void dw_forward(__global store_t* y, int yoff, __global const store_t* x, int xoff, __global const store_t* w, int woff,
                         int N, int C, int K, int H, int W, int R, int S, int sh, int sw, int ph, int pw, int OH, int OW) {
	int i = get_global_id(0);
	if (i >= N * K * OH * OW) return;
	int ow = i % OW, oh = (i / OW) % OH, k = (i / (OH * OW)) % K, n = i / (K * OH * OW);
	__global const store_t* xc = x + xoff + (n * C + k / (K / C)) * H * W;
	__global const store_t* wk = w + woff + k * R * S;
	float acc = 0.0f;
	for (int r = 0; r < R; r++) {
		int ih = oh * sh - ph + r;
		if (ih < 0 || ih >= H) continue;
		for (int s = 0; s < S; s++) {
			int iw = ow * sw - pw + s;
			if (iw < 0 || iw >= W) continue;
			acc += LD(wk, r * S + s) * LD(xc, ih * W + iw);
		}
	}
	ST(y, yoff + i, acc);
}

__kernel void dw_backward_data(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff, __global const store_t* w,
                               int woff, int N, int C, int K, int H, int W, int R, int S, int sh, int sw, int ph, int pw,
                               int OH, int OW) {
	int i = get_global_id(0);
	if (i >= N * C * H * W) return;
	int iw = i % W, ih = (i / W) % H, c = (i / (H * W)) % C, n = i / (C * H * W);
	int m = K / C;
	// The taps that reach (ih, iw): r with t = ih+ph-r in [0, (OH-1)·sh] and
	// a multiple of sh, found once instead of testing every tap with two
	// integer divisions (r0, s0: the first; then every sh-th, sw-th). Taps
	// are still added in increasing r, then s, as before.
	int th = ih + ph, tw = iw + pw;
	int rlo = max(0, th - (OH - 1) * sh), slo = max(0, tw - (OW - 1) * sw);
	int r0 = rlo + (th - rlo) % sh, s0 = slo + (tw - slo) % sw;
	int r1 = min(R - 1, th), s1 = min(S - 1, tw);
	float acc = 0.0f;
	for (int k = c * m; k < (c + 1) * m; k++) {
		__global const store_t* dyk = dy + dyoff + (n * K + k) * OH * OW;
		for (int r = r0, oh = (th - r0) / sh; r <= r1; r += sh, oh--) {
			__global const store_t* dyr = dyk + oh * OW;
			for (int s = s0, ow = (tw - s0) / sw; s <= s1; s += sw, ow--) acc += LD(w, woff + (k * R + r) * S + s) * LD(dyr, ow);
		}
	}
	ST(dx, dxoff + i, acc);
}

// dw_backward_filter: one work-group per filter tap (k, r, s), reducing over
// the batch and the output positions in a fixed tree.
__kernel void dw_backward_filter(__global store_t* dw, int dwoff, __global const store_t* dy, int dyoff, __global const store_t* x,
                                 int xoff, int N, int C, int K, int H, int W, int R, int S, int sh, int sw, int ph, int pw,
                                 int OH, int OW) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int tap = get_group_id(0), l = get_local_id(0);
	int k = tap / (R * S), r = (tap / S) % R, s = tap % S;
	int ohw = OH * OW, c = k / (K / C);
	acc_t acc = 0, unused = 0;
	for (int j = l; j < N * ohw; j += RED_WG) {
		int n = j / ohw, oh = (j % ohw) / OW, ow = j % OW;
		int ih = oh * sh - ph + r, iw = ow * sw - pw + s;
		if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
		acc += (acc_t)(LD(dy, dyoff + (n * K + k) * ohw + oh * OW + ow) * LD(x, xoff + ((n * C + c) * H + ih) * W + iw));
	}
	wg_sum2(sa, sb, &acc, &unused);
	if (l == 0) ST(dw, dwoff + tap, acc);
}

// dw_backward_filter_part: dw_backward_filter split in P parts of L output
// positions of the N·OH·OW a tap reduces over (the host's redParts): group
// tap·P + p sums part p into part[tap·P + p]; dw_backward_filter_final adds
// each tap's P partial sums in order. The split depends on the shape alone.
__kernel void dw_backward_filter_part(__global acc_t* part, __global const store_t* dy, int dyoff, __global const store_t* x,
                                      int xoff, int N, int C, int K, int H, int W, int R, int S, int sh, int sw, int ph, int pw,
                                      int OH, int OW, int L, int P) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int g = get_group_id(0), l = get_local_id(0);
	int tap = g / P, p = g % P;
	int k = tap / (R * S), r = (tap / S) % R, s = tap % S;
	int ohw = OH * OW, c = k / (K / C);
	int j1 = min(N * ohw, (p + 1) * L);
	acc_t acc = 0, unused = 0;
	for (int j = p * L + l; j < j1; j += RED_WG) {
		int n = j / ohw, oh = (j % ohw) / OW, ow = j % OW;
		int ih = oh * sh - ph + r, iw = ow * sw - pw + s;
		if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
		acc += (acc_t)(LD(dy, dyoff + (n * K + k) * ohw + oh * OW + ow) * LD(x, xoff + ((n * C + c) * H + ih) * W + iw));
	}
	wg_sum2(sa, sb, &acc, &unused);
	if (l == 0) part[g] = acc;
}

__kernel void dw_backward_filter_final(__global store_t* dw, int dwoff, __global const acc_t* part, int taps, int P) {
	int tap = get_global_id(0);
	if (tap >= taps) return;
	acc_t acc = 0;
	for (int p = 0; p < P; p++) acc += part[tap * P + p];
	ST(dw, dwoff + tap, acc);
}

// dw_backward_filter3_part: dw_backward_filter_part for 3×3 filters, all
// nine taps of channel k in one work-group (group k·P + p): each output
// position's dy is read once and multiplied with its nine inputs, where one
// work-group per tap read dy and x nine times over. Each tap's items walk
// the same positions in the same order as dw_backward_filter_part's, adding
// nothing for a tap outside the input (x + 0 is x), and the nine sums go
// through the same tree: the bits are those of the one-tap kernels.
__kernel void dw_backward_filter3_part(__global acc_t* part, __global const store_t* dy, int dyoff, __global const store_t* x,
                                       int xoff, int N, int C, int K, int H, int W, int R, int S, int sh, int sw, int ph, int pw,
                                       int OH, int OW, int L, int P) {
	__local acc_t sa[RED_WG], sb[RED_WG];
	int g = get_group_id(0), l = get_local_id(0);
	int k = g / P, p = g % P;
	int ohw = OH * OW, c = k / (K / C);
	int j1 = min(N * ohw, (p + 1) * L);
	acc_t a[9];
	for (int t = 0; t < 9; t++) a[t] = 0;
	for (int j = p * L + l; j < j1; j += RED_WG) {
		int n = j / ohw, q = j % ohw, oh = q / OW, ow = q % OW;
		float d = LD(dy, dyoff + (n * K + k) * ohw + q);
		__global const store_t* xc = x + xoff + (n * C + c) * H * W;
		int ih0 = oh * sh - ph, iw0 = ow * sw - pw;
#pragma unroll
		for (int r = 0; r < 3; r++) {
			int ih = ih0 + r;
			bool rok = ih >= 0 && ih < H;
#pragma unroll
			for (int s = 0; s < 3; s++) {
				int iw = iw0 + s;
				if (rok && iw >= 0 && iw < W) a[r * 3 + s] += (acc_t)(d * LD(xc, ih * W + iw));
			}
		}
	}
#pragma unroll
	for (int t = 0; t < 9; t += 2) {
		acc_t u = t + 1 < 9 ? a[t + 1] : 0;
		wg_sum2(sa, sb, &a[t], &u);
		if (l == 0) {
			part[(k * 9 + t) * P + p] = a[t];
			if (t + 1 < 9) part[(k * 9 + t + 1) * P + p] = u;
		}
	}
}

// dw_forward3_sN and dw_backward_data3_sN: dw_forward and dw_backward_data
// for 3×3 filters with stride N (1 or 2) in both directions, over a 3-D grid
// (positions of one plane, channel, sample), so an item needs one division
// for its position, the taps are unrolled and the stride's divisions are
// shifts: integer division by a run-time value cost the generic kernels
// most of their time on the H100 (MobileNet's depthwise layers at 224×224).
// They add the same products in the same order as the generic kernels: the
// same bits.
#define DW3_KERNELS(SD)                                                                                                 \
	__kernel void dw_forward3_s##SD(__global store_t* y, int yoff, __global const store_t* x, int xoff,                 \
	                                __global const store_t* w, int woff, int N, int C, int K, int H, int W, int R, int S, \
	                                int sh, int sw, int ph, int pw, int OH, int OW) {                                     \
		int q = get_global_id(0), k = get_global_id(1), n = get_global_id(2);                                          \
		if (q >= OH * OW) return;                                                                                      \
		int oh = q / OW, ow = q - oh * OW;                                                                             \
		__global const store_t* xc = x + xoff + (n * C + k / (K / C)) * H * W;                                         \
		__global const store_t* wk = w + woff + k * 9;                                                                 \
		int ih0 = oh * SD - ph, iw0 = ow * SD - pw;                                                                    \
		float acc = 0.0f;                                                                                              \
		for (int r = 0; r < 3; r++) {                                                                \
			int ih = ih0 + r;                                                                                          \
			if (ih < 0 || ih >= H) continue;                                                                           \
			for (int s = 0; s < 3; s++) {                                                            \
				int iw = iw0 + s;                                                                                      \
				if (iw < 0 || iw >= W) continue;                                                                       \
				acc += LD(wk, r * 3 + s) * LD(xc, ih * W + iw);                                                        \
			}                                                                                                          \
		}                                                                                                              \
		ST(y, yoff + (n * K + k) * OH * OW + q, acc);                                                                  \
	}                                                                                                                  \
	__kernel void dw_backward_data3_s##SD(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff,       \
	                                      __global const store_t* w, int woff, int N, int C, int K, int H, int W, int R, \
	                                      int S, int sh, int sw, int ph, int pw, int OH, int OW) {                       \
		int q = get_global_id(0), c = get_global_id(1), n = get_global_id(2);                                          \
		if (q >= H * W) return;                                                                                        \
		int ih = q / W, iw = q - ih * W, m = K / C;                                                                    \
		int th = ih + ph, tw = iw + pw;                                                                                \
		float acc = 0.0f;                                                                                              \
		for (int k = c * m; k < (c + 1) * m; k++) {                                                                    \
			__global const store_t* dyk = dy + dyoff + (n * K + k) * OH * OW;                                          \
			__global const store_t* wk = w + woff + k * 9;                                                             \
			for (int r = 0; r < 3; r++) {                                                            \
				int t = th - r;                                                                                        \
				if (t < 0 || t % SD != 0 || t / SD >= OH) continue;                                                    \
				for (int s = 0; s < 3; s++) {                                                        \
					int u = tw - s;                                                                                    \
					if (u < 0 || u % SD != 0 || u / SD >= OW) continue;                                                \
					acc += LD(wk, r * 3 + s) * LD(dyk, (t / SD) * OW + u / SD);                                        \
				}                                                                                                      \
			}                                                                                                          \
		}                                                                                                              \
		ST(dx, dxoff + (n * C + c) * H * W + q, acc);                                                                  \
	}
DW3_KERNELS(1)
DW3_KERNELS(2)

// im2col_planes: im2col over a 3-D grid (output position, column-matrix
// row, sample): the row's channel and tap are the same for a whole
// work-group, and an item divides once for its position. It writes what
// im2col writes.
__kernel void im2col_planes(__global store_t* col, int coloff, __global const store_t* x, int xoff, int nb, int xs, int Cg,
                            int H, int W, int R, int S, int sh, int sw, int ph, int pw, int OH, int OW) {
	int p = get_global_id(0), row = get_global_id(1), n = get_global_id(2);
	int ohw = OH * OW;
	if (p >= ohw) return;
	int c = row / (R * S), rs = row - c * R * S, r = rs / S, s = rs - r * S;
	int oh = p / OW, ow = p - oh * OW;
	int ih = oh * sh - ph + r, iw = ow * sw - pw + s;
	float v = 0.0f;
	if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = LD(x, xoff + n * xs + (c * H + ih) * W + iw);
	ST(col, coloff + row * nb * ohw + n * ohw + p, v);
}

// transpose: dst (cols×rows) = srcᵀ for src rows×cols. The backward data
// of an im2col convolution multiplies by the transposed filter matrix; made
// explicit (it is small), the product runs as gemm_nn, which NVIDIA's
// compiler gives fewer registers than gemm_tn (docs/opencl.md), with the
// same bits: each output still adds its k products in order.
__kernel void transpose(__global store_t* dst, int doff, __global const store_t* src, int soff, int rows, int cols) {
	int i = get_global_id(0);
	if (i >= rows * cols) return;
	int r = i / cols, c = i - r * cols;
	ST(dst, doff + c * rows + r, LD(src, soff + i));
}

// im2col_win: im2col over a 3-D grid (column of the matrix, channel,
// block of filter rows). An item copies the taps of rb filter rows (rows
// blk·rb.. of channel c) at one output position of one sample, up to rb·S
// elements: it divides twice for its sample and position, then steps
// through the window with additions only, where im2col_planes spent three
// divisions by run-time values on every element. Consecutive items hold
// consecutive columns (sample after sample, so a work-group is not left
// half idle by a small plane), so each of an item's stores is, across the
// work-group, one contiguous run of col (coalesced). It writes what im2col
// writes (a copy: the same bits).
__kernel void im2col_win(__global store_t* col, int coloff, __global const store_t* x, int xoff, int nb, int xs, int Cg,
                         int H, int W, int R, int S, int sh, int sw, int ph, int pw, int OH, int OW, int rb) {
	int j = get_global_id(0), c = get_global_id(1), r0 = get_global_id(2) * rb;
	int ohw = OH * OW, cols = nb * ohw;
	if (j >= cols) return;
	int n = j / ohw, p = j - n * ohw;
	int oh = p / OW, ow = p - oh * OW;
	int ih0 = oh * sh - ph, iw0 = ow * sw - pw;
	int ci = coloff + (c * R + r0) * S * cols + j;
	int xc = xoff + n * xs + c * H * W;
	for (int r = r0; r < min(R, r0 + rb); r++) {
		int ih = ih0 + r;
		bool rok = ih >= 0 && ih < H;
		int xr = xc + ih * W;
		for (int s = 0; s < S; s++, ci += cols) {
			int iw = iw0 + s;
			float v = 0.0f;
			if (rok && iw >= 0 && iw < W) v = LD(x, xr + iw);
			ST(col, ci, v);
		}
	}
}

// col2im_planes and col2im_planes_s1: col2im over a 2-D grid (element of
// a sample's group, sample), two divisions per item for its channel and
// position where col2im spent five; _s1 is for stride 1 in both
// directions, where the stride's divisions and remainders fold away. Each
// item adds the same column entries in the same order as col2im
// (increasing r, then s): the same bits.
#define COL2IM_PLANES(SFX, SH, SW)                                                                                      \
	__kernel void col2im_planes##SFX(__global store_t* dx, int dxoff, __global const store_t* col, int coloff, int nb,   \
	                                 int xs, int Cg, int H, int W, int R, int S, int sh, int sw, int ph, int pw, int OH,  \
	                                 int OW) {                                                                            \
		int e = get_global_id(0), n = get_global_id(1);                                                                \
		int hw = H * W;                                                                                                \
		if (e >= Cg * hw) return;                                                                                      \
		int c = e / hw, q = e - c * hw;                                                                                \
		int ih = q / W, iw = q - ih * W;                                                                               \
		int ohw = OH * OW, cols = nb * ohw;                                                                            \
		__global const store_t* cn = col + coloff + n * ohw;                                                           \
		int th = ih + ph, tw = iw + pw;                                                                                \
		int rlo = max(0, th - (OH - 1) * (SH)), slo = max(0, tw - (OW - 1) * (SW));                                    \
		int r0 = rlo + (th - rlo) % (SH), s0 = slo + (tw - slo) % (SW);                                                \
		int r1 = min(R - 1, th), s1 = min(S - 1, tw);                                                                  \
		float acc = 0.0f;                                                                                              \
		for (int r = r0, oh = (th - r0) / (SH); r <= r1; r += (SH), oh--) {                                            \
			for (int s = s0, ow = (tw - s0) / (SW); s <= s1; s += (SW), ow--)                                          \
				acc += LD(cn, ((c * R + r) * S + s) * cols + oh * OW + ow);                                            \
		}                                                                                                              \
		ST(dx, dxoff + n * xs + e, acc);                                                                               \
	}
COL2IM_PLANES(, sh, sw)
COL2IM_PLANES(_s1, 1, 1)

// rows_plain: dst (rows × cnt·hw, plain, from doff) = channels [0, rows) of
// cnt samples of a tensor at soff whose samples hold chans planes of hw
// positions (gpu/opencl/nn.go plainRows). Item (i, c) copies column i of
// row c: consecutive items read and write consecutive addresses.
__kernel void rows_plain(__global store_t* dst, __global const store_t* src, int soff, int cnt, int chans, int hw) {
	int i = get_global_id(0), c = get_global_id(1);
	if (i >= cnt * hw) return;
	int n = i / hw, p = i - n * hw;
	ST(dst, c * cnt * hw + i, LD(src, soff + (n * chans + c) * hw + p));
}
