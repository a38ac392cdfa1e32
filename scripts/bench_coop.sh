#!/usr/bin/env bash
# Cooperative throughput, cotrain against PyTorch DDP, in one run on this
# machine: hub + 2 workers on loopback (libp2p over TCP, encrypted), LeNet-5,
# 64 samples per worker per iteration, against DDP with the gloo backend,
# 2 processes x 1 thread, the same model and batch. Prints images/s for each
# and the ratio cotrain/DDP (above 1: cotrain faster).
#   bash scripts/bench_coop.sh [iterations, default 300]
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-300}
go_ips=$(go test ./cmd/hub -run '^$' -bench Cooperative -benchtime "${iters}x" -count 1 | awk '/^BenchmarkCooperative/ {for (i=1;i<=NF;i++) if ($(i+1)=="img/s") print $i}')
ddp_ips=$(/usr/bin/python3 scripts/bench_ddp.py --seconds 5 | awk '/^ddp/ {print $4}')
printf '%-28s %10s\n' setup img/s
printf '%-28s %10.0f\n' "cotrain hub+2 workers" "$go_ips"
printf '%-28s %10.0f\n' "pytorch ddp gloo 2x1" "$ddp_ips"
awk -v g="$go_ips" -v p="$ddp_ips" 'BEGIN{printf "ratio cotrain/ddp %.2f\n", g/p}'
