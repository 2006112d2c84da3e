"""Shared helpers for the end-to-end tests: they drive the built `disttrain` binary with real
worker processes over real ZeroMQ sockets. Every run has a deadline; a hang fails the test."""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ARGS = None


def parse_args():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("tests", nargs="*", help="run only these test functions")
    ARGS = p.parse_args()
    return ARGS


def binary():
    return ARGS.binary


def source(*parts):
    return Path(ARGS.source).joinpath(*parts)


# What starts a sanitizer report (scripts/sanitize runs tests under ASan + UBSan). UBSan, in a
# build that also has ASan, writes to stderr whatever UBSAN_OPTIONS' log_path says: a worker's
# report lands in its log file, where a restart policy that absorbs its death would hide it.
SANITIZER_MARKERS = ("runtime error: ", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "WARNING: ThreadSanitizer")


def sanitizer_lines(text):
    return [line for line in text.splitlines() if any(m in line for m in SANITIZER_MARKERS)]


def sanitizer_reports(root):
    """The sanitizer report lines in the *.log files (worker logs) under root."""
    found = []
    for folder, _, names in os.walk(root):  # never follows symlinks: tests make loops
        for name in names:
            path = Path(folder, name)
            if name.endswith(".log") and path.is_file() and not path.is_symlink():
                try:
                    text = path.read_text(errors="replace")
                except OSError:
                    continue
                found += [f"{path}: {line}" for line in sanitizer_lines(text)]
    return found


class Result:
    def __init__(self, proc, stdout, stderr, seconds):
        self.code = proc.returncode
        self.stdout = stdout or ""
        self.stderr = stderr
        self.seconds = seconds
        reports = sanitizer_lines(stderr or "")
        assert not reports, "sanitizer report on stderr:\n" + "\n".join(reports) + f"\n{self!r}"

    def json(self):
        lines = [l for l in self.stdout.splitlines() if l.strip()]
        assert len(lines) == 1, f"expected exactly one JSON line on stdout, got: {self.stdout!r}"
        return json.loads(lines[0])

    def __repr__(self):
        return f"exit {self.code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def run(*args, timeout=120, cwd=None, stdin=None, env=None, stdout=subprocess.PIPE):
    """Runs disttrain with args; fails the test on timeout (killing the whole process group)."""
    start = time.monotonic()
    proc = subprocess.Popen([binary(), *map(str, args)], cwd=cwd, env=env, stdout=stdout,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL if stdin is None else stdin,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"disttrain {' '.join(map(str, args))} did not finish within {timeout} s\n{err}")
    return Result(proc, out, err, time.monotonic() - start)


def run_json(config, out, *sets, timeout=120):
    """`disttrain run config --json` into the folder `out` with more --set pairs; asserts exit 0
    and returns the summary."""
    r = run("run", config, "--json", "--set", f"output.dir={out}", *sets, timeout=timeout)
    assert r.code == 0, r
    return r.json()


def model_bytes(run_dir):
    """The bytes of the model.json a run wrote."""
    return (Path(run_dir) / "model.json").read_bytes()


def parameter_count(run_dir):
    """The number of parameters of the model a run wrote (its model.json)."""
    model = json.loads((Path(run_dir) / "model.json").read_text())
    return sum(len(p["data"]) for p in model["parameters"])


def write_config(folder, text, name="config.yaml"):
    path = Path(folder) / name
    path.write_text(text)
    return path


def private_tmpdir(folder):
    """An environment whose TMPDIR is a fresh folder, to check that a run leaves nothing there."""
    tmpdir = Path(folder) / "tmpdir"
    tmpdir.mkdir(parents=True)
    return tmpdir, dict(os.environ, TMPDIR=str(tmpdir))


def children_of(pid):
    """Direct children of pid (from /proc)."""
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may contain spaces, so split after the last ')'.
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append(int(entry.name))
    return sorted(kids)


def rank_of(pid):
    """The --rank a worker process was started with (from its command line)."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return int(args[args.index(b"--rank") + 1])


def describe_process(pid):
    """`pid rank N state S` (or its command line before exec) from /proc, for failure messages."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"{pid} (gone)"
    state = stat[stat.rindex(")") + 2]
    if b"--rank" in args:
        return f"{pid} rank {int(args[args.index(b'--rank') + 1])} state {state}"
    return f"{pid} state {state} {b' '.join(args).decode(errors='replace')[:120]!r}"


def wait_while_running(proc, predicate, timeout, what, seen=None):
    """wait_for, for a condition on the run `proc` (from start): past the deadline, or as soon as
    the coordinator has exited, it fails saying which, with the coordinator's exit code and its
    stderr's tail (a coordinator still running is killed with its group first) and `seen()` (what
    the wait saw), so that a run that ended early is told from one that hung."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        exited = proc.poll() is not None
        if exited or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    if exited and (value := predicate()):  # it came true as the run ended
        return value
    if exited:
        state = (f"gave up waiting for {what}: the coordinator had exited with code "
                 f"{proc.returncode}")
    else:
        state = (f"timed out after {timeout} s waiting for {what}: the coordinator was still "
                 "running (killed now)")
        os.killpg(proc.pid, signal.SIGKILL)
    saw = seen() if seen else ""
    err = ""
    if proc.stderr is not None and not proc.stderr.closed:
        try:
            _, err = proc.communicate(timeout=10)
        except (subprocess.TimeoutExpired, ValueError):
            err = "(its stderr could not be read)"
    else:
        proc.wait(10)
    raise AssertionError(f"{state}{'; ' + saw if saw else ''}\n--- its stderr's tail\n"
                         f"{(err or '')[-3000:]}")


def worker_processes(proc, count, timeout=20):
    """Waits until the coordinator `proc` (from start) has `count` worker processes; returns
    their pids. Fails as wait_while_running does, naming the children it saw over the wait."""
    seen = {}  # pid -> its description (its rank, once it has exec'd)

    def exactly():
        kids = children_of(proc.pid)
        for pid in kids:
            if "rank" not in seen.get(pid, ""):
                seen[pid] = describe_process(pid)
        return kids if len(kids) == count else None

    return wait_while_running(
        proc, exactly, timeout, f"{count} worker processes",
        lambda: f"children seen: {', '.join(seen.values()) or 'none'}, now: "
                f"{children_of(proc.pid)}")


# A run long enough to be killed, stopped or interrupted mid-training; `aggregation` picks the
# mode or topology ("" is the default star).
LONG_RUN = """
version: 1
name: long
seed: 1
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 20000, features: 10}}}}
shards: {{count: 4}}
{aggregation}
training: {{epochs: 100000, batch_size: 64}}
transport: {{type: {transport}}}
output: {{dir: {out}}}
"""


def long_run(transport, out, aggregation=""):
    return LONG_RUN.format(transport=transport, out=out, aggregation=aggregation)


# A small MLP on 3 workers with periodic checkpoints, for runs that are stopped and resumed;
# `aggregation` is the section's flow map ({mode: gradients, compression: fp16}).
CHECKPOINTED_MLP = """
version: 1
name: {name}
seed: {seed}
model: {{type: mlp, hidden: [8]}}
data: {{synthetic: {{kind: linear, rows: 3000, features: 6}}, validation: 0.1}}
shards: {{count: 3}}
aggregation: {aggregation}
training: {{epochs: {epochs}, batch_size: 32, optimizer: {{type: adam, lr: 0.01}}}}
fault_tolerance: {{checkpoint_every: {{steps: {every}}}}}
output: {{dir: {out}, log_every: {{steps: 7}}}}
"""


def checkpointed_mlp(out, aggregation, epochs, every, name="checkpointed-mlp", seed=11):
    return CHECKPOINTED_MLP.format(out=out, aggregation=aggregation, epochs=epochs, every=every,
                                   name=name, seed=seed)


def start(cfg, env=None):
    """`disttrain run cfg` in the background, in its own session (so a stuck run can be killed
    with its whole process group)."""
    return subprocess.Popen([binary(), "run", str(cfg)], stdout=subprocess.PIPE, env=env,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(proc, timeout, what="the run"):
    """Waits for `proc` (from start) with a deadline; kills its group and fails past it."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kids = [describe_process(pid) for pid in children_of(proc.pid)]  # before the kill
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        raise AssertionError(f"{what} did not stop within {timeout} s; its children then: "
                             f"{', '.join(kids) or 'none'}\n--- its stderr's tail\n"
                             f"{(err or '')[-3000:]}")
    return out, err


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def assert_gone(pids, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return
        time.sleep(0.05)
    raise AssertionError(f"processes still running {within} s later: {left}")


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def main(tests):
    """Runs the given test functions (each gets a fresh temp dir); exits 1 if any fails."""
    args = parse_args()
    selected = [t for t in tests if not args.tests or t.__name__ in args.tests]
    failed = 0
    for test in selected:
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="dt-e2e-") as tmp:
            try:
                test(Path(tmp))
                reports = sanitizer_reports(tmp)
                assert not reports, "sanitizer report in a log:\n" + "\n".join(reports)
                print(f"ok   {test.__name__} ({time.monotonic() - start:.1f} s)", flush=True)
            except Exception:
                failed += 1
                print(f"FAIL {test.__name__} ({time.monotonic() - start:.1f} s)", flush=True)
                traceback.print_exc()
    print(f"{len(selected) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
