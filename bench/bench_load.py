#!/usr/bin/python3
"""The load rows of bench_all.py (`row_npy`, `row_csv`) for two builds side by side: A B A B ...,
each command timed by its wall clock, its CPU time (user + sys of the process and every process
it waited for: the workers of a run) and its page faults (minor), medians of REPS passes, and
B / A of each median. Peak RSS of the run's processes (summary.json) too, for the memory target.

    /usr/bin/python3 bench/bench_load.py --a OLD/disttrain --b build/release/disttrain \
        [--reps 5] [--cache-dir /tmp/disttrain-bench] [--only npy,csv]

The jobs (the files are made once in --cache-dir, as bench_all.py makes them, and read warm):
  npy   `validate` of a 1M x 101 float64 .npy (the label last, 808 MB) less `validate` of a 10-row
        one (start-up), beside `cat` of the file
  csv   `validate` of the 1M x 100 CSV (`disttrain gen linear`), and a 1-epoch run with 1 and 2
        workers: its load phase is wall - train_seconds, the rate bytes / workers / that
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_all  # noqa: E402  (the same configs and files as the table's rows)


def timed(cmd):
    """(exit code, stdout, wall s, cpu s, minor faults) of `cmd` and every process it waited for."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()
    proc.stderr.read()
    _, status, use = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    return proc.returncode, out, wall, use.ru_utime + use.ru_stime, use.ru_minflt


def disttrain(binary, tmp, body, command):
    """timed() of `disttrain command` on a bench_all config, and its summary (None if it failed)."""
    cfg = Path(tmp) / "config.yaml"
    cfg.write_text(f"version: 1\nname: load\n{body.strip()}\n"
                   "fault_tolerance: {worker_timeout_ms: 60000}\n"
                   f"output: {{dir: {tmp}/run, log_every: {{steps: 100000}}}}\n")
    code, out, wall, cpu, faults = timed([binary, command, str(cfg), "--json"])
    subprocess.run(["rm", "-rf", f"{tmp}/run"], check=False)
    if code != 0:
        raise RuntimeError(f"{binary} {command} failed (exit {code})")
    return json.loads(out), wall, cpu, faults


def npy_pass(binary, tmp, big, tiny, samples):
    _, _, cat, cat_cpu, _ = timed(["sh", "-c", f"cat '{big}' > /dev/null"])
    _, w0, c0, f0 = disttrain(binary, tmp, bench_all.CSV_RUN.format(path=tiny, workers=1), "validate")
    _, w1, c1, f1 = disttrain(binary, tmp, bench_all.CSV_RUN.format(path=big, workers=1), "validate")
    samples.setdefault("npy validate - start-up, wall s", []).append(w1 - w0)
    samples.setdefault("npy validate - start-up, cpu s", []).append(c1 - c0)
    samples.setdefault("npy validate, page faults", []).append(f1)
    samples.setdefault("npy load ÷ cat (wall)", []).append((w1 - w0) / cat)
    samples.setdefault("npy load ÷ cat (cpu)", []).append((c1 - c0) / cat_cpu)


def csv_pass(binary, tmp, path, samples):
    size = path.stat().st_size
    _, wall, cpu, faults = disttrain(binary, tmp, bench_all.CSV_RUN.format(path=path, workers=1),
                                     "validate")
    samples.setdefault("csv validate, MB/s (wall)", []).append(size / wall / 1e6)
    samples.setdefault("csv validate, cpu s", []).append(cpu)
    samples.setdefault("csv validate, page faults", []).append(faults)
    for workers in (1, 2):
        summary, wall, cpu, faults = disttrain(
            binary, tmp, bench_all.CSV_RUN.format(path=path, workers=workers), "run")
        train = summary["train_seconds"]
        key = f"csv run {workers}w"
        samples.setdefault(f"{key}: load MB/s per core (wall)", []).append(
            size / workers / (wall - train) / 1e6)
        # CPU of everything but training: an upper bound, training's CPU is train_seconds x
        # the workers at most (they spin on the coordinator only while it steps)
        samples.setdefault(f"{key}: cpu s (all processes)", []).append(cpu)
        samples.setdefault(f"{key}: page faults", []).append(faults)
        rss = [w.get("max_rss_bytes", 0) for w in summary.get("worker_stats", [])]
        samples.setdefault(f"{key}: worker peak RSS MiB", []).append(max(rss) / 2**20 if rss else 0)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="the build before")
    p.add_argument("--b", required=True, help="the build after")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--cache-dir", default="/tmp/disttrain-bench")
    p.add_argument("--only", default="npy,csv")
    args = p.parse_args()
    jobs = args.only.split(",")
    builds = {"A": str(Path(args.a).resolve()), "B": str(Path(args.b).resolve())}

    class Files:  # what bench_all's file makers read
        cache = Path(args.cache_dir)
        binary = builds["B"]
    files = Files()
    big = tiny = csv = None
    if "npy" in jobs:
        big, tiny = bench_all.npy_file(files, 1000000), bench_all.npy_file(files, 10)
        subprocess.run(["cat", str(big)], stdout=subprocess.DEVNULL, check=True)
    if "csv" in jobs:
        csv = bench_all.csv_file(files)
        subprocess.run(["cat", str(csv)], stdout=subprocess.DEVNULL, check=True)

    samples = {"A": {}, "B": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for name, binary in builds.items():
                if "npy" in jobs:
                    npy_pass(binary, tmp, big, tiny, samples[name])
                if "csv" in jobs:
                    csv_pass(binary, tmp, csv, samples[name])
            print(f"pass {rep + 1} of {args.reps}", file=sys.stderr, flush=True)

    print(f"{'median of ' + str(args.reps) + ' passes':<48} {'A':>12} {'B':>12} {'B / A':>8}")
    for key in samples["A"]:
        a, b = statistics.median(samples["A"][key]), statistics.median(samples["B"][key])
        print(f"{key:<48} {a:>12.4g} {b:>12.4g} {b / a if a else float('nan'):>8.3f}")
    print(json.dumps(samples), file=sys.stderr)


if __name__ == "__main__":
    main()
