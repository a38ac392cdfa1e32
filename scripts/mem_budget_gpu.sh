#!/usr/bin/env bash
# The largest fine-tuning batch whose GPU memory fits a limit, cotrain's
# OpenCL backend against PyTorch CUDA (issue 29), on the device machine:
# torchvision's mobilenet_v2 at 224², train-last all, 3 classes (the file
# scripts/compare_gpu.sh exports). Four configurations: cotrain without and
# with `--memory-budget LIMITMiB` (a budget the planner refuses is a batch
# that does not fit), PyTorch without and with `--checkpoint 4`
# (torch.utils.checkpoint over the feature extractor). Memory is what each
# side allocates on the device: cotrain's OpenCL buffers at their peak
# (device_peak_mib, gpu.DeviceBytes), PyTorch's torch.cuda.max_memory_allocated;
# neither counts the driver's context. The batch doubles from 8 until it
# does not fit, then bisects to within an eighth.
#
#   bash scripts/mem_budget_gpu.sh [limit MiB, default 1024]
#
# Needs .dev/cotrain-opencl (go build -tags opencl -o .dev/cotrain-opencl
# ./cmd/cotrain, built where Go is) and python3 with CUDA torch and torchvision.
set -uo pipefail
cd "$(dirname "$0")/.."
limit=${1:-1024}
bin=${COTRAIN:-.dev/cotrain-opencl}
py=${PYTHON:-python3}
dir=.dev/onnx224-tv
m=$dir/mobilenet_v2.onnx
if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd && [ -z "${OCL_ICD_VENDORS:-}" ]; then
	mkdir -p /tmp/cotrain-icd && echo libnvidia-opencl.so.1 >/tmp/cotrain-icd/nvidia.icd
	export OCL_ICD_VENDORS=/tmp/cotrain-icd
fi
[ -s "$m" ] || "$py" scripts/tv_models.py export "$dir" --size 224 --torchvision >&2

# peak CONFIG BATCH: the device MiB of one run, or nothing if it failed.
peak() {
	local out
	case $1 in
	cotrain) out=$("$bin" profile --device opencl --resident --weights "$m" --train-last all --batch "$2" --steps 2 --json 2>/dev/null) ;;
	cotrain-budget) out=$("$bin" profile --device opencl --resident --weights "$m" --train-last all --batch "$2" --steps 2 \
		--memory-budget "${limit}MiB" --json 2>/dev/null) ;;
	torch) out=$("$py" scripts/compare_torch.py --model mobilenet_v2 --size 224 --train-last all --batch "$2" --steps 1 \
		--device cuda --torchvision 2>/dev/null) ;;
	torch-checkpoint) out=$("$py" scripts/compare_torch.py --model mobilenet_v2 --size 224 --train-last all --batch "$2" \
		--steps 1 --device cuda --torchvision --checkpoint 4 2>/dev/null) ;;
	esac || return 0
	"$py" -c 'import json,sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
print(d.get("device_peak_mib") or d.get("cuda_max_allocated_mib"))' <<<"$out" 2>/dev/null
}
fits() { # fits CONFIG BATCH
	local p
	p=$(peak "$1" "$2")
	echo "$1 batch $2: ${p:-failed} MiB" >&2
	[ -n "$p" ] && awk -v p="$p" -v l="$limit" 'BEGIN { exit !(p <= l) }'
}
echo "mobilenet_v2 224², train-last all, largest batch within $limit MiB of device memory ($(date -u '+%F %H:%M') UTC)"
for c in cotrain cotrain-budget torch torch-checkpoint; do
	lo=0 hi=8
	while fits "$c" "$hi"; do lo=$hi hi=$((hi * 2)); [ "$hi" -gt 1024 ] && break; done
	while [ $((hi - lo)) -gt $((lo / 8 > 1 ? lo / 8 : 1)) ]; do
		mid=$(((lo + hi) / 2))
		if fits "$c" "$mid"; then lo=$mid; else hi=$mid; fi
	done
	printf '%-18s largest batch %d\n' "$c" "$lo"
done
