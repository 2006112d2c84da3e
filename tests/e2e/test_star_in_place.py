"""The star over shared memory reads large frames in place (transports/shm/region.hpp): the
coordinator sums the workers' gradients where they lie in its rings, a worker computes on the
parameters where they lie in its ring. The same bits as copies (ZeroMQ alone, tcp), faults and
lost workers included; a worker killed while the coordinator may hold its gradient in place does
not take the coordinator down."""

import os
import signal
import time

import harness as h

# 1,000 features x 10 classes: 10,010 parameters, 80 KB frames (in place from 64 KiB).
CONFIG = """
version: 1
name: inplace
seed: 3
model: {{type: softmax_regression}}
data: {{synthetic: {{kind: blobs, rows: 96, features: 1000, classes: 10}}}}
shards: {{count: 2}}
aggregation: {{mode: gradients}}
training: {{epochs: 2, batch_size: 16, optimizer: {{type: sgd, lr: 0.1, momentum: 0.9}}}}
transport: {{type: {transport}}}
fault_tolerance: {{on_worker_failure: {policy}, heartbeat_ms: 50, worker_timeout_ms: 2000}}
output: {{dir: {out}}}
{extra}
"""

STEPS = 12  # 96 rows, batch 16, 2 epochs


def write(tmp, name, transport="ipc", policy="abort", extra=""):
    return h.write_config(tmp, CONFIG.format(transport=transport, policy=policy, extra=extra,
                                             out=tmp / name), name=f"{name}.yaml")


def reference(tmp):
    r = h.run("run", write(tmp, "ref", transport="tcp"), "-q")
    assert r.code == 0, r
    return h.model_bytes(tmp / "ref")


def test_in_place_gives_the_bits_of_copies(tmp):
    ref = reference(tmp)  # tcp: copies all the way
    r = h.run("run", write(tmp, "shm"), "-v")
    assert r.code == 0, r
    # Every gradient was read in place: none fell back to a copy or to ZeroMQ.
    assert f"{2 * STEPS} of {2 * STEPS} gradients read in place" in r.stderr, r.stderr[-2000:]
    assert h.model_bytes(tmp / "shm") == ref
    r = h.run("run", write(tmp, "zmq"), "-v", env=dict(os.environ, DISTTRAIN_SHM="0"))
    assert r.code == 0, r
    assert f"0 of {2 * STEPS} gradients read in place" in r.stderr, r.stderr[-2000:]
    assert h.model_bytes(tmp / "zmq") == ref


def test_dropped_and_delayed_replies_keep_the_bits(tmp):
    # A dropped gradient is asked for again while the other worker's is held in place; a
    # delayed one arrives while the coordinator holds the first.
    ref = reference(tmp)
    faults = ("faults: [{rank: 1, action: drop, probability: 0.3},\n"
              "         {rank: 0, at_step: 5, action: delay, ms: 40}]")
    r = h.run("run", write(tmp, "faulty", extra=faults), "-q", timeout=60)
    assert r.code == 0, r
    assert "asked again" in (tmp / "faulty" / "workers" / "1.log").read_text()  # drops happened
    assert h.model_bytes(tmp / "faulty") == ref


def test_worker_killed_with_its_gradient_held_in_place(tmp):
    # Worker 0 is slow from step 4: each of its steps keeps the coordinator waiting with worker
    # 1's gradient read in place. Worker 1 is killed then (by the test, from outside); under
    # restart its replacement redoes the step and the run gives the bits of a run without it.
    ref = reference(tmp)
    points = tmp / "points"
    extra = "faults: [{rank: 0, at_step: 4, action: slow, ms: 400}]"
    cfg = write(tmp, "killed", policy="restart", extra=extra)
    proc = h.start(cfg, env=dict(os.environ, DISTTRAIN_TEST_TRACE_POINTS=str(points)))
    workers = h.worker_processes(proc, 2)

    def ranks():  # once both have exec'd (a forked child has no --rank yet)
        try:
            return {h.rank_of(pid): pid for pid in workers}
        except (ValueError, OSError):
            return None

    by_rank = h.wait_while_running(proc, ranks, 30, "the workers' exec")
    # Its 4th gradient sent (the trace's mark comes as it is encoded): give it 100 ms to reach
    # the ring and the coordinator, well inside worker 0's 400 ms.
    h.wait_while_running(
        proc, lambda: points.exists() and "worker 1|send gradient|4" in points.read_text(), 30,
        "worker 1's 4th gradient")
    time.sleep(0.1)
    os.kill(by_rank[1], signal.SIGKILL)
    out, err = h.finish(proc, 60)
    assert proc.returncode == 0, err[-3000:]
    assert "worker 1" in err and "restart" in err, err[-3000:]
    assert h.model_bytes(tmp / "killed") == ref


if __name__ == "__main__":
    h.main([test_in_place_gives_the_bits_of_copies, test_dropped_and_delayed_replies_keep_the_bits,
            test_worker_killed_with_its_gradient_held_in_place])
