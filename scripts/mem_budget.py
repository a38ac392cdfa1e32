#!/usr/bin/python3
"""The largest fine-tuning batch that fits a memory limit, cotrain against
PyTorch, with and without recomputing activations (issue 29):

    /usr/bin/python3 scripts/mem_budget.py [--model mobilenet_v2] [--size 224]
        [--limit-mib 1024] [--threads 2] [--checkpoint 4] [--cotrain BIN] [--max-batch 256]

Each configuration runs in processes of its own, one batch size each, and
its peak resident memory (getrusage maxrss) decides whether the batch fits:
`cotrain profile --weights .dev/onnxSIZE/MODEL.onnx --train-last all
--batch B --steps 2` without and with `--memory-budget LIMITMiB` (a budget
the planner refuses is a batch that does not fit), and
`scripts/compare_torch.py --model MODEL --size SIZE --train-last all
--batch B --steps 1` without and with `--checkpoint SEGMENTS`
(torch.utils.checkpoint over the feature extractor). The batch grows by
doubling, then bisects. Then, at the largest batch that fits with the
budget, one more run of each cotrain side gives the time a step costs
with the budget's recomputation against without (the same batch, one run
after the other; CPU time per step as well as wall time).

The model file is written by scripts/tv_models.py export when missing.
Prints each run as it goes on stderr and a table on stdout.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"


def run_json(cmd, env=None):
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else ["exit %d" % p.returncode]
    for line in reversed(p.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line), None
    return None, ["no JSON line"]


def largest(fits, max_batch):
    """The largest batch b <= max_batch with fits(b), growing by doubling
    then bisecting (fits is assumed monotone); 0 when 1 does not fit."""
    lo, hi = 0, None
    b = 1
    while b <= max_batch:
        if fits(b):
            lo, b = b, b * 2
        else:
            hi = b
            break
    if hi is None:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mobilenet_v2", choices=["mobilenet_v2", "resnet18"])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--limit-mib", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--checkpoint", type=int, default=4, help="PyTorch's checkpoint_sequential segments")
    ap.add_argument("--cotrain", default="", help="a built cotrain (default: go build here)")
    ap.add_argument("--max-batch", type=int, default=256)
    a = ap.parse_args()
    onnx_dir = os.path.join(ROOT, ".dev", "onnx%d" % a.size)
    onnx = os.path.join(onnx_dir, a.model + ".onnx")
    if not os.path.exists(onnx):
        subprocess.run([PY, "scripts/tv_models.py", "export", onnx_dir, "--size", str(a.size)], cwd=ROOT, check=True,
                       stdout=sys.stderr)
    cotrain = a.cotrain
    if not cotrain:
        cotrain = os.path.join(ROOT, ".dev", "mem_budget", "cotrain")
        subprocess.run(["go", "build", "-o", cotrain, "./cmd/cotrain"], cwd=ROOT, check=True)
    env = dict(os.environ, GOMAXPROCS=str(a.threads))
    budget = "%dMiB" % a.limit_mib

    def cotrain_run(batch, with_budget, steps=2):
        cmd = [cotrain, "profile", "--weights", onnx, "--train-last", "all", "--batch", str(batch), "--steps", str(steps), "--json"]
        if with_budget:
            cmd += ["--memory-budget", budget]
        return run_json(cmd, env)

    def torch_run(batch, segments):
        cmd = [PY, "scripts/compare_torch.py", "--model", a.model, "--size", str(a.size), "--train-last", "all",
               "--batch", str(batch), "--steps", "1", "--threads", str(a.threads)]
        if segments:
            cmd += ["--checkpoint", str(segments)]
        return run_json(cmd)

    results = {}

    def fits_with(name, runner):
        def fits(b):
            r, err = runner(b)
            ok = r is not None and r["peak_rss_mib"] <= a.limit_mib
            peak = r["peak_rss_mib"] if r else None
            extra = ""
            if r and "estimate_mib" in r:
                extra = " (estimate %.0f MiB of a step limit of %.0f, %s layers recomputed)" % (
                    r["estimate_mib"], r["step_limit_mib"], r["replayed_layers"])
            print("%s batch %d: %s%s" % (name, b, "peak %.0f MiB" % peak if peak else "refused: %s" % " ".join(err), extra),
                  file=sys.stderr, flush=True)
            if ok:
                results[name] = (b, r)
            return ok
        return fits

    rows = []
    for name, runner in (("cotrain", lambda b: cotrain_run(b, False)),
                         ("cotrain --memory-budget " + budget, lambda b: cotrain_run(b, True)),
                         ("pytorch", lambda b: torch_run(b, 0)),
                         ("pytorch checkpoint_sequential %d" % a.checkpoint, lambda b: torch_run(b, a.checkpoint))):
        b = largest(fits_with(name, runner), a.max_batch)
        peak = results[name][1]["peak_rss_mib"] if name in results else float("nan")
        rows.append((name, b, peak))
    print("%s %d², train-last all, %d threads: the largest batch within %d MiB of peak RSS" % (a.model, a.size, a.threads, a.limit_mib))
    print("%-44s %8s %14s" % ("", "batch", "peak RSS MiB"))
    for name, b, peak in rows:
        print("%-44s %8d %14.0f" % (name, b, peak))
    base = rows[1][1]
    if base >= 1:
        free, _ = cotrain_run(base, False, steps=3)
        held, _ = cotrain_run(base, True, steps=3)
        if free and held:
            print("time per step at batch %d, with the budget's recomputation / without: wall %.2f s / %.2f s = %.2f, CPU %.2f s / %.2f s = %.2f (%s layers recomputed)" % (
                base, held["step_s"], free["step_s"], held["step_s"] / free["step_s"],
                held["cpu_step_s"], free["cpu_step_s"], held["cpu_step_s"] / free["cpu_step_s"], held.get("replayed_layers", 0)))


if __name__ == "__main__":
    main()
