#!/usr/bin/env bash
# Peak memory of training steps, cotrain against PyTorch, in separate
# processes: MobileNet v1 (α=1, 224×224, 1000 classes) at batch 8 by default;
# each step is forward, backward and an SGD-momentum update on random data,
# one thread each (GOMAXPROCS=1; torch.set_num_threads(1)). Prints each
# side's peak RSS (getrusage maxrss), its RSS before the model was built,
# and the ratios of the peaks and of the growth above that baseline.
#   bash scripts/mem_step.sh [batch, default 8] [steps, default 2]
set -euo pipefail
cd "$(dirname "$0")/.."
batch=${1:-8}
steps=${2:-2}
bin=$(mktemp -d)/cotrain
go build -o "$bin" ./cmd/cotrain
go_json=$(GOMAXPROCS=1 "$bin" profile --model mobilenet-v1 --batch "$batch" --steps "$steps" --json)
py_json=$(/usr/bin/python3 scripts/mem_torch.py --batch "$batch" --steps "$steps" 2>/dev/null | tail -1)
/usr/bin/python3 - "$go_json" "$py_json" <<'PY'
import json, sys
g, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"{'':10s} {'peak RSS MiB':>13s} {'before model':>13s} {'growth':>9s} {'s/step':>8s}")
for name, r in (("cotrain", g), ("pytorch", p)):
    print(f"{name:10s} {r['peak_rss_mib']:13.0f} {r['rss_before_model_mib']:13.0f} "
          f"{r['peak_rss_mib'] - r['rss_before_model_mib']:9.0f} {r['step_s']:8.2f}")
gg = g['peak_rss_mib'] - g['rss_before_model_mib']
pg = p['peak_rss_mib'] - p['rss_before_model_mib']
print(f"ratio cotrain/pytorch: peak {g['peak_rss_mib'] / p['peak_rss_mib']:.2f}, growth {gg / pg:.2f}; "
      f"cotrain's layer outputs {g['activations_mib']:.0f} MiB, {g['kept_activations_mib']:.0f} MiB of them kept for backward; "
      f"its step buffers (kept outputs, gradients, transients) {g['step_buffers_mib']:.0f} MiB")
PY
