// Structural kernels (gpu/tensor.go): strided copy, broadcast binary
// operation, sum over axes. The host merges contiguous axes and pads every
// index space to 6 axes (d0 outermost, d5 innermost; unused axes have size
// 1), and passes the dimensions and each operand's strides as scalars. One
// work item writes one destination element, so there are no atomics and a
// reduction's order is fixed: row-major over the reduced axes.

// DECOMP decomposes the linear index i of the space d0..d5; OFF is the
// offset of the index along the strides s0..s5.
#define DECOMP(i, d)                                                                                               \
	int i5 = (i) % d##5, r5 = (i) / d##5;                                                                          \
	int i4 = r5 % d##4, r4 = r5 / d##4;                                                                            \
	int i3 = r4 % d##3, r3 = r4 / d##3;                                                                            \
	int i2 = r3 % d##2, r2 = r3 / d##2;                                                                            \
	int i1 = r2 % d##1, i0 = r2 / d##1;
#define OFF(s) (i0 * s##0 + i1 * s##1 + i2 * s##2 + i3 * s##3 + i4 * s##4 + i5 * s##5)

// The copies and the broadcast run on a 2-D range: dimension 0 is the
// innermost axis d5 (consecutive items, consecutive addresses where the
// strides allow), dimension 1 the row over d0..d4, whose decomposition is
// the same for a whole work-group.
#define ROW(r, d)                                                                                                  \
	int i4 = (r) % d##4, q4 = (r) / d##4;                                                                          \
	int i3 = q4 % d##3, q3 = q4 / d##3;                                                                            \
	int i2 = q3 % d##2, q2 = q3 / d##2;                                                                            \
	int i1 = q2 % d##1, i0 = q2 / d##1;

// copy_strided: dst[doff + OFF(ds)] (+)= src[soff + OFF(ss)] over d0..d5.
__kernel void copy_strided(__global store_t* dst, int doff, __global const store_t* src, int soff, int add, int d0,
                           int d1, int d2, int d3, int d4, int d5, int ds0, int ds1, int ds2, int ds3, int ds4, int ds5,
                           int ss0, int ss1, int ss2, int ss3, int ss4, int ss5) {
	int i5 = get_global_id(0), r = get_global_id(1);
	if (i5 >= d5) return;
	ROW(r, d)
	int o = doff + OFF(ds);
	float v = LD(src, soff + OFF(ss));
	if (add) v += LD(dst, o);
	ST(dst, o, v);
}

// broadcast and broadcast_partial are generated from the binary operator
// table (gpu/binops.go) by actgen.go.

// reduce_sum: output element i (kept space k0..k5, source strides ks, dest
// strides kd) is alpha times the sum over the reduced space r0..r5 (source
// strides rs), accumulated in acc_t in row-major order.
__kernel void reduce_sum(__global store_t* dst, int doff, __global const store_t* src, int soff, float alpha, int total,
                         int inner, int k0, int k1, int k2, int k3, int k4, int k5, int ks0, int ks1, int ks2, int ks3,
                         int ks4, int ks5, int kd0, int kd1, int kd2, int kd3, int kd4, int kd5, int r0, int r1, int r2_,
                         int r3_, int r4_, int r5_, int rs0, int rs1, int rs2, int rs3, int rs4, int rs5) {
	int i = get_global_id(0);
	if (i >= total) return;
	int base, dsto;
	{
		DECOMP(i, k)
		base = soff + OFF(ks);
		dsto = doff + OFF(kd);
	}
	acc_t s = 0;
	for (int j = 0; j < inner; j++) {
		int q = j;
		int j5 = q % r5_; q /= r5_;
		int j4 = q % r4_; q /= r4_;
		int j3 = q % r3_; q /= r3_;
		int j2 = q % r2_; q /= r2_;
		int j1 = q % r1, j0 = q / r1;
		s += LD(src, base + j0 * rs0 + j1 * rs1 + j2 * rs2 + j3 * rs3 + j4 * rs4 + j5 * rs5);
	}
	ST(dst, dsto, alpha * (float)s);
}

// gather_rows: row i of dst (dim elements) is row ids[i] of table, for
// i < rows (an embedding's lookup; the ids, whole numbers stored as floats,
// were checked on the host). One work item per element.
__kernel void gather_rows(__global store_t* dst, int doff, __global const store_t* table, int toff,
                          __global const store_t* ids, int ioff, int rows, int dim) {
	int d = get_global_id(0), i = get_global_id(1);
	if (d >= dim || i >= rows) return;
	int id = (int)LD(ids, ioff + i);
	ST(dst, doff + i * dim + d, LD(table, toff + id * dim + d));
}

// scatter_add_rows: row i of src is added into row ids[i] of table, for
// i < rows in order: one work item per column, so that the rows of a
// repeated id sum in the same order every time (no atomics).
__kernel void scatter_add_rows(__global store_t* table, int toff, __global const store_t* src, int soff,
                               __global const store_t* ids, int ioff, int rows, int dim) {
	int d = get_global_id(0);
	if (d >= dim) return;
	for (int i = 0; i < rows; i++) {
		int o = toff + (int)LD(ids, ioff + i) * dim + d;
		ST(table, o, LD(table, o) + LD(src, soff + i * dim + d));
	}
}
