"""Resources that run out (issue 14): a memory cap (ulimit -v), a low limit on open files
(ulimit -n) and a stderr that nobody reads end in a clear error with exit 3 or in a finished run;
never a crash inside ZeroMQ, a hang, a torn file, or a lost checkpoint. A full disk is in
test_bad_inputs.py; a flood of log lines from strangers in test_flood.py."""

import json
import os
import re
import resource
import signal
import subprocess

import harness as h

CONFIG = """
version: 1
name: res
seed: 4
model: {{type: logistic_regression}}
data: {{synthetic: {{kind: logistic, rows: {rows}, features: {features}}}}}
shards: {{count: 3}}
training: {{epochs: {epochs}, batch_size: 32, optimizer: {{type: sgd, lr: 0.1}}}}
fault_tolerance: {{checkpoint_every: {{steps: 50}}}}
output: {{dir: {out}, log_every: {{steps: {log_every}}}}}
"""

MIB = 1 << 20


def config(tmp, out, rows=3000, features=6, epochs=3, log_every=10):
    return h.write_config(tmp, CONFIG.format(rows=rows, features=features, epochs=epochs,
                                             out=tmp / out, log_every=log_every), f"{out}.yaml")


def limited(*args, limit, value, soft=None):
    """`disttrain *args` under setrlimit(limit, value) (the child only; its workers inherit it)."""
    def cap():
        hard = resource.getrlimit(limit)[1] if soft is not None else value
        resource.setrlimit(limit, (soft if soft is not None else value, hard))
    proc = subprocess.Popen([h.binary(), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=cap,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"disttrain {args} hung under limit {limit}={value}")
    return h.Result(proc, out, err, 0)


def assert_whole(folder):
    """No temporary file left, and every JSON file in `folder` parses."""
    for path in folder.rglob("*"):
        assert ".tmp." not in path.name, f"a temporary file is left: {path}"
        if path.suffix == ".json":
            json.loads(path.read_text())


def test_a_memory_cap_is_named_and_the_checkpoint_kept(tmp):
    """Under 64 MiB of address space ZeroMQ could not start its threads and aborted the process
    (SIGABRT), under 128 MiB std::thread said 'internal error: Resource temporarily unavailable',
    and a worker whose shard did not fit said 'internal error: std::bad_alloc'. Each is now
    'out of memory' with the limit, exit 3. A --resume that fails so keeps the checkpoint: the
    next one, with the memory it needs, writes the same model.json."""
    cfg = config(tmp, "run")
    first = h.run("run", cfg)
    assert first.code == 0, first
    model = (tmp / "run" / "model.json").read_bytes()
    # As if killed before its last checkpoint: the resume has steps to train, so workers to start.
    # (Two are kept; under load the writer may have written only the last: a newer checkpoint
    # replaces one still waiting. Step 250 of 282 leaves steps to train as well.)
    checkpoints = sorted((tmp / "run" / "checkpoint").glob("*.ckpt"))
    assert checkpoints, "no checkpoint written"
    if len(checkpoints) > 1:
        checkpoints[-1].unlink()
    # Caps well below what a run needs (about 120 MiB of address space here, most of it thread
    # stacks and shared libraries): 128 MiB, once too little, became enough as the build changed.
    for cap in (64, 96):
        r = limited("run", cfg, "--resume", limit=resource.RLIMIT_AS, value=cap * MIB)
        assert r.code == 3, r
        assert f"ulimit -v, is {cap} MiB: raise it" in r.stderr, r
        assert "internal error" not in r.stderr, r
        assert_whole(tmp / "run")
        assert sorted((tmp / "run" / "checkpoint").glob("*.ckpt")) == checkpoints[:1], \
            "the checkpoint was lost"
    again = h.run("run", cfg, "--resume")
    assert again.code == 0, again
    assert (tmp / "run" / "model.json").read_bytes() == model

    big = config(tmp, "big", rows=2000000, features=20, epochs=1)  # 107 MB of rows per worker
    r = limited("run", big, limit=resource.RLIMIT_AS, value=200 * MIB)
    assert r.code == 3, r
    assert re.search(r"(out of memory|cannot start a thread).*ulimit -v, is 200 MiB", r.stderr), r
    assert "internal error" not in r.stderr, r
    assert json.loads((tmp / "big" / "summary.json").read_text())["status"] == "failed"
    assert not (tmp / "big" / "model.json").exists()
    assert_whole(tmp / "big")


def test_few_open_files_are_named_before_anything_starts(tmp):
    """With 32 open files ZeroMQ's accept(2) on ipc got EMFILE and aborted the coordinator. The
    run now counts what it needs first and names the number; that number is enough. A soft limit
    below the hard one is raised (as `ulimit -Sn 32` leaves it)."""
    cfg = config(tmp, "fds")
    clean = h.run("run", cfg, "--set", f"output.dir={tmp / 'clean'}")
    assert clean.code == 0, clean
    r = limited("run", cfg, limit=resource.RLIMIT_NOFILE, value=32)
    assert r.code == 3, r
    m = re.search(r"too many open files ahead: a run of 3 workers needs about (\d+) open files "
                  r"and this process may open 32 \(ulimit -n\); raise the limit \(ulimit -n \1\)",
                  r.stderr)
    assert m, r
    need = int(m.group(1))
    enough = limited("run", cfg, limit=resource.RLIMIT_NOFILE, value=need)
    assert enough.code == 0, enough
    assert (tmp / "fds" / "model.json").read_bytes() == (tmp / "clean" / "model.json").read_bytes()
    raised = limited("run", cfg, limit=resource.RLIMIT_NOFILE, value=None, soft=32)
    assert raised.code == 0, raised


def test_a_stderr_nobody_reads_does_not_stop_a_run(tmp):
    """-v logs every one of 5600 steps (over 300 KB) to a pipe that nobody reads until the run
    has exited: the writes once blocked, and the run hung for good after 64 KiB. Now the run
    ends with exit 0 and the model of a quiet run; the log's start came through, in order."""
    cfg = config(tmp, "chatty", epochs=60, log_every=1)
    quiet = h.run("run", cfg, "--set", f"output.dir={tmp / 'quiet'}")
    assert quiet.code == 0, quiet
    proc = subprocess.Popen([h.binary(), "-v", "run", str(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise AssertionError("the run hung on a stderr that nobody reads")
    err = proc.stderr.read()
    out = proc.stdout.read()
    assert proc.returncode == 0, err[-2000:]
    assert "trained logistic_regression" in out, out
    assert (tmp / "chatty" / "model.json").read_bytes() == (tmp / "quiet" / "model.json").read_bytes()
    steps = [int(s) for s in re.findall(r"\] step (\d+)/", err)]
    assert len(steps) > 100 and steps == sorted(steps), err[:2000]
    assert len(err.encode()) >= 60 * 1024, len(err)


if __name__ == "__main__":
    h.main([test_a_memory_cap_is_named_and_the_checkpoint_kept,
            test_few_open_files_are_named_before_anything_starts,
            test_a_stderr_nobody_reads_does_not_stop_a_run])
