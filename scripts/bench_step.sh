#!/usr/bin/env bash
# Training-step benchmark, cotrain against PyTorch, side by side in one run:
# one full forward, backward and SGD-momentum step, ONE thread each
# (GOMAXPROCS=1 through -cpu 1; torch.set_num_threads(1) and
# OPENBLAS_NUM_THREADS=1): lenet5 and lenet-caffe at batch 64, MobileNet v1
# α=0.5 at 3x128x128 (1000 classes) at batch 16 (models/bench_test.go,
# scripts/bench_torch.py). The two sides alternate over several rounds and
# each keeps its best time per model, so that a burst of load from elsewhere
# on a shared machine hurts neither side alone. Prints each side's ms per
# step, the ratio cotrain/PyTorch (below 1: cotrain faster) and cotrain's
# allocations per step.
#   bash scripts/bench_step.sh [seconds per measurement, default 3] [rounds, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1 # torch.set_num_threads(1) does not reach OpenBLAS's own pool
secs=${1:-3}
rounds=${2:-3}
models="lenet5/b64 lenet-caffe/b64 mobilenet-a0.5-128/b16"
bin=$(mktemp -d)/models.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" ./models

declare -A go_ms py_ms allocs
best() { awk -v a="${1:-0}" -v b="$2" 'BEGIN { print (a == 0 || b < a) ? b : a }'; }
for ((r = 0; r < rounds; r++)); do
	go_out=$("$bin" -test.run '^$' -test.bench 'TrainStep' -test.cpu 1 -test.benchtime "${secs}s" | grep '^BenchmarkTrainStep')
	py_out=$(/usr/bin/python3 scripts/bench_torch.py --threads 1 --seconds "$secs" | grep -v '^#')
	for m in $models; do
		g=$(awk -v m="BenchmarkTrainStep/$m" '$1 == m || index($1, m"-") == 1 {printf "%.2f", $3/1e6}' <<<"$go_out")
		a=$(awk -v m="BenchmarkTrainStep/$m" '($1 == m || index($1, m"-") == 1) {for (i = 2; i <= NF; i++) if ($(i+1) == "allocs/op") print $i}' <<<"$go_out")
		p=$(awk -v m="$m" '$1 == m {print $2}' <<<"$py_out")
		if [ -z "$g" ] || [ -z "$p" ]; then
			echo "bench_step: no figure for $m (cotrain '$g', torch '$p')" >&2
			exit 1
		fi
		go_ms[$m]=$(best "${go_ms[$m]:-0}" "$g")
		py_ms[$m]=$(best "${py_ms[$m]:-0}" "$p")
		allocs[$m]=$(awk -v a="${allocs[$m]:-0}" -v b="$a" 'BEGIN { print (b > a) ? b : a }')
	done
done
printf '%-24s %12s %12s %8s %12s\n' step cotrain_ms torch_ms ratio allocs/step
for m in $models; do
	printf '%-24s %12s %12s %8s %12s\n' "$m" "${go_ms[$m]}" "${py_ms[$m]}" \
		"$(awk -v g="${go_ms[$m]}" -v p="${py_ms[$m]}" 'BEGIN{printf "%.2f", g/p}')" "${allocs[$m]}"
done
