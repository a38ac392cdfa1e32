// Tiled SGEMM, C = alpha*op(A)*op(B) + beta*C, row-major, all four transpose
// cases (ta, tb), with buffer offsets in elements.
//
// Variants are compiled from this one source with -D TSM, TSN (the block of C
// one work-group computes), WPTM, WPTN (the register block one item computes)
// and TSK (the depth of a tile step). A work-group of (TSN/WPTN)×(TSM/WPTM)
// items stages a TSK×TSM tile of op(A) and a TSK×TSN tile of op(B) in local
// memory, then each item accumulates its WPTM×WPTN outputs from registers.
// Item (tx, ty) owns rows ty + i*RTSM and columns tx + j*RTSN, so neighbouring
// items store neighbouring columns (coalesced) and read distinct banks.
//
// Every output is summed as fma(a_k, b_k, acc) for k = 0, 1, ..., in order,
// zero-padded to a multiple of TSK (all variants use the same TSK): the bits
// do not depend on the variant, so the auto-tuner's choice and the per-shape
// variant choice cannot change results.
#define RTSM (TSM / WPTM)
#define RTSN (TSN / WPTN)
#define NT (RTSM * RTSN)

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void gemm(int M, int N, int K, float alpha, __global const float* A, int aoff, int ta,
          __global const float* B, int boff, int tb, float beta, __global float* C, int coff) {
	__local float As[TSK][TSM + 1];
	__local float Bs[TSK][TSN + 1];
	const int tx = get_local_id(0), ty = get_local_id(1);
	const int tid = ty * RTSN + tx;
	const int row0 = get_group_id(1) * TSM, col0 = get_group_id(0) * TSN;
	A += aoff;
	B += boff;
	float acc[WPTM][WPTN];
	for (int i = 0; i < WPTM; i++)
		for (int j = 0; j < WPTN; j++) acc[i][j] = 0.0f;

	for (int t = 0; t < K; t += TSK) {
		for (int l = tid; l < TSM * TSK; l += NT) {
			int m, k;
			if (ta) { k = l / TSM; m = l % TSM; } else { m = l / TSK; k = l % TSK; }
			int gr = row0 + m, gk = t + k;
			float v = 0.0f;
			if (gr < M && gk < K) v = ta ? A[gk * M + gr] : A[gr * K + gk];
			As[k][m] = v;
		}
		for (int l = tid; l < TSN * TSK; l += NT) {
			int n, k;
			if (tb) { n = l / TSK; k = l % TSK; } else { k = l / TSN; n = l % TSN; }
			int gc = col0 + n, gk = t + k;
			float v = 0.0f;
			if (gc < N && gk < K) v = tb ? B[gc * K + gk] : B[gk * N + gc];
			Bs[k][n] = v;
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		for (int k = 0; k < TSK; k++) {
			float a[WPTM], b[WPTN];
			for (int i = 0; i < WPTM; i++) a[i] = As[k][ty + i * RTSM];
			for (int j = 0; j < WPTN; j++) b[j] = Bs[k][tx + j * RTSN];
			for (int i = 0; i < WPTM; i++)
				for (int j = 0; j < WPTN; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	C += coff;
	for (int i = 0; i < WPTM; i++) {
		int r = row0 + ty + i * RTSM;
		if (r >= M) continue;
		for (int j = 0; j < WPTN; j++) {
			int c = col0 + tx + j * RTSN;
			if (c >= N) continue;
			float v = alpha * acc[i][j];
			if (beta != 0.0f) v += beta * C[r * N + c];
			C[r * N + c] = v;
		}
	}
}
