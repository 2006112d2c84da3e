#!/usr/bin/python3
"""Warming the next step's rows while a worker waits, on bench_all.py's linreg job (1M x 100
float64, 2 workers, global batch 2000, 3 epochs, ipc): two builds (OLD, NEW), or one build with
DISTTRAIN_WARM=0 against the same build with warming on, interleaved A B A B in one pass, for
ring and star, shuffled and in order. Per variant: medians of train_seconds, of the workers'
compute and comm seconds (mean over the 2 workers), and of the run's CPU seconds (user + sys of
the coordinator and workers), and the ratio old / new of each median.

    bench/bench_warm.py OLD_BINARY NEW_BINARY [--reps 5] [--only ring-true,star-false]
    bench/bench_warm.py BINARY BINARY --env-ab     # DISTTRAIN_WARM=0 (A) against on (B)
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_all import LINREG  # noqa: E402  (the same job as the bench row)

METRICS = ("train_s", "compute_s", "comm_s", "cpu_s")


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(binary, folder, topology, shuffle, env):
    cfg = folder / f"{topology}-{shuffle}.yaml"
    cfg.write_text(f"version: 1\nname: warm\n"
                   f"{LINREG.format(workers=2, shuffle=shuffle, topology=topology).strip()}\n"
                   "fault_tolerance: {worker_timeout_ms: 60000}\n"
                   f"output: {{dir: {folder}/run, log_every: {{steps: 100000}}}}\n")
    before = cpu_seconds()
    ran = subprocess.run([binary, "run", str(cfg), "--json"], capture_output=True, text=True,
                         timeout=600, env=env)
    cpu = cpu_seconds() - before
    if ran.returncode != 0:
        sys.exit(f"{binary} {topology} shuffle {shuffle} failed: {ran.stderr[-800:]}")
    s = json.loads(ran.stdout)
    workers = s["worker_stats"]
    return {"train_s": s["train_seconds"],
            "compute_s": statistics.mean(w["compute_seconds"] for w in workers),
            "comm_s": statistics.mean(w["comm_seconds"] for w in workers),
            "cpu_s": cpu, "final_loss": s["final_loss"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--env-ab", action="store_true",
                   help="A is the build with DISTTRAIN_WARM=0, B the same with warming on")
    p.add_argument("--only", default="ring-true,star-true,ring-false,star-false")
    args = p.parse_args()
    variants = [tuple(v.split("-")) for v in args.only.split(",")]
    env_on = dict(os.environ, DISTTRAIN_WARM="1")
    env_off = dict(os.environ, DISTTRAIN_WARM="0")
    builds = {"A": (args.old, env_off if args.env_ab else env_on), "B": (args.new, env_on)}
    samples = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):
            for topology, shuffle in variants:
                for name, (binary, env) in builds.items():
                    samples.setdefault((topology, shuffle, name), []).append(
                        run_once(binary, Path(tmp), topology, shuffle, env))
    print(f"A = {args.old}{' (DISTTRAIN_WARM=0)' if args.env_ab else ''}, B = {args.new}; "
          f"{args.reps} interleaved reps, medians")
    for topology, shuffle in variants:
        a = {m: statistics.median(s[m] for s in samples[(topology, shuffle, "A")]) for m in METRICS}
        b = {m: statistics.median(s[m] for s in samples[(topology, shuffle, "B")]) for m in METRICS}
        losses = {s["final_loss"] for k in "AB" for s in samples[(topology, shuffle, k)]}
        print(f"{topology:4} shuffle {shuffle:5}: " + "; ".join(
            f"{m} {a[m]:.3f} -> {b[m]:.3f} ({a[m] / b[m]:.2f}x)" for m in METRICS) +
            f"; final_loss {'same' if len(losses) == 1 else 'DIFFERS'}")
        for m in ("train_s", "compute_s"):
            print(f"    {m} A: {[round(s[m], 3) for s in samples[(topology, shuffle, 'A')]]}"
                  f"  B: {[round(s[m], 3) for s in samples[(topology, shuffle, 'B')]]}")


if __name__ == "__main__":
    main()
