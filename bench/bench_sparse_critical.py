#!/usr/bin/python3
"""The part of a sparse worker's step that lies on the step's critical path, for builds
compared by turns (A B A B ...).

    /usr/bin/python3 bench/bench_sparse_critical.py BINARY [BINARY ...] [--rows 500000]
        [--bits 22] [--mode star servers async] [--reps 3] [--cache-dir DIR]

Runs bench_sparse_steps.py's FTRL runs (the first --rows rows of `disttrain gen clicks --seed
1`, 2 workers, ipc, global batch 2000; async 1000 rows a worker) with `output.timeline: true`
(the last 1000 steps) and reads, for each worker step, the time from the moment its values are
there to the moment its reply or push is out: what the coordinator or the servers wait for.
The star: the worker's `compute` span (from its step message to its reply); 2 servers: its
`compute` and `push gradient` spans (from the coordinator's step message to the pushes and its
reply; the gradient itself was computed when the values came); async: the `compute` and `push
gradient` spans that follow the answer (from the answer to the next push). Work a worker does
after its reply or push, while it waits (a batch made ahead), is outside. Prints one line a
run and each (mode, binary)'s medians over every worker step of every rep: the segment, the
worker's wait for values (`pull parameters`, servers and async), and train_seconds ÷ steps.
Wall times, so the load shows in them; the segment is short and measured the same way for
every build, a ratio in one pass is what to read."""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sparse as bs  # noqa: E402
import bench_sparse_steps as steps  # noqa: E402

REPLY = {"compute", "push gradient"}


def segments(timeline):
    """Per worker step: (ms from its values to its reply or push, ms waiting for values)."""
    events = json.loads(Path(timeline).read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    by_step = {}
    for e in events:
        if e.get("ph") == "X" and names.get(e["pid"], "").startswith("worker"):
            by_step.setdefault((e["pid"], e["args"]["step"]), []).append(e)
    out = []
    for spans in by_step.values():
        pushes = [s["ts"] + s["dur"] for s in spans if s["name"] == "push gradient"]
        last = max(pushes) if pushes else float("inf")
        reply = sum(s["dur"] for s in spans if s["name"] in REPLY and s["ts"] + s["dur"] <= last)
        wait = sum(s["dur"] for s in spans if s["name"] == "pull parameters")
        if reply > 0:
            out.append((reply / 1e3, wait / 1e3))
    return out


def run_once(binary, cfg_text, tmp):
    out = Path(tempfile.mkdtemp(dir=tmp))
    cfg = out / "run.yaml"
    cfg.write_text("version: 1\n" + cfg_text +
                   f"output: {{dir: {out / 'run'}, timeline: true}}\n")
    subprocess.run([binary, "run", str(cfg), "-q"], check=True, stdout=subprocess.DEVNULL)
    summary = json.loads((out / "run" / "summary.json").read_text())
    segs = segments(out / "run" / "timeline.json")
    return {"reply": [s[0] for s in segs], "wait": [s[1] for s in segs],
            "step": 1e3 * summary["train_seconds"] / summary["steps"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binaries", nargs="+")
    p.add_argument("--rows", type=int, default=500_000)
    p.add_argument("--bits", type=int, default=22)
    p.add_argument("--mode", choices=list(steps.AGGREGATION), nargs="+",
                   default=list(steps.AGGREGATION))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "dt-bench-steps"))
    a = p.parse_args()
    data = steps.click_log(a.binaries[0], a.rows, Path(a.cache_dir))
    columns = ", ".join(f"C{i + 1}" for i in range(bs.FIELDS))
    s = bs.SETTINGS
    results = {}
    with tempfile.TemporaryDirectory(dir=a.cache_dir) as tmp:
        for rep in range(a.reps):
            for mode in a.mode:
                for binary in a.binaries:
                    cfg = bs.RUN.format(
                        data=bs.HASHED.format(path=data, bits=a.bits, columns=columns),
                        aggregation=steps.AGGREGATION[mode],
                        batch=s["batch"] // (2 if mode == "async" else 1),
                        alpha=s["alpha"], beta=s["beta"], l1=s["l1"], l2=s["l2"])
                    r = run_once(binary, cfg, tmp)
                    results.setdefault((mode, binary), []).append(r)
                    print(f"rep {rep} {mode} {binary}: values to reply "
                          f"{statistics.median(r['reply']):.3f} ms, wait "
                          f"{statistics.median(r['wait']):.3f} ms, step {r['step']:.2f} ms",
                          flush=True)
    print("medians (ms), ratio to the first binary:")
    for mode in a.mode:
        base = None
        for binary in a.binaries:
            rs = results[(mode, binary)]
            med = {"reply": statistics.median(x for r in rs for x in r["reply"]),
                   "wait": statistics.median(x for r in rs for x in r["wait"]),
                   "step": statistics.median(r["step"] for r in rs)}
            base = base or med
            ratio = " ".join(f"{k} {med[k] / base[k]:.2f}x" for k in med if base[k] > 0)
            print(f"  {mode} {binary}: " + " ".join(f"{k} {v:.3f}" for k, v in med.items()) +
                  f" | {ratio}")


if __name__ == "__main__":
    main()
