// Parameterised activations and softmax along an axis (gpu.Act kinds 3 and
// up; ReLU and ReLU6 keep their kernels in elementwise.cl). They mirror
// gpu/cpu/act.go operation for operation; exp and tanh are the device's
// (within a few ulp of the CPU's float64-then-round), the rest round as the
// CPU does because FP_CONTRACT is off (common.cl).

// act_param: kind is gpu.ActKind; a and b are Act.Alpha and Act.Beta.
__kernel void act_param(int kind, float a, float b, __global store_t* y, int yoff, __global const store_t* x, int xoff,
                        int n) {
	int i = get_global_id(0);
	if (i >= n) return;
	float v = LD(x, xoff + i), r;
	switch (kind) {
	case 3: // sigmoid
		r = 1.0f / (1.0f + exp(-v));
		break;
	case 4: { // hardsigmoid
		float t = a * v;
		t = t + b;
		r = t < 0 ? 0 : (t > 1 ? 1 : t);
		break;
	}
	case 5: { // hardswish
		float t = v + 3;
		t = t < 0 ? 0 : (t > 6 ? 6 : t);
		r = v * t / 6;
		break;
	}
	case 6: // tanh
		r = tanh(v);
		break;
	case 7: // leakyrelu
		r = v > 0 ? v : a * v;
		break;
	case 9: // silu
		r = v / (1.0f + exp(-v));
		break;
	default: // 8, clip
		r = v < a ? a : (v > b ? b : v);
	}
	ST(y, yoff + i, r);
}

// act_param_backward: t is x, or y where gpu.Act.FromOutput.
__kernel void act_param_backward(int kind, float a, float b, __global store_t* dx, int dxoff, __global const store_t* dy,
                                 int dyoff, __global const store_t* t, int toff, int n) {
	int i = get_global_id(0);
	if (i >= n) return;
	float v = LD(t, toff + i), g = LD(dy, dyoff + i), r;
	switch (kind) {
	case 3: // sigmoid, from y
		r = g * (1 - v) * v;
		break;
	case 4: // hardsigmoid, from y
		r = (v > 0 && v < 1) ? g * a : 0;
		break;
	case 5: // hardswish, from x
		r = v < -3 ? 0 : (v <= 3 ? g * (v / 3 + 0.5f) : g);
		break;
	case 6: { // tanh, from y
		float yy = v * v;
		r = g * (1 - yy);
		break;
	}
	case 7: // leakyrelu, from y (alpha >= 0) or x
		r = v > 0 ? g : g * a;
		break;
	case 9: { // silu, from x
		float s = 1.0f / (1.0f + exp(-v));
		float xs = v * (1 - s);
		r = g * s * (1 + xs);
		break;
	}
	default: // 8, clip, from y
		r = (v > a && v < b) ? g : 0;
	}
	ST(dx, dxoff + i, r);
}

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
