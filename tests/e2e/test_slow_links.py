"""Slow network links on tcp: every worker joins a coordinator (`run --listen ... --expect-workers`,
`worker --connect`) through a relay that holds each chunk of bytes for a while, both ways
(delay_relay.py; the kernel's tc netem would do it too, but the development VM's kernel has no
sch_netem, and the relay needs no root). The coordinator binds 127.0.0.1 and tells its workers
127.0.0.2 (`--advertise`), where the relay listens on the same ports (the run's endpoint and its
heartbeat endpoint) and passes everything on: no byte between a worker and the coordinator
goes around it.

- Links 20-50 ms slow each way (with jitter), far within worker_timeout_ms: the run ends with
  exit 0, nobody lost, and the model of the same run without delay, byte for byte (a request
  sent again because its reply was late is answered without redoing the step).
- Links that become slower than worker_timeout_ms mid-run: the silence is found, the run does
  not hang; under `abort` it exits 3 in time naming the worker and the timeout, summary.json
  says failed, and the workers stop too (exit 3)."""

import json
import re
import subprocess
import time

import harness as h
from delay_relay import DelayRelay

CONFIG = """
version: 1
name: slow
seed: 11
model: {{type: logistic_regression}}
data: {{synthetic: {{kind: logistic, rows: 1200, features: 6}}}}
shards: {{count: 2}}
training: {{epochs: {epochs}, batch_size: 64, optimizer: {{type: sgd, lr: 0.1}}}}
transport: {{type: tcp, join_timeout_ms: 20000}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: {timeout}, on_worker_failure: abort,
                  checkpoint_every: {{steps: 5}}}}
output: {{dir: {out}}}
"""

LISTEN = "127.0.0.1"
ADVERTISE = "127.0.0.2"  # loopback too (127.0.0.0/8): the relay's address


def config(tmp, out, epochs=2, timeout=1500):
    return h.write_config(tmp, CONFIG.format(epochs=epochs, timeout=timeout, out=tmp / out),
                          f"{out}.yaml")


def coordinator(tmp, cfg, name):
    """`run cfg --listen 127.0.0.1:0 --advertise 127.0.0.2 --expect-workers 2` in the
    background, its stderr in a file; returns it and the two ports it printed."""
    err = open(tmp / f"{name}.err", "w")
    proc = subprocess.Popen([h.binary(), "run", str(cfg), "--listen", f"{LISTEN}:0",
                             "--advertise", ADVERTISE, "--expect-workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    err.close()
    proc.log = tmp / f"{name}.err"
    pattern = (rf"listening on tcp://{re.escape(ADVERTISE)}:(\d+) \(heartbeats on "
               rf"tcp://{re.escape(ADVERTISE)}:(\d+)\); waiting for workers")
    found = h.wait_for(lambda: re.search(pattern, proc.log.read_text()) or proc.poll() is not None,
                       20, "the coordinator's endpoints")
    assert found is not True, "the coordinator exited early:\n" + proc.log.read_text()
    return proc, int(found.group(1)), int(found.group(2))


def workers(tmp, port):
    out = []
    for rank in (0, 1):
        err = open(tmp / f"worker{rank}.err", "w")
        proc = subprocess.Popen([h.binary(), "worker", "--connect", f"tcp://{ADVERTISE}:{port}",
                                 "--rank", str(rank)], stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        err.close()
        proc.log = tmp / f"worker{rank}.err"
        out.append(proc)
    return out


def wait(proc, timeout, what):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        h.finish(proc, 1, what)  # kills its group and fails
        raise


def test_slow_links_change_nothing(tmp):
    """Every byte between the workers and the coordinator 20-50 ms late, each way: the model of
    the run without delay, byte for byte."""
    clean = h.run("run", config(tmp, "clean"), "--listen", f"{LISTEN}:0")
    assert clean.code == 0, clean
    expected = (tmp / "clean" / "model.json").read_bytes()
    coord, port, heartbeat_port = coordinator(tmp, config(tmp, "slow"), "slow")
    with DelayRelay(ADVERTISE, LISTEN, [port, heartbeat_port], delay_ms=(20, 50)) as relay:
        joined = workers(tmp, port)
        code = wait(coord, 90, "the slow run")
        assert code == 0, coord.log.read_text()
        for w in joined:
            assert wait(w, 20, "a worker") == 0, w.log.read_text()
        # The traffic went through the relay, on both endpoints (else nothing was delayed).
        assert relay.connections[port] >= 2 and relay.connections[heartbeat_port] >= 2, \
            relay.connections
        assert relay.chunks[port] > 20 and relay.chunks[heartbeat_port] > 20, relay.chunks
    summary = json.loads((tmp / "slow" / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["failures"] == [], summary
    assert summary["steps"] == json.loads((tmp / "clean" / "summary.json").read_text())["steps"]
    assert (tmp / "slow" / "model.json").read_bytes() == expected


def test_delay_past_the_timeout_is_found(tmp):
    """The links become 3 s slow each way mid-run, with worker_timeout_ms 1000: the coordinator
    hears no heartbeat for longer than that, names a worker and the timeout, and aborts (exit
    3, summary.json failed); the workers stop too. Nothing hangs."""
    out = tmp / "late"
    coord, port, heartbeat_port = coordinator(tmp, config(tmp, "late", epochs=1000, timeout=1000),
                                              "late")
    with DelayRelay(ADVERTISE, LISTEN, [port, heartbeat_port], delay_ms=(1, 5)) as relay:
        joined = workers(tmp, port)
        # Training is under way once a checkpoint is on disk (a worker lost while loading its
        # shard aborts whatever the policy; here it is a step that waits).
        folder = out / "checkpoint"
        h.wait_for(lambda: (folder.exists() and any(p.name.startswith("step-")
                                                    for p in folder.iterdir()))
                   or coord.poll() is not None, 30, "the first checkpoint")
        assert coord.poll() is None, "the run ended before the delay:\n" + coord.log.read_text()
        relay.set_delay(3000)
        code = wait(coord, 30, "the coordinator after the delay")
        err = coord.log.read_text()
        assert code == 3, err
        found = re.search(r"worker ([01]) \(pid (\d+) on \S+\) sent no heartbeat for (\d+) ms "
                          r"\(fault_tolerance\.worker_timeout_ms = 1000\)", err)
        assert found, err
        assert int(found.group(3)) >= 1000, found.group(0)
        for w in joined:
            assert wait(w, 30, "a worker after the delay") == 3, w.log.read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed", summary
    assert summary["failures"] and summary["failures"][0]["action"] == "abort", summary["failures"]
    assert summary["failures"][0]["rank"] == int(found.group(1)), summary["failures"]
    h.assert_gone([coord.pid] + [w.pid for w in joined])


if __name__ == "__main__":
    h.main([test_slow_links_change_nothing, test_delay_past_the_timeout_is_found])
