#!/usr/bin/python3
"""Times every way to combine workers on one problem: an mlp on synthetic blobs (wide enough that
the parameter vector, not the batch, is what moves), 4 workers over ipc. For each mode it prints
the training time, rows/s, the final loss and what crossed the coordinator's link and the workers'
links (bytes, from summary.json). Writes bench/results/modes.json.

    /usr/bin/python3 bench/bench_modes.py [--binary build/release/disttrain] [--hidden 256]
"""

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> the config lines that choose the mode (batch_size is global in gradients mode, per
# worker in parameters and async: 256 = 4 x 64 keeps the rows per update comparable).
MODES = {
    "gradients star": "aggregation: {mode: gradients}\ntraining_batch: 256",
    "gradients, 2 servers": "aggregation: {mode: gradients, servers: 2}\ntraining_batch: 256",
    "gradients ring": "aggregation: {mode: gradients, topology: ring}\ntraining_batch: 256",
    "parameters (FedAvg, 10 steps)":
        "aggregation: {mode: parameters, parameters: {sync_every: {steps: 10}}}\ntraining_batch: 64",
    "async": "aggregation: {mode: async}\ntraining_batch: 64",
    "tensor 2 x data 2": "aggregation: {mode: gradients}\nparallelism: {tensor: 2}\ntraining_batch: 256",
}


def config_text(tmp, name, mode, args):
    lines = mode.split("\n")
    batch = next(l for l in lines if l.startswith("training_batch")).split(": ")[1]
    chosen = "\n".join(l for l in lines if not l.startswith("training_batch"))
    count = 2 if "tensor" in mode else 4
    return f"""
version: 1
name: bench
seed: 1
model: {{type: mlp, hidden: [{args.hidden}], activation: tanh, task: multiclass}}
data: {{synthetic: {{kind: blobs, rows: {args.rows}, features: {args.features}, classes: 10, noise: 2.0}}}}
shards: {{count: {count}}}
{chosen}
training: {{epochs: {args.epochs}, batch_size: {batch}, optimizer: {{type: sgd, lr: 0.05}}}}
transport: {{type: ipc}}
output: {{dir: {tmp}/{name}, log_every: {{steps: 100000}}}}
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--features", type=int, default=50)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--epochs", type=int, default=2)
    args = p.parse_args()

    results = []
    with tempfile.TemporaryDirectory(prefix="dt-bench-") as tmp:
        for i, (name, mode) in enumerate(MODES.items()):
            cfg = Path(tmp) / f"mode{i}.yaml"
            cfg.write_text(config_text(tmp, f"run{i}", mode, args))
            start = time.monotonic()
            proc = subprocess.run([args.binary, "run", str(cfg), "--json"], capture_output=True,
                                  text=True, timeout=1800)
            wall = time.monotonic() - start
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed:\n{proc.stderr}")
            s = json.loads(proc.stdout)
            workers = s["worker_stats"]
            row = {
                "mode": name,
                "workers": len(workers),
                "steps": s["steps"],
                "train_seconds": round(s["train_seconds"], 3),
                "wall_seconds": round(wall, 3),
                "rows_per_second": round(s["samples_per_second"]),
                "final_loss": round(s["final_loss"], 5),
                "accuracy": round(s["final_metrics"].get("accuracy", 0.0), 4),
                "worker_bytes_sent": sum(w["bytes_sent"] for w in workers),
                "worker_bytes_received": sum(w["bytes_received"] for w in workers),
            }
            results.append(row)
            print(f"{name:<32} {row['train_seconds']:>7.2f} s  {row['rows_per_second']:>9,} rows/s  "
                  f"loss {row['final_loss']:.4f}  acc {row['accuracy']:.3f}  "
                  f"workers sent {row['worker_bytes_sent'] / 1e6:8.1f} MB  "
                  f"received {row['worker_bytes_received'] / 1e6:8.1f} MB")
    out = ROOT / "bench/results/modes.json"
    out.write_text(json.dumps({"machine": platform.node(), "cpu_count": os.cpu_count(),
                               "date": time.strftime("%Y-%m-%d"), "rows": args.rows,
                               "features": args.features, "hidden": args.hidden,
                               "epochs": args.epochs, "results": results}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
