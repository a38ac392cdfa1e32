// Resampling along the middle axis of outer×in×inner (gpu.Backend.Resample,
// ONNX Resize): one work item per output element, summing its row's taps
// in order in float (start, index and weight are the matrix's compressed
// rows), so the bits are the CPU backend's.
__kernel void resample(__global store_t* dst, int doff, __global const store_t* src, int soff,
                       __global const int* start, __global const int* index, __global const float* weight, int in,
                       int out, int inner, int total) {
	int id = get_global_id(0);
	if (id >= total) return;
	int i = id % inner, j = (id / inner) % out, o = id / (inner * out);
	int base = soff + o * in * inner + i;
	float acc = 0;
	for (int k = start[j]; k < start[j + 1]; k++) acc += weight[k] * (float)LD(src, base + index[k] * inner);
	ST(dst, doff + id, acc);
}
