#!/usr/bin/python3
"""The timeline's cost (output.timeline, issue 17's target: < 3%). Runs one config with and
without --timeline, interleaved (off, on, off, on, ...), REPS times each, in each mode the
timeline covers (gradients star, 2 servers, ring), and compares the median train_seconds
(summary.json). The job is many small steps, where a per-step cost shows most: linear regression,
100,000 rows x 10 features, global batch 32, 2 workers over ipc, 1 epoch (3125 steps), the
default window (1000 steps). Prints one line per mode and writes bench/results/timeline.json.

    /usr/bin/python3 bench/bench_timeline.py [--binary build/release/disttrain] [--reps 3]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODES = {
    "star": "{mode: gradients}",
    "servers: 2": "{mode: gradients, servers: 2}",
    "ring": "{mode: gradients, topology: ring}",
}


def config_text(out, aggregation, args):
    return f"""
version: 1
name: bench-timeline
seed: 1
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: {args.rows}, features: 10, noise: 0.1}}}}
shards: {{count: 2}}
aggregation: {aggregation}
training: {{epochs: 1, batch_size: 32, optimizer: {{type: sgd, lr: 0.01}}}}
transport: {{type: ipc}}
fault_tolerance: {{checkpoint_every: {{steps: 0}}}}
output: {{dir: {out}, log_every: {{steps: 100000}}}}
"""


def run_once(binary, cfg, out, timeline):
    cmd = [binary, "-q", "run", str(cfg), "--json"] + (["--timeline"] if timeline else [])
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - start
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr}")
    summary = json.loads(r.stdout)
    size = (out / "timeline.json").stat().st_size if timeline else 0
    return {"train_seconds": summary["train_seconds"], "wall_seconds": wall,
            "steps": summary["steps"], "timeline_bytes": size}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    p.add_argument("--rows", type=int, default=100000)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    results = {"host": platform.node(), "cpus": os.cpu_count(), "load_start": os.getloadavg(),
               "reps": args.reps, "rows": args.rows, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="dt-bench-timeline-") as tmp:
        tmp = Path(tmp)
        for name, aggregation in MODES.items():
            samples = {"off": [], "on": []}
            for rep in range(args.reps):
                for state in ("off", "on"):
                    out = tmp / f"{name.replace(':', '').replace(' ', '_')}-{state}"
                    cfg = tmp / f"{out.name}.yaml"
                    cfg.write_text(config_text(out, aggregation, args))
                    samples[state].append(run_once(args.binary, cfg, out, state == "on"))
            off = statistics.median(s["train_seconds"] for s in samples["off"])
            on = statistics.median(s["train_seconds"] for s in samples["on"])
            ratio = on / off
            steps = samples["on"][0]["steps"]
            results["modes"][name] = {
                "off_train_seconds": off, "on_train_seconds": on, "ratio": ratio,
                "steps": steps, "us_per_step_off": off / steps * 1e6,
                "us_per_step_on": on / steps * 1e6,
                "timeline_bytes": samples["on"][0]["timeline_bytes"], "samples": samples}
            print(f"{name:12s} off {off:.3f} s  on {on:.3f} s  ratio {ratio:.3f}  "
                  f"({off / steps * 1e6:.1f} -> {on / steps * 1e6:.1f} us/step, "
                  f"timeline.json {samples['on'][0]['timeline_bytes'] / 1e6:.2f} MB)", flush=True)
    results["load_end"] = os.getloadavg()
    out = ROOT / "bench/results/timeline.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
