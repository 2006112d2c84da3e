#!/usr/bin/python3
"""The timeline's cost (output.timeline, issue 17's target: < 3%). Runs one config with and
without --timeline, interleaved (off, on, off, on, ...), REPS times each, in every mode
(gradients star, 2 servers, ring, tensor parallelism; parameters; async), and compares the median
train_seconds (summary.json). The job is many small steps, where a per-step cost shows most:
linear regression, 100,000 rows x 10 features, 2 workers over ipc, 1 epoch, batches of 32 rows
(global; 16 a worker in parameters and async mode: 3125 steps either way), the default window
(1000 steps). Prints one line per mode and writes bench/results/timeline.json.
Both the ratio of the medians and the ratio of the fastest runs are shown: on a shared 2-core
machine a run's time varies by far more than 3% from one run to the next, and the fastest of
several interleaved runs is the least disturbed estimate of each side. So it also times the
hooks themselves (bench/timeline_hooks.cpp, built with g++: ns per span with a recorder and
without, for each kind of hook) and estimates the overhead as (the spans a step of worker 0 and
the coordinator x ns an append + the clock reads the hooks add to a step, per MODES, x ns a
read) / the fastest run's time per step without the timeline. It also reports each side's CPU
time (the run's and its workers'), which other jobs' load moves less than the wall's.

    /usr/bin/python3 bench/bench_timeline.py [--binary build/release/disttrain] [--reps 7]
        [--baseline OTHER_BUILD] [--modes star,ring,...] [--out FILE]
"""

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The mode's aggregation (and parallelism), the batch (per worker in parameters and async), and
# the clock reads the hooks add to a step on its critical path (worker 0's, and the coordinator's
# or the servers' that it waits on), from the code: most spans take the step path's own reads.
#   star: the coordinator's lap (start, broadcast, gather, apply); the worker's spans none.
#   servers: the worker's lap (start, pull, push), the coordinator's gather (2), a server's
#     round (2). ring: the reduce-scatter's end. tensor: the coordinator's lap, as the star.
#   parameters: the coordinator's lap (start, broadcast, gather, merge) once a round of 10.
#   async: the worker's lap (start, pull, push), the server's apply push (2).
MODES = {
    "star": ("{mode: gradients}", 32, 4),
    "servers: 2": ("{mode: gradients, servers: 2}", 32, 7),
    "ring": ("{mode: gradients, topology: ring}", 32, 1),
    "tensor: 2": ("{mode: gradients}\nparallelism: {tensor: 2}", 32, 4),
    "parameters": ("{mode: parameters, parameters: {sync_every: {steps: 10}}}", 16, 0.4),
    "async": ("{mode: async}", 16, 5),
}


def config_text(out, mode, args):
    aggregation, batch, _ = MODES[mode]
    shards = 1 if "tensor" in mode else 2  # 2 workers in every mode
    return f"""
version: 1
name: bench-timeline
seed: 1
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: {args.rows}, features: 10, noise: 0.1}}}}
shards: {{count: {shards}}}
aggregation: {aggregation}
training: {{epochs: 1, batch_size: {batch}, optimizer: {{type: sgd, lr: 0.01}}}}
transport: {{type: ipc}}
fault_tolerance: {{checkpoint_every: {{steps: 0}}}}
output: {{dir: {out}, log_every: {{steps: 100000}}}}
"""


def hook_costs():
    exe = Path(tempfile.gettempdir()) / "dt_timeline_hooks"
    subprocess.run(["g++", "-std=c++20", "-O2", f"-I{ROOT}", str(ROOT / "bench/timeline_hooks.cpp"),
                    str(ROOT / "base/timeline.cpp"), "-o", str(exe)], check=True)
    return json.loads(subprocess.run([str(exe)], capture_output=True, text=True,
                                     check=True).stdout)


def spans_per_step(path):
    """Worker 0's spans a step, and the coordinator's thread's (the process after the workers)."""
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]
    coordinator = max(e["pid"] for e in events) if events else 0
    total = 0.0
    for pid in {0, coordinator}:
        mine = [e for e in events if e["pid"] == pid and e["tid"] == 0]
        total += len(mine) / max(1, len({e["args"]["step"] for e in mine}))
    return total


def run_once(binary, cfg, out, timeline, workers_steps_apart):
    cmd = [binary, "-q", "run", str(cfg), "--json"] + (["--timeline"] if timeline else [])
    start = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic() - start
    # The CPU time of the run and its workers (the whole run, set-up included): what the hooks
    # add is CPU work, and CPU time moves far less than the wall's with other jobs' load.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr}")
    summary = json.loads(r.stdout)
    size = (out / "timeline.json").stat().st_size if timeline else 0
    per_step = spans_per_step(out / "timeline.json") if timeline else 0
    # Async counts every worker's steps (updates): a worker's own are a share of them.
    return {"train_seconds": summary["train_seconds"], "wall_seconds": wall, "cpu_seconds": cpu,
            "steps": summary["steps"] // workers_steps_apart, "timeline_bytes": size,
            "spans_per_step": per_step}


def summarize(samples, ns_read, ns_append, reads):
    """One binary's figures from its runs off and on (lists of run_once results, in pairs)."""
    off, on = samples["off"], samples["on"]
    med = {k: {m: statistics.median(s[m] for s in v) for m in ("train_seconds", "cpu_seconds")}
           for k, v in samples.items()}
    steps = on[0]["steps"]
    best_off = min(s["train_seconds"] for s in off)
    return {
        "ratio": med["on"]["train_seconds"] / med["off"]["train_seconds"],
        # Each repetition's on / off (run one after the other): the median of these pairs is
        # the least sensitive to a load that changes over the pass.
        "paired_ratio": statistics.median(a["train_seconds"] / b["train_seconds"]
                                          for a, b in zip(on, off)),
        "cpu_ratio": med["on"]["cpu_seconds"] / med["off"]["cpu_seconds"],
        "cpu_ns_per_step": (med["on"]["cpu_seconds"] - med["off"]["cpu_seconds"]) / steps * 1e9,
        "best_ratio": min(s["train_seconds"] for s in on) / best_off,
        # How noisy the pass was: (slowest - fastest) / median, of each side.
        "spread": {k: (max(s["train_seconds"] for s in v) - min(s["train_seconds"] for s in v))
                   / med[k]["train_seconds"] for k, v in samples.items()},
        "medians": med, "steps": steps, "us_per_step_off": med["off"]["train_seconds"] / steps * 1e6,
        "spans_per_step": on[0]["spans_per_step"],
        "clock_reads_per_step": reads,
        "estimated_overhead": (on[0]["spans_per_step"] * ns_append + reads * ns_read) * 1e-9
                              / (best_off / steps),
        "timeline_bytes": on[0]["timeline_bytes"], "samples": samples}


def describe(name, who, r):
    return (f"{name:11s} {who:8s} train s off {r['medians']['off']['train_seconds']:.3f} on "
            f"{r['medians']['on']['train_seconds']:.3f}: ratio {r['ratio']:.3f}, paired "
            f"{r['paired_ratio']:.3f}, fastest {r['best_ratio']:.3f} (spread off "
            f"{r['spread']['off'] * 100:.0f}%, on {r['spread']['on'] * 100:.0f}%); cpu ratio "
            f"{r['cpu_ratio']:.3f} ({r['cpu_ns_per_step']:+.0f} ns a step); {r['steps']} steps of "
            f"{r['us_per_step_off']:.1f} us; {r['spans_per_step']:.1f} spans a step"
            + (f" and {r['clock_reads_per_step']} clock reads = "
               f"{r['estimated_overhead'] * 100:.2f}% estimated; " if who == "this" else "; ")
            + f"{r['timeline_bytes'] / 1e6:.2f} MB")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    p.add_argument("--baseline", help="another build (e.g. main's) measured in the same pass, "
                   "each of its runs next to this binary's")
    p.add_argument("--rows", type=int, default=100000)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--modes", default=",".join(MODES), help="a comma-separated subset of: "
                   + ", ".join(MODES))
    p.add_argument("--out", default=str(ROOT / "bench/results/timeline.json"))
    args = p.parse_args()
    results = {"host": platform.node(), "cpus": os.cpu_count(), "load_start": os.getloadavg(),
               "reps": args.reps, "rows": args.rows, "modes": {}, "hooks": hook_costs()}
    hooks = results["hooks"]
    ns_append = hooks["ns_per_span_between_on"]
    ns_read = (hooks["ns_per_span_on"] - ns_append) / 2
    results["ns_per_clock_read"] = ns_read
    print(f"hooks, ns a span recorded: {hooks['ns_per_span_on']:.1f} (start + span: two clock "
          f"reads), {hooks['ns_per_lap_mark_on']:.1f} (a lap mark: one), {ns_append:.1f} "
          f"(span_between: none); without a recorder {hooks['ns_per_span_off']:.1f} and "
          f"{hooks['ns_per_lap_off']:.1f}", flush=True)
    binaries = {"this": args.binary}
    if args.baseline:
        binaries["baseline"] = args.baseline
    with tempfile.TemporaryDirectory(prefix="dt-bench-timeline-") as tmp:
        tmp = Path(tmp)
        for name in args.modes.split(","):
            samples = {who: {"off": [], "on": []} for who in binaries}
            for rep in range(args.reps):
                for who, binary in binaries.items():
                    for state in ("off", "on"):
                        out = tmp / f"{name.replace(':', '').replace(' ', '_')}-{who}-{state}"
                        cfg = tmp / f"{out.name}.yaml"
                        cfg.write_text(config_text(out, name, args))
                        samples[who][state].append(run_once(binary, cfg, out, state == "on",
                                                            2 if name == "async" else 1))
            results["modes"][name] = {}
            for who in binaries:
                r = summarize(samples[who], ns_read, ns_append, MODES[name][2])
                if who != "this":  # the reads are this build's hooks'
                    del r["estimated_overhead"], r["clock_reads_per_step"]
                results["modes"][name][who] = r
                print(describe(name, who, r), flush=True)
    results["load_end"] = os.getloadavg()
    out = Path(args.out)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
