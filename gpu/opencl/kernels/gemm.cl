// Tiled SGEMM, C = alpha*op(A)*op(B) + beta*C, row-major, with buffer
// offsets in elements. One kernel per transpose case (gemm_nn, gemm_tn,
// gemm_nt, gemm_tt), all from gemm_body with constant flags, so the compiler
// drops the branches of the other cases.
//
// Variants are compiled with -D TSM, TSN (the block of C one work-group
// computes), WPTM, WPTN (the register block of one item, multiples of 4) and
// TSK (the depth of one tile step, a multiple of 4). A work-group of
// RTSN×RTSM items (RTSM = TSM/WPTM) computes the block; item (tx, ty) owns
// WPTM/4 groups of 4 consecutive rows, group g starting at row
// (g*RTSM + ty)*4, and likewise for columns. Its rows and columns are read
// from local memory as float4: 4 loads per 16 (4×4 block) or 64 (8×8)
// fused multiply-adds, where a strided scalar layout needs 16.
//
// Local memory holds two TSK-deep tiles of op(A) (k-major: As[k][m]) and of
// op(B) (Bs[k][n]): while the items multiply out of one, the next tile is
// read from global memory into registers and then stored into the other, so a
// step needs one barrier and the global loads overlap the arithmetic. Rows of
// a tile are padded by 4 floats, which keeps float4 alignment and spreads the
// scalar stores of a transposing load over distinct banks.
//
// Operands. Every matrix is addressed as P[r*ld + seg(c)] where c runs along
// its contiguous dimension and seg(c) = (c/segl)*segs + c%segl when segl > 0
// (else c). The segmented form lets a convolution treat a whole batch stored
// N×K×(OH·OW) as one K×(N·OH·OW) matrix without copying it: segl = OH·OW,
// segs = K·OH·OW. A matrix whose contiguous dimension lies along op()'s k
// (A not transposed, B transposed) is read 4 consecutive k at a time and
// stored transposed; the other kind is read 4 consecutive m (n) at a time
// and stored as is. When the host has checked that every group of 4 is
// 16-byte aligned and never straddles a segment or the end (flag vec), a
// group is one float4 load; otherwise 4 scalar loads with bounds checks.
//
// Every output is summed as fma(a_k, b_k, acc) for k = 0, 1, ... in order,
// starting from 0. Beyond K both operands are read as 0, and fma(0, 0, acc)
// is acc exactly, so the padding to a multiple of TSK adds nothing: the bits
// do not depend on the variant, and neither the tuner's choice nor the
// per-shape choice can change results.
//
// Split k. A product with few blocks of C and a long k (a convolution's
// filter gradient, or 1024³ on a large GPU) leaves compute units idle. The
// host then cuts k into S ranges of kc (a multiple of 32, so that no group of
// 4 along k straddles two ranges): work-group layer z sums its range as
// above, zero-padded at its end, into a workspace, and gemm_sum
// adds the S partial sums in order z = 0, 1, ... and applies alpha and beta.
// S and kc depend on the shape alone (gemmSplits on the host), so the bits
// still depend neither on the variant nor on the device.
//
// Epilogue. A product may add a bias to each output and clip it (emode 1:
// E[eoff + r] to row r, a convolution's output channel; 2: E[eoff + c] to
// column c, a fully connected layer's output feature; 0: none; then
// act_relu of kind eact) as it stores: the value stored is then
// act(alpha·acc + beta·C + bias), computed in float as the store and the
// bias_act pass that followed it computed it (FP_CONTRACT is off, so the
// sums round one by one). The host uses it only where the store it
// replaces was of a float (float storage): a half store would have rounded
// before the bias was added. Split products apply it in gemm_sum, never to
// the partial sums.
// GEMM_ZIGZAG: the order of the register block's products (see the inner
// loop). On by default for blocks 8 or more wide, where it gained 12% on the
// H100; blocks 4 wide gained nothing and lost 8% once (64×64/8×4 at 2048³),
// so they keep the plain row order. -D GEMM_ZIGZAG=0 or 1 sets it for all.
#ifndef GEMM_ZIGZAG
#define GEMM_ZIGZAG (WPTN >= 8)
#endif
#define RTSM (TSM / WPTM)
#define RTSN (TSN / WPTN)
#define NT (RTSM * RTSN)
// PAD: floats of padding per local tile row (a multiple of 4).
#ifndef PAD
#define PAD 4
#endif
#define LDA (TSM + PAD)
#define LDB (TSN + PAD)
// WARP_N: how many items along n one group of 32 consecutive items (a warp on
// NVIDIA) spans when they compute; the rest of the 32 go along m. 0 keeps
// the work-group's own layout (RTSN items along n).
#ifndef WARP_N
#define WARP_N 0
#endif
#define LDA4 (LDA / 4)
#define LDB4 (LDB / 4)
#define LPTA (TSM * TSK / 4 / NT) // float4 groups of op(A) one item loads per tile
#define LPTB (TSN * TSK / 4 / NT)

#if (TSM * TSK) % (4 * NT) != 0 || (TSN * TSK) % (4 * NT) != 0 || TSK % 4 != 0 || WPTM % 4 != 0 || WPTN % 4 != 0 || PAD % 4 != 0
#error "gemm: tile sizes do not divide among the work-group"
#endif
#if WARP_N > 0 && (RTSN % WARP_N != 0 || 32 % WARP_N != 0 || RTSM % (32 / WARP_N) != 0 || NT % 32 != 0)
#error "gemm: WARP_N does not tile the work-group"
#endif

// seg_addr maps a contiguous-dimension index to its element offset.
inline int seg_addr(int c, int segl, int segs) { return segl > 0 ? (c / segl) * segs + c % segl : c; }

// load4 returns elements (o, i..i+3) of a matrix whose outer index o runs
// over olen rows of stride ld and whose contiguous index i over ilen, zero
// outside.
inline float4 load4(__global const store_t* P, int ld, int segl, int segs, int vec, int o, int olen, int i, int ilen) {
	float4 v = (float4)(0.0f);
	if (o >= olen) return v;
	__global const store_t* row = P + o * ld;
	if (vec) {
		if (i < ilen) v = LD4(row + seg_addr(i, segl, segs));
	} else {
		if (i < ilen) v.x = LD(row, seg_addr(i, segl, segs));
		if (i + 1 < ilen) v.y = LD(row, seg_addr(i + 1, segl, segs));
		if (i + 2 < ilen) v.z = LD(row, seg_addr(i + 2, segl, segs));
		if (i + 3 < ilen) v.w = LD(row, seg_addr(i + 3, segl, segs));
	}
	return v;
}

// load_tile reads this item's share of the TSK×TS tile of one operand that
// starts at (k0, base). kmaj: the contiguous dimension is m (n); else it is k.
inline void load_tile(float4* r, const int lpt, const int ts, const int kmaj, __global const store_t* P, int ld, int segl,
                      int segs, int vec, int k0, int K, int base, int len, int tid) {
#pragma unroll
	for (int l = 0; l < lpt; l++) {
		int f = tid + l * NT;
		if (kmaj) {
			int k = f / (ts / 4), c4 = f % (ts / 4);
			r[l] = load4(P, ld, segl, segs, vec, k0 + k, K, base + c4 * 4, len);
		} else {
			int m = f / (TSK / 4), k4 = f % (TSK / 4);
			r[l] = load4(P, ld, segl, segs, vec, base + m, len, k0 + k4 * 4, K);
		}
	}
}

// store_tile puts the registers of load_tile into one local tile (rows of ldt floats).
inline void store_tile(__local float4* s4, const float4* r, const int lpt, const int ts, const int ldt, const int kmaj, int tid) {
	__local float* s = (__local float*)s4;
#pragma unroll
	for (int l = 0; l < lpt; l++) {
		int f = tid + l * NT;
		if (kmaj) {
			int k = f / (ts / 4), c4 = f % (ts / 4);
			s4[k * (ldt / 4) + c4] = r[l];
		} else {
			int m = f / (TSK / 4), k = (f % (TSK / 4)) * 4;
			s[k * ldt + m] = r[l].x;
			s[(k + 1) * ldt + m] = r[l].y;
			s[(k + 2) * ldt + m] = r[l].z;
			s[(k + 3) * ldt + m] = r[l].w;
		}
	}
}

// epi is the epilogue of output (r, c) of value v.
inline float epi(float v, int emode, int eact, __global const store_t* E, int eoff, int r, int c) {
	if (emode == 1) v = v + LD(E, eoff + r);
	else if (emode == 2) v = v + LD(E, eoff + c);
	return act_relu(v, eact);
}

inline void gemm_body(const int ta, const int tb, __local float4* As, __local float4* Bs, int M, int N, int K, float alpha,
                      __global const store_t* A, int aoff, int lda, int asegl, int asegs, int avec,
                      __global const store_t* B, int boff, int ldb, int bsegl, int bsegs, int bvec, float beta,
                      __global store_t* C, int coff, int ldc, int csegl, int csegs, int cvec, int kc, int cpart,
                      __global float* P, int emode, int eact, __global const store_t* E, int eoff) {
	const int tid = get_local_id(1) * RTSN + get_local_id(0);
#if WARP_N > 0
	// Item tid computes block (tx, ty) of a layout where each run of 32
	// items covers WARP_N × (32/WARP_N) blocks (loads still use tid).
	const int w = tid / 32, l = tid % 32;
	const int tx = (w % (RTSN / WARP_N)) * WARP_N + l % WARP_N;
	const int ty = (w / (RTSN / WARP_N)) * (32 / WARP_N) + l / WARP_N;
#else
	const int tx = get_local_id(0), ty = get_local_id(1);
#endif
	const int row0 = get_group_id(1) * TSM, col0 = get_group_id(0) * TSN;
	A += aoff;
	B += boff;
	// op(A) is k-major in memory when A is transposed (stored K×M); op(B)
	// when B is not (stored K×N).
	const int akmaj = ta, bkmaj = !tb;
	float acc[WPTM][WPTN];
#pragma unroll
	for (int i = 0; i < WPTM; i++)
#pragma unroll
		for (int j = 0; j < WPTN; j++) acc[i][j] = 0.0f;

	float4 ra[LPTA], rb[LPTB];
	// Split k: work-group layer z sums k in [k0, kend) and writes its
	// partial sums cpart elements after layer z-1's (see gemm_sum).
	const int k0 = get_group_id(2) * kc, kend = min(K, k0 + kc);
	const int nt = kend > k0 ? (kend - k0 + TSK - 1) / TSK : 0;
	if (nt > 0) {
		load_tile(ra, LPTA, TSM, akmaj, A, lda, asegl, asegs, avec, k0, kend, row0, M, tid);
		load_tile(rb, LPTB, TSN, bkmaj, B, ldb, bsegl, bsegs, bvec, k0, kend, col0, N, tid);
		store_tile(As, ra, LPTA, TSM, LDA, akmaj, tid);
		store_tile(Bs, rb, LPTB, TSN, LDB, bkmaj, tid);
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	for (int it = 0; it < nt; it++) {
		const int cur = it & 1;
		if (it + 1 < nt) {
			load_tile(ra, LPTA, TSM, akmaj, A, lda, asegl, asegs, avec, k0 + (it + 1) * TSK, kend, row0, M, tid);
			load_tile(rb, LPTB, TSN, bkmaj, B, ldb, bsegl, bsegs, bvec, k0 + (it + 1) * TSK, kend, col0, N, tid);
		}
		__local const float4* as = As + cur * (TSK * LDA4) + ty;
		__local const float4* bs = Bs + cur * (TSK * LDB4) + tx;
#pragma unroll
		for (int k = 0; k < TSK; k++) {
			float a[WPTM], b[WPTN];
#pragma unroll
			for (int g = 0; g < WPTM / 4; g++) {
				float4 v = as[k * LDA4 + g * RTSM];
				a[4 * g] = v.x;
				a[4 * g + 1] = v.y;
				a[4 * g + 2] = v.z;
				a[4 * g + 3] = v.w;
			}
#pragma unroll
			for (int g = 0; g < WPTN / 4; g++) {
				float4 v = bs[k * LDB4 + g * RTSN];
				b[4 * g] = v.x;
				b[4 * g + 1] = v.y;
				b[4 * g + 2] = v.z;
				b[4 * g + 3] = v.w;
			}
			// Rows in turn, odd rows right to left (GEMM_ZIGZAG):
			// consecutive fused multiply-adds share a[i] along a row
			// and b[j] where a row turns. The order changes no bits
			// (each output still sums k = 0, 1, ...), only the register
			// allocation and operand reuse NVIDIA's compiler arrives at:
			// every row left to right (-D GEMM_ZIGZAG=0) ran 41.1 TFLOPS
			// at 4096³ on an H200, most stalls at dispatch; this order
			// 46.1 (docs/opencl.md, scripts/nvgemm).
#pragma unroll
			for (int i = 0; i < WPTM; i++)
#pragma unroll
				for (int jj = 0; jj < WPTN; jj++) {
					const int j = (GEMM_ZIGZAG && (i & 1)) ? WPTN - 1 - jj : jj;
					acc[i][j] = fma(a[i], b[j], acc[i][j]);
				}
		}
		if (it + 1 < nt) {
			store_tile(As + (cur ^ 1) * (TSK * LDA4), ra, LPTA, TSM, LDA, akmaj, tid);
			store_tile(Bs + (cur ^ 1) * (TSK * LDB4), rb, LPTB, TSN, LDB, bkmaj, tid);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}

#ifdef STORE_HALF
	if (cpart > 0) {
		// Split k with half storage: layer z's partial sums go to the float
		// workspace P (M×N, plain), not through C's half store_t.
		__global float* pz = P + get_group_id(2) * cpart;
#pragma unroll
		for (int i = 0; i < WPTM; i++) {
			const int r = row0 + ((i / 4) * RTSM + ty) * 4 + i % 4;
			if (r >= M) continue;
#pragma unroll
			for (int g = 0; g < WPTN / 4; g++) {
				const int c = col0 + (g * RTSN + tx) * 4;
#pragma unroll
				for (int j = 0; j < 4; j++)
					if (c + j < N) pz[r * N + c + j] = alpha * acc[i][4 * g + j];
			}
		}
		return;
	}
#endif
	C += coff + get_group_id(2) * cpart;
#pragma unroll
	for (int i = 0; i < WPTM; i++) {
		const int r = row0 + ((i / 4) * RTSM + ty) * 4 + i % 4;
		if (r >= M) continue;
		__global store_t* crow = C + r * ldc;
#pragma unroll
		for (int g = 0; g < WPTN / 4; g++) {
			const int c = col0 + (g * RTSN + tx) * 4;
			float v[4];
#pragma unroll
			for (int j = 0; j < 4; j++) v[j] = alpha * acc[i][4 * g + j];
			if (cvec && c < N) {
				__global store_t* p = crow + seg_addr(c, csegl, csegs);
				float4 o = (float4)(v[0], v[1], v[2], v[3]);
				if (beta != 0.0f) o += beta * LD4(p);
				o.x = epi(o.x, emode, eact, E, eoff, r, c);
				o.y = epi(o.y, emode, eact, E, eoff, r, c + 1);
				o.z = epi(o.z, emode, eact, E, eoff, r, c + 2);
				o.w = epi(o.w, emode, eact, E, eoff, r, c + 3);
				ST4(p, o);
			} else {
#pragma unroll
				for (int j = 0; j < 4; j++) {
					if (c + j >= N) break;
					__global store_t* p = crow + seg_addr(c + j, csegl, csegs);
					float o = v[j];
					if (beta != 0.0f) o += beta * LD(p, 0);
					ST(p, 0, epi(o, emode, eact, E, eoff, r, c + j));
				}
			}
		}
	}
}

#define GEMM_ARGS                                                                                                        \
	int M, int N, int K, float alpha, __global const store_t *A, int aoff, int lda, int asegl, int asegs, int avec,      \
	    __global const store_t *B, int boff, int ldb, int bsegl, int bsegs, int bvec, float beta, __global store_t *C,   \
	    int coff, int ldc, int csegl, int csegs, int cvec, int kc, int cpart, __global float *P, int emode, int eact,          \
	    __global const store_t *E, int eoff
#define GEMM_PASS                                                                                                        \
	M, N, K, alpha, A, aoff, lda, asegl, asegs, avec, B, boff, ldb, bsegl, bsegs, bvec, beta, C, coff, ldc, csegl, csegs, \
	    cvec, kc, cpart, P, emode, eact, E, eoff
// GEMM_WG: the product kernels' work-group size, required; with
// GEMM_WG_HINT only hinted. NVIDIA's compiler does not apply
// -cl-nv-maxrregcount to a kernel whose size is required (it takes the
// size's own limit, 255 registers for 256 items), so the host builds the
// variants it caps with the hint (gemmRegCap in gemm.go).
#ifdef GEMM_WG_HINT
#define GEMM_WG __attribute__((work_group_size_hint(RTSN, RTSM, 1)))
#else
#define GEMM_WG __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
#endif
#define GEMM_LOCAL                                                                                                       \
	__local float4 As[2 * TSK * LDA4];                                                                                   \
	__local float4 Bs[2 * TSK * LDB4]

// gemm_nn, gemm_tn, gemm_nt and gemm_tt take no epilogue: passing emode 0
// as a constant leaves its code out of them, where it cost the 128×128 tn
// kernel 8% at 2048³ on the H100 and MobileNet's step 1.5–2% (the
// compiler's register allocation shifted). gemm_nn_epi and gemm_nt_epi, the
// same products with it, serve the host's products that have one (a
// convolution's forward and a fully connected layer's; gemmKernels).
#define GEMM_PASS_NOEPI                                                                                                  \
	M, N, K, alpha, A, aoff, lda, asegl, asegs, avec, B, boff, ldb, bsegl, bsegs, bvec, beta, C, coff, ldc, csegl, csegs, \
	    cvec, kc, cpart, P, 0, 0, E, eoff
__kernel GEMM_WG void gemm_nn(GEMM_ARGS) {
	GEMM_LOCAL;
	gemm_body(0, 0, As, Bs, GEMM_PASS_NOEPI);
}
__kernel GEMM_WG void gemm_nn_epi(GEMM_ARGS) {
	GEMM_LOCAL;
	gemm_body(0, 0, As, Bs, GEMM_PASS);
}
__kernel GEMM_WG void gemm_tn(GEMM_ARGS) {
	GEMM_LOCAL;
	gemm_body(1, 0, As, Bs, GEMM_PASS_NOEPI);
}
__kernel GEMM_WG void gemm_nt(GEMM_ARGS) {
	GEMM_LOCAL;
	gemm_body(0, 1, As, Bs, GEMM_PASS_NOEPI);
}
__kernel GEMM_WG void gemm_nt_epi(GEMM_ARGS) {
	GEMM_LOCAL;
	gemm_body(0, 1, As, Bs, GEMM_PASS);
}
__kernel GEMM_WG void gemm_tt(GEMM_ARGS) {
	GEMM_LOCAL;
	gemm_body(1, 1, As, Bs, GEMM_PASS_NOEPI);
}

// gemm_sum sets C = alpha*(W_0 + W_1 + ... + W_{S-1}) + beta*C, summing in
// that order, where W_z is the M×N partial-sum matrix at W + z*M*N (always
// float: in float storage the product kernels write it as their C, in half
// storage through P), then the epilogue (emode, eact, E, eoff: see the top).
// With
// vec (the host checked that N, C's offset, row stride and segments are
// multiples of 4) an item does 4 consecutive elements of a row as float4;
// the arithmetic per element is the same.
__kernel void gemm_sum(int M, int N, int S, float alpha, __global const float* W, float beta, __global store_t* C, int coff,
                       int ldc, int csegl, int csegs, int vec, int emode, int eact, __global const store_t* E, int eoff) {
	const int MN = M * N;
	if (vec) {
		const int i = get_global_id(0) * 4;
		if (i >= MN) return;
		float4 acc = vload4(0, W + i);
		for (int z = 1; z < S; z++) acc += vload4(0, W + z * MN + i);
		const int r = i / N, c = i % N;
		__global store_t* p = C + coff + r * ldc + seg_addr(c, csegl, csegs);
		float4 v = alpha * acc;
		if (beta != 0.0f) v += beta * LD4(p);
		v.x = epi(v.x, emode, eact, E, eoff, r, c);
		v.y = epi(v.y, emode, eact, E, eoff, r, c + 1);
		v.z = epi(v.z, emode, eact, E, eoff, r, c + 2);
		v.w = epi(v.w, emode, eact, E, eoff, r, c + 3);
		ST4(p, v);
		return;
	}
	const int i = get_global_id(0);
	if (i >= MN) return;
	float acc = W[i];
	for (int z = 1; z < S; z++) acc += W[z * MN + i];
	const int r = i / N, c = i % N;
	__global store_t* p = C + coff + r * ldc + seg_addr(c, csegl, csegs);
	float v = alpha * acc;
	if (beta != 0.0f) v += beta * LD(p, 0);
	ST(p, 0, epi(v, emode, eact, E, eoff, r, c));
}
