"""fault_tolerance.on_worker_failure with parameter servers (threads of the coordinator): one of
four workers is SIGKILLed (or SIGSTOPped) at a seeded random moment of a run with two servers,
synchronous (gradients, aggregation.servers 2) or asynchronous (async). `abort` stops in time
with the rank named; `restart` puts a replacement in (sharded: exactly the model of an unfailed
run, even when the worker died between its pushes to the two servers; async: every worker's
planned updates applied once); `continue` finishes with the survivors, who train on the lost
worker's rows from their next epoch. Nothing is left behind.
The kill points come from test_policies' seeded generator (hit)."""

import signal
import socket
import time

import harness as h
from test_policies import config, hit, reference, summary

# 7500 synchronous steps over two servers: about 3 s, long enough to hit it anywhere.
SHARDED = """
version: 1
name: sharded-policies
seed: 7
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 8000, features: 10, noise: 0.1}}}}
shards: {{count: 4}}
aggregation: {{servers: 2}}
training: {{epochs: 30, batch_size: 32, optimizer: {{type: sgd, lr: 0.01, momentum: 0.9}}}}
transport: {{type: {transport}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1000, on_worker_failure: {policy},
                  max_restarts: {restarts}}}
output: {{dir: {out}, log_every: {{steps: 500}}}}
"""

# 15120 asynchronous updates (3780 per worker) over two servers: about 2 s.
ASYNC = """
version: 1
name: async-policies
seed: 7
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 8000, features: 10, noise: 0.1}}}}
shards: {{count: 4}}
aggregation: {{mode: async, servers: 2, async: {{max_staleness: 4}}}}
training: {{epochs: 60, batch_size: 32, optimizer: {{type: sgd, lr: 0.01, momentum: 0.9}}}}
transport: {{type: {transport}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1000, on_worker_failure: {policy},
                  max_restarts: {restarts}}}
output: {{dir: {out}, log_every: {{steps: 500}}}}
"""

PER_WORKER = 3780  # async: ceil(2000 / 32) = 63 local steps per epoch, 60 epochs


def close_to(loss, clean):
    # The data's noise is 0.1, so a converged model's mean squared error sits at about 0.01
    # (the start is in the tens). Async is not reproducible even without a failure (the
    # unfailed runs themselves differ by a few percent); a restart loses no update and a
    # continue only the lost worker's last steps of its own shard: both must still be within
    # 15% of an unfailed run, which a run that stopped learning at the failure is not.
    return abs(loss - clean) < 0.15 * clean


def test_abort_stops_in_time_naming_the_worker(tmp):
    for template in (SHARDED, ASYNC):
        out = tmp / f"abort-{len(template)}"
        proc, err, victim, _, hit_at = hit(tmp, config(tmp, template, out, "abort"), out, 2)
        assert proc.returncode == 3, (proc.returncode, err)
        assert time.monotonic() - hit_at < 2.0 + 1.0, "abort took longer than 2 x worker_timeout_ms"
        assert f"worker 2 (pid {victim} on {socket.gethostname()}) was killed by signal 9 " \
               "(SIGKILL); last completed step " in err, err
        [f] = summary(out)["failures"]
        assert f["rank"] == 2 and f["pid"] == victim and f["action"] == "abort", f


def test_sharded_restart_changes_nothing(tmp):
    clean, _ = reference(tmp, SHARDED)
    # Killed, or stopped and found by heartbeat, at seeded random moments: the worker may die
    # before its pushes, between the two servers' or after both; the replacement redoes the
    # round from the servers' copy of its start and each server counts one push per worker.
    for point, (rank, sig) in enumerate(((1, signal.SIGKILL), (3, signal.SIGKILL),
                                         (0, signal.SIGSTOP))):
        out = tmp / f"sharded-restart-{point}"
        proc, err, victim, _, _ = hit(tmp, config(tmp, SHARDED, out, "restart"), out, rank, sig)
        assert proc.returncode == 0, (proc.returncode, err)
        assert "starting a replacement (1 of at most 3 restarts)" in err, err
        assert (out / "model.json").read_bytes() == clean, "restart changed the model"
        [f] = summary(out)["failures"]
        assert f["rank"] == rank and f["action"] == "restart" and f["pid"] == victim, f
        assert (out / "workers" / f"{rank}.restart1.log").exists()
        assert not h.alive(victim), "the lost worker was left behind"


def test_sharded_continue_deals_the_rows(tmp):
    _, clean = reference(tmp, SHARDED)
    out = tmp / "sharded-continue"
    proc, err, victim, _, _ = hit(tmp, config(tmp, SHARDED, out, "continue", "tcp"), out, 1)
    assert proc.returncode == 0, (proc.returncode, err)
    assert "continuing with 3 workers" in err, err
    s = summary(out)
    [f] = s["failures"]
    assert f["rank"] == 1 and f["action"] == "continue" and f["pid"] == victim, f
    moved = f["reassigned"]
    assert moved["rows"] == 2000 and sorted(t["rows"] for t in moved["to"]) == [666, 667, 667]
    assert sorted(t["rank"] for t in moved["to"]) == [0, 2, 3]
    assert moved["from_epoch"] < 30, "the rows were dealt only for the final evaluation"
    rows = {w["rank"]: w["rows"] for w in s["worker_stats"]}
    assert rows[0] + rows[2] + rows[3] == 8000, rows
    assert s["steps"] == clean["steps"]
    assert close_to(s["final_loss"], clean["final_loss"]), (s["final_loss"], clean["final_loss"])
    # Each survivor's report is its own (the lost worker sent none).
    steps = {w["rank"]: w["steps"] for w in s["worker_stats"]}
    assert steps[0] == steps[2] == steps[3] == clean["steps"] and steps[1] == 0, steps


def test_async_restart_applies_every_update_once(tmp):
    _, clean = reference(tmp, ASYNC)
    for point, rank in enumerate((2, 0)):
        out = tmp / f"async-restart-{point}"
        proc, err, victim, _, _ = hit(tmp, config(tmp, ASYNC, out, "restart"), out, rank)
        assert proc.returncode == 0, (proc.returncode, err)
        s = summary(out)
        [f] = s["failures"]
        assert f["rank"] == rank and f["action"] == "restart" and f["pid"] == victim, f
        # The replacement resumed at the lost worker's applied count: every worker's plan done,
        # each step applied once by each server (a second apply would overshoot the count and
        # the servers would refuse it; a missing one would never end the run).
        agg = s["aggregation"]
        assert agg["worker_steps"] == [PER_WORKER] * 4, agg["worker_steps"]
        assert agg["updates"] == s["steps"] == 4 * PER_WORKER
        assert all(server["version"] == 4 * PER_WORKER for server in agg["servers"]), agg["servers"]
        assert close_to(s["final_loss"], clean["final_loss"]), (s["final_loss"], clean["final_loss"])


def test_async_continue_deals_the_rows_through_the_servers(tmp):
    _, clean = reference(tmp, ASYNC)
    out = tmp / "async-continue"
    proc, err, victim, _, _ = hit(tmp, config(tmp, ASYNC, out, "continue", "tcp"), out, 3)
    assert proc.returncode == 0, (proc.returncode, err)
    assert "continuing with 3 workers" in err, err
    assert "worker 3's 2000 rows are dealt to workers 0, 1, 2 from their next local epoch" in err
    s = summary(out)
    assert len(s["failures"]) == 1, s["failures"]
    [f] = s["failures"]
    assert f["rank"] == 3 and f["action"] == "continue" and f["pid"] == victim, f
    # Each survivor trains on its share from its own next local epoch: its plan grows.
    moved = f["reassigned"]
    assert moved["rows"] == 2000 and moved["local_epochs"], moved
    assert sorted(t["rank"] for t in moved["to"]) == [0, 1, 2]
    assert sorted(t["rows"] for t in moved["to"]) == [666, 667, 667]
    assert all(t["from_epoch"] < 60 for t in moved["to"]), moved
    rows = {w["rank"]: w["rows"] for w in s["worker_stats"]}
    assert rows[0] + rows[1] + rows[2] == 8000, rows
    agg = s["aggregation"]
    [lost] = agg["lost_steps"]
    assert lost["rank"] == 3 and lost["applied"] + lost["not_done"] == PER_WORKER, lost
    assert agg["worker_steps"][3] == lost["applied"] < PER_WORKER
    assert all(steps > PER_WORKER for steps in agg["worker_steps"][:3]), agg["worker_steps"]
    # The run's updates are what the servers applied, and the log ends there, at the last epoch.
    assert agg["updates"] == s["steps"] == sum(agg["worker_steps"])
    # A push the lost worker sent just before it died may have reached one server and not the
    # other: it stays applied where it arrived. The run counts updates as server 0 logs them,
    # so the other server is one update ahead (server 0 missed the push) or one behind (server 0
    # applied it and the other missed it), never more.
    assert agg["servers"][0]["version"] == agg["updates"], agg["servers"]
    assert all(abs(server["version"] - agg["updates"]) <= 1 for server in agg["servers"]), \
        agg["servers"]
    last = (out / "loss.csv").read_text().strip().splitlines()[-1].split(",")
    assert int(last[0]) == agg["updates"] and 59 < float(last[1]) <= 60, last
    assert close_to(s["final_loss"], clean["final_loss"]), (s["final_loss"], clean["final_loss"])


def test_server_policies_are_accepted(tmp):
    for template in (SHARDED, ASYNC):
        for policy in ("restart", "continue"):
            cfg = config(tmp, template, tmp / "x", policy)
            r = h.run("validate", cfg)
            assert r.code == 0, r


if __name__ == "__main__":
    h.main([test_abort_stops_in_time_naming_the_worker,
            test_sharded_restart_changes_nothing,
            test_sharded_continue_deals_the_rows,
            test_async_restart_applies_every_update_once,
            test_async_continue_deals_the_rows_through_the_servers,
            test_server_policies_are_accepted])
