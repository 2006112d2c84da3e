"""Enumerated kill points (issue 14), as rabit's mock engine kills at every collective call: a
clean run records every protocol point its processes reach (each message kind sent and received,
each file written and moved into place; base/kill_points.hpp), then one run per point SIGKILLs a
process there and checks the documented outcome:
  - worker 1 killed, `on_worker_failure: restart`: the run finishes, model.json byte-identical;
  - worker 1 killed, `abort`: exit 3 in time, summary.json says failed, no worker left;
  - the coordinator killed: its workers leave within the heartbeat timeout, and `--resume` gives
    the same model.json bytes (or, killed before its first checkpoint, says there is none and a
    fresh run gives them); nothing is left in TMPDIR.
Star, ring, sharded parameter servers and parameters (FedAvg) modes. Every kill must fire (its
mark file exists): a point the run no longer reaches fails the test rather than passing it
unexercised."""

import json
import os
import time
from pathlib import Path

import harness as h

CONFIG = """
version: 1
name: kp
seed: 5
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 480, features: 4}}, validation: 0.1}}
shards: {{count: 2}}
aggregation: {aggregation}
training: {{epochs: 3, batch_size: 48}}
transport: {{type: ipc}}
fault_tolerance: {{on_worker_failure: {policy}, heartbeat_ms: 50, worker_timeout_ms: 1000,
                  checkpoint_every: {{steps: 3}}}}
output: {{dir: {out}}}
"""

# A worker's points before the coordinator has set every worker up (hello, shard loaded).
STARTUP = {"send hello", "receive setup", "send loaded"}
HEARTBEAT = {"send ping", "receive pong"}


def timed(point, nth):
    """Whether a reach of `point` depends on timing, not on the run: heartbeats (a clock; even
    the first pong, which a run shorter than one round trip of the heartbeat never receives, and
    the first ping, which a heartbeat thread started late on a loaded machine sends after a short
    run's end: each seen once under a parallel ctest), and later checkpoint files (one waiting to
    be written is replaced by a newer one, core/coordinator/checkpoint_writer.hpp)."""
    if point in HEARTBEAT:
        return True
    return nth > 1 and (point.split(" ", 1)[1] in {"ping", "pong"} or point.endswith(".ckpt"))


AGGREGATION = {
    "star": "{mode: gradients}",
    "ring": "{mode: gradients, topology: ring}",
    "servers": "{mode: gradients, servers: 2}",
    "parameters": "{mode: parameters, parameters: {sync_every: {steps: 2}}}",
}


def config(folder, topology, policy, out):
    return h.write_config(folder, CONFIG.format(aggregation=AGGREGATION[topology], policy=policy,
                                                out=out),
                          name=f"{topology}-{policy}.yaml")


def trace(tmp, topology):
    """The reference run: its model.json and every (role, point) its processes reached."""
    points_file = tmp / f"points-{topology}"
    cfg = config(tmp, topology, "abort", tmp / f"ref-{topology}")
    env = dict(os.environ, DISTTRAIN_TEST_TRACE_POINTS=str(points_file))
    r = h.run("run", cfg, "-q", env=env, timeout=60)
    assert r.code == 0, r
    points = sorted({(role, point, int(n)) for role, point, n in
                     (line.split("|") for line in points_file.read_text().splitlines())})
    return (tmp / f"ref-{topology}" / "model.json").read_bytes(), points


def kill_env(tmpdir_env, role, point, nth, mark):
    return dict(tmpdir_env, DISTTRAIN_TEST_KILL_POINT=f"{role}|{point}|{nth}",
                DISTTRAIN_TEST_KILL_MARK=str(mark))


def cases(points, role):
    """(point, n): each point's first reach, and the 4th of those reached again and again (a
    step's messages, checkpoints: the 4th comes after a checkpoint is on disk)."""
    return [(point, n) for r, point, n in points if r == role]


def leftovers(tmpdir):
    return [p.name for p in tmpdir.iterdir()]


def kill_workers(tmp, topology, ref, points):
    n = 0
    for point, nth in cases(points, "worker 1"):
        n += 1
        for policy in ("restart", "abort"):
            sub = tmp / f"w-{topology}-{n}-{policy}"
            sub.mkdir()
            tmpdir, env = h.private_tmpdir(sub)
            mark = sub / "fired"
            what = f"{topology}: worker 1 killed at '{point}' #{nth} under {policy}"
            cfg = config(sub, topology, policy, sub / "run")
            r = h.run("run", cfg, "-q", env=kill_env(env, "worker 1", point, nth, mark), timeout=60)
            if not mark.exists() and timed(point, nth):
                assert r.code == 0, f"{what}: not reached this time, and the run failed\n{r}"
                continue
            assert mark.exists(), f"{what}: the kill point was never reached\n{r}"
            # Lost before training starts (while loading its shard), a worker always aborts
            # the run (docs/fault-tolerance.md); a heartbeat's first reach can fall either side.
            expect_abort = policy == "abort" or point in STARTUP
            if point in HEARTBEAT and policy == "restart" and r.code == 3:
                expect_abort = True
            if not expect_abort:
                assert r.code == 0, f"{what}\n{r}"
                assert (sub / "run" / "model.json").read_bytes() == ref, \
                    f"{what}: model.json differs from the run without a kill"
            else:
                assert r.code == 3, f"{what}\n{r}"
                assert "worker 1" in r.stderr, f"{what}: the error does not name the worker\n{r}"
                summary = json.loads((sub / "run" / "summary.json").read_text())
                assert summary["status"] == "failed", f"{what}: {summary}"
                assert "worker 1" in summary["error"], f"{what}: {summary}"
                # (A worker lost before it connected is in "error" alone.)
                assert all(f["action"] == "abort" for f in summary["failures"]), \
                    f"{what}: {summary}"
                if policy == "restart":
                    assert summary["steps"] == 0, f"{what}: aborted at step {summary['steps']}"
            assert not leftovers(tmpdir), f"{what}: left {leftovers(tmpdir)}"
    assert n >= 5, f"only {n} worker points: the trace lost its points"
    print(f"  {topology}: worker 1 {n} kill points tried, each under restart and abort", flush=True)


def kill_coordinator(tmp, topology, ref, points):
    n = 0
    for point, nth in cases(points, "coordinator"):
        n += 1
        sub = tmp / f"c-{topology}-{n}"
        sub.mkdir()
        tmpdir, env = h.private_tmpdir(sub)
        mark = sub / "fired"
        what = f"{topology}: coordinator killed at '{point}' #{nth}"
        cfg = config(sub, topology, "abort", sub / "run")
        proc = h.start(cfg, env=kill_env(env, "coordinator", point, nth, mark))
        h.finish(proc, 60, what)
        if not mark.exists() and timed(point, nth):
            assert proc.returncode == 0, f"{what}: not reached this time, and the run failed"
            assert (sub / "run" / "model.json").read_bytes() == ref, what
            continue
        assert mark.exists(), f"{what}: the kill point was never reached (exit {proc.returncode})"
        assert proc.returncode == -9, f"{what}: exit {proc.returncode}"
        # The workers see the coordinator go (its socket, or worker_timeout_ms of silence) and
        # leave; none may outlive it for long.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and workers_of(mark):
            time.sleep(0.05)
        assert not workers_of(mark), f"{what}: workers {workers_of(mark)} still run 10 s later"
        r = h.run("run", cfg, "--resume", "-q", env=env, timeout=60)
        if r.code == 2 and "--resume: no checkpoint in" in r.stderr:
            r = h.run("run", cfg, "-q", env=env, timeout=60)  # killed before any checkpoint
        assert r.code == 0, f"{what}, then resumed\n{r}"
        assert (sub / "run" / "model.json").read_bytes() == ref, \
            f"{what}: the resumed run's model.json differs from the run without a kill"
        assert not leftovers(tmpdir), f"{what}: left {leftovers(tmpdir)}"
    assert n >= 10, f"only {n} coordinator points: the trace lost its points"
    print(f"  {topology}: {n} coordinator kill points tried, each then resumed", flush=True)


def workers_of(mark):
    """Live processes started with this test's kill mark in their environment."""
    needle = f"DISTTRAIN_TEST_KILL_MARK={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0") and h.alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def every_point(tmp, topology, expected):
    ref, points = trace(tmp, topology)
    assert ("worker 1", expected, 4) in points, points  # the trace has the mode's own points
    kill_workers(tmp, topology, ref, points)
    kill_coordinator(tmp, topology, ref, points)


def test_every_point_star(tmp):
    every_point(tmp, "star", "send gradient")


def test_every_point_ring(tmp):
    every_point(tmp, "ring", "send peer chunk")


def test_every_point_servers(tmp):
    every_point(tmp, "servers", "send push")


def test_every_point_parameters(tmp):
    every_point(tmp, "parameters", "send round result")


if __name__ == "__main__":
    h.main([test_every_point_star, test_every_point_ring, test_every_point_servers,
            test_every_point_parameters])
