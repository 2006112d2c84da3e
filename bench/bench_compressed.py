#!/usr/bin/python3
"""Issue 15: `disttrain validate` of a .csv.gz / .csv.zst beside zcat / zstdcat of the same file,
and beside another build of disttrain (before / after a change), interleaved rep by rep.

    /usr/bin/python3 bench/bench_compressed.py OLD_BINARY NEW_BINARY [--rows 1000000]
        [--reps 5] [--cache-dir DIR] [--kinds zst,gz] [--plan]

Makes the CSV once in --cache-dir (`disttrain gen linear --rows R --features 100 --seed 1`, the
file bench_all.py's CSV rows read at 1M rows) and its gzip -1 / zstd -3 copies, then per rep and
kind runs the tool (to /dev/null), OLD and NEW, in that order. Prints each one's median wall (CSV
bytes / wall in MB/s) and median CPU (user + sys of the process and its threads), and the
ratios to the tool. Judge CPU on a loaded machine; wall only on a quiet one.

--plan times `disttrain run` up to its plan instead (decompressing into the private folder and
indexing the copy): the config names a model.init that does not exist, so the run stops with
exit 2 right after the plan, before any worker starts.
"""

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

TOOLS = {"zst": ("zstdcat", ["zstd", "-q", "-3", "-c"]), "gz": ("zcat", ["gzip", "-1", "-c"])}
CONFIG = """version: 1
seed: 1
model: {{type: linear_regression}}
data: {{path: {path}}}
shards: {{count: 1}}
training: {{epochs: 1, batch_size: 2000, optimizer: {{type: sgd, lr: 0.05}}}}
transport: {{type: ipc}}
"""


def timed(cmd, code=0):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != code:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed: {done.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def made(path, command, stdin=None):
    if not path.exists():
        part = path.with_suffix(path.suffix + ".part")
        with open(part, "wb") as out:
            subprocess.run(command, stdin=stdin, stdout=out, check=True)
        part.rename(path)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--kinds", default="zst,gz")
    p.add_argument("--plan", action="store_true", help="time `run` up to its plan")
    p.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(),
                                                       "disttrain-bench-cache"))
    args = p.parse_args()
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    stem = "linear_1M_100" if args.rows == 1_000_000 else f"linear_{args.rows}_100"
    csv = made(cache / f"{stem}.csv", [args.new, "gen", "linear", "--rows", str(args.rows),
                                       "--features", "100", "--seed", "1"])
    plain = csv.stat().st_size
    for kind in args.kinds.split(","):
        tool, pack = TOOLS[kind]
        with open(csv, "rb") as src:
            packed = made(cache / f"{stem}.csv.{kind}", pack, stdin=src)
        config = cache / f"bench_compressed_{kind}.yaml"
        config.write_text(CONFIG.format(path=packed) + (
            f"output: {{dir: {cache / 'bench_plan_run'}}}\n" if args.plan else ""))
        if args.plan:  # stops right after the plan (read_initial_model)
            config.write_text(config.read_text().replace(
                "model: {type: linear_regression}",
                f"model: {{type: linear_regression, init: {cache / 'no-such-model.json'}}}"))
        verb = ["run", str(config), "-q"] if args.plan else ["validate", str(config)]
        subprocess.run(["sh", "-c", f"cat '{packed}' > /dev/null"], check=True)  # page cache
        got = {tool: [], "old": [], "new": []}
        for _ in range(args.reps):
            got[tool].append(timed(["sh", "-c", f"{tool} '{packed}' > /dev/null"]))
            got["old"].append(timed([args.old, *verb], code=2 if args.plan else 0))
            got["new"].append(timed([args.new, *verb], code=2 if args.plan else 0))
        wall = {k: statistics.median(w for w, _ in v) for k, v in got.items()}
        for name, runs in got.items():
            cpu = statistics.median(c for _, c in runs)
            print(f"{kind}: {name:8s} wall {wall[name]:6.2f} s ({plain / wall[name] / 1e6:5.0f} "
                  f"MB/s of CSV), cpu {cpu:6.2f} s, x{wall[tool] / wall[name]:.2f} {tool}")


if __name__ == "__main__":
    main()
