"""fault_tolerance.on_worker_failure where workers talk to each other (aggregation.topology
ring, parallelism.tensor > 1), real processes and real signals: one of four workers is SIGKILLed
(or SIGSTOPped) at a seeded random moment of training. `abort` stops in time with the rank
named; `restart` re-forms the ring (or the tensor-parallel groups) around a replacement, which
gets a survivor's state (ring) or its slice (tensor), and ends with exactly the model of an
unfailed run; `continue` (ring) re-forms the ring over the survivors, deals the lost rows to
them, and ends near the unfailed run's loss. Nothing is left behind."""

import json
import os
import random
import signal
import socket
import time

import harness as h

# 8000 ring steps of 4 workers: about a second under abort (the coordinator sends steps in
# batches) and two under restart or continue (a request a step) on the 2-core VM; the hit comes
# within a quarter second of the first checkpoint, so it lands in training on a faster machine
# too.
RING = """
version: 1
name: ring-policies
seed: 11
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 8000, features: 10, noise: 0.1}}}}
shards: {{count: 4}}
aggregation: {{topology: ring}}
training: {{epochs: 32, batch_size: 32, optimizer: {{type: sgd, lr: 0.01, momentum: 0.9}}}}
transport: {{type: {transport}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1000, on_worker_failure: {policy},
                  max_restarts: {restarts}, checkpoint_every: {{steps: 100}}}}
output: {{dir: {out}, log_every: {{steps: 500}}}}
"""

# Two replicas of two tensor-parallel ranks (an mlp split by hidden unit): 18,750 steps, about
# two seconds.
TENSOR = """
version: 1
name: tensor-policies
seed: 11
model: {{type: mlp, hidden: [8], task: regression}}
data: {{synthetic: {{kind: linear, rows: 4000, features: 10, noise: 0.1}}}}
shards: {{count: 2}}
parallelism: {{tensor: 2}}
training: {{epochs: 150, batch_size: 32, optimizer: {{type: sgd, lr: 0.01, momentum: 0.9}}}}
transport: {{type: {transport}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1000, on_worker_failure: {policy},
                  max_restarts: {restarts}, checkpoint_every: {{steps: 100}}}}
output: {{dir: {out}, log_every: {{steps: 500}}}}
"""

RNG = random.Random(40)
TIMEOUT_S = 1.0  # worker_timeout_ms above


def config(tmp, out, policy, transport="ipc", restarts=3, template=RING):
    return h.write_config(tmp, template.format(out=out, policy=policy, transport=transport,
                                               restarts=restarts), f"{out.name}.yaml")


REFERENCES = {}  # template -> (model.json bytes, --json summary) of its unfailed run


def reference(tmp, template=RING):
    """The unfailed run of `template` (one per file: a seeded run gives the same bits)."""
    if template not in REFERENCES:
        out = tmp / f"reference-{len(template)}"
        r = h.run("run", config(tmp, out, "abort", template=template), "--json")
        assert r.code == 0, r
        REFERENCES[template] = ((out / "model.json").read_bytes(), r.json())
    return REFERENCES[template]


def ranks_of(workers):
    """{rank: pid}, or None while a worker is forked but not yet running as one."""
    try:
        return {h.rank_of(pid): pid for pid in workers}
    except (ValueError, OSError):
        return None


def hit(tmp, cfg, out, victims, sig=signal.SIGKILL):
    """Starts the run, sends `sig` to the workers of ranks `victims` (at once) at a seeded
    random moment of training, and waits for the end. Returns (proc, stderr, victim pids, time
    hit)."""
    tmpdir, env = h.private_tmpdir(out)
    proc = h.start(cfg, env)
    workers = h.worker_processes(proc, 4)
    ranks = h.wait_for(lambda: ranks_of(workers), 10, "the workers' command lines")
    # Training has started once the first checkpoint (step 100) is on disk: a worker lost
    # before that aborts whatever the policy (documented), which is not what is tested here.
    folder = out / "checkpoint"
    h.wait_for(lambda: folder.exists() and any(p.name.startswith("step-") for p in folder.iterdir()),
               60, "the first checkpoint")
    time.sleep(RNG.uniform(0.0, 0.25))
    pids = [ranks[rank] for rank in victims]
    for pid in pids:
        os.kill(pid, sig)
    hit_at = time.monotonic()
    # Replacements are children too: every process the run ever had must be gone at the end.
    seen = set(workers)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        seen.update(h.children_of(proc.pid))
        time.sleep(0.05)
    _, err = h.finish(proc, max(1.0, deadline - time.monotonic()))
    h.assert_gone(sorted(seen))
    assert list(tmpdir.iterdir()) == [], "socket files or temp folders left behind"
    return proc, err, pids, hit_at


def summary(out):
    return json.loads((out / "summary.json").read_text())


def test_abort_stops_in_time_naming_the_worker(tmp):
    for transport, rank in (("ipc", 2), ("tcp", 0)):
        out = tmp / f"abort-{transport}"
        proc, err, [victim], hit_at = hit(tmp, config(tmp, out, "abort", transport), out, [rank])
        assert proc.returncode == 3, (proc.returncode, err)
        assert time.monotonic() - hit_at < 2 * TIMEOUT_S + 1.0, \
            "abort took longer than 2 x worker_timeout_ms"
        assert f"worker {rank} (pid {victim} on {socket.gethostname()}) was killed by signal 9 " \
               "(SIGKILL); last completed step " in err, err
        failures = summary(out)["failures"]
        assert len(failures) == 1, (failures, err)
        [f] = failures
        assert f["rank"] == rank and f["pid"] == victim and f["action"] == "abort", f


def check_restarted(out, clean, ranks, victims):
    # Ring: same members in the same order holding the same state; tensor: the coordinator
    # holds the parameters and the step is sent again. Either way the same sums, the same bits.
    assert (out / "model.json").read_bytes() == clean, "restart changed the model"
    failures = summary(out)["failures"]
    assert sorted(f["rank"] for f in failures) == sorted(ranks), failures
    for f in failures:
        assert f["action"] == "restart" and f["pid"] in victims, f
        assert f["replacement_pid"] not in victims, f
        assert f["reformed"]["members"] == [0, 1, 2, 3], f
        assert (out / "workers" / f"{f['rank']}.log").exists(), "the lost worker's log is kept"


def test_restart_reforms_the_ring_and_changes_nothing(tmp):
    clean, _ = reference(tmp)
    for point, (transport, rank) in enumerate((("ipc", 2), ("ipc", 0), ("tcp", 3))):
        out = tmp / f"restart-{point}"
        proc, err, victims, _ = hit(tmp, config(tmp, out, "restart", transport), out, [rank])
        assert proc.returncode == 0, (proc.returncode, err)
        assert "starting a replacement (1 of at most 3 restarts)" in err, err
        assert "the ring re-forms over workers 0, 1, 2, 3" in err, err
        check_restarted(out, clean, [rank], victims)
        assert (out / "workers" / f"{rank}.restart1.log").exists()


def test_restart_of_two_workers_lost_at_once(tmp):
    # The second loss is seen while the ring re-forms for the first (or in the same check):
    # the re-form starts again, and two replacements get a survivor's state.
    clean, _ = reference(tmp)
    out = tmp / "two"
    proc, err, victims, _ = hit(tmp, config(tmp, out, "restart"), out, [1, 2])
    assert proc.returncode == 0, (proc.returncode, err)
    check_restarted(out, clean, [1, 2], victims)


def test_restart_of_a_hung_worker_found_by_heartbeat(tmp):
    clean, _ = reference(tmp)
    out = tmp / "hung"
    proc, err, [victim], hit_at = hit(tmp, config(tmp, out, "restart"), out, [1], signal.SIGSTOP)
    assert proc.returncode == 0, (proc.returncode, err)
    assert f"worker 1 (pid {victim} on {socket.gethostname()}) sent no heartbeat for" in err, err
    assert not h.alive(victim), "the hung worker was left behind"
    check_restarted(out, clean, [1], [victim])


def test_continue_reforms_over_the_survivors(tmp):
    _, clean = reference(tmp)
    # Rank 0 is the ring's leader (it sends the parameters): losing it moves that to rank 1.
    for point, (transport, rank) in enumerate((("ipc", 0), ("tcp", 2))):
        out = tmp / f"continue-{point}"
        proc, err, [victim], _ = hit(tmp, config(tmp, out, "continue", transport), out, [rank])
        assert proc.returncode == 0, (proc.returncode, err)
        assert "continuing with 3 workers" in err, err
        survivors = sorted({0, 1, 2, 3} - {rank})
        assert f"the ring re-forms over workers {', '.join(map(str, survivors))}" in err, err
        s = summary(out)
        [f] = s["failures"]
        assert f["rank"] == rank and f["action"] == "continue" and f["pid"] == victim, f
        assert f["reformed"]["members"] == survivors, f
        # Its 2000 rows are dealt to the three survivors (667 + 667 + 666), from the epoch after
        # (unless it was lost in the last epoch: then they count in the final evaluation only).
        moved = f["reassigned"]
        assert moved["rows"] == 2000 and sorted(t["rows"] for t in moved["to"]) == [666, 667, 667]
        assert sorted(t["rank"] for t in moved["to"]) == survivors
        rows = {w["rank"]: w["rows"] for w in s["worker_stats"]}
        assert sum(r for k, r in rows.items() if k != rank) == 8000, rows
        # Same data and the same number of steps; only part of one epoch misses a quarter of
        # its rows. The model converges to the noise floor (mse ~ 0.01) either way; momentum SGD
        # at this rate stays within ~10 % of it, and the batches differ from the epoch of the
        # loss on (7.5 % apart seen when the hit came in the first epoch), so 15 % is above
        # run-to-run differences and far below what a wrong sum would cost.
        assert abs(s["final_loss"] - clean["final_loss"]) < 0.15 * clean["final_loss"], \
            (s["final_loss"], clean["final_loss"])
        assert s["steps"] == clean["steps"]
        assert s["aggregation"]["replicas_agree"] is True


def test_tensor_restart_reforms_the_groups_and_changes_nothing(tmp):
    clean, _ = reference(tmp, TENSOR)
    for point, (transport, rank, sig) in enumerate((("ipc", 1, signal.SIGKILL),
                                                    ("tcp", 2, signal.SIGKILL),
                                                    ("ipc", 3, signal.SIGSTOP))):
        out = tmp / f"tensor-restart-{point}"
        proc, err, victims, _ = hit(tmp, config(tmp, out, "restart", transport, template=TENSOR),
                                    out, [rank], sig)
        assert proc.returncode == 0, (proc.returncode, err)
        assert "the tensor-parallel groups re-form over workers 0, 1, 2, 3" in err, err
        if sig == signal.SIGSTOP:
            assert f"worker {rank} (pid {victims[0]} on {socket.gethostname()}) sent no " \
                   "heartbeat for" in err, err
        check_restarted(out, clean, [rank], victims)


def test_tensor_continue_drops_the_replica_and_deals_its_rows(tmp):
    _, clean = reference(tmp, TENSOR)
    for point, (transport, rank) in enumerate((("ipc", 1), ("tcp", 2))):
        out = tmp / f"tensor-continue-{point}"
        proc, err, [victim], _ = hit(tmp, config(tmp, out, "continue", transport, template=TENSOR),
                                     out, [rank])
        assert proc.returncode == 0, (proc.returncode, err)
        # Ranks 2d and 2d + 1 are replica d's two slices: the lost rank's mate is stopped too.
        mate = rank ^ 1
        survivors = sorted({0, 1, 2, 3} - {rank, mate})
        assert f"worker {mate} (pid " in err and "was stopped: the other slices of its model " \
               f"replica cannot compute without worker {rank}" in err, err
        assert "the tensor-parallel groups re-form over workers " \
               f"{', '.join(map(str, survivors))}" in err, err
        s = summary(out)
        failures = {f["rank"]: f for f in s["failures"]}
        assert sorted(failures) == sorted([rank, mate]), s["failures"]
        assert failures[rank]["pid"] == victim
        for lost, f in failures.items():
            assert f["action"] == "continue", f
            # Each slice's 2000 rows go to the same slice of the other replica (same columns).
            moved = f["reassigned"]
            assert moved["rows"] == 2000 and moved["to"] == [{"rank": survivors[lost % 2],
                                                              "rows": 2000}], f
        # The final loss depends on the batch order of the last epochs, which dropping a
        # replica changes for good: over kill points and either replica this config ends
        # within 8 % of the unfailed run (measured); 15 % leaves room for the seeded kill
        # point and still catches a replica's gradient lost or counted twice.
        assert abs(s["final_loss"] - clean["final_loss"]) < 0.15 * clean["final_loss"], \
            (s["final_loss"], clean["final_loss"])
        assert s["steps"] == clean["steps"]


def test_tensor_abort_stops_in_time_naming_the_worker(tmp):
    out = tmp / "tensor-abort"
    proc, err, [victim], hit_at = hit(tmp, config(tmp, out, "abort", template=TENSOR), out, [2])
    assert proc.returncode == 3, (proc.returncode, err)
    assert time.monotonic() - hit_at < 2 * TIMEOUT_S + 1.0, \
        "abort took longer than 2 x worker_timeout_ms"
    assert f"worker 2 (pid {victim} on {socket.gethostname()}) was killed by signal 9 " in err, err


if __name__ == "__main__":
    h.main([test_abort_stops_in_time_naming_the_worker,
            test_restart_reforms_the_ring_and_changes_nothing,
            test_restart_of_two_workers_lost_at_once,
            test_restart_of_a_hung_worker_found_by_heartbeat,
            test_continue_reforms_over_the_survivors,
            test_tensor_restart_reforms_the_groups_and_changes_nothing,
            test_tensor_continue_drops_the_replica_and_deals_its_rows,
            test_tensor_abort_stops_in_time_naming_the_worker])
