// Winograd F(2×2, 3×3) for 3×3 stride-1 convolutions (winograd.go).
//
// An output tile of 2×2 is computed from a 4×4 input tile d and a 3×3
// filter g as Y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A, with
//
//	Bᵀ = | 1  0 -1  0 |    G = | 1    0    0  |    Aᵀ = | 1  1  1  0 |
//	     | 0  1  1  0 |        | 1/2  1/2  1/2 |         | 0  1 -1 -1 |
//	     | 0 -1  1  0 |        | 1/2 -1/2  1/2 |
//	     | 0  1  0 -1 |        | 0    0    1  |
//
// Summed over input channels, the elementwise product ⊙ becomes 16
// matrix products, one per element ξ of the 4×4 transformed tile:
// M_ξ (outputs × tiles) = U_ξ (outputs × inputs) · V_ξ (inputs × tiles),
// run by the backend's GEMM between wino_input and wino_output.
//
// Layouts (all row-major, ξ = 4·row + column of the transformed tile):
//
//	U: [O][16][Ipad]   wino_filter, O output and I input channels
//	V: [16][Ipad][Pld] wino_input, column p = tile (sample, tile row, tile column)
//	M: [16][O][Pld]    the products, read by wino_output
//
// so that U is also one O × 16·Ipad matrix whose ξ-th block of Ipad
// columns is U_ξ, and V one 16·Ipad × Pld matrix whose ξ-th block of rows
// is V_ξ: the GEMM's k-ranges (split k) then compute all 16 products in
// one launch. Ipad is I rounded up to a multiple of 4 and Pld the tile
// count P of a chunk rounded up to a multiple of 4 (so that the GEMM can
// move float4s and no group of 4 along k straddles two products);
// wino_filter and wino_input write zeros in the extra channels and
// columns, and wino_output ignores the extra columns. Every value is
// computed by one item in a fixed order: the same bits on every run.

// wino_filter sets U = G g Gᵀ for every (o, i) pair of filters, one item
// per (o, i < Ipad), zeros for i ≥ I. Forward (flip 0): g = w[o][i],
// O = K, I = C. Backward data (flip 1): the filters rotated by 180° with
// the channels swapped, g = rot180(w[i][o]), O = C, I = K; w is K×C×3×3
// either way (nw = K, nc = C).
__kernel void wino_filter(__global store_t* u, __global const store_t* w, int woff, int nw, int nc, int flip, int Ipad) {
	int O = flip ? nc : nw, I = flip ? nw : nc;
	int e = get_global_id(0);
	if (e >= O * Ipad) return;
	int o = e / Ipad, i = e % Ipad;
	__global store_t* uo = u + o * 16 * Ipad + i;
	if (i >= I) {
		for (int j = 0; j < 16; j++) ST(uo, j * Ipad, 0.0f);
		return;
	}
	int k = flip ? i : o, c = flip ? o : i; // w's filter (k, c)
	__global const store_t* f = w + woff + (k * nc + c) * 9;
	float g[9];
	for (int j = 0; j < 9; j++) g[j] = LD(f, flip ? 8 - j : j);
	// t = G g (4×3), row by row; then U = t Gᵀ (4×4), column by column.
	float t[12];
	for (int s = 0; s < 3; s++) {
		float a = g[s], b = g[3 + s], d = g[6 + s];
		t[s] = a;
		t[3 + s] = 0.5f * ((a + b) + d);
		t[6 + s] = 0.5f * ((a - b) + d);
		t[9 + s] = d;
	}
	for (int r = 0; r < 4; r++) {
		float a = t[3 * r], b = t[3 * r + 1], d = t[3 * r + 2];
		ST(uo, (4 * r + 0) * Ipad, a);
		ST(uo, (4 * r + 1) * Ipad, 0.5f * ((a + b) + d));
		ST(uo, (4 * r + 2) * Ipad, 0.5f * ((a - b) + d));
		ST(uo, (4 * r + 3) * Ipad, d);
	}
}

// wino_input sets V = Bᵀ d B for tile column p (dimension 0, up to Pld)
// and input channel c (dimension 1, up to Ipad) of the samples of x
// (I×H×W each, xs apart): the 4×4 tile at rows 2·th − ph.., columns
// 2·tw − pw.., zero outside the plane (the padding, any tile row or
// column past the end); zeros for p ≥ P or c ≥ I.
__kernel void wino_input(__global store_t* v, int voff, __global const store_t* x, int xoff, int xs, int I, int Ipad, int H,
                         int W, int ph, int pw, int TH, int TW, int P, int Pld) {
	int p = get_global_id(0), c = get_global_id(1);
	if (p >= Pld) return;
	int stride = Ipad * Pld, at = voff + c * Pld + p;
	if (p >= P || c >= I) {
		for (int j = 0; j < 16; j++) ST(v, j * stride + at, 0.0f);
		return;
	}
	int tiles = TH * TW, n = p / tiles, t = p % tiles;
	int h0 = (t / TW) * 2 - ph, w0 = (t % TW) * 2 - pw;
	__global const store_t* xc = x + xoff + n * xs + c * H * W;
	float d[16];
	for (int r = 0; r < 4; r++) {
		int h = h0 + r;
		bool rowIn = h >= 0 && h < H;
		for (int s = 0; s < 4; s++) {
			int ww = w0 + s;
			d[4 * r + s] = (rowIn && ww >= 0 && ww < W) ? LD(xc, h * W + ww) : 0.0f;
		}
	}
	// t = Bᵀ d, column by column; then V = t B, row by row.
	float q[16];
	for (int s = 0; s < 4; s++) {
		float a = d[s], b = d[4 + s], e = d[8 + s], f = d[12 + s];
		q[s] = a - e;
		q[4 + s] = b + e;
		q[8 + s] = e - b;
		q[12 + s] = b - f;
	}
	for (int r = 0; r < 4; r++) {
		float a = q[4 * r], b = q[4 * r + 1], e = q[4 * r + 2], f = q[4 * r + 3];
		ST(v, (4 * r + 0) * stride + at, a - e);
		ST(v, (4 * r + 1) * stride + at, b + e);
		ST(v, (4 * r + 2) * stride + at, e - b);
		ST(v, (4 * r + 3) * stride + at, b - f);
	}
}

// wino_output sets the 2×2 output tile p (dimension 0) of output channel
// o (dimension 1) of nb samples of y (O×OH×OW each, ys apart) to
// Aᵀ M A, plus bias[o] when hasBias, then act_relu of kind act (0: none);
// the tile's positions past the plane are not written.
__kernel void wino_output(__global store_t* y, int yoff, int ys, __global const store_t* m, int moff,
                          __global const store_t* bias, int boff, int hasBias, int act, int O, int OH, int OW, int TH, int TW, int P,
                          int Pld) {
	int p = get_global_id(0), o = get_global_id(1);
	if (p >= P) return;
	int stride = O * Pld, at = moff + o * Pld + p;
	float q[8]; // t = Aᵀ M (2×4), column by column
	for (int s = 0; s < 4; s++) {
		float a = LD(m, s * stride + at), b = LD(m, (4 + s) * stride + at);
		float e = LD(m, (8 + s) * stride + at), f = LD(m, (12 + s) * stride + at);
		q[s] = (a + b) + e;
		q[4 + s] = (b - e) - f;
	}
	float bv = hasBias ? LD(bias, boff + o) : 0.0f;
	int tiles = TH * TW, n = p / tiles, t = p % tiles;
	int h0 = (t / TW) * 2, w0 = (t % TW) * 2;
	__global store_t* yc = y + yoff + n * ys + o * OH * OW;
	for (int r = 0; r < 2 && h0 + r < OH; r++) {
		float a = q[4 * r], b = q[4 * r + 1], e = q[4 * r + 2], f = q[4 * r + 3];
		ST(yc, (h0 + r) * OW + w0, act_relu(((a + b) + e) + bv, act));
		if (w0 + 1 < OW) ST(yc, (h0 + r) * OW + w0 + 1, act_relu(((b - e) - f) + bv, act));
	}
}
