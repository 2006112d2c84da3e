#!/usr/bin/python3
"""CPU a sparse step costs each process, for builds compared by turns (A B A B ...).

    /usr/bin/python3 bench/bench_sparse_steps.py BINARY [BINARY ...] [--rows 500000]
        [--bits 22 18 24] [--mode servers|star|async] [--reps 3] [--cache-dir DIR]

Runs bench_sparse.py's FTRL logistic regression (2 workers, global batch 2000, ipc) on the
first --rows rows of `disttrain gen clicks --seed 1` (made once in --cache-dir by the first
binary), each binary in turn per rep and width. Each process's CPU (user + sys, from /proc) is
read at the first and at the last progress line, so loading and the final evaluation are left
out: the coordinator's process (with its server threads) and the workers' mean, in ms a step.
Also per step: server_copy_seconds (the servers' copy for a replacement) and train_seconds,
both from summary.json; and the final loss, which must be equal to the bit across binaries
(not in async, where 2 workers' pushes are applied in arrival order; its steps are the
servers' updates, one a worker's step, and its batch 1000 rows a worker as bench_sparse.py's).
Prints one line a run, then each (mode, width, binary)'s medians and the ratio to the first."""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sparse as bs  # noqa: E402  (the run's configuration)

TICK = os.sysconf("SC_CLK_TCK")
AGGREGATION = {"star": bs.GRADIENTS, "servers": bs.SERVERS, "async": "{mode: async, servers: 2}"}
STEP = re.compile(r"step (\d+)/(\d+)")


def cpu_ms(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return 1e3 * (int(fields[11]) + int(fields[12])) / TICK


def children(pid):
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            pass
    return sorted(kids)


def sample(pid):
    """(coordinator ms, [worker ms])."""
    return cpu_ms(pid), [cpu_ms(k) for k in children(pid)]


def run_once(binary, cfg_text, tmp, every):
    out = Path(tempfile.mkdtemp(dir=tmp))
    cfg = out / "run.yaml"
    output = f"output: {{dir: {out / 'run'}, log_every: {{steps: {every}}}}}\n"
    cfg.write_text("version: 1\n" + cfg_text + output)
    proc = subprocess.Popen([binary, "run", str(cfg)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    marks = []  # (step, coordinator ms, [worker ms])

    def read():
        for line in proc.stderr:
            m = STEP.search(line)
            if m and "loss" in line:
                marks.append((int(m.group(1)), *sample(proc.pid)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc.wait(timeout=3600)
    reader.join(10)
    summary = json.loads((out / "run" / "summary.json").read_text())
    (s0, c0, w0), (s1, c1, w1) = marks[0], marks[-2] if len(marks) > 2 else marks[-1]
    steps = s1 - s0
    workers = [b - a for a, b in zip(w0, w1) if a is not None and b is not None]
    return {"coordinator": (c1 - c0) / steps, "worker": statistics.mean(workers) / steps,
            "copy": 1e3 * summary.get("aggregation", {}).get("server_copy_seconds", 0) / summary["steps"],
            "wall": 1e3 * summary["train_seconds"] / summary["steps"],
            "loss": summary["final_loss"], "steps": steps}


def click_log(binary, rows, cache):
    """The first `rows` rows of the click log, made once in `cache` by `binary`."""
    cache.mkdir(parents=True, exist_ok=True)
    data = cache / f"clicks_{rows}.csv"
    if not data.exists():
        with open(data.with_suffix(".tmp"), "w") as f:
            subprocess.run([binary, "gen", "clicks", "--rows", str(rows), "--seed", "1",
                            "--fields", str(bs.FIELDS)], stdout=f, check=True)
        data.with_suffix(".tmp").rename(data)
    return data


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binaries", nargs="+")
    p.add_argument("--rows", type=int, default=500_000)
    p.add_argument("--bits", type=int, nargs="+", default=[22])
    p.add_argument("--mode", choices=["servers", "star", "async"], nargs="+", default=["servers"])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--every", type=int, default=10, help="log_every steps (progress lines)")
    p.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "dt-bench-steps"))
    a = p.parse_args()
    cache = Path(a.cache_dir)
    data = click_log(a.binaries[0], a.rows, cache)
    columns = ", ".join(f"C{i + 1}" for i in range(bs.FIELDS))
    s = bs.SETTINGS
    results = {}
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        for rep in range(a.reps):
            for mode in a.mode:
                for bits in a.bits:
                    for binary in a.binaries:
                        cfg = bs.RUN.format(
                            data=bs.HASHED.format(path=data, bits=bits, columns=columns),
                            aggregation=AGGREGATION[mode],
                            # async's batch_size is each worker's (bench_sparse.py's Mode)
                            batch=s["batch"] // (2 if mode == "async" else 1),
                            alpha=s["alpha"], beta=s["beta"], l1=s["l1"], l2=s["l2"])
                        r = run_once(binary, cfg, tmp, a.every)
                        results.setdefault((mode, bits, binary), []).append(r)
                        print(f"rep {rep} {mode} 2^{bits} {binary}: coordinator "
                              f"{r['coordinator']:.2f} ms, worker {r['worker']:.2f} ms, copy "
                              f"{r['copy']:.3f} ms, wall {r['wall']:.2f} ms a step; loss "
                              f"{r['loss']!r}", flush=True)
    print("medians (ms a step), ratio to the first binary:")
    for mode in a.mode:
        for bits in a.bits:
            base = None
            for binary in a.binaries:
                rs = results[(mode, bits, binary)]
                med = {k: statistics.median(r[k] for r in rs)
                       for k in ("coordinator", "worker", "copy", "wall")}
                base = base or med
                ratio = " ".join(f"{k} {med[k] / base[k]:.2f}x" for k in med if base[k] > 0)
                print(f"  {mode} 2^{bits} {binary}: " +
                      " ".join(f"{k} {v:.3f}" for k, v in med.items()) + f" | {ratio}")
                losses = {r["loss"] for r in rs}
                print(f"    final losses: {sorted(losses)}")


if __name__ == "__main__":
    main()
