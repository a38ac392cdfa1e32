// harness loads PTX that NVIDIA's OpenCL compiler made from gemm.cl
// (dumpptx), launches its gemm_nn through the CUDA driver API with the
// arguments gpu/opencl_gemm.go passes (plain row-major matrices, no split),
// and times it against cublasSgemm on the same data in the same process, three
// rounds; it then checks the two products agree. Run by probe.sh; Nsight
// Compute can profile it where it cannot profile OpenCL.
//   harness module.ptx kernel TSM TSN RTSM RTSN M N K [iterations]
// MAXREG=n caps the registers the JIT may use.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#define CK(e) do{CUresult _e=(e); if(_e){const char*s;cuGetErrorString(_e,&s);fprintf(stderr,"%s:%d: %s\n",__FILE__,__LINE__,s);exit(1);}}while(0)
static char* readf(const char* p, size_t* n){FILE*f=fopen(p,"rb");if(!f){perror(p);exit(1);}fseek(f,0,SEEK_END);*n=ftell(f);fseek(f,0,SEEK_SET);char*b=(char*)malloc(*n+1);if(fread(b,1,*n,f)!=*n){perror(p);exit(1);}b[*n]=0;fclose(f);return b;}
int main(int argc,char**argv){
	if(argc<10){fprintf(stderr,"usage\n");return 2;}
	const char* mod=argv[1]; const char* kn=argv[2];
	int TSM=atoi(argv[3]),TSN=atoi(argv[4]),RTSM=atoi(argv[5]),RTSN=atoi(argv[6]);
	int M=atoi(argv[7]),N=atoi(argv[8]),K=atoi(argv[9]); int iters=argc>10?atoi(argv[10]):20;
	cudaFree(0);
	CUmodule m; size_t n; char* img=readf(mod,&n);
	char elog[8192]; elog[0]=0; CUjit_option opts[4]={CU_JIT_ERROR_LOG_BUFFER,CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,CU_JIT_LOG_VERBOSE,CU_JIT_MAX_REGISTERS};
	int maxreg=getenv("MAXREG")?atoi(getenv("MAXREG")):0;
	void* vals[4]={elog,(void*)(size_t)sizeof elog,(void*)(size_t)1,(void*)(size_t)maxreg};
	CUresult r=cuModuleLoadDataEx(&m,img,maxreg?4:3,opts,vals); if(r){fprintf(stderr,"jit: %s\n",elog);CK(r);}
	CUfunction f; CK(cuModuleGetFunction(&f,m,kn));
	int regs,smem,lmem; cuFuncGetAttribute(&regs,CU_FUNC_ATTRIBUTE_NUM_REGS,f); cuFuncGetAttribute(&smem,CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,f); cuFuncGetAttribute(&lmem,CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,f);
	int occ=0; cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ,f,RTSM*RTSN,0);
	printf("%s: regs %d smem %d local %d blocks/SM %d\n",kn,regs,smem,lmem,occ);
	float *A,*B,*C,*C2; cudaMalloc(&A,4L*M*K); cudaMalloc(&B,4L*K*N); cudaMalloc(&C,4L*M*N); cudaMalloc(&C2,4L*M*N);
	float* h=(float*)malloc(4L*(M>N?M:N)*K); srand(1); for(long i=0;i<(long)(M>N?M:N)*K;i++) h[i]=(rand()/(float)RAND_MAX)-0.5f;
	cudaMemcpy(A,h,4L*M*K,cudaMemcpyHostToDevice); cudaMemcpy(B,h,4L*K*N,cudaMemcpyHostToDevice);
	int Mi=M,Ni=N,Ki=K,zero=0,one=1,lda=K,ldb=N,ldc=N,kc=K,cpart=0; float alpha=1,beta=0;
	CUdeviceptr a=(CUdeviceptr)A,b=(CUdeviceptr)B,c=(CUdeviceptr)C,p=(CUdeviceptr)C;
	void* args[]={&Mi,&Ni,&Ki,&alpha,&a,&zero,&lda,&zero,&zero,&one,&b,&zero,&ldb,&zero,&zero,&one,&beta,&c,&zero,&ldc,&zero,&zero,&one,&kc,&cpart,&p};
	unsigned gx=(N+TSN-1)/TSN, gy=(M+TSM-1)/TSM;
	cublasHandle_t hb; cublasCreate(&hb);
	cudaEvent_t e0,e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
	for(int round=0;round<3;round++){
		for(int i=0;i<3;i++) CK(cuLaunchKernel(f,gx,gy,1,RTSN,RTSM,1,0,0,args,0));
		cudaEventRecord(e0); for(int i=0;i<iters;i++) cuLaunchKernel(f,gx,gy,1,RTSN,RTSM,1,0,0,args,0); cudaEventRecord(e1); cudaEventSynchronize(e1);
		float ms; cudaEventElapsedTime(&ms,e0,e1); double ours=2.0*M*N*K*iters/(ms*1e-3)/1e12;
		// row-major C = A*B  <=> column-major C^T = B^T A^T
		for(int i=0;i<3;i++) cublasSgemm(hb,CUBLAS_OP_N,CUBLAS_OP_N,N,M,K,&alpha,B,N,A,K,&beta,C2,N);
		cudaEventRecord(e0); for(int i=0;i<iters;i++) cublasSgemm(hb,CUBLAS_OP_N,CUBLAS_OP_N,N,M,K,&alpha,B,N,A,K,&beta,C2,N); cudaEventRecord(e1); cudaEventSynchronize(e1);
		cudaEventElapsedTime(&ms,e0,e1); double cb=2.0*M*N*K*iters/(ms*1e-3)/1e12;
		printf("round %d %dx%dx%d: ours %.1f TFLOPS, cublas %.1f, ratio %.3f\n",round,M,N,K,ours,cb,ours/cb);
	}
	float* h1=(float*)malloc(4L*M*N); float* h2=(float*)malloc(4L*M*N);
	cudaMemcpy(h1,C,4L*M*N,cudaMemcpyDeviceToHost); cudaMemcpy(h2,C2,4L*M*N,cudaMemcpyDeviceToHost);
	double md=0,mx=0; for(long i=0;i<(long)M*N;i++){double d=fabs(h1[i]-h2[i]); if(d>md)md=d; if(fabs(h2[i])>mx)mx=fabs(h2[i]);}
	printf("max abs diff %.3g (max |C| %.3g)\n",md,mx);
	return 0;
}
