#!/usr/bin/python3
"""Times `disttrain run` on a synthetic linear problem (1,000,000 rows x 100 features, global
batch 1000) with 1 and 2 workers, and prints rows/s, seconds per epoch and GB/s of data scanned
(the feature matrix, 8 bytes a value, once per epoch). Writes bench/results/linear.json.

    /usr/bin/python3 bench/bench_linear.py [--binary build/release/disttrain] [--rows N]
"""

import argparse
import json
import platform
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--features", type=int, default=100)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", default="1,2")
    p.add_argument("--transport", default="ipc")
    args = p.parse_args()

    results = []
    with tempfile.TemporaryDirectory(prefix="dt-bench-") as tmp:
        for n in [int(w) for w in args.workers.split(",")]:
            cfg = Path(tmp) / f"bench{n}.yaml"
            cfg.write_text(f"""
version: 1
name: bench
seed: 1
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: {args.rows}, features: {args.features}, noise: 0.1}}}}
shards: {{count: {n}}}
training: {{epochs: {args.epochs}, batch_size: 1000, optimizer: {{type: sgd, lr: 0.05}}}}
transport: {{type: {args.transport}}}
output: {{dir: {tmp}/run{n}, log_every: {{steps: 1000}}}}
""")
            start = time.monotonic()
            proc = subprocess.run([args.binary, "run", str(cfg), "--json"], capture_output=True,
                                  text=True, timeout=1800)
            wall = time.monotonic() - start
            if proc.returncode != 0:
                raise SystemExit(f"run with {n} workers failed:\n{proc.stderr}")
            s = json.loads(proc.stdout)
            per_epoch = s["train_seconds"] / args.epochs
            scanned = args.rows * args.features * 8
            row = {
                "workers": n,
                "transport": args.transport,
                "rows": args.rows,
                "features": args.features,
                "epochs": args.epochs,
                "wall_seconds": round(wall, 3),
                "train_seconds": round(s["train_seconds"], 3),
                "rows_per_second": round(s["samples_per_second"]),
                "seconds_per_epoch": round(per_epoch, 3),
                "gb_per_second": round(scanned / per_epoch / 1e9, 3),
                "final_loss": s["final_loss"],
                "compute_seconds": [round(w["compute_seconds"], 3) for w in s["worker_stats"]],
                "comm_seconds": [round(w["comm_seconds"], 3) for w in s["worker_stats"]],
            }
            results.append(row)
            print(f"{n} worker(s): {row['rows_per_second']:>10,} rows/s  "
                  f"{row['seconds_per_epoch']:.3f} s/epoch  {row['gb_per_second']:.3f} GB/s  "
                  f"(wall {row['wall_seconds']:.2f} s incl. start-up and data generation)")
    out = ROOT / "bench/results/linear.json"
    out.write_text(json.dumps({"machine": platform.node(), "cpu_count": __import__("os").cpu_count(),
                               "date": time.strftime("%Y-%m-%d"), "results": results}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
