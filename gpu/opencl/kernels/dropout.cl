// Dropout masks from a counter-based generator (gpu/dropout.go says why and
// holds the same integer math in Go, which the CPU backend runs: the two
// masks are bit-identical). Only 32-bit integers: the embedded profile of
// OpenCL may lack 64-bit ones, so the 64-bit seed comes as two uints and
// the 32×32-bit products are split by mul_hi and the wrapping uint product.

// philox4x32 runs Philox4x32-10 on counter c with key (k0, k1).
inline uint4 philox4x32(uint4 c, uint k0, uint k1) {
	for (int r = 0; r < 10; r++) {
		if (r > 0) {
			k0 += 0x9E3779B9u;
			k1 += 0xBB67AE85u;
		}
		uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
		uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
		c = (uint4)(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
	}
	return c;
}

// dropout_mask: work-item j sets elements 4j..4j+3 (those below n) of the
// mask to 0 where word q of philox4x32((j, 0, 0, 0), seed) is below thr,
// and to keep elsewhere.
__kernel void dropout_mask(__global store_t* m, int moff, int n, uint seed_lo, uint seed_hi, uint thr, float keep) {
	int j = get_global_id(0);
	if (4 * j >= n) return;
	uint4 w = philox4x32((uint4)((uint)j, 0u, 0u, 0u), seed_lo, seed_hi);
	uint ws[4] = {w.x, w.y, w.z, w.w};
	for (int q = 0; q < 4 && 4 * j + q < n; q++) ST(m, moff + 4 * j + q, ws[q] < thr ? 0.0f : keep);
}
