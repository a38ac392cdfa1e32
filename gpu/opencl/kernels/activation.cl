// Softmax along an axis. The activations' kernels act_param and
// act_param_backward are generated from the operator table (gpu/ops.go) by
// actgen.go; ReLU and ReLU6 keep their fast kernels in elementwise.cl.

// softmax_axis: one item per (o, j) of x read as outer×c×inner; the sum in
// acc_t. The exponentials are computed twice rather than stored and reread,
// as softmax_xent does.
__kernel void softmax_axis(__global store_t* y, int yoff, __global const store_t* x, int xoff, int outer, int c,
                           int inner) {
	int id = get_global_id(0);
	if (id >= outer * inner) return;
	int base = (id / inner) * c * inner + id % inner;
	float m = LD(x, xoff + base);
	for (int k = 1; k < c; k++) m = fmax(m, LD(x, xoff + base + k * inner));
	acc_t sum = 0;
	for (int k = 0; k < c; k++) sum += exp((acc_t)(LD(x, xoff + base + k * inner) - m));
	acc_t inv = 1 / sum;
	for (int k = 0; k < c; k++) ST(y, yoff + base + k * inner, exp((acc_t)(LD(x, xoff + base + k * inner) - m)) * inv);
}

// softmax_axis_backward: dx = y * (dy - sum_c dy*y), the sum in acc_t.
__kernel void softmax_axis_backward(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff,
                                    __global const store_t* y, int yoff, int outer, int c, int inner) {
	int id = get_global_id(0);
	if (id >= outer * inner) return;
	int base = (id / inner) * c * inner + id % inner;
	acc_t dot = 0;
	for (int k = 0; k < c; k++) dot += (acc_t)LD(dy, dyoff + base + k * inner) * (acc_t)LD(y, yoff + base + k * inner);
	float d = (float)dot;
	for (int k = 0; k < c; k++) {
		int i = base + k * inner;
		ST(dx, dxoff + i, LD(y, yoff + i) * (LD(dy, dyoff + i) - d));
	}
}
