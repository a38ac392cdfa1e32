// Pooling with PyTorch's window rules (see gpu/cpu/pool.go and
// pool_dilated.go). Backward passes gather: each input element sums, in
// (oh, ow) order, the windows that route gradient to it, so no two items
// write one element and the result matches the CPU's scatter bit for bit.
// A window's taps are d apart (dh, dw: the dilation, 1 for plain pooling).

// window returns output o's taps along one axis as gpu.PoolTaps does: the
// first tap inside the input (*lo), the bound past the last (*hi; taps lo,
// lo+d, ... below hi), and the taps inside the padded input (average
// pooling's divisor when it counts the padding).
inline int window(int o, int stride, int pad, int k, int d, int in, int* lo, int* hi) {
	int l = o * stride - pad;
	*hi = min(l + (k - 1) * d + 1, in);
	*lo = l < 0 ? l + (-l + d - 1) / d * d : l;
	return min(k, (in + pad - l + d - 1) / d);
}

// taps is the number of taps in [lo, hi), d apart.
inline int taps(int lo, int hi, int d) { return (hi - lo + d - 1) / d; }

// nanmax is Go's max: NaN wins.
inline float nanmax(float m, float v) { return (v != v || m != m) ? (v != v ? v : m) : fmax(m, v); }

// wargmax returns the offset of the first maximum of the window (the last
// NaN when there is one), as CPU.argmax does, or -1 for an empty window.
inline int wargmax(__global const store_t* plane, int W, int hlo, int hhi, int wlo, int whi, int dh, int dw) {
	float m = -INFINITY;
	for (int ih = hlo; ih < hhi; ih += dh)
		for (int iw = wlo; iw < whi; iw += dw) m = nanmax(m, LD(plane, ih * W + iw));
	if (m != m) {
		int at = -1;
		for (int ih = hlo; ih < hhi; ih += dh)
			for (int iw = wlo; iw < whi; iw += dw)
				if (LD(plane, ih * W + iw) != LD(plane, ih * W + iw)) at = ih * W + iw;
		return at;
	}
	for (int ih = hlo; ih < hhi; ih += dh)
		for (int iw = wlo; iw < whi; iw += dw)
			if (LD(plane, ih * W + iw) == m) return ih * W + iw;
	return -1;
}

__kernel void maxpool_forward(__global store_t* y, int yoff, __global const store_t* x, int xoff, int NC, int H, int W,
                              int KH, int KW, int sh, int sw, int ph, int pw, int OH, int OW, int dh, int dw) {
	int i = get_global_id(0);
	if (i >= NC * OH * OW) return;
	int ow = i % OW, oh = (i / OW) % OH, p = i / (OH * OW);
	int hlo, hhi, wlo, whi;
	window(oh, sh, ph, KH, dh, H, &hlo, &hhi);
	window(ow, sw, pw, KW, dw, W, &wlo, &whi);
	__global const store_t* plane = x + xoff + p * H * W;
	float m = -INFINITY;
	for (int ih = hlo; ih < hhi; ih += dh)
		for (int iw = wlo; iw < whi; iw += dw) m = nanmax(m, LD(plane, ih * W + iw));
	ST(y, yoff + i, m);
}

// maxpool_forward_idx is maxpool_forward that also stores, in idx, the
// offset in its plane of each window's first maximum (the last NaN when
// there is one; -1 for an empty window): what wargmax finds, in the same
// sweep that finds the maximum. m is computed as maxpool_forward computes
// it, so y has its bits; the index follows the first element greater than
// every one before it (the first of equal maxima: -0 and +0 compare equal,
// as wargmax's == does), unless a NaN came, when it is the last NaN.
// MaxPoolBackwardIdx then gathers with it (maxpool_backward_idx*) and skips
// maxpool_argmax.
__kernel void maxpool_forward_idx(__global store_t* y, int yoff, __global int* idx, __global const store_t* x, int xoff,
                                  int NC, int H, int W, int KH, int KW, int sh, int sw, int ph, int pw, int OH, int OW, int dh, int dw) {
	int i = get_global_id(0);
	if (i >= NC * OH * OW) return;
	int ow = i % OW, oh = (i / OW) % OH, p = i / (OH * OW);
	int hlo, hhi, wlo, whi;
	window(oh, sh, ph, KH, dh, H, &hlo, &hhi);
	window(ow, sw, pw, KW, dw, W, &wlo, &whi);
	__global const store_t* plane = x + xoff + p * H * W;
	float m = -INFINITY, best = 0;
	int at = -1, nan = -1;
	for (int ih = hlo; ih < hhi; ih += dh)
		for (int iw = wlo; iw < whi; iw += dw) {
			float v = LD(plane, ih * W + iw);
			m = nanmax(m, v);
			if (v != v) nan = ih * W + iw;
			else if (at < 0 || v > best) {
				best = v;
				at = ih * W + iw;
			}
		}
	ST(y, yoff + i, m);
	idx[i] = nan >= 0 ? nan : at;
}

// oh_range returns the outputs [*lo, *hi] whose windows can contain input i.
inline void oh_range(int i, int stride, int pad, int k, int out, int* lo, int* hi) {
	int t = i + pad - k;
	*lo = t < 0 ? 0 : t / stride + 1;
	*hi = min((i + pad) / stride, out - 1);
}

__kernel void maxpool_backward(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff, __global const store_t* x,
                               int xoff, int NC, int H, int W, int KH, int KW, int sh, int sw, int ph, int pw, int OH,
                               int OW, int dh, int dw) {
	int i = get_global_id(0);
	if (i >= NC * H * W) return;
	int iw = i % W, ih = (i / W) % H, p = i / (H * W);
	__global const store_t* plane = x + xoff + p * H * W;
	int ohlo, ohhi, owlo, owhi;
	oh_range(ih, sh, ph, (KH - 1) * dh + 1, OH, &ohlo, &ohhi);
	oh_range(iw, sw, pw, (KW - 1) * dw + 1, OW, &owlo, &owhi);
	float acc = 0.0f;
	for (int oh = ohlo; oh <= ohhi; oh++) {
		int hlo, hhi;
		window(oh, sh, ph, KH, dh, H, &hlo, &hhi);
		if (ih < hlo || ih >= hhi || (ih - hlo) % dh != 0) continue;
		for (int ow = owlo; ow <= owhi; ow++) {
			int wlo, whi;
			window(ow, sw, pw, KW, dw, W, &wlo, &whi);
			if (iw < wlo || iw >= whi || (iw - wlo) % dw != 0) continue;
			if (wargmax(plane, W, hlo, hhi, wlo, whi, dh, dw) == ih * W + iw) acc += LD(dy, dyoff + (p * OH + oh) * OW + ow);
		}
	}
	ST(dx, dxoff + i, acc);
}

inline float divisor(int incl, int hlo, int hhi, int hpad, int wlo, int whi, int wpad, int dh, int dw) {
	return incl ? (float)(hpad * wpad) : (float)(taps(hlo, hhi, dh) * taps(wlo, whi, dw));
}

__kernel void avgpool_forward(__global store_t* y, int yoff, __global const store_t* x, int xoff, int NC, int H, int W,
                              int KH, int KW, int sh, int sw, int ph, int pw, int OH, int OW, int dh, int dw, int incl) {
	int i = get_global_id(0);
	if (i >= NC * OH * OW) return;
	int ow = i % OW, oh = (i / OW) % OH, p = i / (OH * OW);
	int hlo, hhi, wlo, whi;
	int hpad = window(oh, sh, ph, KH, dh, H, &hlo, &hhi);
	int wpad = window(ow, sw, pw, KW, dw, W, &wlo, &whi);
	__global const store_t* plane = x + xoff + p * H * W;
	float sum = 0.0f;
	for (int ih = hlo; ih < hhi; ih += dh)
		for (int iw = wlo; iw < whi; iw += dw) sum += LD(plane, ih * W + iw);
	ST(y, yoff + i, sum / divisor(incl, hlo, hhi, hpad, wlo, whi, wpad, dh, dw));
}

__kernel void avgpool_backward(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff, int NC, int H, int W,
                               int KH, int KW, int sh, int sw, int ph, int pw, int OH, int OW, int dh, int dw, int incl) {
	int i = get_global_id(0);
	if (i >= NC * H * W) return;
	int iw = i % W, ih = (i / W) % H, p = i / (H * W);
	int ohlo, ohhi, owlo, owhi;
	oh_range(ih, sh, ph, (KH - 1) * dh + 1, OH, &ohlo, &ohhi);
	oh_range(iw, sw, pw, (KW - 1) * dw + 1, OW, &owlo, &owhi);
	float acc = 0.0f;
	for (int oh = ohlo; oh <= ohhi; oh++) {
		int hlo, hhi;
		int hpad = window(oh, sh, ph, KH, dh, H, &hlo, &hhi);
		if (ih < hlo || ih >= hhi || (ih - hlo) % dh != 0) continue;
		for (int ow = owlo; ow <= owhi; ow++) {
			int wlo, whi;
			int wpad = window(ow, sw, pw, KW, dw, W, &wlo, &whi);
			if (iw < wlo || iw >= whi || (iw - wlo) % dw != 0) continue;
			acc += LD(dy, dyoff + (p * OH + oh) * OW + ow) / divisor(incl, hlo, hhi, hpad, wlo, whi, wpad, dh, dw);
		}
	}
	ST(dx, dxoff + i, acc);
}

// maxpool_argmax and maxpool_backward_idx: maxpool_backward in two passes.
// The first finds each window's first maximum once (wargmax, one item per
// window) and stores its offset in the plane; the second gathers like
// maxpool_backward but compares with the stored offsets, where
// maxpool_backward recomputed every window containing an element (up to
// four windows of nine for AlexNet's 3×3/2 pools). The same windows in the
// same order: the same bits.
__kernel void maxpool_argmax(__global int* idx, __global const store_t* x, int xoff, int NC, int H, int W, int KH, int KW,
                             int sh, int sw, int ph, int pw, int OH, int OW, int dh, int dw) {
	int i = get_global_id(0);
	if (i >= NC * OH * OW) return;
	int ow = i % OW, oh = (i / OW) % OH, p = i / (OH * OW);
	int hlo, hhi, wlo, whi;
	window(oh, sh, ph, KH, dh, H, &hlo, &hhi);
	window(ow, sw, pw, KW, dw, W, &wlo, &whi);
	idx[i] = wargmax(x + xoff + p * H * W, W, hlo, hhi, wlo, whi, dh, dw);
}

__kernel void maxpool_backward_idx(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff, __global const int* idx,
                                   int NC, int H, int W, int KH, int KW, int sh, int sw, int ph, int pw, int OH, int OW, int dh, int dw) {
	int i = get_global_id(0);
	if (i >= NC * H * W) return;
	int iw = i % W, ih = (i / W) % H, p = i / (H * W);
	int ohlo, ohhi, owlo, owhi;
	oh_range(ih, sh, ph, (KH - 1) * dh + 1, OH, &ohlo, &ohhi);
	oh_range(iw, sw, pw, (KW - 1) * dw + 1, OW, &owlo, &owhi);
	int self = ih * W + iw;
	float acc = 0.0f;
	for (int oh = ohlo; oh <= ohhi; oh++) {
		for (int ow = owlo; ow <= owhi; ow++) {
			int o = (p * OH + oh) * OW + ow;
			if (idx[o] == self) acc += LD(dy, dyoff + o);
		}
	}
	ST(dx, dxoff + i, acc);
}

// maxpool_argmax_planes and maxpool_backward_idx_planes[_s2]: the two passes
// over a 2-D grid (position in the plane, plane), one division per item for
// its position where the 1-D kernels spent three on it; _s2 is for stride 2
// in both directions (AlexNet's and ResNet's 3×3/2 pools), where oh_range's
// divisions by the stride become shifts. The same windows, the same
// comparisons and the same order of additions as the 1-D kernels: the same
// bits.
__kernel void maxpool_argmax_planes(__global int* idx, __global const store_t* x, int xoff, int NC, int H, int W, int KH,
                                    int KW, int sh, int sw, int ph, int pw, int OH, int OW, int dh, int dw) {
	int q = get_global_id(0), p = get_global_id(1);
	if (q >= OH * OW) return;
	int oh = q / OW, ow = q - oh * OW;
	int hlo, hhi, wlo, whi;
	window(oh, sh, ph, KH, dh, H, &hlo, &hhi);
	window(ow, sw, pw, KW, dw, W, &wlo, &whi);
	idx[p * OH * OW + q] = wargmax(x + xoff + p * H * W, W, hlo, hhi, wlo, whi, dh, dw);
}

#define MAXPOOL_BACKWARD_IDX_PLANES(SFX, SH, SW)                                                                        \
	__kernel void maxpool_backward_idx_planes##SFX(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff, \
	                                               __global const int* idx, int NC, int H, int W, int KH, int KW, int sh,  \
	                                               int sw, int ph, int pw, int OH, int OW, int dh, int dw) {                              \
		int q = get_global_id(0), p = get_global_id(1);                                                                \
		if (q >= H * W) return;                                                                                        \
		int ih = q / W, iw = q - ih * W;                                                                               \
		int ohlo, ohhi, owlo, owhi;                                                                                    \
		oh_range(ih, (SH), ph, (KH - 1) * dh + 1, OH, &ohlo, &ohhi);                                                                  \
		oh_range(iw, (SW), pw, (KW - 1) * dw + 1, OW, &owlo, &owhi);                                                                  \
		float acc = 0.0f;                                                                                              \
		for (int oh = ohlo; oh <= ohhi; oh++) {                                                                        \
			for (int ow = owlo; ow <= owhi; ow++) {                                                                    \
				int o = (p * OH + oh) * OW + ow;                                                                       \
				if (idx[o] == q) acc += LD(dy, dyoff + o);                                                             \
			}                                                                                                          \
		}                                                                                                              \
		ST(dx, dxoff + p * H * W + q, acc);                                                                            \
	}
MAXPOOL_BACKWARD_IDX_PLANES(, sh, sw)
MAXPOOL_BACKWARD_IDX_PLANES(_s2, 2, 2)
