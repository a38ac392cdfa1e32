#!/usr/bin/env bash
# Fine-tuning an imported model on this machine's CPU, cotrain against
# PyTorch (issue 29): torchvision's mobilenet_v2 and resnet18 (written with
# plain torch.nn in scripts/tv_models.py, exported to ONNX with batch norm
# kept), 3 classes, random weights and data, 96×96 input, batch 16,
# --train-last all and 1, the same number of threads on both sides
# (GOMAXPROCS; torch.set_num_threads and OPENBLAS_NUM_THREADS). Each step is
# forward, cross-entropy, backward and SGD with momentum, the batch held in
# memory (cotrain profile --weights; scripts/compare_torch.py). The sides
# alternate over the rounds and each keeps its best figure.
#
#   bash scripts/compare_cpu.sh [rounds, default 2] [steps per measurement, default 6]
#   THREADS=1 bash scripts/compare_cpu.sh    # default: nproc
#
# Prints samples/s and the ratio cotrain/PyTorch (above 1: cotrain faster),
# the same ratio in CPU time per step (less moved by other programs on a
# shared machine), and each side's peak RSS. The ONNX files are written
# once to .dev/onnx96/ (gitignored, 54 MB); the raw JSON lines go to stderr.
# Needs Go and /usr/bin/python3 with Debian's python3-torch, python3-onnx and
# libopenblas0-pthread.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
steps=${2:-6}
threads=${THREADS:-$(nproc)}
py=${PYTHON:-/usr/bin/python3}
size=96
batch=16
dir=.dev/onnx$size
models="mobilenet_v2 resnet18"
for m in $models; do
	[ -s "$dir/$m.onnx" ] || "$py" scripts/tv_models.py export "$dir" --size "$size" >&2
done
bin=.dev/cotrain-cpu
go build -o "$bin" ./cmd/cotrain

declare -A ct pt ccpu pcpu crss prss
best() { awk -v a="${1:-0}" -v b="$2" 'BEGIN { print (b > a) ? b : a }'; }
least() { awk -v a="${1:-0}" -v b="$2" 'BEGIN { print (a == 0 || b < a) ? b : a }'; }
field() { "$py" -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])" <<<"$2"; }
for r in $(seq "$rounds"); do
	for m in $models; do
		for tl in all 1; do
			k="$m/$tl"
			c=$(GOMAXPROCS=$threads "$bin" profile --weights "$dir/$m.onnx" --train-last "$tl" --batch "$batch" --steps "$steps" --json)
			echo "cotrain $k: $c" >&2
			p=$(OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$py" scripts/compare_torch.py --model "$m" \
				--train-last "$tl" --size "$size" --batch "$batch" --steps "$steps" --threads "$threads")
			echo "pytorch $k: $p" >&2
			ct[$k]=$(best "${ct[$k]:-}" "$(field samples_per_s "$c")")
			pt[$k]=$(best "${pt[$k]:-}" "$(field samples_per_s "$p")")
			ccpu[$k]=$(least "${ccpu[$k]:-}" "$(field cpu_step_s "$c")")
			pcpu[$k]=$(least "${pcpu[$k]:-}" "$(field cpu_step_s "$p")")
			crss[$k]=$(best "${crss[$k]:-}" "$(field peak_rss_mib "$c")")
			prss[$k]=$(best "${prss[$k]:-}" "$(field peak_rss_mib "$p")")
		done
	done
done
echo "CPU, ${threads} threads each, ${size}x${size}, batch $batch, best of $rounds rounds of $steps steps; $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-18s %12s %12s %8s %10s %10s %8s %12s %12s\n' "model/train-last" "cotrain s/s" "pytorch s/s" "ratio" "cotrain cpu" "torch cpu" "ratio" "cotrain RSS" "torch RSS"
for m in $models; do
	for tl in all 1; do
		k="$m/$tl"
		awk -v k="$k" -v c="${ct[$k]}" -v p="${pt[$k]}" -v cc="${ccpu[$k]}" -v pc="${pcpu[$k]}" -v cr="${crss[$k]}" -v pr="${prss[$k]}" \
			'BEGIN { printf "%-18s %12.1f %12.1f %8.2f %9.3fs %9.3fs %8.2f %9.0f MiB %8.0f MiB\n", k, c, p, c / p, cc, pc, pc / cc, cr, pr }'
	done
done
