// FFT convolution (fft.go): real 2-D FFTs of P×P planes.
//
// The host appends this file once per FFT size P (16, 32) with FFT_P
// defined, so every kernel and helper below exists once per size, named
// with the size as a suffix (fft_r2c_32). The part outside the FFT_P
// section is compiled once.
//
// Spectra. The real FFT of a P×P plane x is X[u][v] = Σ x[h][w]·e^(−2πi(uh+vw)/P)
// for u < P and v < Q = P/2+1 (the other half is the conjugate mirror),
// F = P·Q frequencies f = u·Q + v. fft_r2c writes the spectra of many
// planes as the per-frequency real matrices the batched GEMM multiplies
// (fft.go: "Layouts"); fft_c2r reads the products back, transforms
// them to planes and crops.
//
// Work. A work-group transforms FFT_G_P planes through local
// memory: fft_r2c does the rows first (two real rows as one complex FFT,
// only the rows holding data), then the Q columns, and writes each
// frequency of the G planes to G consecutive elements (the planes of a
// group are consecutive along the layout's contiguous index); fft_c2r does
// the columns first (keeping only the rows of the output), then two rows
// at a time. Each FFT is radix 2 over P values in one item's registers,
// fully unrolled, with twiddles from a constant table. fft_r2c_thin does
// fft_r2c's work for planes of at most FFT_THIN×FFT_THIN (filters) by
// direct sums instead, and fft_c2r_thin fft_c2r's for outputs of at most
// FFT_THIN rows (filter gradients), 32 planes a group, the rows by direct
// sums. Every value is computed in a fixed order, with no
// atomics, so the results are the same on every run.

#ifndef FFT_SHARED
#define FFT_SHARED
// FFT_G_P: planes per work-group for size P, set by the host (fft.go,
// fftGroup) to what the device's local memory holds; these defaults fit 32 KiB.
#ifndef FFT_G_16
#define FFT_G_16 8
#endif
#ifndef FFT_G_32
#define FFT_G_32 4
#endif
// FFT_TC_P: planes per work-group of fft_c2r_thin for size P, set by the
// host (fft.go, fftThinGroup); these defaults fit 32 KiB.
#ifndef FFT_TC_16
#define FFT_TC_16 32
#endif
#ifndef FFT_TC_32
#define FFT_TC_32 16
#endif

// fft_tw[k] = e^(−2πik/32), k < 32: the twiddles of every stage of a
// radix-2 FFT of up to 32 points (stage of span L uses k·32/L, k < 16),
// and of the direct transforms of fft_r2c_thin (all 32).
__constant float2 fft_tw[32] = {
    (float2)(1.0f, 0.0f),
    (float2)(9.807852507e-01f, -1.950903237e-01f),
    (float2)(9.238795042e-01f, -3.826834261e-01f),
    (float2)(8.314695954e-01f, -5.555702448e-01f),
    (float2)(7.071067691e-01f, -7.071067691e-01f),
    (float2)(5.555702448e-01f, -8.314695954e-01f),
    (float2)(3.826834261e-01f, -9.238795042e-01f),
    (float2)(1.950903237e-01f, -9.807852507e-01f),
    (float2)(0.0f, -1.0f),
    (float2)(-1.950903237e-01f, -9.807852507e-01f),
    (float2)(-3.826834261e-01f, -9.238795042e-01f),
    (float2)(-5.555702448e-01f, -8.314695954e-01f),
    (float2)(-7.071067691e-01f, -7.071067691e-01f),
    (float2)(-8.314695954e-01f, -5.555702448e-01f),
    (float2)(-9.238795042e-01f, -3.826834261e-01f),
    (float2)(-9.807852507e-01f, -1.950903237e-01f),
    (float2)(-1.0f, 0.0f),
    (float2)(-9.807852507e-01f, 1.950903237e-01f),
    (float2)(-9.238795042e-01f, 3.826834261e-01f),
    (float2)(-8.314695954e-01f, 5.555702448e-01f),
    (float2)(-7.071067691e-01f, 7.071067691e-01f),
    (float2)(-5.555702448e-01f, 8.314695954e-01f),
    (float2)(-3.826834261e-01f, 9.238795042e-01f),
    (float2)(-1.950903237e-01f, 9.807852507e-01f),
    (float2)(0.0f, 1.0f),
    (float2)(1.950903237e-01f, 9.807852507e-01f),
    (float2)(3.826834261e-01f, 9.238795042e-01f),
    (float2)(5.555702448e-01f, 8.314695954e-01f),
    (float2)(7.071067691e-01f, 7.071067691e-01f),
    (float2)(8.314695954e-01f, 5.555702448e-01f),
    (float2)(9.238795042e-01f, 3.826834261e-01f),
    (float2)(9.807852507e-01f, 1.950903237e-01f),
};

// FFT_INLINE marks the helpers that take or work on a register array
// (float2 z[P]): always inlined, so that after unrolling every index is a
// constant and the array lives in registers. A helper left a function (an
// LLVM-based compiler's inliner declines a fully unrolled FFT called from
// two places: clang 15 for nvptx does) takes the array by address, in the
// stack's memory, where every butterfly loads and stores it.
#define FFT_INLINE inline __attribute__((always_inline))

// fft_cmul is the complex product a·b.
FFT_INLINE float2 fft_cmul(float2 a, float2 b) { return (float2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

// fft_store_freq stores frequency z of plane (kx, cx) in the products'
// layout of fft_r2c and fft_r2c_thin, df pointing at the frequency's
// matrix: with dup the real 2×2 block (re, s1·im; s2·im, s3·re) at rows
// kx and Kn + kx, columns cx and Cn + cx, else re at (kx, cx) and im at
// (Kn + kx, cx). Always inlined: each kernel's stores stay as they were
// written out in it.
FFT_INLINE void fft_store_freq(__global store_t* df, float2 z, int kx, int cx, int Kn, int Cn, int ld, int dup, int s1, int s2,
                               int s3) {
	float re = z.x, im = z.y;
	if (dup) {
		ST(df, kx * ld + cx, re);
		ST(df, kx * ld + Cn + cx, s1 * im);
		ST(df, (Kn + kx) * ld + cx, s2 * im);
		ST(df, (Kn + kx) * ld + Cn + cx, s3 * re);
	} else {
		ST(df, kx * ld + cx, re);
		ST(df, (Kn + kx) * ld + cx, im);
	}
}

// FFT_TG: planes per work-group of fft_r2c_thin (a warp's worth: one
// plane per item of a warp); FFT_THIN: the most rows and columns of its
// planes, and the most rows of fft_c2r_thin's (the host sends them no
// larger planes).
#define FFT_TG 32
#define FFT_THIN 8

#define FFT_CAT2(a, b) a##_##b
#define FFT_CAT(a, b) FFT_CAT2(a, b)
#endif // FFT_SHARED

#ifdef FFT_P
#define FFT_Q (FFT_P / 2 + 1)
#define FFT_F (FFT_P * FFT_Q)
#define FFT_K(name) FFT_CAT(name, FFT_P)
#define FFT_GP FFT_CAT(FFT_G, FFT_P) // planes per work-group: FFT_G_16 or FFT_G_32
#define FFT_TCP FFT_CAT(FFT_TC, FFT_P) // planes per work-group of fft_c2r_thin
// FFT_T: local float2s per plane, two more than the spectrum (F is a
// multiple of 16), so that the G planes of a group start 2 float2 banks
// apart: the column passes' items (g, v) = (task % G, task / G) then hit
// 16 distinct 8-byte bank pairs in each half-warp (2g + v), and the row
// passes' (g, pair j) conflict at most 2-way.
#define FFT_T (FFT_F + 2)
#define FFT_LU (FFT_GP < 32 ? 32 / FFT_GP : 1) // fft_r2c's elements per plane per item and loading round

// FFT_K(fft_bitrev) is i with its log2(P) bits reversed.
FFT_INLINE int FFT_K(fft_bitrev)(int i) {
	int r = 0;
#pragma unroll
	for (int b = 1; b < FFT_P; b <<= 1) {
		r = (r << 1) | (i & 1);
		i >>= 1;
	}
	return r;
}

// FFT_K(fft_reg) transforms z (P points, in natural order) in place into
// its DFT, Σ z[t]·e^(∓2πi·kt/P) (− forward, + when inv), in natural order:
// a bit-reversal permutation, then log2(P) radix-2 stages.
FFT_INLINE void FFT_K(fft_reg)(float2* z, int inv) {
#pragma unroll
	for (int i = 0; i < FFT_P; i++) {
		int j = FFT_K(fft_bitrev)(i);
		if (i < j) {
			float2 t = z[i];
			z[i] = z[j];
			z[j] = t;
		}
	}
#pragma unroll
	for (int len = 2; len <= FFT_P; len <<= 1) {
		int hl = len >> 1, step = 32 / len;
#pragma unroll
		for (int i = 0; i < FFT_P; i += len) {
#pragma unroll
			for (int k = 0; k < hl; k++) {
				float2 w = fft_tw[k * step];
				if (inv) w.y = -w.y;
				float2 u = z[i + k], t = fft_cmul(z[i + k + hl], w);
				z[i + k] = u + t;
				z[i + k + hl] = u - t;
			}
		}
	}
}

// FFT_K(fft_rows_r2c) transforms z = row r0 + i·row r0+1 (two real rows
// of a plane; the second zero when not two) and stores the two rows'
// spectra, the Q frequencies each, into the plane's local rows tp.
FFT_INLINE void FFT_K(fft_rows_r2c)(float2* z, __local float2* tp, int r0, bool two) {
	FFT_K(fft_reg)(z, 0);
#pragma unroll
	for (int v = 0; v < FFT_Q; v++) {
		float2 p = z[v], m = z[(FFT_P - v) % FFT_P];
		tp[r0 * FFT_Q + v] = (float2)(0.5f * (p.x + m.x), 0.5f * (p.y - m.y));
		if (two) tp[(r0 + 1) * FFT_Q + v] = (float2)(0.5f * (p.y + m.y), -0.5f * (p.x - m.x));
	}
}

// FFT_K(fft_rows_c2r) sets z to the inverse FFT of Ta + i·Tb, Ta and Tb
// rows r0 and r0+1 (zero when not two) of the plane's local spectra tp,
// both extended to P points as the conjugate mirror (the imaginary parts
// at v = 0 and P/2, zero for a real plane but for rounding, are dropped):
// its real part is row r0 of the plane, its imaginary part row r0+1.
FFT_INLINE void FFT_K(fft_rows_c2r)(float2* z, __local const float2* tp, int r0, bool two) {
#pragma unroll
	for (int v = 0; v < FFT_Q; v++) {
		float2 ta = tp[r0 * FFT_Q + v], tb = two ? tp[(r0 + 1) * FFT_Q + v] : (float2)(0.0f);
		if (v == 0 || v == FFT_P / 2) {
			ta.y = 0.0f;
			tb.y = 0.0f;
		}
		z[v] = (float2)(ta.x - tb.y, ta.y + tb.x);
		if (v > 0 && v < FFT_P / 2) z[FFT_P - v] = (float2)(ta.x + tb.y, tb.x - ta.y);
	}
	FFT_K(fft_reg)(z, 1);
}

// fft_r2c_P writes the spectra of planes (a, b) of src to dst, one
// work-group per FFT_GP planes. src holds na×nb planes of H×W at soff, plane
// (a, b) at (a·nb + b)·H·W (a batch tensor: a sample, b a channel; a
// filter tensor: a an output, b an input channel); the P×P plane
// transformed is the source plane shifted down by ph rows and right by pw
// columns, zeros elsewhere (the host checks ph + H ≤ P, pw + W ≤ P).
//
// Layout: the plane's matrix indices are (kx, cx) = (b, a), or (a, b)
// with swap; Kn and Cn are the counts of kx and cx. Frequency f's matrix
// starts at doff + f·fs, rows of ld elements:
//
//	dup 0 (2Kn × Cn):    re at (kx, cx), im at (Kn + kx, cx)
//	dup 1 (2Kn × 2Cn):   re at (kx, cx), s1·im at (kx, Cn + cx),
//	                     s2·im at (Kn + kx, cx), s3·re at (Kn + kx, Cn + cx)
//
// A work-group's planes share kx and take FFT_GP consecutive cx, so
// consecutive planes of a group are ps = 1 plane apart in src (swap) or nb.
//
// Phases, each valid for any work-group size (the same bits whatever the
// size):
//  1. the group's planes are read whole into local memory (as floats:
//     H·W ≤ P² < 2·FFT_T per plane), consecutive items on consecutive
//     elements of a plane, each item FFT_GP independent loads (one per
//     plane) in flight at once;
//  2. rows, in rounds of as many tasks as items: task (g, pair j) takes
//     rows rlo+2j and rlo+2j+1 of plane g into registers, and after the
//     round's barrier writes their spectra over the plane's local rows.
//     The rounds take the pairs from the bottom up: a pair's spectra
//     (floats 2Q·r0 onwards, 2Q > W) lie above the raw rows of every pair
//     below it, which later rounds read, so one barrier a round suffices;
//  3. columns: task (g, v) transforms column v of plane g (rows outside
//     [rlo, rhi) are zero) and writes its P frequencies.
__kernel void FFT_K(fft_r2c)(__global store_t* dst, int doff, __global const store_t* src, int soff, int na, int nb, int H, int W,
                             int ph, int pw, int swap, int dup, int s1, int s2, int s3, int Kn, int Cn, int ld, int fs) {
	__local float2 t[FFT_GP * FFT_T];
	__local float* ts = (__local float*)t;
	const int lid = get_local_id(0), lsz = get_local_size(0);
	const int ncb = (Cn + FFT_GP - 1) / FFT_GP;
	const int kx = get_group_id(0) / ncb, cx0 = (get_group_id(0) % ncb) * FFT_GP;
	const int ng = min(FFT_GP, Cn - cx0); // planes of this group
	const int rlo = max(ph, 0), rhi = min(FFT_P, ph + H); // rows holding data
	const int pairs = (rhi - rlo + 1) / 2;
	const int per = H * W;
	const int ps = swap ? 1 : nb;                                   // planes between consecutive cx
	const int pl0 = soff + (swap ? kx * nb + cx0 : cx0 * nb + kx) * per; // the group's first plane
	// 1. Planes into local memory, FFT_LU elements of each plane per item
	// and iteration: FFT_LU·FFT_GP (32) independent loads in flight.
	for (int i0 = lid; i0 < per; i0 += FFT_LU * lsz) {
		float v[FFT_LU][FFT_GP];
#pragma unroll
		for (int k = 0; k < FFT_LU; k++) {
			const int i = i0 + k * lsz;
#pragma unroll
			for (int g = 0; g < FFT_GP; g++) v[k][g] = (g < ng && i < per) ? LD(src, pl0 + g * ps * per + i) : 0.0f;
		}
#pragma unroll
		for (int k = 0; k < FFT_LU; k++) {
			const int i = i0 + k * lsz;
			if (i < per) {
#pragma unroll
				for (int g = 0; g < FFT_GP; g++) ts[g * 2 * FFT_T + i] = v[k][g];
			}
		}
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	// 2. Rows, z = row r0 + i·row r1, the pairs from the bottom up.
	const int rtasks = FFT_GP * pairs;
	for (int base = 0; base < rtasks; base += lsz) {
		const int task = base + lid, g = task % FFT_GP, j = pairs - 1 - task / FFT_GP;
		const bool on = task < rtasks && g < ng;
		const int r0 = rlo + 2 * j, r1 = r0 + 1;
		__local const float* pl = ts + g * 2 * FFT_T;
		float2 z[FFT_P];
#pragma unroll
		for (int w = 0; w < FFT_P; w++) {
			int ww = w - pw;
			bool in = on && ww >= 0 && ww < W;
			z[w] = (float2)(in ? pl[(r0 - ph) * W + ww] : 0.0f, (in && r1 < rhi) ? pl[(r1 - ph) * W + ww] : 0.0f);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		if (on) FFT_K(fft_rows_r2c)(z, t + g * FFT_T, r0, r1 < rhi);
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	// 3. Columns.
	for (int task = lid; task < FFT_GP * FFT_Q; task += lsz) {
		int g = task % FFT_GP, v = task / FFT_GP, cx = cx0 + g;
		if (g >= ng) continue;
		float2 z[FFT_P];
#pragma unroll
		for (int u = 0; u < FFT_P; u++) z[u] = (u >= rlo && u < rhi) ? t[g * FFT_T + u * FFT_Q + v] : (float2)(0.0f);
		FFT_K(fft_reg)(z, 0);
		__global store_t* d = dst + doff + v * fs;
#pragma unroll
		for (int u = 0; u < FFT_P; u++) {
			fft_store_freq(d + u * FFT_Q * fs, z[u], kx, cx, Kn, Cn, ld, dup, s1, s2, s3);
		}
	}
}

// FFT_K(fft_w) is e^(−2πi·m/P), m ≥ 0.
FFT_INLINE float2 FFT_K(fft_w)(int m) { return fft_tw[(m & (FFT_P - 1)) * (32 / FFT_P)]; }

// fft_r2c_thin_P is fft_r2c (the same arguments, layout and values, to
// rounding) for planes of at most FFT_THIN×FFT_THIN (filters), whose P×P
// planes are mostly zeros: it computes each frequency directly from the
// H×W values instead of by FFTs over the zeros, with no local memory but
// the group's planes. A work-group takes FFT_TG planes (consecutive cx);
// task (g, v) = (task % FFT_TG, task / FFT_TG), so that the items of a
// warp take the planes of the group at one column v (their twiddles are
// the same: one constant read serves the warp) and write each frequency
// as FFT_TG consecutive elements. Item (g, v) computes
//
//	R[h] = Σ_w x[h][w]·e^(−2πi·v(w+pw)/P)     (h < H: the rows' DFTs at v)
//	A_u  = Σ_{h even} R[h]·e^(−2πi·u(h+ph)/P), B_u likewise over odd h
//	X[u][v] = A_u + B_u,  X[u+P/2][v] = ±(A_u − B_u)  (u < P/2)
//
// (e^(−2πi·(u+P/2)m/P) = (−1)^m·e^(−2πi·um/P), and m = h+ph is even for
// even h when ph is: + then, − when ph is odd), each sum in a fixed order.
__kernel void FFT_K(fft_r2c_thin)(__global store_t* dst, int doff, __global const store_t* src, int soff, int na, int nb, int H,
                                  int W, int ph, int pw, int swap, int dup, int s1, int s2, int s3, int Kn, int Cn, int ld, int fs) {
	__local float ts[FFT_TG * (FFT_THIN * FFT_THIN + 1)]; // plane g at g·(THIN²+1): an odd stride, no bank conflicts
	const int lid = get_local_id(0), lsz = get_local_size(0);
	const int ncb = (Cn + FFT_TG - 1) / FFT_TG;
	const int kx = get_group_id(0) / ncb, cx0 = (get_group_id(0) % ncb) * FFT_TG;
	const int ng = min(FFT_TG, Cn - cx0); // planes of this group
	const int per = H * W, stride = FFT_THIN * FFT_THIN + 1;
	const int ps = swap ? 1 : nb;                                        // planes between consecutive cx
	const int pl0 = soff + (swap ? kx * nb + cx0 : cx0 * nb + kx) * per; // the group's first plane
	for (int e = lid; e < ng * per; e += lsz) {
		int g = e / per, i = e - g * per;
		ts[g * stride + i] = LD(src, pl0 + g * ps * per + i);
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	const float sgn = (ph & 1) ? -1.0f : 1.0f;
	for (int task = lid; task < FFT_TG * FFT_Q; task += lsz) {
		const int g = task % FFT_TG, v = task / FFT_TG, cx = cx0 + g;
		if (g >= ng) continue;
		__local const float* pl = ts + g * stride;
		float2 r[FFT_THIN];
#pragma unroll
		for (int h = 0; h < FFT_THIN; h++) {
			r[h] = (float2)(0.0f);
			if (h < H) {
#pragma unroll
				for (int w = 0; w < FFT_THIN; w++)
					if (w < W) r[h] += pl[h * W + w] * FFT_K(fft_w)(v * (w + pw));
			}
		}
		__global store_t* d = dst + doff + v * fs;
#pragma unroll
		for (int u = 0; u < FFT_P / 2; u++) {
			float2 a = (float2)(0.0f), b = (float2)(0.0f);
#pragma unroll
			for (int h = 0; h < FFT_THIN; h += 2) {
				if (h < H) a += fft_cmul(r[h], FFT_K(fft_w)(u * (h + ph)));
				if (h + 1 < H) b += fft_cmul(r[h + 1], FFT_K(fft_w)(u * (h + 1 + ph)));
			}
			float2 zs[2] = {a + b, sgn * (a - b)};
#pragma unroll
			for (int k = 0; k < 2; k++) {
				fft_store_freq(d + (u + k * FFT_P / 2) * FFT_Q * fs, zs[k], kx, cx, Kn, Cn, ld, dup, s1, s2, s3);
			}
		}
	}
}

// fft_c2r_P sets planes (a, b) of dst (na×nb planes of OH×OW at doff,
// plane (a, b) at (a·nb + b)·OH·OW) to the inverse real FFT of their
// spectra in src, scaled by 1/P², rows oh.. and columns ow.. of the P×P
// result, plus bias[b] when hasBias, then act_relu of kind act (0: none).
// Spectra: the plane's matrix indices (rx, cx) = (b, a), or (a, b) with
// swap; frequency f's matrix at soff + f·fs, rows of ld elements, re at
// (rx, cx) and im imoff elements after it (side by side: ld = 2·Cn and
// imoff = Cn; stacked: ld = Cn and imoff = the rows' count times Cn). A
// work-group's planes share rx and take FFT_GP consecutive cx (Cn of them).
//
// FFT_K(fft_c2r_body) does the work for fft_c2r and fft_c2r_thin, with G
// planes per work-group and TP float2s of t per plane (room for the
// spectra of the output's rows: OH ≤ (TP − 1)/Q), in phases, each valid
// for any work-group size (the same bits whatever the size):
//  1. columns: task (g, v) inverts column v of plane g and keeps rows
//     oh..oh+OH-1 in local memory;
//  2. rows, in rounds of as many tasks as items: task (g, pair j) inverts
//     output rows 2j and 2j+1 (FFT_K(fft_rows_c2r)) into registers, and
//     after the round's barrier writes them, scaled, biased and
//     activated, over the plane's local memory (as floats: OH·OW ≤
//     OH·P < 2·TP). The rounds take the pairs from the top down: a pair's
//     results (floats 2j·OW onwards, OW < 2Q) lie below the spectra of
//     every pair above it, which later rounds read;
//  3. the group writes its planes whole, consecutive items on consecutive
//     elements of a plane, G independent stores each;
// or with direct (fft_c2r_thin), in place of 2 and 3:
//  2'. task (g, e) = (task % G, task / G), the items of a warp on G planes
//     at one element e = (h, w), computes y[h][w] from its row's spectrum
//     C (C[v], v ≤ P/2: the columns' inverses at row oh + h) as the
//     direct sum C[0] + (−1)^q·C[P/2] + 2·Σ_{0<v<P/2} Re(C[v]·e^(2πi·vq/P)),
//     q = ow + w (the real parts only, as FFT_K(fft_rows_c2r) drops the
//     imaginary parts at 0 and P/2), scales, biases, activates and
//     writes it: every item busy on at most P/2 products, where the row
//     pass of small outputs keeps a few items on whole FFTs, and the
//     twiddle of a warp one constant read.
FFT_INLINE void FFT_K(fft_c2r_body)(__local float2* t, const int G, const int TP, const bool direct, __global store_t* dst, int doff,
                                    __global const store_t* src, int soff, int nb, int OH, int OW, int oh, int ow, int swap, int Cn,
                                    int ld, int imoff, int fs, __global const store_t* bias, int boff, int hasBias, int act) {
	__local float* ts = (__local float*)t;
	const int lid = get_local_id(0), lsz = get_local_size(0);
	const int ncb = (Cn + G - 1) / G;
	const int rx = get_group_id(0) / ncb, cx0 = (get_group_id(0) % ncb) * G;
	const int ng = min(G, Cn - cx0); // planes of this group
	// 1. Columns.
	for (int task = lid; task < G * FFT_Q; task += lsz) {
		int g = task % G, v = task / G, cx = cx0 + g;
		if (g >= ng) continue;
		__global const store_t* s = src + soff + v * fs + rx * ld + cx;
		float2 z[FFT_P];
#pragma unroll
		for (int u = 0; u < FFT_P; u++) {
			__global const store_t* sf = s + u * FFT_Q * fs;
			z[u] = (float2)(LD(sf, 0), LD(sf, imoff));
		}
		FFT_K(fft_reg)(z, 1);
#pragma unroll
		for (int u = 0; u < FFT_P; u++)
			if (u >= oh && u < oh + OH) t[g * TP + (u - oh) * FFT_Q + v] = z[u];
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	const float scale = 1.0f / (FFT_P * FFT_P);
	const int per = OH * OW;
	const int ps = swap ? 1 : nb;                                        // planes between consecutive cx
	const int pl0 = doff + (swap ? rx * nb + cx0 : cx0 * nb + rx) * per; // the group's first plane
	if (direct) {
		// 2'. Each output value as a direct sum over its row's spectrum C
		// (c2r_value), written straight out: task (g, e) = (task % G,
		// task / G), the items of a warp on G planes at one element.
		for (int task = lid; task < G * per; task += lsz) {
			const int g = task % G, e = task / G;
			if (g >= ng) continue;
			const int h = e / OW, q = e - h * OW + ow;
			__local const float2* c = t + g * TP + h * FFT_Q;
			float acc = 0.0f;
#pragma unroll
			for (int v = 1; v < FFT_P / 2; v++) {
				float2 w = FFT_K(fft_w)(v * q), cv = c[v];
				acc += cv.x * w.x + cv.y * w.y;
			}
			float y = c[0].x + ((q & 1) ? -c[FFT_P / 2].x : c[FFT_P / 2].x) + 2.0f * acc;
			float bv = hasBias ? LD(bias, boff + (swap ? cx0 + g : rx)) : 0.0f;
			ST(dst, pl0 + g * ps * per + e, act_relu(y * scale + bv, act));
		}
		return;
	}
	// 2. Rows, the pairs from the top down.
	const int pairs = (OH + 1) / 2, rtasks = G * pairs;
	for (int base = 0; base < rtasks; base += lsz) {
		const int task = base + lid, g = task % G, j = task / G;
		const bool on = task < rtasks && g < ng;
		const int r0 = 2 * j;
		const bool two = r0 + 1 < OH;
		float2 z[FFT_P];
		if (on) FFT_K(fft_rows_c2r)(z, t + g * TP, r0, two);
		barrier(CLK_LOCAL_MEM_FENCE);
		if (on) {
			float bv = hasBias ? LD(bias, boff + (swap ? cx0 + g : rx)) : 0.0f;
			__local float* pl = ts + g * 2 * TP;
#pragma unroll
			for (int w = 0; w < FFT_P; w++) {
				if (w < ow || w >= ow + OW) continue;
				pl[r0 * OW + w - ow] = act_relu(z[w].x * scale + bv, act);
				if (two) pl[(r0 + 1) * OW + w - ow] = act_relu(z[w].y * scale + bv, act);
			}
		}
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	// 3. Planes out.
	for (int i = lid; i < per; i += lsz) {
#pragma unroll
		for (int g = 0; g < G; g++)
			if (g < ng) ST(dst, pl0 + g * ps * per + i, ts[g * 2 * TP + i]);
	}
}

__kernel void FFT_K(fft_c2r)(__global store_t* dst, int doff, __global const store_t* src, int soff, int na, int nb, int OH,
                             int OW, int oh, int ow, int swap, int Cn, int ld, int imoff, int fs, __global const store_t* bias, int boff, int hasBias,
                             int act) {
	__local float2 t[FFT_GP * FFT_T];
	FFT_K(fft_c2r_body)(t, FFT_GP, FFT_T, false, dst, doff, src, soff, nb, OH, OW, oh, ow, swap, Cn, ld, imoff, fs, bias, boff, hasBias, act);
}

// fft_c2r_thin_P is fft_c2r (the same arguments and values, to rounding)
// for outputs of at most FFT_THIN rows (the filter gradient's R×S
// planes): local memory holds only those rows' spectra (FFT_THIN·Q + 1
// float2s per plane, an odd count: the planes start in different banks),
// so a work-group takes FFT_TCP planes (32 where fft_c2r takes 8) in as
// much room, and the items of a warp, on consecutive planes at one
// column, read each frequency as that many consecutive elements; the rows
// are inverted by direct sums (2' above).
__kernel void FFT_K(fft_c2r_thin)(__global store_t* dst, int doff, __global const store_t* src, int soff, int na, int nb, int OH,
                                  int OW, int oh, int ow, int swap, int Cn, int ld, int imoff, int fs, __global const store_t* bias, int boff,
                                  int hasBias, int act) {
	__local float2 t[FFT_TCP * (FFT_THIN * FFT_Q + 1)];
	FFT_K(fft_c2r_body)(t, FFT_TCP, FFT_THIN * FFT_Q + 1, true, dst, doff, src, soff, nb, OH, OW, oh, ow, swap, Cn, ld, imoff, fs, bias, boff,
	                    hasBias, act);
}

#undef FFT_Q
#undef FFT_F
#undef FFT_K
#undef FFT_GP
#undef FFT_T
#undef FFT_LU
#undef FFT_TCP
#endif // FFT_P
