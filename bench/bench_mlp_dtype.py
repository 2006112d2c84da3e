#!/usr/bin/python3
"""model.dtype float32 against float64 on bench_all.py's MLP job (200k x 100 -> 64, binary,
global batch 512, 2 epochs), interleaved A B A B in one pass: per dtype and worker count, the
median training seconds, the workers' compute seconds per step, and the CPU seconds (user +
sys) of the whole run (coordinator and workers, from the children's rusage).

    bench/bench_mlp_dtype.py [--binary build/release/disttrain] [--reps 5]
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_all import MLP, ROOT  # noqa: E402  (the same job as the bench row)


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(binary, folder, dtype, workers):
    cfg = folder / f"{dtype}-{workers}.yaml"
    cfg.write_text(f"version: 1\nname: mlp\n{MLP.format(workers=workers, dtype=dtype).strip()}\n"
                   "fault_tolerance: {worker_timeout_ms: 60000}\n"
                   f"output: {{dir: {folder}/run, log_every: {{steps: 100000}}}}\n")
    before = cpu_seconds()
    ran = subprocess.run([binary, "run", str(cfg), "--json"], capture_output=True, text=True,
                         timeout=600)
    cpu = cpu_seconds() - before
    if ran.returncode != 0:
        sys.exit(f"{dtype} x{workers} failed: {ran.stderr[-500:]}")
    s = json.loads(ran.stdout)
    compute = sum(w["compute_seconds"] for w in s["worker_stats"])
    return {"train_s": s["train_seconds"], "compute_ms_per_step": 1e3 * compute / s["steps"],
            "cpu_s": cpu, "final_loss": s["final_loss"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    samples = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):
            for workers in (2, 1):
                for dtype in ("float64", "float32"):
                    samples.setdefault((dtype, workers), []).append(
                        run_once(args.binary, Path(tmp), dtype, workers))
    med = {k: {m: statistics.median(s[m] for s in v) for m in v[0]} for k, v in samples.items()}
    for (dtype, workers), m in sorted(med.items()):
        print(f"{dtype} {workers} worker(s): train {m['train_s']:.3f} s, compute "
              f"{m['compute_ms_per_step']:.3f} ms/step (sum over workers), run CPU "
              f"{m['cpu_s']:.2f} s, final loss {m['final_loss']:.6g}")
    for workers in (2, 1):
        a, b = med[("float64", workers)], med[("float32", workers)]
        print(f"{workers} worker(s) float64/float32: train {a['train_s'] / b['train_s']:.2f}x, "
              f"compute per step {a['compute_ms_per_step'] / b['compute_ms_per_step']:.2f}x, "
              f"run CPU {a['cpu_s'] / b['cpu_s']:.2f}x")
    for dtype in ("float64", "float32"):
        print(f"{dtype}: 2 workers vs 1, train {med[(dtype, 1)]['train_s'] / med[(dtype, 2)]['train_s']:.2f}x")
    print(json.dumps({f"{d}-{w}": v for (d, w), v in samples.items()}))


if __name__ == "__main__":
    main()
