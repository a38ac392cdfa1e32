// Local response normalization across channels (gpu.LRNGeom, ONNX LRN):
// one work item per (n, p) of x read as N×C×HW, looping over the channels;
// the window sums in acc_t. lo and hi are how far the window reaches below
// and above a channel; k is alpha/size.

static acc_t lrn_scale(__global const store_t* x, int xoff, int base, int c, int ch, int hw, int lo, int hi, float bias,
                       float k) {
	acc_t sum = 0;
	for (int i = max(0, ch - lo); i <= min(c - 1, ch + hi); i++) {
		acc_t v = LD(x, xoff + base + i * hw);
		sum += v * v;
	}
	return (acc_t)bias + (acc_t)k * sum;
}

__kernel void lrn_forward(__global store_t* y, int yoff, __global const store_t* x, int xoff, int n, int c, int hw, int lo,
                          int hi, float bias, float k, float beta) {
	int id = get_global_id(0);
	if (id >= n * hw) return;
	int base = (id / hw) * c * hw + id % hw;
	for (int ch = 0; ch < c; ch++) {
		acc_t s = lrn_scale(x, xoff, base, c, ch, hw, lo, hi, bias, k);
		int i = base + ch * hw;
		ST(y, yoff + i, (float)((acc_t)LD(x, xoff + i) * pow(s, (acc_t)-beta)));
	}
}

// lrn_backward: dx[c] = dy[c]·s[c]^-beta − 2·k·beta · x[c] · Σ dy[j]·y[j]/s[j]
// over the j whose window holds c (c-hi <= j <= c+lo); s is recomputed.
__kernel void lrn_backward(__global store_t* dx, int dxoff, __global const store_t* dy, int dyoff,
                           __global const store_t* x, int xoff, __global const store_t* y, int yoff, int n, int c, int hw,
                           int lo, int hi, float bias, float k, float beta) {
	int id = get_global_id(0);
	if (id >= n * hw) return;
	int base = (id / hw) * c * hw + id % hw;
	for (int ch = 0; ch < c; ch++) {
		acc_t sum = 0;
		for (int j = max(0, ch - hi); j <= min(c - 1, ch + lo); j++) {
			int ij = base + j * hw;
			sum += (acc_t)LD(dy, dyoff + ij) * (acc_t)LD(y, yoff + ij) / lrn_scale(x, xoff, base, c, j, hw, lo, hi, bias, k);
		}
		int i = base + ch * hw;
		acc_t s = lrn_scale(x, xoff, base, c, ch, hw, lo, hi, bias, k);
		ST(dx, dxoff + i,
		   (float)((acc_t)LD(dy, dyoff + i) * pow(s, (acc_t)-beta) - 2 * (acc_t)k * (acc_t)beta * (acc_t)LD(x, xoff + i) * sum));
	}
}
