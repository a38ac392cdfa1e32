#!/usr/bin/env bash
# cotrain's OpenCL backend against PyTorch CUDA on the same GPU, in one run:
# the training steps of issue 19 (forward, cross-entropy, backward and an
# SGD-momentum step on random input: lenet5 and lenet-caffe at batch 64,
# MobileNet v1 α 0.5 at 3x128x128 batch 16, MobileNet v1 α 1 at 3x224x224
# batch 32, AlexNet at 3x224x224 batch 32) and SGEMM at 1024³, 2048³ and
# 4096³ against cuBLAS. PyTorch runs in fp32 with TF32 off and
# cudnn.benchmark on (scripts/bench_torch.py --device cuda). The two sides
# alternate over the rounds and each keeps its best figure. Prints
# milliseconds per step (ratio cotrain/PyTorch: below 1, cotrain faster) and
# TFLOPS (ratio cotrain/cuBLAS: above 1, cotrain faster).
#
# The first table sets cotrain's step, which uploads its batch from Go
# memory every step, against PyTorch's with the batch already on the GPU.
# For the two large steps (MobileNet α 1 and AlexNet, where the batch is
# 19.3 MB) two more tables compare like with like: both batches on the
# device (cotrain with COTRAIN_BENCH_RESIDENT=1), and both uploaded every
# step (PyTorch's x.to('cuda') from pageable memory, and from pinned memory
# with non_blocking=True: bench_torch.py --upload); the second also shows
# cotrain's step with its pinned staging off (COTRAIN_OPENCL_STAGING=off)
# and with its upload on the kernels' queue instead of the transfer queue,
# where it cannot overlap the previous step (COTRAIN_OPENCL_ONE_QUEUE=1).
#
#   bash scripts/bench_gpu.sh [rounds, default 2] [steps per measurement, default 30]
#   PROFILE=1 bash scripts/bench_gpu.sh     # then per-kernel times of the two large steps
#
# It runs the opencl-tagged test binary .dev/gpu.test (GPU_TEST overrides;
# built with `go test -c -tags opencl -o .dev/gpu.test ./gpu/opencl` where Go is
# installed: the device machine may have no Go) and python3 with a CUDA
# torch (PYTHON overrides). When no OpenCL vendor file names NVIDIA's
# library, it registers libnvidia-opencl.so.1 through OCL_ICD_VENDORS (the
# loader then sees NVIDIA's platform only). The GEMM tuning is read from
# the binary cache or timed by the first benchmark (COTRAIN_OPENCL_CACHE).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
steps=${2:-30}
bin=${GPU_TEST:-.dev/gpu.test}
py=${PYTHON:-python3}
if [ ! -x "$bin" ]; then
	go test -c -tags opencl -o "$bin" ./gpu/opencl
fi
if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd && [ -z "${OCL_ICD_VENDORS:-}" ]; then
	icd=$(mktemp -d)
	echo libnvidia-opencl.so.1 >"$icd/nvidia.icd"
	export OCL_ICD_VENDORS=$icd
fi

steps_list="lenet5/b64 lenet-caffe/b64 mobilenet-a0.5-128/b16 mobilenet-a1-224/b32 alexnet/b32"
large_list="mobilenet-a1-224/b32 alexnet/b32"
large_re='(mobilenet-a1-224|alexnet)' # the same, for -test.bench
large_names=mobilenet-a1-224,alexnet      # and for bench_torch.py --only
sizes="1024 2048 4096"
# cl_ms, pt_ms: the first table. clres_ms: cotrain with the batch resident;
# cldir_ms: cotrain staging off; cl1q_ms: cotrain with one queue;
# ptpage_ms, ptpin_ms: PyTorch uploading from pageable and from pinned memory.
declare -A cl_ms pt_ms cl_tf cb_tf clres_ms cldir_ms cl1q_ms ptpage_ms ptpin_ms
lower() { awk -v a="${1:-0}" -v b="$2" 'BEGIN { print (a == 0 || b < a) ? b : a }'; }
higher() { awk -v a="${1:-0}" -v b="$2" 'BEGIN { print (b > a) ? b : a }'; }
fail() {
	echo "bench_gpu: $*" >&2
	exit 1
}
# cl_step OUT M: cotrain's ms per step for M (name/bN) in benchmark output OUT.
cl_step() { awk -v m="BenchmarkOpenCLTrainStep/opencl/$2" '$1 == m || index($1, m"-") == 1 {printf "%.3f", $3/1e6}' <<<"$1"; }
# pt_step OUT M: PyTorch's ms per step for M in bench_torch.py's output OUT.
pt_step() { awk -v m="$2" '$1 == m {print $2}' <<<"$1"; }
ratio() { awk -v g="$1" -v p="$2" 'BEGIN{printf "%.2f", g/p}'; }

for ((r = 0; r < rounds; r++)); do
	out=$("$bin" -test.run '^$' -test.bench 'OpenCLSgemm$/(1024|2048|4096)/' -test.benchtime 100x)
	echo "$out" >&2
	for n in $sizes; do
		g=$(awk -v n="BenchmarkOpenCLSgemm/$n/" 'index($1, n) == 1 {for (i = 2; i <= NF; i++) if ($(i+1) == "GFLOPS") print $i / 1000}' <<<"$out")
		[ -n "$g" ] || fail "no OpenCL SGEMM figure for $n"
		cl_tf[$n]=$(higher "${cl_tf[$n]:-0}" "$g")
	done
	out=$("$py" scripts/bench_torch.py --sgemm "${sizes// /,}" --seconds 1)
	echo "$out" >&2
	for n in $sizes; do
		g=$(awk -v n="sgemm/$n" '$1 == n {print $2}' <<<"$out")
		[ -n "$g" ] || fail "no cuBLAS figure for $n"
		cb_tf[$n]=$(higher "${cb_tf[$n]:-0}" "$g")
	done

	out=$("$bin" -test.run '^$' -test.bench 'OpenCLTrainStep/opencl/' -test.benchtime "${steps}x")
	echo "$out" >&2
	for m in $steps_list; do
		g=$(cl_step "$out" "$m")
		[ -n "$g" ] || fail "no OpenCL figure for $m"
		cl_ms[$m]=$(lower "${cl_ms[$m]:-0}" "$g")
	done
	out=$("$py" scripts/bench_torch.py --device cuda --seconds 2)
	echo "$out" >&2
	for m in $steps_list; do
		p=$(pt_step "$out" "$m")
		[ -n "$p" ] || fail "no PyTorch figure for $m"
		pt_ms[$m]=$(lower "${pt_ms[$m]:-0}" "$p")
	done

	# The large steps again: cotrain with the batch resident, with staging
	# off and with one queue, PyTorch uploading its batch.
	res=$(COTRAIN_BENCH_RESIDENT=1 "$bin" -test.run '^$' -test.bench "OpenCLTrainStep/opencl/$large_re/" -test.benchtime "${steps}x")
	echo "$res" >&2
	dir=$(COTRAIN_OPENCL_STAGING=off "$bin" -test.run '^$' -test.bench "OpenCLTrainStep/opencl/$large_re/" -test.benchtime "${steps}x")
	echo "$dir" >&2
	oneq=$(COTRAIN_OPENCL_ONE_QUEUE=1 "$bin" -test.run '^$' -test.bench "OpenCLTrainStep/opencl/$large_re/" -test.benchtime "${steps}x")
	echo "$oneq" >&2
	page=$("$py" scripts/bench_torch.py --device cuda --seconds 2 --upload pageable --only "$large_names")
	echo "$page" >&2
	pin=$("$py" scripts/bench_torch.py --device cuda --seconds 2 --upload pinned --only "$large_names")
	echo "$pin" >&2
	for m in $large_list; do
		g=$(cl_step "$res" "$m")
		[ -n "$g" ] || fail "no OpenCL figure for $m with the batch resident"
		clres_ms[$m]=$(lower "${clres_ms[$m]:-0}" "$g")
		g=$(cl_step "$dir" "$m")
		[ -n "$g" ] || fail "no OpenCL figure for $m with staging off"
		cldir_ms[$m]=$(lower "${cldir_ms[$m]:-0}" "$g")
		g=$(cl_step "$oneq" "$m")
		[ -n "$g" ] || fail "no OpenCL figure for $m with one queue"
		cl1q_ms[$m]=$(lower "${cl1q_ms[$m]:-0}" "$g")
		p=$(pt_step "$page" "$m")
		[ -n "$p" ] || fail "no PyTorch figure for $m uploading from pageable memory"
		ptpage_ms[$m]=$(lower "${ptpage_ms[$m]:-0}" "$p")
		p=$(pt_step "$pin" "$m")
		[ -n "$p" ] || fail "no PyTorch figure for $m uploading from pinned memory"
		ptpin_ms[$m]=$(lower "${ptpin_ms[$m]:-0}" "$p")
	done
done

echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'GPU: nvidia-smi not found'); $(date -u +%Y-%m-%dT%H:%MZ); best of $rounds rounds"
printf '%-24s %12s %12s %8s\n' step cotrain_ms torch_ms ratio
for m in $steps_list; do
	printf '%-24s %12s %12s %8s\n' "$m" "${cl_ms[$m]}" "${pt_ms[$m]}" "$(ratio "${cl_ms[$m]}" "${pt_ms[$m]}")"
done
printf '%-24s %12s %12s %8s\n' sgemm cotrain_TFLOPS cublas_TFLOPS ratio
for n in $sizes; do
	printf '%-24s %12.1f %12.1f %8s\n' "${n}^3" "${cl_tf[$n]}" "${cb_tf[$n]}" "$(ratio "${cl_tf[$n]}" "${cb_tf[$n]}")"
done
echo "# batch on the device: cotrain with COTRAIN_BENCH_RESIDENT=1, PyTorch as in the first table"
printf '%-24s %12s %12s %8s\n' step cotrain_ms torch_ms ratio
for m in $large_list; do
	printf '%-24s %12s %12s %8s\n' "$m" "${clres_ms[$m]}" "${pt_ms[$m]}" "$(ratio "${clres_ms[$m]}" "${pt_ms[$m]}")"
done
echo "# batch uploaded every step: cotrain as in the first table (and with COTRAIN_OPENCL_STAGING=off, and with COTRAIN_OPENCL_ONE_QUEUE=1), PyTorch x.to('cuda') from pageable memory (and from pinned, non_blocking)"
printf '%-24s %12s %12s %8s %14s %8s %14s %14s\n' step cotrain_ms torch_ms ratio torch_pinned_ms ratio cotrain_unstaged cotrain_1queue
for m in $large_list; do
	printf '%-24s %12s %12s %8s %14s %8s %14s %14s\n' "$m" "${cl_ms[$m]}" "${ptpage_ms[$m]}" "$(ratio "${cl_ms[$m]}" "${ptpage_ms[$m]}")" \
		"${ptpin_ms[$m]}" "$(ratio "${cl_ms[$m]}" "${ptpin_ms[$m]}")" "${cldir_ms[$m]}" "${cl1q_ms[$m]}"
done

if [ "${PROFILE:-0}" = 1 ]; then
	# Each launch waited for: the total is above a step's time, the shares
	# say where it goes.
	COTRAIN_OPENCL_PROFILE=1 "$bin" -test.run '^$' -test.bench 'OpenCLTrainStep/opencl/(mobilenet-a1-224|alexnet)' \
		-test.benchtime 3x -test.v 2>&1 | grep -E 'profile over|launches|^Benchmark'
fi
