#!/usr/bin/python3
"""Soak: one long `disttrain run` with random faults (workers killed and replaced, messages
dropped and delayed), sampled every few seconds for the memory and open files of every
process, to show that nothing grows with time. Not part of the test suite.

    /usr/bin/python3 bench/soak.py [--minutes 30] [--topology star|ring|servers]
        [--binary build/release/disttrain] [--every 10] [--kill-every 60] [--seed 1]

Faults: the config's own (`faults:` drops and delays messages all along, and kills rank 1
once: a replacement runs without faults), and SIGKILL sent from here to a random worker every
`--kill-every` seconds (seeded), each replaced under `on_worker_failure: restart`. The run trains
until the time is up, then gets SIGTERM and must exit 130 (stopped, outputs
written). Every `--every` seconds it records the coordinator's RSS and open file descriptors
and the same summed over its worker processes (a replaced worker is a new process: the sum is
what the machine holds). Writes bench/results/soak-<topology>.json (every sample) and prints a
table; "growth" compares the median of the last fifth of the samples with the median of the
second fifth (the first fifth is warm-up)."""

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CONFIG = """
version: 1
name: soak
seed: 3
model: {{type: mlp, hidden: [16]}}
data: {{synthetic: {{kind: blobs, rows: 20000, features: 20, classes: 4}}, validation: 0.1}}
shards: {{count: 3}}
aggregation: {aggregation}
training: {{epochs: 1000000, batch_size: 64, optimizer: {{type: adam, lr: 0.001}}}}
transport: {{type: ipc}}
fault_tolerance:
  on_worker_failure: restart
  max_restarts: 100000
  checkpoint_every: {{steps: 2000}}
faults:
  - {{rank: 1, probability: 0.00005, action: kill}}
  - {{rank: 2, probability: 0.002, action: drop}}
  - {{rank: 0, probability: 0.002, action: delay, ms: 20}}
output: {{dir: {out}, log_every: {{steps: 100000}}}}
"""

AGGREGATION = {
    "star": "{mode: gradients}",
    "ring": "{mode: gradients, topology: ring}",
    "servers": "{mode: gradients, servers: 2}",
}


def children(pid):
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            kids.append(int(entry.name))
    return kids


def rss_and_fds(pid):
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss = next(int(l.split()[1]) * 1024 for l in status.splitlines() if l.startswith("VmRSS:"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss, fds
    except (OSError, StopIteration):
        return None


def median_of(samples, key, part):
    n = len(samples)
    lo, hi = {"early": (n // 5, 2 * n // 5), "late": (4 * n // 5, n)}[part]
    values = [s[key] for s in samples[lo:max(hi, lo + 1)]]
    return statistics.median(values) if values else None


def stop(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    # SIGTERM ends the soak early as Ctrl-C does: the run is stopped and the figures written.
    signal.signal(signal.SIGTERM, stop)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", default=str(HERE.parent / "build/release/disttrain"))
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--every", type=float, default=10, help="seconds between samples")
    p.add_argument("--topology", choices=sorted(AGGREGATION), default="star")
    p.add_argument("--kill-every", type=float, default=60,
                   help="seconds between SIGKILLs of a random worker (0: none)")
    p.add_argument("--seed", type=int, default=1, help="seeds the choice of the worker killed")
    args = p.parse_args()

    with tempfile.TemporaryDirectory(prefix="dt-soak-") as tmp:
        out = Path(tmp) / "run"
        cfg = Path(tmp) / "soak.yaml"
        cfg.write_text(CONFIG.format(aggregation=AGGREGATION[args.topology], out=out))
        log = open(Path(tmp) / "stderr.log", "w+")
        start = time.monotonic()
        proc = subprocess.Popen([args.binary, "run", str(cfg)], stdout=subprocess.DEVNULL,
                                stderr=log, start_new_session=True)
        samples = []
        rng = random.Random(args.seed)
        next_kill = start + args.kill_every if args.kill_every > 0 else float("inf")
        print(f"soak: {args.topology}, {args.minutes} min, a sample every {args.every} s",
              flush=True)
        print("   min  coord MiB  coord fds  workers  workers MiB  workers fds  restarts", flush=True)
        try:
            while time.monotonic() - start < args.minutes * 60 and proc.poll() is None:
                time.sleep(args.every)
                if time.monotonic() >= next_kill:
                    victims = sorted(children(proc.pid))
                    if victims:
                        os.kill(rng.choice(victims), signal.SIGKILL)
                    next_kill += args.kill_every
                coord = rss_and_fds(proc.pid)
                kids = [k for k in children(proc.pid)]
                workers = [w for w in map(rss_and_fds, kids) if w]
                if coord is None:
                    break
                log.flush()
                restarts = Path(log.name).read_text(errors="replace").count("starting a replacement")
                s = {"seconds": round(time.monotonic() - start, 1), "coord_rss": coord[0],
                     "coord_fds": coord[1], "workers": len(workers),
                     "workers_rss": sum(w[0] for w in workers),
                     "workers_fds": sum(w[1] for w in workers), "restarts": restarts}
                samples.append(s)
                print(f"{s['seconds'] / 60:6.1f}  {s['coord_rss'] / 2**20:9.1f}  {s['coord_fds']:9d}  "
                      f"{s['workers']:7d}  {s['workers_rss'] / 2**20:11.1f}  {s['workers_fds']:11d}  "
                      f"{restarts:8d}", flush=True)
        except KeyboardInterrupt:
            print("soak: stopped early", flush=True)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
        log.seek(0)
        tail = log.read()[-2000:]
        summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}

    growth = {}
    for key in ("coord_rss", "coord_fds", "workers_rss", "workers_fds"):
        early, late = median_of(samples, key, "early"), median_of(samples, key, "late")
        growth[key] = {"early": early, "late": late,
                       "ratio": (late / early) if early and late is not None else None}
    result = {"topology": args.topology, "minutes": args.minutes, "exit": code,
              "steps": summary.get("steps"), "failures": len(summary.get("failures", [])),
              "status": summary.get("status"), "growth": growth, "samples": samples}
    (HERE / "results").mkdir(exist_ok=True)
    path = HERE / "results" / f"soak-{args.topology}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"exit {code} (130 expected: stopped by SIGTERM), status {result['status']}, "
          f"{result['steps']} steps, {result['failures']} workers lost and replaced")
    for key, g in growth.items():
        ratio = f"{g['ratio']:.3f}" if g["ratio"] is not None else "n/a"
        print(f"{key}: median {g['early']} in the second fifth, {g['late']} in the last: x{ratio}")
    print(f"written to {path}")
    if code != 130:
        print(tail, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
