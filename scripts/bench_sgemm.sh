#!/usr/bin/env bash
# Single-precision GEMM on ONE thread, cotrain against OpenBLAS, side by side:
# gpu/internal/sgemm's Gemm (the CPU backend's product, best micro-kernel
# family of this machine) and gonum's Sgemm through `go test -bench -cpu 1`,
# and torch.mm with torch.set_num_threads(1) and OPENBLAS_NUM_THREADS=1
# (Debian's torch calls OpenBLAS, libopenblas0-pthread) at 256, 512 and 1024
# (square, no transposes).
# Measurements alternate over several rounds and each side keeps its best
# round, so that a burst of load elsewhere on a shared machine hurts neither
# side alone. Prints GFLOPS and the ratio ours/OpenBLAS (above 1: ours faster).
#   bash scripts/bench_sgemm.sh [rounds, default 3] [seconds per measurement, default 0.5]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-0.5}
sizes="256 512 1024"

go test -c -o /tmp/sgemm_bench.test ./gpu/internal/sgemm
declare -A best_go best_gonum best_blas
for ((r = 0; r < rounds; r++)); do
	out=$(/tmp/sgemm_bench.test -test.run '^$' -test.bench 'Square/(gonum|sgemm)/(256|512|1024)$' \
		-test.cpu 1 -test.benchtime "${secs}s")
	while read -r name gf; do
		impl=${name%%/*} n=${name##*/}
		if [ "$impl" = sgemm ]; then
			best_go[$n]=$(awk -v a="${best_go[$n]:-0}" -v b="$gf" 'BEGIN{print (b>a)?b:a}')
		else
			best_gonum[$n]=$(awk -v a="${best_gonum[$n]:-0}" -v b="$gf" 'BEGIN{print (b>a)?b:a}')
		fi
	done < <(awk '/^BenchmarkSquare/ {sub("BenchmarkSquare/", "", $1); sub("-[0-9]+$", "", $1); for (i = 2; i <= NF; i++) if ($(i+1) == "GFLOPS") print $1, $i}' <<<"$out")
	while read -r n gf; do
		best_blas[$n]=$(awk -v a="${best_blas[$n]:-0}" -v b="$gf" 'BEGIN{print (b>a)?b:a}')
	# OpenBLAS keeps its own thread pool: torch.set_num_threads does not
	# always reach it, the environment does.
	done < <(OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 /usr/bin/python3 - "$secs" $sizes <<'PY'
import sys, time
import torch
torch.set_num_threads(1)
secs = float(sys.argv[1])
for n in map(int, sys.argv[2:]):
    a, b = torch.randn(n, n), torch.randn(n, n)
    c = torch.mm(a, b)
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < secs:
        torch.mm(a, b, out=c)
        reps += 1
    print(n, 2 * n**3 * reps / (time.perf_counter() - t0) / 1e9)
PY
)
done
rm -f /tmp/sgemm_bench.test
printf '%-6s %12s %12s %12s %14s\n' size ours_GFLOPS gonum_GFLOPS openblas ours/openblas
for n in $sizes; do
	printf '%-6s %12.1f %12.1f %12.1f %14.2f\n' "$n" "${best_go[$n]}" "${best_gonum[$n]}" "${best_blas[$n]}" \
		"$(awk -v g="${best_go[$n]}" -v p="${best_blas[$n]}" 'BEGIN{print g/p}')"
done
