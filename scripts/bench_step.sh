#!/usr/bin/env bash
# Training-step benchmark, cotrain against PyTorch, side by side in one run:
# one full forward, backward and SGD-momentum step at batch 64, ONE thread
# each (GOMAXPROCS=1 through -cpu 1; torch.set_num_threads(1)). Prints each
# side's ms per step and the ratio cotrain/PyTorch (below 1: cotrain faster).
#   bash scripts/bench_step.sh [seconds per measurement, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1 # torch.set_num_threads(1) does not reach OpenBLAS's own pool
secs=${1:-3}
go_out=$(go test ./models -run '^$' -bench 'TrainStep' -cpu 1 -benchtime "${secs}s" | grep '^BenchmarkTrainStep')
py_out=$(/usr/bin/python3 scripts/bench_torch.py --threads 1 --seconds "$secs" | grep -v '^#')
printf '%-16s %12s %12s %8s\n' step cotrain_ms torch_ms ratio
for m in lenet5 lenet-caffe; do
	g=$(awk -v m="$m" '$1 ~ "TrainStep/"m"/b64" {printf "%.2f", $3/1e6}' <<<"$go_out")
	p=$(awk -v m="$m/b64" '$1 == m {print $2}' <<<"$py_out")
	printf '%-16s %12s %12s %8s\n' "$m/b64" "$g" "$p" "$(awk -v g="$g" -v p="$p" 'BEGIN{printf "%.2f", g/p}')"
done
