// dumpptx builds an OpenCL source on NVIDIA's platform and writes the
// program binary NVIDIA's driver returns for it: PTX text (probe.sh).
//   dumpptx source.cl 'build options' out.ptx
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CK(e) do{cl_int _e=(e); if(_e){fprintf(stderr,"%s:%d: cl error %d\n",__FILE__,__LINE__,_e); exit(1);}}while(0)
int main(int argc, char** argv) {
	if (argc < 4) { fprintf(stderr, "usage: dumpptx src.cl 'options' out.ptx\n"); return 2; }
	FILE* f = fopen(argv[1], "rb"); if (!f) { perror(argv[1]); return 1; }
	fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
	char* src = malloc(n + 1); if (fread(src, 1, n, f) != (size_t)n) { perror(argv[1]); return 1; }
	src[n] = 0; fclose(f);
	cl_platform_id ps[8]; cl_uint np; CK(clGetPlatformIDs(8, ps, &np));
	cl_device_id dev = 0;
	for (cl_uint i = 0; i < np && !dev; i++) {
		char name[256]; clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
		if (!strstr(name, "NVIDIA")) continue;
		CK(clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL));
	}
	if (!dev) { fprintf(stderr, "no NVIDIA device\n"); return 1; }
	cl_int err; cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err); CK(err);
	const char* s = src; cl_program p = clCreateProgramWithSource(ctx, 1, &s, NULL, &err); CK(err);
	err = clBuildProgram(p, 1, &dev, argv[2], NULL, NULL);
	size_t ls; clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &ls);
	char* log = malloc(ls + 1); clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, ls, log, NULL); log[ls] = 0;
	fprintf(stderr, "build log: %s\n", log); CK(err);
	size_t bs; CK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bs, &bs, NULL));
	unsigned char* bin = malloc(bs); unsigned char* bins[1] = {bin};
	CK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL));
	FILE* o = fopen(argv[3], "wb"); fwrite(bin, 1, bs, o); fclose(o);
	fprintf(stderr, "wrote %zu bytes\n", bs);
	return 0;
}
