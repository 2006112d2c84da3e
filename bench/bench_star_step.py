#!/usr/bin/python3
"""The star's 1M-parameter step, two builds interleaved A B A B in one pass: bench_all.py's wide
job (softmax, 100,000 features x 10 classes, 2 workers, one row per worker a step) on the star,
run for 160 steps instead of 16 so that a step's cost shows above the start-up. Per build, the
medians of: the coordinator's own CPU time (`perf stat -i -e task-clock`: its main thread, not
the workers nor its heartbeat threads), the training seconds a step, and the CPU time of all
processes (`perf stat -e task-clock`, a second run); then B's ratios to A.

    bench/bench_star_step.py OLD/disttrain NEW/disttrain [--reps 7]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_all import WIDE  # noqa: E402  (the same job as the bench row)

STEPS_EPOCHS = 20  # 16 rows, batch 2: 8 steps an epoch


def task_clock_ms(perf_args, binary, cfg):
    ran = subprocess.run(["perf", "stat", "-x,", *perf_args, "-e", "task-clock", binary, "run",
                          str(cfg), "--json"], capture_output=True, text=True, timeout=600)
    if ran.returncode != 0:
        sys.exit(f"{binary} failed: {ran.stderr[-800:]}")
    line = next(l for l in ran.stderr.splitlines() if "task-clock" in l)
    return float(line.split(",")[0]), json.loads(ran.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dt-star-step-") as tmp:
        folder = Path(tmp)
        cfg = folder / "wide160.yaml"
        body = WIDE.format(topology="star").replace("epochs: 2,", f"epochs: {STEPS_EPOCHS},")
        cfg.write_text(f"version: 1\nname: wide160\n{body.strip()}\n"
                       "fault_tolerance: {worker_timeout_ms: 60000}\n"
                       f"output: {{dir: {folder}/run, log_every: {{steps: 100000}}}}\n")
        got = {"A": ([], [], []), "B": ([], [], [])}
        for rep in range(args.reps):
            for tag, binary in (("A", args.old), ("B", args.new)):
                coord, summary = task_clock_ms(["-i"], binary, cfg)
                everyone, _ = task_clock_ms([], binary, cfg)
                step_ms = 1e3 * summary["train_seconds"] / summary["steps"]
                for values, v in zip(got[tag], (coord, step_ms, everyone)):
                    values.append(v)
                print(f"{rep + 1} {tag}: coordinator {coord:.0f} ms CPU, {step_ms:.2f} ms a step, "
                      f"all processes {everyone:.0f} ms CPU", flush=True)
    med = {tag: [statistics.median(v) for v in values] for tag, values in got.items()}
    for tag in "AB":
        c, s, e = med[tag]
        print(f"{tag} medians: coordinator {c:.0f} ms CPU, {s:.2f} ms a step, all {e:.0f} ms CPU")
    ratios = [b / a for a, b in zip(med["A"], med["B"])]
    print("B / A: coordinator CPU {:.2f}x, step {:.2f}x, all processes' CPU {:.2f}x".format(*ratios))


if __name__ == "__main__":
    main()
