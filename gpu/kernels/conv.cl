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
	float acc = 0.0f;
	for (int r = 0; r < R; r++) {
		int t = ih + ph - r;
		if (t < 0 || t % sh != 0 || t / sh >= OH) continue;
		int oh = t / sh;
		for (int s = 0; s < S; s++) {
			int u = iw + pw - s;
			if (u < 0 || u % sw != 0 || u / sw >= OW) continue;
			acc += LD(cn, ((c * R + r) * S + s) * cols + oh * OW + u / sw);
		}
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
	float acc = 0.0f;
	for (int k = c * m; k < (c + 1) * m; k++) {
		__global const store_t* dyk = dy + dyoff + (n * K + k) * OH * OW;
		for (int r = 0; r < R; r++) {
			int t = ih + ph - r;
			if (t < 0 || t % sh != 0 || t / sh >= OH) continue;
			for (int s = 0; s < S; s++) {
				int u = iw + pw - s;
				if (u < 0 || u % sw != 0 || u / sw >= OW) continue;
				acc += LD(w, woff + (k * R + r) * S + s) * LD(dyk, (t / sh) * OW + u / sw);
			}
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
