#!/usr/bin/env bash
# Fine-tuning an imported model on one GPU, cotrain's OpenCL backend against
# PyTorch CUDA (issue 29), in one run: torchvision's mobilenet_v2 and
# resnet18 (exported to ONNX here by scripts/tv_models.py --torchvision, batch
# norm kept), 3 classes, random weights and data, 224×224, batch 32,
# --train-last all and 1. Both batches stay on the GPU (cotrain profile
# --resident; compare_torch.py --device cuda keeps its tensors there);
# PyTorch in fp32 with TF32 off and cudnn.benchmark on. The sides alternate
# over the rounds and each keeps its best figure.
#
#   bash scripts/compare_gpu.sh [rounds, default 2] [steps per measurement, default 20]
#   SIZE=64 BATCH=4 DEVICE=cpu bash scripts/compare_gpu.sh 1 2   # a dry run on PoCL
#
# Prints samples/s with the ratio cotrain/PyTorch (above 1: cotrain faster)
# and each side's peak device memory (cotrain: its OpenCL allocations,
# gpu.DeviceBytes; PyTorch: torch.cuda.max_memory_allocated); the raw JSON
# lines go to stderr.
#
# It runs .dev/cotrain-opencl (COTRAIN overrides), a cotrain built with
# `go build -tags opencl -o .dev/cotrain-opencl ./cmd/cotrain` where Go is
# installed (the device machine may have none), and python3 with a CUDA
# torch and torchvision (PYTHON overrides). When no OpenCL vendor file names
# NVIDIA's library, it registers libnvidia-opencl.so.1 through
# OCL_ICD_VENDORS, as scripts/bench_gpu.sh does. The ONNX files go to
# .dev/onnx$SIZE-tv/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
steps=${2:-20}
size=${SIZE:-224}
batch=${BATCH:-32}
device=${DEVICE:-cuda} # PyTorch's; cpu for a dry run without CUDA
bin=${COTRAIN:-.dev/cotrain-opencl}
py=${PYTHON:-python3}
dir=.dev/onnx$size-tv
models="mobilenet_v2 resnet18"
if [ ! -x "$bin" ]; then
	go build -tags opencl -o "$bin" ./cmd/cotrain
fi
if [ "$device" = cuda ] && ! grep -qs nvidia /etc/OpenCL/vendors/*.icd && [ -z "${OCL_ICD_VENDORS:-}" ]; then
	icd=$(mktemp -d)
	echo libnvidia-opencl.so.1 >"$icd/nvidia.icd"
	export OCL_ICD_VENDORS=$icd
fi
tv=--torchvision
"$py" -c 'import torchvision' 2>/dev/null || tv= # the plain twins where torchvision is missing (PoCL dry run)
for m in $models; do
	[ -s "$dir/$m.onnx" ] || "$py" scripts/tv_models.py export "$dir" --size "$size" $tv >&2
done

declare -A ct pt cmem pmem
best() { awk -v a="${1:-0}" -v b="$2" 'BEGIN { print (b > a) ? b : a }'; }
field() { "$py" -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1]).get('$1', 0))" <<<"$2"; }
for r in $(seq "$rounds"); do
	for m in $models; do
		for tl in all 1; do
			k="$m/$tl"
			c=$("$bin" profile --device opencl --resident --weights "$dir/$m.onnx" --train-last "$tl" --batch "$batch" --steps "$steps" --json)
			echo "cotrain $k: $c" >&2
			p=$("$py" scripts/compare_torch.py --model "$m" --train-last "$tl" --size "$size" --batch "$batch" \
				--steps "$steps" --device "$device" $tv)
			echo "pytorch $k: $p" >&2
			ct[$k]=$(best "${ct[$k]:-}" "$(field samples_per_s "$c")")
			pt[$k]=$(best "${pt[$k]:-}" "$(field samples_per_s "$p")")
			cmem[$k]=$(field device_peak_mib "$c")
			pmem[$k]=$(field cuda_max_allocated_mib "$p")
		done
	done
done
echo "GPU: cotrain OpenCL vs PyTorch $device, ${size}x${size}, batch $batch, batch resident, best of $rounds rounds of $steps steps; $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '%-18s %12s %12s %8s %14s %14s\n' "model/train-last" "cotrain s/s" "pytorch s/s" "ratio" "cotrain dev" "torch dev"
for m in $models; do
	for tl in all 1; do
		k="$m/$tl"
		awk -v k="$k" -v c="${ct[$k]}" -v p="${pt[$k]}" -v cm="${cmem[$k]}" -v pm="${pmem[$k]}" \
			'BEGIN { printf "%-18s %12.1f %12.1f %8.2f %10.0f MiB %10.0f MiB\n", k, c, p, c / p, cm, pm }'
	done
done
