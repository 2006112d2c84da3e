#!/usr/bin/python3
"""Every target of issue 12 in one pass, each beside its peer or limit, measured side by side.

    /usr/bin/python3 bench/bench_all.py [--binary build/release/disttrain] [--quick]
                                        [--peers ../shared/peers] [--cache-dir DIR] [--delete-csv]

Runs the limits (STREAM, ZeroMQ ipc round trip and 8 MiB throughput), then each job with its peer
interleaved (disttrain, peer, disttrain, peer, ...), takes medians, and writes the table to
bench/results/all.json, bench/results/all.md and between the bench_all markers of bench/README.md.
A peer that cannot run (torch missing, ...) or a disttrain feature that is not there yet gives
"n/a" and a note in its row, never a crash. The generated configs live in a temp dir; the 2 GB CSV
of the load rows is made once in --cache-dir and reused (--delete-csv removes it at the end).
What each row measures and how: bench/README.md.
"""

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"  # Debian's interpreter: numpy, torch and sklearn live there
OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-serial"
MIB = 1 << 20
BEGIN, END = "<!-- bench_all:begin -->", "<!-- bench_all:end -->"


# ---------------------------------------------------------------------------------------------
# The table: one Row per line, built by the row functions below, written in one place (write_*).

@dataclass
class Row:
    section: str
    job: str
    ours: str                 # disttrain's figure, formatted with its unit
    peer: str                 # the peer's or the limit's figure, with its name
    ratio: str                # as the target states it (e.g. "DDP time / disttrain time")
    target: str
    met: bool | None          # None: not measured (n/a) or no target
    note: str = ""
    values: dict = field(default_factory=dict)  # the raw numbers behind the row


ROWS: list[Row] = []


def add(section, job, ours, peer, ratio, target, met, note="", **values):
    row = Row(section, job, ours, peer, ratio, target, met, note, values)
    ROWS.append(row)
    mark = {True: "yes", False: "NO", None: "n/a", OUT_OF_REACH: "OUT OF REACH"}[met]
    print(f"  {job}: {ours} | {peer} | {ratio} | {target} | {mark}"
          + (f"  ({note})" if note else ""), flush=True)


def fmt(value, unit="", digits=3):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        text = f"{value:.{digits}g}" if abs(value) < 10 ** digits else f"{value:,.0f}"
    else:
        text = f"{value:,}"
    return f"{text} {unit}".strip()


def ratio_of(a, b):
    return a / b if a is not None and b not in (None, 0) else None


# A target proven out of reach on this machine by a limit measured in the same pass (the note
# says which): the table marks it apart from the ones met and missed.
OUT_OF_REACH = "out of reach"


def check(value, op, bound):
    if value is None:
        return None
    return value >= bound if op == ">=" else value <= bound


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# ---------------------------------------------------------------------------------------------
# Running things: every child in its own process group, killed with it on a timeout.

@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str
    seconds: float

    def why(self):
        lines = [l for l in self.stderr.strip().splitlines() if l.strip()]
        return f"exit {self.code}: " + (lines[-1][:200] if lines else "no message")


def run(cmd, env=None, timeout=900, cwd=None):
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\ntimed out after {timeout} s"
    return Ran(proc.returncode, out, err, time.monotonic() - start)


def json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


# The OpenBLAS kernels disttrain multiplies with on this machine (summary.json `blas_kernels`),
# set by main() before the rows: the numpy peers get the same ones, so that an OpenBLAS too old
# to know this CPU (it then falls back to SSE3 "Prescott" kernels) slows neither side.
BLAS_KERNELS = None


def blas_env():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    if os.path.isdir(OPENBLAS_DIR):
        env["LD_LIBRARY_PATH"] = OPENBLAS_DIR
    if BLAS_KERNELS and "OPENBLAS_CORETYPE" not in os.environ:
        env["OPENBLAS_CORETYPE"] = BLAS_KERNELS
    return env


class Bench:
    """What every row needs: the binary, the peers, a temp dir for configs, the repetitions."""

    def __init__(self, args, tmp):
        self.binary = str(Path(args.binary).resolve())
        self.peers = Path(args.peers).resolve()
        self.tmp = Path(tmp)
        self.cache = Path(args.cache_dir)
        self.reps = 1 if args.quick else args.reps
        self.tiny_reps = 5 if args.quick else 15
        self.quick = args.quick
        self.build_dir = self.cache / "peers_build"   # the peers compile their C/C++ here
        self.counter = 0
        self.raw = {}                                  # every sample, for all.json

    def record(self, key, value):
        self.raw.setdefault(key, []).append(value)

    # -- disttrain ------------------------------------------------------------------------

    def disttrain(self, name, body, command="run", timeout=900, inspect=None):
        """Runs `disttrain <command>` on a config (the body below `version`, `name` and `output`).
        Returns (summary or None, Ran); summary is None with the reason in Ran when it failed.
        inspect(run_dir, summary), if given, sees a successful run's outputs before they go."""
        self.counter += 1
        folder = self.tmp / f"{name}-{self.counter}"
        folder.mkdir()
        cfg = folder / "config.yaml"
        # A generous worker timeout: on a loaded shared machine a heartbeat can be late, and a
        # benchmark is not the place to test fault detection.
        cfg.write_text(f"version: 1\nname: {name}\n{body.strip()}\n"
                       "fault_tolerance: {worker_timeout_ms: 60000}\n"
                       f"output: {{dir: {folder}/run, log_every: {{steps: 100000}}}}\n")
        ran = run([self.binary, command, str(cfg), "--json"], timeout=timeout)
        summary = None
        if ran.code == 0:
            try:
                summary = json.loads(ran.stdout)
            except json.JSONDecodeError:
                ran.stderr += "\nstdout is not one JSON object"
        if summary and inspect:
            inspect(folder / "run", summary)
        shutil.rmtree(folder / "run", ignore_errors=True)
        return summary, ran

    # -- peers ----------------------------------------------------------------------------

    def peer_json(self, script, *args, env=None, pick=None):
        """Runs a Python peer; returns (its last JSON line or None, Ran)."""
        path = self.peers / script
        if not path.exists():
            return None, Ran(127, "", f"{path} not found", 0.0)
        ran = run([PY, str(path), *map(str, args)], env=env or blas_env())
        lines = [l for l in json_lines(ran.stdout) if pick is None or pick(l)]
        return (lines[-1] if ran.code == 0 and lines else None), ran

    def zmq(self, *args):
        """zmq_bench from run_zmq.sh: built by the script the first time, then run directly."""
        exe = self.build_dir / "zmq_bench"
        env = dict(os.environ, BUILD_DIR=str(self.build_dir))
        if not exe.exists():
            ran = run(["bash", str(self.peers / "run_zmq.sh"), *args], env=env, timeout=300)
        else:
            ran = run([str(exe), *args], timeout=300)
        lines = [l for l in json_lines(ran.stdout) if l.get("bench", "").startswith("zmq_")]
        return (lines[-1] if ran.code == 0 and lines else None), ran

    def rtt_us(self):
        res, ran = self.zmq("lat", "--transport", "ipc", "--size", "8", "--iters",
                            "2000" if self.quick else "5000", "--warmup", "200")
        value = res["rtt_median_us"] if res else None
        self.record("ipc_rtt_us", value)
        return value

    def thr_mbps(self):
        res, ran = self.zmq("thr", "--transport", "ipc", "--size", str(8 * MIB), "--count",
                            "60" if self.quick else "120", "--reps", "3")
        value = res["MBps_median"] if res else None
        self.record("ipc_8MiB_MBps", value)
        return value


def summary_value(summary, key):
    return summary.get(key) if summary else None


def compute_seconds(summary):
    return sum(w["compute_seconds"] for w in summary["worker_stats"]) if summary else None


def failure_note(what, rans):
    bad = [r for r in rans if r is not None and r.code != 0]
    return f"{what} failed ({bad[-1].why()})" if bad else ""


def notes(*parts):
    return "; ".join(p for p in parts if p)


# ---------------------------------------------------------------------------------------------
# The rows, one function each. Each interleaves disttrain and its peer rep by rep.

def row_limits(b):
    print("limits: STREAM, ZeroMQ ipc", flush=True)
    env = dict(os.environ, BUILD_DIR=str(b.build_dir), THREADS="1 2")
    # 160 MB arrays (far beyond any cache) keep it quick and leave memory to the other users.
    ran = run(["bash", str(b.peers / "run_stream.sh"), "--n", "20000000", "--sum-bytes",
               str(256 * MIB), "--reps", "5"], env=env, timeout=600)
    stream = {(l["threads"], l["kernel"]): l["median_gbs"]
              for l in json_lines(ran.stdout) if l.get("bench") == "stream"}
    b.raw["stream"] = {f"{k}_{t}t": v for (t, k), v in stream.items()}
    note = failure_note("run_stream.sh", [ran])
    # A training epoch only reads its data: the read-only sum is the kernel to compare with.
    for t in (1, 2):
        gbs = stream.get((t, "sum_1GiB"))
        add("limits", f"STREAM {t} thread{'s' if t > 1 else ''} (read-only sum; triad "
            f"{fmt(stream.get((t, 'triad')), 'GB/s')})", "", fmt(gbs, "GB/s"), "", "", None, note)
    b.stream2 = stream.get((2, "sum_1GiB"))
    row_random_rows(b)
    rtt, thr = b.rtt_us(), b.thr_mbps()
    add("limits", "ZeroMQ ipc round trip, 8 B (REQ/REP median)", "", fmt(rtt, "µs"), "", "", None,
        "re-measured beside the small steps, median of all")
    add("limits", "ZeroMQ ipc throughput, 8 MiB messages (PUSH/PULL)", "", fmt(thr, "MB/s"), "",
        "", None, "re-measured beside the 1M-parameter steps, median of all")
    b.limit_rows = ROWS[-2:]


def row_random_rows(b):
    """The memory limit of a shuffled epoch (bench/random_rows.c): one thread a core reads
    800-byte rows (100 float64, a linreg row) of its own 400 MB buffer in a shuffled order, every
    byte once and nothing else, with the best prefetch of those it tries; beside the same loop
    in order and STREAM. No training loop that reads a shuffled epoch's rows can beat it."""
    exe = b.build_dir / "random_rows"
    source = ROOT / "bench" / "random_rows.c"
    b.random_rows = None
    if not exe.exists() or exe.stat().st_mtime < source.stat().st_mtime:
        b.build_dir.mkdir(parents=True, exist_ok=True)
        built = run(["gcc", "-O3", "-pthread", str(source), "-o", str(exe)])
        if built.code != 0:
            add("limits", "random 800-byte rows, 2 threads", "", "n/a", "", "", None,
                failure_note("gcc random_rows.c", [built]))
            return
    ran = run([str(exe), "--threads", "2", "--rows", "500000", "--reps", "3" if b.quick else "5"],
              timeout=600)
    lines = json_lines(ran.stdout)
    best = next((l for l in lines if l.get("bench") == "random_rows_best"), None)
    ordered = next((l for l in lines if l.get("order") == "sequential"), None)
    b.raw["random_rows"] = lines
    if ran.code != 0 or best is None:
        add("limits", "random 800-byte rows, 2 threads", "", "n/a", "", "", None,
            failure_note("random_rows", [ran]))
        return
    b.random_rows = best["gbs"]
    share = ratio_of(best["gbs"], b.stream2)
    add("limits", "random 800-byte rows, 2 threads, best prefetch (a shuffled epoch's reads at "
        "best; bench/random_rows.c)", "", fmt(best["gbs"], "GB/s"),
        fmt(share * 100 if share else None, "% of STREAM"), "", None,
        f"prefetch {best['ahead']} rows ahead, hint {best['hint']}; the same loop in order: "
        f"{fmt(ordered and ordered['gbs'], 'GB/s')}")


def random_rows_bound(b, gbs_needed, what):
    """(met, note) for a target that needs `gbs_needed` of shuffled rows: out of reach when the
    random-rows limit of this pass is below it (no code can read a shuffled epoch faster)."""
    limit = getattr(b, "random_rows", None)
    if not limit or not gbs_needed:
        return None, ""
    if gbs_needed > limit:
        return OUT_OF_REACH, (f"{what} needs {fmt(gbs_needed, 'GB/s')} of shuffled rows, "
                              f"{gbs_needed / limit:.2f} × the random-rows limit of this pass "
                              f"({fmt(limit, 'GB/s')}): out of reach on this machine")
    return None, (f"{what} needs {fmt(gbs_needed, 'GB/s')} of shuffled rows, "
                  f"{100 * gbs_needed / limit:.0f}% of the random-rows limit ({fmt(limit, 'GB/s')})")


LINREG = """
seed: 1
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 1000000, features: 100, noise: 0.1}}}}
shards: {{count: {workers}}}
aggregation: {{mode: gradients, topology: {topology}}}
training: {{epochs: 3, batch_size: 2000, shuffle: {shuffle}, optimizer: {{type: sgd, lr: 0.05}}}}
transport: {{type: ipc}}
"""


def row_linreg(b):
    print("linreg 1M x 100 f64, 2 workers, batch 2000, 3 epochs", flush=True)
    # The numpy peer takes contiguous batches without shuffling: "the same steps" is disttrain
    # with shuffle: false. The default (shuffled rows) is measured too, against DDP. The targets
    # are read on the ring (workers all-reduce among themselves, as DDP's gloo ring does); the
    # star (the default topology, the coordinator summing every step) is shown beside it.
    runs = {(t, sh): [] for t in ("ring", "star") for sh in ("true", "false")}
    ddp, numpy = [], []
    for _ in range(b.reps):
        for (topology, shuffle), got in runs.items():
            got.append(b.disttrain(f"linreg-{topology}-{shuffle}",
                                   LINREG.format(workers=2, shuffle=shuffle, topology=topology)))
        ddp.append(b.peer_json("torch_ddp.py", "--model", "linreg", "--workers", 2, "--rows",
                               1000000, "--features", 100, "--batch", 1000, "--epochs", 3,
                               "--lr", 0.05, "--dtype", "float64"))
        numpy.append(b.peer_json("numpy_ref.py", "--model", "linreg", "--rows", 1000000,
                                 "--features", 100, "--method", "sgd", "--batch", 2000,
                                 "--epochs", 3))
    train = {k: median(summary_value(s, "train_seconds") for s, _ in v) for k, v in runs.items()}
    note = {k: failure_note("disttrain", [r for _, r in v]) for k, v in runs.items()}
    ours = runs[("ring", "true")]
    wall = median(r.seconds for s, r in ours if s)
    ddp_train = median(p["t_train_s"] for p, _ in ddp if p)
    ddp_wall = median(r.seconds for p, r in ddp if p)
    np_train = median(p["t_train_s"] for p, _ in numpy if p)
    ddp_note = failure_note("torch_ddp.py", [r for _, r in ddp])
    np_note = failure_note("numpy_ref.py", [r for _, r in numpy])
    blas = next((p.get("blas") for p, _ in numpy if p), None)
    b.raw["linreg"] = {f"train_s_{t}_shuffle_{sh}": [summary_value(s, "train_seconds") for s, _ in v]
                       for (t, sh), v in runs.items()}
    b.raw["linreg"].update({"ddp_train_s": [p and p["t_train_s"] for p, _ in ddp],
                            "numpy_train_s": [p and p["t_train_s"] for p, _ in numpy],
                            "numpy_blas": blas})
    for topology in ("ring", "star"):
        targeted = topology == "ring"
        label = "ring" if targeted else "star, the default topology"
        shuffled, ordered = train[(topology, "true")], train[(topology, "false")]
        r = ratio_of(ddp_train, shuffled)
        met = check(r, ">=", 15) if targeted else None
        bound = ""
        if targeted and met is False and ddp_train:
            reach, bound = random_rows_bound(b, LINREG_BYTES / (ddp_train / 15) / 1e9, "15× DDP")
            met = reach or met
        add("linreg", f"training vs PyTorch DDP (2 workers, f64; {label})", fmt(shuffled, "s"),
            f"DDP {fmt(ddp_train, 's')}", fmt(r, "×"), "≥ 15×" if targeted else "—", met,
            notes(note[(topology, "true")], ddp_note,
                  scan_bound(b, ddp_train, 15, "DDP") if targeted else "", bound))
        r = ratio_of(np_train, ordered)
        add("linreg", f"training vs one numpy process, same steps (no shuffle; OpenBLAS; {label})",
            fmt(ordered, "s"), f"numpy {fmt(np_train, 's')}", fmt(r, "×"),
            "≥ 1.8×" if targeted else "—", check(r, ">=", 1.8) if targeted else None,
            notes(note[(topology, "false")], np_note,
                  scan_bound(b, np_train, 1.8, "numpy") if targeted else ""))
    for label, key in (("no shuffle", ("ring", "false")), ("shuffled rows", ("ring", "true"))):
        seconds = train[key]
        gbs = LINREG_BYTES / seconds / 1e9 if seconds else None
        r = ratio_of(gbs, b.stream2)
        met, bound = check(r, ">=", 0.5), ""
        if key[1] == "true" and b.stream2:
            reach, bound = random_rows_bound(b, 0.5 * b.stream2, "50% of STREAM")
            met = reach if met is False and reach else met
            limit = getattr(b, "random_rows", None)
            if gbs and limit:
                bound += f"; disttrain reads at {100 * gbs / limit:.0f}% of that limit"
        add("linreg", f"bytes scanned per second vs 2-thread STREAM ({label}; ring)",
            fmt(gbs, "GB/s"), f"STREAM {fmt(b.stream2, 'GB/s')}", fmt(r * 100 if r else None, "%"),
            "≥ 50%", met, notes(note[key], bound))
    r = ratio_of(ddp_wall, wall)
    add("linreg", "whole process (start-up, data, training, evaluation; ring)", fmt(wall, "s"),
        f"DDP {fmt(ddp_wall, 's')}", fmt(r, "×"), "—", None, notes(note[("ring", "true")], ddp_note))
    row_memory(b, [s for s, _ in ours if s], note[("ring", "true")])


LINREG_BYTES = 3 * 1_000_000 * 100 * 8  # the features the 3 epochs read, once each


def scan_bound(b, peer_seconds, factor, peer):
    """What `factor` times `peer` asks of memory: every epoch reads the 2.4 GB of features at
    least once, so the training time is at least those bytes over the 2-thread STREAM bandwidth
    of this pass. A target that needs more than that bandwidth is out of reach on this machine
    whatever the code does; the note says so, or how much of the bandwidth it needs."""
    if not peer_seconds or not b.stream2:
        return ""
    seconds = peer_seconds / factor
    needed = LINREG_BYTES / seconds / 1e9
    share = needed / b.stream2
    if share > 1:
        return (f"{factor:g}× {peer} is {fmt(seconds, 's')}: {fmt(needed, 'GB/s')} of features "
                f"read, {share:.2f} × the 2-thread STREAM bandwidth: out of reach on this machine")
    return (f"{factor:g}× {peer} is {fmt(seconds, 's')}: {fmt(needed, 'GB/s')} of features read, "
            f"{100 * share:.0f}% of the 2-thread STREAM bandwidth")


def row_memory(b, summaries, note):
    """Peak RSS of each process of the linreg runs against 1.3 × the data it holds + 20 MiB.
    A worker holds its rows' features and labels as doubles; the coordinator of a synthetic run
    holds no rows."""
    if not summaries or "max_rss_bytes" not in summaries[0]:
        add("memory", "peak RSS per process, linreg 1M×100, 2 workers", "n/a", "", "", "≤ 1.0",
            None, note or "summary.json has no max_rss_bytes (this build does not report it)")
        return
    procs = [("coordinator", lambda s: s["max_rss_bytes"], lambda s: 0)]
    for rank in range(len(summaries[0]["worker_stats"])):
        procs.append((f"worker {rank}",
                      lambda s, r=rank: s["worker_stats"][r].get("max_rss_bytes"),
                      lambda s, r=rank: s["worker_stats"][r]["rows"] * 101 * 8))
    for name, rss_of, data_of in procs:
        rss = median(rss_of(s) for s in summaries)
        data = median(data_of(s) for s in summaries)
        limit = 1.3 * data + 20 * MIB
        r = ratio_of(rss, limit)
        add("memory", f"peak RSS, {name} (holds {fmt(data / MIB, 'MiB')} of data)",
            fmt(rss / MIB if rss else None, "MiB"), f"limit {fmt(limit / MIB, 'MiB')}",
            fmt(r, "× limit"), "≤ 1.0", check(r, "<=", 1.0), note, rss=rss, data=data)


SMALL = """
seed: 1
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: {rows}, features: 10}}}}
shards: {{count: {workers}}}
training: {{epochs: 1, batch_size: 32}}
transport: {{type: ipc}}
"""


def row_small_steps(b):
    print("small steps: 10 features, batch 32", flush=True)
    rows = 50_000 if b.quick else 100_000
    per_step = {1: [], 2: []}
    compute = {1: [], 2: []}   # the busiest worker's compute_seconds a step, µs
    rans = []
    for _ in range(b.reps):
        b.rtt_us()
        for workers in (2, 1):
            summary, ran = b.disttrain("small", SMALL.format(rows=rows, workers=workers))
            rans.append(ran)
            if summary:
                per_step[workers].append(1e6 * summary["train_seconds"] / summary["steps"])
                compute[workers].append(1e6 * max(w["compute_seconds"] for w in
                                                  summary["worker_stats"]) / summary["steps"])
    b.raw["small_steps_us"] = per_step
    b.raw["small_steps_compute_us"] = compute
    rtt = median(b.raw["ipc_rtt_us"])
    us2, us1 = median(per_step[2]), median(per_step[1])
    note = failure_note("disttrain", rans)
    r = ratio_of(us2, rtt)
    add("small steps", "2 workers, µs per step vs ipc round trip", fmt(us2, "µs"),
        f"round trip {fmt(rtt, 'µs')}", fmt(r, "× RTT"), "≤ 2×", check(r, "<=", 2), note)
    r = ratio_of(us1, us2)
    # What a second worker can win: half of one worker's compute a step, at most; what it adds:
    # the coordinator's second message each way, on 2 cores shared by 3 processes.
    c1 = median(compute[1])
    why = (f"a second worker can save at most half of 1 worker's compute a step, "
           f"{fmt(c1 / 2 if c1 else None, 'µs')}; 1 worker's exchange a step (its step less its "
           f"compute) is {fmt(us1 - c1 if us1 and c1 else None, 'µs')}") if c1 else ""
    add("small steps", "2 workers vs 1 worker, same global batch", fmt(us2, "µs"),
        f"1 worker {fmt(us1, 'µs')}", fmt(r, "×"), "≥ 1× (never slower)", check(r, ">=", 1.0),
        notes(note, why))


MLP = """
seed: 1
model: {{type: mlp, hidden: [64], activation: relu, task: binary, dtype: {dtype}}}
data: {{synthetic: {{kind: logistic, rows: 200000, features: 100}}}}
shards: {{count: {workers}}}
aggregation: {{mode: gradients, topology: {topology}}}
training: {{epochs: 2, batch_size: 512, optimizer: {{type: sgd, lr: 0.1}}}}
transport: {{type: ipc}}
"""

DGEMM = r"""
import json, os, time
import numpy as np
rng = np.random.default_rng(0)
x, w, d = (rng.standard_normal(s) for s in ((256, 100), (100, 64), (256, 64)))
h, g = np.empty((256, 64)), np.empty((100, 64))
def block(n):
    t = time.perf_counter()
    for _ in range(n):
        np.matmul(x, w, out=h)      # forward: batch x inputs times inputs x hidden
        np.matmul(x.T, d, out=g)    # backward: the first layer's weight gradient
    return 2 * n * 2 * 256 * 100 * 64 / (time.perf_counter() - t) / 1e9
block(200)
rates = sorted(block(1000) for _ in range(5))
maps = {os.path.realpath(l.split()[-1]) for l in open("/proc/self/maps") if "/" in l}
print(json.dumps({"gflops": rates[2], "blas": sorted(p for p in maps if "blas" in p)}))
"""


def mlp_flops_per_row(features=100, hidden=64, outputs=1):
    """Forward 2(FH + HO), weight gradients 2(FH + HO), the hidden layer's gradient 2HO
    (no gradient is needed for the inputs); the element-wise work is not counted."""
    return 4 * features * hidden + 6 * hidden * outputs


def row_mlp(b):
    print("MLP 200k x 100 -> 64, batch 256 per worker, 2 epochs", flush=True)
    # As for linreg, the targets are read on the ring (the workers all-reduce among themselves,
    # as DDP does); the star (the default topology: the coordinator sums and steps every step)
    # is shown beside it. Each topology's 2 workers are set against its own 1 worker.
    topologies = ("ring", "star")
    runs = {t: {2: [], 1: []} for t in topologies}
    runs32 = {t: {2: [], 1: []} for t in topologies}  # model.dtype float32: single-precision products
    ddp = {"float64": [], "float32": []}
    gemm = []
    for _ in range(b.reps):
        for topology in topologies:
            for workers in (2, 1):
                runs[topology][workers].append(b.disttrain("mlp", MLP.format(
                    workers=workers, dtype="float64", topology=topology)))
                runs32[topology][workers].append(b.disttrain("mlp", MLP.format(
                    workers=workers, dtype="float32", topology=topology)))
        for dtype in ddp:
            ddp[dtype].append(b.peer_json(
                "torch_ddp.py", "--model", "mlp", "--workers", 2, "--rows", 200000, "--features",
                100, "--hidden", 64, "--batch", 256, "--epochs", 2, "--lr", 0.1, "--dtype", dtype))
        ran = run([PY, "-c", DGEMM], env=blas_env(), timeout=300)
        lines = json_lines(ran.stdout)
        gemm.append((lines[-1] if ran.code == 0 and lines else None, ran))
    peer = {d: median(p["t_train_s"] for p, _ in results if p) for d, results in ddp.items()}
    peer_note = {d: failure_note("torch_ddp.py", [r for _, r in results])
                 for d, results in ddp.items()}
    for topology in topologies:
        targeted = topology == "ring"
        label = "ring" if targeted else "star, the default topology"
        target = lambda text: text if targeted else "—"
        judge = lambda r, bound: check(r, ">=", bound) if targeted else None
        train = {w: median(summary_value(s, "train_seconds") for s, _ in runs[topology][w])
                 for w in (2, 1)}
        note = failure_note("disttrain", [r for w in (2, 1) for _, r in runs[topology][w]])
        for dtype in ddp:
            r = ratio_of(peer[dtype], train[2])
            add("MLP", f"training vs PyTorch DDP (2 workers, {dtype}; {label})", fmt(train[2], "s"),
                f"DDP {fmt(peer[dtype], 's')}", fmt(r, "×"), target("≥ 4×"), judge(r, 4),
                notes(note, peer_note[dtype]))
        r = ratio_of(train[1], train[2])
        add("MLP", f"2 workers vs 1 worker, same total work (global batch 512; {label})",
            fmt(train[2], "s"), f"1 worker {fmt(train[1], 's')}", fmt(r, "×"), target("≥ 1.6×"),
            judge(r, 1.6), note)
        # The fair pair for DDP float32: disttrain with model.dtype float32 (products in
        # float32, parameters and the exchanged gradient sums in float64).
        train32 = {w: median(summary_value(s, "train_seconds") for s, _ in runs32[topology][w])
                   for w in (2, 1)}
        note32 = failure_note("disttrain float32",
                              [r for w in (2, 1) for _, r in runs32[topology][w]])
        r = ratio_of(peer["float32"], train32[2])
        add("MLP", f"training, model.dtype float32 vs PyTorch DDP (2 workers, float32; {label})",
            fmt(train32[2], "s"), f"DDP {fmt(peer['float32'], 's')}", fmt(r, "×"),
            target("≥ 4×"), judge(r, 4), notes(note32, peer_note["float32"]))
        r = ratio_of(train32[1], train32[2])
        add("MLP", f"2 workers vs 1 worker, model.dtype float32 (global batch 512; {label})",
            fmt(train32[2], "s"), f"1 worker {fmt(train32[1], 's')}", fmt(r, "×"),
            target("≥ 1.6×"), judge(r, 1.6), note32)
    note = failure_note("disttrain", [r for w in (2, 1) for _, r in runs["ring"][w]])
    note32 = failure_note("disttrain float32", [r for w in (2, 1) for _, r in runs32["ring"][w]])
    star, star32 = runs["star"], runs32["star"]
    runs, runs32 = runs["ring"], runs32["ring"]  # the products' rate: the targeted runs
    cpu = {d: median(compute_seconds(s) for s, _ in rs[2]) for d, rs in (("float64", runs),
                                                                           ("float32", runs32))}
    r = ratio_of(cpu["float64"], cpu["float32"])
    add("MLP", "workers' compute seconds, float64 / float32 (2 workers)", fmt(cpu["float32"], "s"),
        f"float64 {fmt(cpu['float64'], 's')}", fmt(r, "×"), "—", None, note32)
    flops = mlp_flops_per_row() * 200_000 * 2
    rates = [flops / compute_seconds(s) / 1e9 for s, _ in runs[2] if s and compute_seconds(s)]
    ours = median(rates)
    peer = median(g["gflops"] for g, _ in gemm if g)
    blas = next((g["blas"] for g, _ in gemm if g), None)
    b.raw["mlp"] = {"train_s_ring": {w: [summary_value(s, "train_seconds") for s, _ in runs[w]]
                                     for w in runs},
                    "float32_train_s_ring": {w: [summary_value(s, "train_seconds")
                                                 for s, _ in runs32[w]] for w in runs32},
                    "train_s_star": {w: [summary_value(s, "train_seconds") for s, _ in star[w]]
                                     for w in star},
                    "float32_train_s_star": {w: [summary_value(s, "train_seconds")
                                                 for s, _ in star32[w]] for w in star32},
                    "worker_gflops": rates, "dgemm_gflops": [g and g["gflops"] for g, _ in gemm],
                    "dgemm_blas": blas, "flops_per_row": mlp_flops_per_row()}
    r = ratio_of(ours, peer)
    add("MLP", "dense products: GFLOPS per core over the workers' compute_seconds",
        fmt(ours, "GFLOPS"), f"OpenBLAS dgemm {fmt(peer, 'GFLOPS')}",
        fmt(r * 100 if r else None, "%"), "≥ 50%", check(r, ">=", 0.5),
        notes(note, failure_note("dgemm probe", [r for _, r in gemm]),
              f"numpy loaded {', '.join(Path(p).name for p in blas)}" if blas else ""))


WIDE = """
seed: 1
model: {{type: softmax_regression}}
data: {{synthetic: {{kind: blobs, rows: 16, features: 100000, classes: 10}}}}
shards: {{count: 2}}
aggregation: {{mode: gradients, topology: {topology}}}
training: {{epochs: 2, batch_size: 2, shuffle: false}}
transport: {{type: ipc}}
"""


def row_wide(b):
    """Softmax regression, 100,000 features x 10 classes (1,000,010 parameters, 8 MB) on 16
    rows, one row per worker per step: the step is almost all communication. (A linear model
    with 1M features needs 10x the generated values for the same parameters: slower to set up.)"""
    print("1M-parameter model, 2 workers, star and ring", flush=True)
    runs = {"star": [], "ring": []}
    for _ in range(b.reps):
        b.thr_mbps()
        for topology in runs:
            runs[topology].append(b.disttrain("wide", WIDE.format(topology=topology)))
    thr = median(b.raw["ipc_8MiB_MBps"])
    for topology, results in runs.items():
        ok = [s for s, _ in results if s]
        ms = median(1e3 * s["train_seconds"] / s["steps"] for s in ok)
        # What one worker moves per step, both directions (the busiest worker).
        moved = median(max(w["bytes_sent"] + w["bytes_received"] for w in s["worker_stats"])
                       / s["steps"] for s in ok)
        bound_ms = 1e3 * moved / (thr * 1e6) if moved and thr else None
        r = ratio_of(bound_ms, ms)
        # The same with the two directions overlapped (a full-duplex link): the busier one.
        one_way = median(max(max(w["bytes_sent"], w["bytes_received"]) for w in s["worker_stats"])
                         / s["steps"] for s in ok)
        duplex_ms = 1e3 * one_way / (thr * 1e6) if one_way and thr else None
        duplex = ratio_of(duplex_ms, ms)
        add("1M parameters", f"{topology}: ms per step vs its link bound", fmt(ms, "ms"),
            f"{fmt(moved / 1e6 if moved else None, 'MB')}/step at {fmt(thr, 'MB/s')} = "
            f"{fmt(bound_ms, 'ms')}", fmt(r * 100 if r else None, "% of bound"), "≥ 70%",
            check(r, ">=", 0.7),
            notes(failure_note("disttrain", [r for _, r in results]),
                  f"one direction only (full duplex): {fmt(duplex_ms, 'ms')} bound, "
                  f"{fmt(duplex * 100 if duplex else None, '%')}" if duplex_ms else ""),
            ms=ms, bytes_per_step=moved, one_way_bytes_per_step=one_way)


TINY = """
seed: 1
model: {type: linear_regression}
data: {synthetic: {kind: linear, rows: 1000, features: 10}}
shards: {count: 2}
training: {epochs: 1, batch_size: 32}
transport: {type: ipc}
"""


def row_tiny(b):
    print(f"tiny job end to end ({b.tiny_reps} reps)", flush=True)
    walls, zmq, rans = [], [], []
    for _ in range(b.tiny_reps):
        summary, ran = b.disttrain("tiny", TINY)
        rans.append(ran)
        if summary:
            walls.append(ran.seconds)
        res, zran = b.zmq("lat", "--transport", "ipc", "--size", "8", "--iters", "1",
                          "--warmup", "0")
        if res:
            zmq.append(zran.seconds)
    ours, peer = median(walls), median(zmq)
    b.raw["tiny_wall_s"], b.raw["zmq_fork_connect_rtt_s"] = walls, zmq
    add("tiny job", "1000 rows, 2 workers, whole `disttrain run`",
        fmt(1e3 * ours if ours else None, "ms"),
        f"zmq_bench fork + connect + 1 round trip {fmt(1e3 * peer if peer else None, 'ms')}",
        fmt(ratio_of(ours, peer), "× peer"), "≤ 50 ms", check(ours, "<=", 0.050),
        failure_note("disttrain", rans))


CSV_RUN = """
seed: 1
model: {{type: linear_regression}}
data: {{path: {path}}}
shards: {{count: {workers}}}
training: {{epochs: 1, batch_size: 2000, optimizer: {{type: sgd, lr: 0.05}}}}
transport: {{type: ipc}}
"""


def cached_file(b, name, command):
    """cache dir / name: the stdout of `command`, made once and kept (written to a temp name,
    then renamed, so an interrupted generation is never reused); None when the command fails."""
    path = b.cache / name
    if not path.exists():
        b.cache.mkdir(parents=True, exist_ok=True)
        print(f"  generating {path} (once)", flush=True)
        part = path.with_suffix(f".part{os.getpid()}")
        with open(part, "w") as out:
            code = subprocess.run(command, stdout=out, timeout=1800).returncode
        if code != 0:
            part.unlink(missing_ok=True)
            return None
        part.rename(path)
    return path


def csv_file(b):
    """The 1M x 100 CSV, made once and kept in the cache dir."""
    return cached_file(b, "linear_1M_100.csv", [b.binary, "gen", "linear", "--rows", "1000000",
                                                "--features", "100", "--seed", "1"])


def row_csv(b):
    print("CSV load, 1M x 100", flush=True)
    path = csv_file(b)
    if path is None:
        add("CSV load", "1M×100 CSV", "n/a", "", "", "", None, "disttrain gen failed")
        return
    size = path.stat().st_size
    run(["wc", "-l", str(path)])  # into the page cache: every reader below sees a warm file
    wc, validate, load = [], [], {1: [], 2: []}
    rans = []
    for _ in range(b.reps):
        wc.append(size / run(["wc", "-l", str(path)]).seconds / 1e6)
        summary, ran = b.disttrain("csv", CSV_RUN.format(path=path, workers=1), "validate")
        rans.append(ran)
        if ran.code == 0:
            validate.append(size / ran.seconds / 1e6)
        for workers in (1, 2):
            summary, ran = b.disttrain("csv", CSV_RUN.format(path=path, workers=workers))
            rans.append(ran)
            if summary:
                # Everything but the training loop: start-up, parsing, final evaluation, outputs.
                # An upper bound on the parse time, so the rate is a lower bound.
                load[workers].append(size / workers / (ran.seconds - summary["train_seconds"]) / 1e6)
    note = failure_note("disttrain", rans)
    wc_rate = median(wc)
    b.raw["csv"] = {"bytes": size, "wc_MBps": wc, "validate_MBps": validate,
                    "run_MBps_per_core": load}
    peer = f"wc -l {fmt(wc_rate, 'MB/s')}"
    rate = median(validate)
    add("CSV load", f"`disttrain validate` ({size / 1e9:.2f} GB), one core", fmt(rate, "MB/s"),
        peer, fmt(ratio_of(rate, wc_rate), "× wc"), "≥ 500 MB/s", check(rate, ">=", 500), note)
    for workers in (1, 2):
        rate = median(load[workers])
        add("CSV load", f"1-epoch run, {workers} worker{'s' if workers > 1 else ''}, per core "
            "(bytes ÷ workers ÷ (wall − train))", fmt(rate, "MB/s"), peer,
            fmt(ratio_of(rate, wc_rate), "× wc"), "≥ 500 MB/s", check(rate, ">=", 500), note)
    one, two = median(load[1]), median(load[2])
    scaling = ratio_of(2 * two if two else None, one)
    add("CSV load", "scaling: 2 workers' total rate ÷ 1 worker's", fmt(scaling, "×"), "", "",
        "≥ 1.6×", check(scaling, ">=", 1.6), note)
    if b.delete_csv:
        path.unlink()


def libsvm_file(b):
    """The 1M x 100 CSV as LIBSVM (label first, 1-based index:value pairs), made once with awk
    beside it in the cache dir."""
    if (b.cache / "linear_1M_100.svm").exists():
        return b.cache / "linear_1M_100.svm"
    csv = csv_file(b)
    script = 'NR > 1 { s = $NF; for (i = 1; i < NF; i++) s = s " " i ":" $i; print s }'
    return cached_file(b, "linear_1M_100.svm", ["awk", "-F,", script, str(csv)]) if csv else None


def row_libsvm(b):
    print("LIBSVM load, 1M x 100", flush=True)
    path = libsvm_file(b)
    if path is None:
        add("LIBSVM load", "1M×100 LIBSVM", "n/a", "", "", "", None, "making the file failed")
        return
    size = path.stat().st_size
    run(["sh", "-c", f"cat '{path}' > /dev/null"])  # into the page cache
    cat, validate, rans = [], [], []
    for _ in range(b.reps):
        cat.append(size / run(["sh", "-c", f"cat '{path}' > /dev/null"]).seconds / 1e6)
        summary, ran = b.disttrain("libsvm", CSV_RUN.format(path=path, workers=1), "validate")
        rans.append(ran)
        if ran.code == 0:
            validate.append(size / ran.seconds / 1e6)
    b.raw["libsvm"] = {"bytes": size, "cat_MBps": cat, "validate_MBps": validate}
    rate, cat_rate = median(validate), median(cat)
    add("LIBSVM load", f"`disttrain validate` ({size / 1e9:.2f} GB), one core (indexes the file, "
        "then parses every row)", fmt(rate, "MB/s"), f"cat {fmt(cat_rate, 'MB/s')}",
        fmt(ratio_of(rate, cat_rate), "× cat"), "≥ 300 MB/s", check(rate, ">=", 300),
        failure_note("disttrain", rans))
    if b.delete_csv:
        path.unlink()
        (b.cache / "linear_1M_100.csv").unlink(missing_ok=True)  # made again when the .svm was


OPTIONS_RUN = """
seed: 1
model: {{type: linear_regression}}
data:
  path: {path}
  delimiter: comma
  exclude: [id]
  categorical: {{shop: one_hot}}
  missing: mean
shards: {{count: 1}}
training: {{epochs: 1, batch_size: 2000, optimizer: {{type: sgd, lr: 0.05}}}}
transport: {{type: ipc}}
"""


def derived_file(b, name, shell):
    """A file made once from the cached 1M x 100 CSV by a shell command reading it as $CSV."""
    csv = csv_file(b)
    if csv is None:
        return None
    return cached_file(b, name, ["sh", "-c", shell.replace("$CSV", f"'{csv}'")])


def row_formats(b):
    """The CSV's other shapes, `disttrain validate` on each (bytes of the file ÷ wall, one
    core): TSV; the CSV with every column option on (an ID column excluded, a text column
    one-hot encoded, data.missing: mean, the separator forced); and gzip / zstd, beside zcat /
    zstdcat of the same file (a compressed file is decompressed to the run's private folder,
    then read as a CSV)."""
    print("CSV shapes: TSV, every option, gz, zst", flush=True)
    files = {
        "tsv": derived_file(b, "linear_1M_100.tsv", "tr , '\\t' < $CSV"),
        "options": derived_file(b, "linear_1M_100_options.csv",
                                "awk 'NR == 1 { print \"id,shop,\" $0; next } "
                                "{ print NR \",s\" (NR % 16) \",\" $0 }' $CSV"),
        "gz": derived_file(b, "linear_1M_100.csv.gz", "gzip -1 -c $CSV"),
        "zst": derived_file(b, "linear_1M_100.csv.zst", "zstd -q -3 -c $CSV"),
    }
    tools = {"gz": "zcat", "zst": "zstdcat"}
    raw = {}
    for kind, path in files.items():
        if path is None:
            add("CSV shapes", kind, "n/a", "", "", "", None, "making the file failed")
            continue
        size = path.stat().st_size
        plain = csv_file(b).stat().st_size  # the CSV's bytes: what the parser reads
        run(["sh", "-c", f"cat '{path}' > /dev/null"])  # into the page cache
        ours, peer, rans = [], [], []
        for _ in range(b.reps):
            if kind in tools:
                ran = run(["sh", "-c", f"{tools[kind]} '{path}' > /dev/null"])
                peer.append(plain / ran.seconds / 1e6)
            else:  # the plain CSV in the same pass: the fast path these shapes must keep
                _, ran = b.disttrain("csv", CSV_RUN.format(path=csv_file(b), workers=1),
                                     "validate")
                if ran.code == 0:
                    peer.append(plain / ran.seconds / 1e6)
            body = (OPTIONS_RUN if kind == "options" else CSV_RUN).format(path=path, workers=1)
            _, ran = b.disttrain(kind, body, "validate")
            rans.append(ran)
            if ran.code == 0:
                ours.append((plain if kind in tools else size) / ran.seconds / 1e6)
        raw[kind] = {"bytes": size, "validate_MBps": ours, "peer_MBps": peer}
        rate, note = median(ours), failure_note("disttrain", rans)
        if kind in tools:
            tool = median(peer)
            add("CSV shapes", f"{kind}: `disttrain validate` ({size / 1e9:.2f} GB, "
                f"{plain / 1e9:.2f} GB of CSV), CSV bytes ÷ wall", fmt(rate, "MB/s"),
                f"{tools[kind]} {fmt(tool, 'MB/s')}", fmt(ratio_of(rate, tool), f"× {tools[kind]}"),
                f"≈ {tools[kind]}", None, note)
        else:
            what = ("TSV" if kind == "tsv" else "CSV with exclude, one_hot, missing: mean, "
                    "delimiter")
            csv_rate = median(peer)
            add("CSV shapes", f"{what}: `disttrain validate` ({size / 1e9:.2f} GB), one core",
                fmt(rate, "MB/s"), f"the plain CSV {fmt(csv_rate, 'MB/s')}",
                fmt(ratio_of(rate, csv_rate), "× CSV"), "≥ 500 MB/s", check(rate, ">=", 500),
                note)
    b.raw["csv_shapes"] = raw


NPY_MAKE = """
import sys, numpy as np
x = np.random.default_rng(1).standard_normal((int(sys.argv[2]), 101))
x[:, 100] = x[:, :100] @ np.linspace(-1, 1, 100) + 0.1 * x[:, 100]
np.save(sys.argv[1], x)
"""

NPY_PEERS = """
import sys, time, numpy as np
t = time.perf_counter(); a = np.empty(int(sys.argv[2]) // 8); a.fill(1.0)
fresh = time.perf_counter() - t
t = time.perf_counter(); x = np.load(sys.argv[1]); load = time.perf_counter() - t
print(fresh, load)
"""


def npy_file(b, rows):
    """A (rows, 101) float64 .npy (100 features, the label last), made once with numpy."""
    path = b.cache / f"linear_{rows}_101.npy"
    if not path.exists():
        b.cache.mkdir(parents=True, exist_ok=True)
        print(f"  generating {path} (once)", flush=True)
        part = b.cache / f"part{os.getpid()}.npy"
        if run([PY, "-c", NPY_MAKE, str(part), str(rows)], timeout=1800).code != 0:
            part.unlink(missing_ok=True)
            return None
        part.rename(path)
    return path


def row_npy(b):
    """Load time of a 1M x 100 float64 .npy (plus its label column, 808 MB): `disttrain
    validate` less the same on a 10-row array (start-up, config), beside `cat` of the file
    (reading its bytes), numpy's own np.load, and touching as much fresh memory (np.empty +
    fill: the kernel zeroes every new page, a floor for any loader that makes its own copy).
    validate checks every value in place and keeps no matrix; a run's worker loads the rows into
    its shard: the second row is a 1-epoch run with 1 worker, the worker's own `load_seconds`
    (summary.json: read, check, statistics, normalization), beside cat and beside the load's
    floor (cat + the fresh memory of the same rep + normalization's two passes over the features
    at the pass's 1-thread STREAM rates); a floor above 2x cat makes the target out of reach in
    this pass. The old reading, the run's wall less its training, less the same for the
    10-row array (start-up, spawning, the final evaluation left in), stays as a row without a
    target."""
    print("NPY load, 1M x 100 float64", flush=True)
    path, tiny = npy_file(b, 1000000), npy_file(b, 10)
    if path is None or tiny is None:
        add("NPY load", "1M×100 .npy", "n/a", "", "", "", None, "making the file failed")
        return
    size = path.stat().st_size
    run(["sh", "-c", f"cat '{path}' > /dev/null"])  # into the page cache
    cat, load, runs, numpy, fresh, rans, worker_load = [], [], [], [], [], [], []
    for _ in range(b.reps):
        cat.append(run(["sh", "-c", f"cat '{path}' > /dev/null"]).seconds)
        _, small = b.disttrain("npy", CSV_RUN.format(path=tiny, workers=1), "validate")
        _, ran = b.disttrain("npy", CSV_RUN.format(path=path, workers=1), "validate")
        rans += [small, ran]
        if ran.code == 0 and small.code == 0:
            load.append(max(ran.seconds - small.seconds, 1e-6))
        small_sum, small = b.disttrain("npy", CSV_RUN.format(path=tiny, workers=1))
        big_sum, ran = b.disttrain("npy", CSV_RUN.format(path=path, workers=1))
        rans += [small, ran]
        if big_sum and big_sum.get("worker_stats"):
            worker_load.append(max(w.get("load_seconds", 0.0) for w in big_sum["worker_stats"])
                               or None)
        if small_sum and big_sum:
            runs.append(max((ran.seconds - big_sum["train_seconds"])
                            - (small.seconds - small_sum["train_seconds"]), 1e-6))
        peers = run([PY, "-c", NPY_PEERS, str(path), str(size)], env=blas_env())
        if peers.code == 0:
            f, n = map(float, peers.stdout.split())
            fresh.append(f)
            numpy.append(n)
    b.raw["npy"] = {"bytes": size, "cat_s": cat, "load_s": load, "run_load_s": runs,
                    "worker_load_s": worker_load, "np_load_s": numpy,
                    "fresh_memory_s": fresh}
    ours, cat_s = median(load), median(cat)
    ratio = ratio_of(ours, cat_s)
    add("NPY load", f"`disttrain validate` less its start-up ({size / 1e6:.0f} MB, one core; "
        "checks every value in place, keeps no matrix)",
        fmt(ours, "s"), f"cat {fmt(cat_s, 's')}", fmt(ratio, "× cat"), "< 2× cat",
        check(ratio, "<", 2), failure_note("disttrain", rans))
    run_s, worker_s, fresh_s = median(runs), median(worker_load), median(fresh)
    # A worker copies its rows into a shard of its own (normalized in place): reading the bytes
    # and touching as much fresh memory is the floor of that load, whatever the loader does.
    # `normalize: standard` (the run's, the default) adds two passes over the shard that no
    # loader can fold into the copy: the statistics' second (squared deviations from the
    # shard's mean, known once every row is in) reads the features, and the normalization
    # (it needs every shard's statistics, merged by the coordinator) reads and writes them.
    # Their floor is those bytes at this pass's 1-thread STREAM rates (sum; scale, which reads
    # and writes). A floor above the target's 2x cat puts the target out of reach in this pass.
    stream = b.raw.get("stream", {})
    sum_1t, scale_1t = stream.get("sum_1GiB_1t"), stream.get("scale_1t")
    features = size * 100 / 101  # the label column is not normalized
    passes_s = (features / (sum_1t * 1e9) + 2 * features / (scale_1t * 1e9)
                if sum_1t and scale_1t else None)
    floor = cat_s + fresh_s + (passes_s or 0) if cat_s and fresh_s else None
    floor_x = ratio_of(floor, cat_s)
    met = check(ratio_of(worker_s, cat_s), "<", 2)
    reach = (f"a load's floor, cat + fresh memory + normalization's two passes at 1-thread "
             f"STREAM of this pass ({fmt(cat_s, 's')} + {fmt(fresh_s, 's')} + "
             f"{fmt(passes_s, 's')} = {fmt(floor, 's')}), is {fmt(floor_x, '× cat')}"
             if passes_s else
             f"a copy's floor, cat + fresh memory of this pass ({fmt(cat_s, 's')} + "
             f"{fmt(fresh_s, 's')} = {fmt(floor, 's')}), is {fmt(floor_x, '× cat')}")
    if floor_x is not None and floor_x > 2 and met is False:
        met = OUT_OF_REACH
        reach += ": a normalized load into memory of its own cannot come under 2× cat on this machine"
    add("NPY load", "1-epoch run, 1 worker: the worker's `load_seconds` (summary.json: read, "
        "check, statistics, normalize)", fmt(worker_s, "s"), f"cat {fmt(cat_s, 's')}",
        fmt(ratio_of(worker_s, cat_s), "× cat"), "< 2× cat", met,
        notes(reach + (f"; this load is {fmt(ratio_of(worker_s, floor), '×')} that floor"
                       if floor else ""), failure_note("disttrain", rans)))
    add("NPY load", "the same run: wall − training, less the same for a 10-row array (start-up, "
        "the coordinator, the final evaluation and the outputs included)", fmt(run_s, "s"),
        f"cat {fmt(cat_s, 's')}", fmt(ratio_of(run_s, cat_s), "× cat"), "", None,
        f"{fmt(ratio_of(run_s, floor), '×')} the load's floor" if floor else "")
    add("NPY load", "`disttrain validate` (the first row), beside numpy's np.load of the file",
        fmt(ours, "s"),
        f"np.load {fmt(median(numpy), 's')}", fmt(ratio_of(ours, median(numpy)), "× np.load"),
        "", None, "")
    add("NPY load", "touching as much fresh memory (np.empty + fill), beside cat", fmt(median(fresh), "s"),
        f"cat {fmt(cat_s, 's')}", fmt(ratio_of(median(fresh), cat_s), "× cat"), "", None,
        "the floor of a load into new memory: the kernel zeroes each new page")


def row_predict(b):
    """Peak RSS of predict on a 300 MB and a 1 GB CSV (bench_predict_memory.py): the same. (At
    100 MB a pass may measure less: the allocator's reuse of the chunks' buffers; bench/README.md
    has the figures.)"""
    print("predict memory, 300 MB and 1 GB CSV", flush=True)
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_predict_memory as pm
    try:
        results = pm.run_all(b.binary, [300, 1000], b.cache)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        add("predict", "peak RSS, 1 GB CSV vs 100 MB", "n/a", "", "", "", None, str(e))
        return
    b.raw["predict_memory"] = results
    for source in ("file", "pipe"):
        small, large = [r for r in results if r["source"] == source]
        growth = large["rss_mib"] / small["rss_mib"]
        add("predict", f"peak RSS from a {source}, {large['bytes'] / 1e9:.1f} GB CSV",
            fmt(large["rss_mib"], "MiB"), f"{fmt(small['rss_mib'], 'MiB')} at "
            f"{small['bytes'] / 1e6:.0f} MB", fmt(growth, "×"), "≤ 1.1× (constant)",
            check(growth, "<=", 1.1))


# ---------------------------------------------------------------------------------------------
# Output: the one place the table is written.

def markdown(meta):
    lines = [f"Pass of {meta['date']} on `{meta['machine']}` ({meta['cpus']} CPUs, load average "
             f"{meta['loadavg_start']} at the start, {meta['loadavg_end']} at the end), "
             f"{meta['reps']} rep(s) a job ({meta['tiny_reps']} for the tiny job), medians; "
             f"binary `{meta['binary']}` at {meta['commit']}; OpenBLAS kernels "
             f"{meta.get('blas_kernels') or 'unknown'} (disttrain and the numpy peers).", "",
             "| job | disttrain | peer / limit | ratio | target | met? | note |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    section = None
    for r in ROWS:
        job = r.job if r.section == section else f"**{r.section}**: {r.job}"
        section = r.section
        met = {True: "yes", False: "**no**", None: "—", OUT_OF_REACH: "out of reach"}[r.met]
        cells = [job, r.ours, r.peer, r.ratio, r.target, met, r.note]
        lines.append("| " + " | ".join(c.replace("|", "\\|") or " " for c in cells) + " |")
    met = [r.met for r in ROWS if r.met is not None]
    reach = sum(m == OUT_OF_REACH for m in met)
    lines += ["", f"{sum(m is True for m in met)} of {len(met)} targets met"
              + (f"; {reach} proven out of reach on this machine by a limit of the same pass "
                 "(the row's note says which)." if reach else ".")]
    return "\n".join(lines) + "\n"


def put_between_markers(readme, begin, end, body):
    """Replaces what is between the two marker lines of readme with body (appends both if absent)."""
    text = readme.read_text() if readme.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + begin + "\n" + body + end + rest.split(end, 1)[1]
    else:
        text += f"\n{begin}\n{body}{end}\n"
    readme.write_text(text)


def write_outputs(meta, out_dir, readme):
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "all.json").write_text(json.dumps(
        {"meta": meta, "rows": [asdict(r) for r in ROWS], "raw": meta.pop("raw")}, indent=2,
        ensure_ascii=False) + "\n")
    table = markdown(meta)
    (out_dir / "all.md").write_text("# bench_all\n\n" + table)
    put_between_markers(readme, BEGIN, END, table)
    print(f"wrote {out_dir / 'all.json'}, {out_dir / 'all.md'} and the table in {readme}")


def row_sparse(b):
    """Issue 16's sparse rows (bench_sparse.py): the hashed click log of --sparse-rows rows,
    disttrain's FTRL runs beside scikit-learn and XGBoost."""
    sys.path.insert(0, str(ROOT / "bench"))
    sys.modules.setdefault("bench_all", sys.modules[__name__])  # one ROWS when run as a script
    import bench_sparse
    bench_sparse.row_sparse(b, rows=b.sparse_rows)


SECTIONS = {"linreg": row_linreg, "small": row_small_steps, "mlp": row_mlp, "wide": row_wide,
            "tiny": row_tiny, "csv": row_csv, "libsvm": row_libsvm, "npy": row_npy,
            "formats": row_formats,
            "predict": row_predict, "sparse": row_sparse}
# Not in a pass unless named: at the 10M rows it takes about half an hour and ~10 GB.
DEFAULT_ONLY = [name for name in SECTIONS if name != "sparse"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    p.add_argument("--peers", default=str(ROOT.parent / "shared/peers"),
                   help="the peers' folder (default: ../shared/peers from the repository root)")
    p.add_argument("--quick", action="store_true", help="one rep a job (5 for the tiny job)")
    p.add_argument("--reps", type=int, default=3, help="reps a job without --quick (default 3)")
    p.add_argument("--only", default=",".join(DEFAULT_ONLY),
                   help=f"comma-separated subset of {','.join(SECTIONS)} (the limits always "
                   "run; sparse only when named)")
    p.add_argument("--sparse-rows", type=int, default=10_000_000,
                   help="rows of the sparse section's click log (default 10M)")
    p.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(),
                                                       "disttrain-bench-cache"),
                   help="where the 1M x 100 CSV and the peers' builds are kept between passes")
    p.add_argument("--delete-csv", action="store_true", help="delete the CSV after the pass")
    p.add_argument("--out", default=str(ROOT / "bench/results"))
    p.add_argument("--readme", default=str(ROOT / "bench/README.md"))
    args = p.parse_args()
    if not os.access(args.binary, os.X_OK):
        p.error(f"--binary {args.binary}: not an executable file (build it: "
                "cmake --preset release && cmake --build --preset release)")
    if not (Path(args.peers) / "run_stream.sh").exists():
        p.error(f"--peers {args.peers}: no run_stream.sh there (the peers live in shared/peers "
                "beside the repository)")
    if args.reps < 1:
        p.error("--reps must be at least 1")
    only = [s for s in args.only.split(",") if s]
    unknown = [s for s in only if s not in SECTIONS]
    if unknown:
        p.error(f"--only: unknown section(s) {', '.join(unknown)}; choose from "
                f"{', '.join(SECTIONS)}")
    args.only = only
    return args


def main():
    args = parse_args()
    start = time.monotonic()
    loadavg = lambda: " ".join(open("/proc/loadavg").read().split()[:3])  # noqa: E731
    commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
    if run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"]).stdout.strip():
        commit += " with uncommitted changes"
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(),
            "cpus": os.cpu_count(), "loadavg_start": loadavg(), "commit": commit or "?",
            "binary": os.path.relpath(args.binary, ROOT) if args.binary.startswith(str(ROOT))
            else args.binary, "quick": args.quick}
    with tempfile.TemporaryDirectory(prefix="dt-bench-all-") as tmp:
        b = Bench(args, tmp)
        b.delete_csv = args.delete_csv
        b.sparse_rows = args.sparse_rows
        meta.update(reps=b.reps, tiny_reps=b.tiny_reps)
        b.build_dir.mkdir(parents=True, exist_ok=True)
        global BLAS_KERNELS
        BLAS_KERNELS = (b.disttrain("blas", TINY)[0] or {}).get("blas_kernels")
        meta["blas_kernels"] = BLAS_KERNELS
        row_limits(b)
        for name in args.only:
            try:
                SECTIONS[name](b)
            except Exception as e:  # one broken row must not lose the others
                add(name, "(the row itself failed)", "n/a", "", "", "", None,
                    f"{type(e).__name__}: {e}")
        # The limits re-measured during the pass: their rows show the median of all samples.
        rtt, thr = median(b.raw.get("ipc_rtt_us", [])), median(b.raw.get("ipc_8MiB_MBps", []))
        b.limit_rows[0].peer, b.limit_rows[1].peer = fmt(rtt, "µs"), fmt(thr, "MB/s")
        meta.update(loadavg_end=loadavg(), seconds=round(time.monotonic() - start, 1), raw=b.raw)
    write_outputs(meta, Path(args.out), Path(args.readme))
    print(f"pass took {meta['seconds']} s")


if __name__ == "__main__":
    sys.exit(main())
