#!/usr/bin/env bash
# probe.sh times gemm.cl's gemm_nn as NVIDIA's OpenCL compiles it against
# cuBLAS, in one process, and can profile it with Nsight Compute, which does
# not see OpenCL kernels: dumpptx takes the PTX NVIDIA's OpenCL compiler
# makes, harness launches it through the CUDA driver API (its %envreg reads,
# OpenCL's global offsets, become 0) next to cublasSgemm. Run on a machine
# with NVIDIA's OpenCL driver and the CUDA toolkit, from the repository root:
#
#   bash scripts/nvgemm/probe.sh [--profile] 'NAME|BUILD OPTIONS' ...
#   bash scripts/nvgemm/probe.sh --profile \
#     'zigzag|-D TSM=128 -D TSN=128 -D TSK=16 -D WPTM=8 -D WPTN=8' \
#     'rows|-D TSM=128 -D TSN=128 -D TSK=16 -D WPTM=8 -D WPTN=8 -D GEMM_ZIGZAG=0'
#
# Each spec prints the registers, shared memory and blocks per SM of the
# kernel, and TFLOPS of it and of cuBLAS at 4096³, 2048³ and 1000³ (three
# rounds each, the last printed) with the largest difference of the two
# products. --profile adds, per spec and once for cuBLAS's kernel, Nsight
# Compute's issue-slot use and the warp stall samples in total and by
# instruction (ncu on PATH, or
# CUDA=/usr/local/cuda-13.0). GEMM_SRC overrides the kernel source (default:
# gpu/opencl/kernels/common.cl then gemm.cl, as the backend builds it).
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=0
if [ "${1:-}" = --profile ]; then
	profile=1
	shift
fi
[ $# -gt 0 ] || { sed -n 2,22p "$0"; exit 2; }
cuda=${CUDA:-/usr/local/cuda-13.0}
export PATH=$cuda/bin:$PATH
if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd && [ -z "${OCL_ICD_VENDORS:-}" ]; then
	icd=$(mktemp -d)
	echo libnvidia-opencl.so.1 >"$icd/nvidia.icd"
	export OCL_ICD_VENDORS=$icd
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=${GEMM_SRC:-}
if [ -z "$src" ]; then
	src=$work/gemm_full.cl
	cat gpu/opencl/kernels/common.cl gpu/opencl/kernels/gemm.cl >"$src"
fi
gcc -O2 -o "$work/dumpptx" scripts/nvgemm/dumpptx.c -lOpenCL
nvcc -O2 -o "$work/harness" scripts/nvgemm/harness.cu -lcuda -lcublas
# opt NAME OPTIONS: the value of -D NAME in OPTIONS, else the default.
opt() { sed -n "s/.*-D $1=\([0-9]*\).*/\1/p" <<<"$2" | grep . || echo "$3"; }
# profile NAME KERNEL-FILTER PTX TSM TSN RTSM RTSN: Nsight Compute on the first
# 4096³ launch of the kernels the filter names, then stalls.py's summaries.
profile() {
	ncu --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
		--section SourceCounters --section ComputeWorkloadAnalysis --section InstructionStats -k "$2" -c 1 -o "$work/$1" -f \
		"$work/harness" "$3" gemm_nn "$4" "$5" "$6" "$7" 4096 4096 4096 1 >/dev/null 2>&1
	ncu -i "$work/$1.ncu-rep" --page details --csv | python3 scripts/nvgemm/stalls.py details
	ncu -i "$work/$1.ncu-rep" --page source --csv --print-source sass | python3 scripts/nvgemm/stalls.py source
}
for spec in "$@"; do
	name=${spec%%|*} opts=${spec#*|}
	ptx=$work/$name.ptx
	if ! "$work/dumpptx" "$src" "$opts" "$ptx.raw" 2>"$work/$name.log"; then
		echo "== $name: build failed"
		tail -20 "$work/$name.log"
		continue
	fi
	tr -d '\000' <"$ptx.raw" | sed -e 's/%envreg[0-9]*/0/' >"$ptx"
	tsm=$(opt TSM "$opts" 128) tsn=$(opt TSN "$opts" 128) wm=$(opt WPTM "$opts" 8) wn=$(opt WPTN "$opts" 8)
	echo "== $name ($opts)"
	for n in 4096 2048 1000; do
		"$work/harness" "$ptx" gemm_nn "$tsm" "$tsn" $((tsm / wm)) $((tsn / wn)) $n $n $n 20 | sed -n '1p;4,5p'
	done
	if [ $profile = 1 ]; then
		profile "$name" gemm_nn "$ptx" "$tsm" "$tsn" $((tsm / wm)) $((tsn / wn))
		if [ -z "${cublas_done:-}" ]; then
			# cuBLAS's kernel for the same product, once, for reference.
			echo "== cuBLAS"
			profile cublas 'regex:xmma|sgemm|cutlass' "$ptx" "$tsm" "$tsn" $((tsm / wm)) $((tsn / wn))
			cublas_done=1
		fi
	fi
done
