"""fault_tolerance.elastic, planned leaves in aggregation.mode parameters and async, with real
worker processes (the `leave` fault SIGTERMs a worker at one of its own local steps).

parameters: the leaver finishes its round, whose merge has its model, and leaves; the rounds
after it merge the others; from each survivor's next local epoch its share of the leaver's rows
is in its shard (its batches grow, its steps stay), so every training row is in every epoch's
rounds. Replayed (over ipc and tcp), a leave gives the same bits; in the last epoch (no row
dealt in time to train) it gives the model of `continue` after a kill at the leaver's next step.

async: the leaver stops before its next step, once the servers answered its last push; the
servers stop counting it, its steps not done leave the schedule, and its rows go to the
survivors from their next local epoch. Async runs are not reproducible, so the checks are the
accounting: the leaver's pushes, the survivors' longer plans, the updates they add up to."""

import math

import harness as h
from test_elastic import sigterm_mid_run, summary, without_pids

CONFIG = """
version: 1
name: elastic-modes
seed: 5
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 4000, features: 6, noise: 0.1}}, validation: 0.1}}
shards: {{count: {workers}}}
aggregation: {aggregation}
training: {{epochs: {epochs}, batch_size: 60, optimizer: {{type: sgd, lr: 0.02}}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 2000, on_worker_failure: {policy}{elastic}}}
{faults}
output: {{dir: {out}, log_every: {{steps: 5}}}}
"""

# 3600 training rows: 900 a worker, 15 local steps of 60 rows an epoch (4 workers).
PER_EPOCH = 15
ROUNDS_BY_EPOCH = "{mode: parameters, parameters: {sync_every: {epochs: 1}}}"
ROUNDS_BY_STEPS = "{mode: parameters, parameters: {sync_every: {steps: 5}}}"
ASYNC = "{mode: async, servers: 2, async: {max_staleness: 2}}"


def config(tmp, name, aggregation, workers=4, policy="abort", fault="",
           elastic="min_workers: 1", epochs=4):
    out = tmp / name
    text = CONFIG.format(workers=workers, aggregation=aggregation, policy=policy, epochs=epochs,
                         elastic=f", elastic: {{{elastic}}}" if elastic is not None else "",
                         faults=f"faults: [{fault}]" if fault else "", out=out)
    return h.write_config(tmp, text, f"{name}.yaml"), out


def check_left_cleanly(r, out, rank):
    assert r.code == 0, r
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s["failures"]
    assert s["warnings"] == [], s["warnings"]  # the leaver exited 0 (a bad exit is a warning)
    assert "leaving the run (SIGTERM, fault_tolerance.elastic)" in \
        (out / "workers" / f"{rank}.log").read_text()
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    return s


def test_parameters_leave_merges_its_round_then_deals_its_rows(tmp):
    # One local epoch a round. Worker 1 leaves at its local step 20: in round 2 (steps 15..29),
    # which it finishes; its model is in that round's merge (log step 30).
    cfg, out = config(tmp, "params", ROUNDS_BY_EPOCH, fault="{rank: 1, at_step: 20, action: leave}")
    s = check_left_cleanly(h.run("run", cfg, "--json"), out, 1)
    total = s["train_rows"]
    assert total == 3600, total
    m = s["membership"]
    [event] = m["events"]
    assert {k: event[k] for k in ("event", "rank", "step", "workers")} == \
        {"event": "leave", "rank": 1, "step": 2 * PER_EPOCH, "workers": 3}, event
    dealt = event["reassigned"]
    # Every survivor is at an epoch boundary after round 2: its third epoch (2, 0-based) has them.
    assert dealt["rows"] == 900 and dealt["from_epoch"] == 2, dealt
    assert [(t["rank"], t["rows"], t["from_epoch"]) for t in dealt["to"]] == \
        [(0, 300, 2), (2, 300, 2), (3, 300, 2)], dealt
    # Each round is an epoch: every training row in every one, before and after the leave.
    assert m["rows_per_epoch"] == [total] * 4, m["rows_per_epoch"]
    # Rounds 1-2 merged 4 models, 3-4 merged 3; the survivors hold its shard now.
    assert s["aggregation"]["participation"] == [4, 2, 4, 4], s["aggregation"]
    assert sum(w["rows"] for w in s["worker_stats"] if w["rank"] != 1) == total
    # A survivor's epoch is still 15 local steps: its batches grew by its share (80 rows).
    log = (out / "workers" / "0.log").read_text()
    assert "took 300 rows of lost worker 1 (share 1 of 3) from epoch 3" in log, log


def test_parameters_leave_replays_bit_for_bit_over_ipc_and_tcp(tmp):
    fault = "{rank: 2, at_step: 20, action: leave}"
    cfg, out = config(tmp, "first", ROUNDS_BY_EPOCH, fault=fault)
    assert h.run("run", cfg).code == 0
    model = (out / "model.json").read_bytes()
    # Replayed, over ipc again and over tcp (port 0 on the loopback).
    for name, transport in (("again", "ipc"), ("tcp", "tcp")):
        cfg, again = config(tmp, name, ROUNDS_BY_EPOCH, fault=fault)
        r = h.run("run", cfg, "--set", f"transport.type={transport}")
        assert r.code == 0, r
        assert (again / "model.json").read_bytes() == model, f"a replayed leave ({transport}) " \
            "changed the model"
        assert without_pids(summary(again)["membership"]) == \
            without_pids(summary(out)["membership"])
    # Not the model of a run where nobody leaves (the check could not pass by accident).
    cfg, stay = config(tmp, "stay", ROUNDS_BY_EPOCH)
    assert h.run("run", cfg).code == 0
    assert (stay / "model.json").read_bytes() != model
    assert summary(stay)["membership"]["events"] == []


def test_parameters_leave_in_the_last_epoch_equals_continue(tmp):
    # Rounds of 5 local steps, 3 an epoch. Worker 2 leaves at step 49, the last of round 10
    # (epoch 4): rounds 11 and 12 merge the others. Its rows are dealt from epoch 5, which never
    # comes: they only join the final evaluation. A kill at its step 50 under continue leaves
    # round 11 without it too, and its rows also join the evaluation only: the same model.
    cfg, out = config(tmp, "leave", ROUNDS_BY_STEPS, fault="{rank: 2, at_step: 49, action: leave}")
    s = check_left_cleanly(h.run("run", cfg), out, 2)
    [event] = s["membership"]["events"]
    assert event["step"] == 50 and event["reassigned"]["from_epoch"] == 4, event
    cfg, lost = config(tmp, "lost", ROUNDS_BY_STEPS, policy="continue", elastic=None,
                       fault="{rank: 2, at_step: 50, action: kill}")
    r = h.run("run", cfg)
    assert r.code == 0, r
    assert summary(lost)["failures"][0]["action"] == "continue"
    model = (out / "model.json").read_bytes()
    assert (lost / "model.json").read_bytes() == model, "a leave merged otherwise than continue"
    assert summary(lost)["final_loss"] == s["final_loss"]
    cfg, stay = config(tmp, "stay", ROUNDS_BY_STEPS)
    assert h.run("run", cfg).code == 0
    assert (stay / "model.json").read_bytes() != model


def test_parameters_below_min_workers_fails_after_the_join_timeout(tmp):
    cfg, out = config(tmp, "below", ROUNDS_BY_EPOCH, workers=2,
                      elastic="min_workers: 2, join_timeout_ms: 300",
                      fault="{rank: 0, at_step: 3, action: leave}")
    r = h.run("run", cfg, "--json")
    assert r.code == 3, r
    # 1800 rows a worker: 30 local steps an epoch; it finished round 1 (log step 30). The rest
    # of the message is test_elastic.py's (the same wait, the same words).
    s = summary(out)
    assert s["status"] == "failed", s
    assert s["error"].startswith("worker 0 left after step 30, leaving 1 worker, below "
                                 "fault_tolerance.elastic.min_workers = 2, and not enough workers "
                                 "joined within join_timeout_ms = 300 ms (workers may join runs "
                                 "of gradients mode (star, sharded servers, ring; sparse rows: "
                                 "sharded servers only) yet)"), s["error"]
    assert s["error"] in r.stderr, r
    assert [e["rank"] for e in s["membership"]["events"]] == [0]


def test_async_leave_stops_its_pushes_and_deals_its_rows(tmp):
    # 60 pushes planned a worker (4 epochs of 15). Worker 1 leaves at its step 20: it pushes
    # steps 0..20 (21 pushes) and stops once both servers answered the last one.
    cfg, out = config(tmp, "async", ASYNC, fault="{rank: 1, at_step: 20, action: leave}")
    s = check_left_cleanly(h.run("run", cfg, "--json"), out, 1)
    [event] = s["membership"]["events"]
    assert (event["event"], event["rank"], event["workers"]) == ("leave", 1, 3), event
    assert (event["pushes"], event["not_done"]) == (21, 60 - 21), event
    assert "lost_steps" not in s["aggregation"], s["aggregation"]  # no loss, a leave
    dealt = event["reassigned"]
    assert dealt["rows"] == 900 and dealt["local_epochs"], dealt
    to = {t["rank"]: t for t in dealt["to"]}
    assert sorted(to) == [0, 2, 3] and sum(t["rows"] for t in to.values()) == 900, dealt
    # A survivor trains its 300 more rows (5 more steps of 60) in each local epoch from the one
    # it took them at (its next: at least its second), so the updates applied add up to:
    extra = 0
    for rank, t in to.items():
        assert t["rows"] == 300 and 1 <= t["from_epoch"] <= 4, t
        extra += 5 * (4 - t["from_epoch"])
    assert s["aggregation"]["updates"] == 21 + 3 * 60 + extra, (s["aggregation"], dealt)
    assert s["steps"] == s["aggregation"]["updates"], s["steps"]
    # The survivors hold every training row now.
    assert sum(w["rows"] for w in s["worker_stats"] if w["rank"] != 1) == s["train_rows"]



def test_async_sigterm_to_a_worker_is_a_planned_leave(tmp):
    # A real signal, mid-training: 200 epochs of 15 pushes a worker; the first checkpoint (at
    # 100 updates) shows that training started.
    epochs = 200
    cfg, out = config(tmp, "sigterm", ASYNC, epochs=epochs)
    victim = sigterm_mid_run(cfg, out, 2)
    s = summary(out)
    assert s["failures"] == [] and s["warnings"] == [], (s["failures"], s["warnings"])
    [event] = s["membership"]["events"]
    assert (event["rank"], event["pid"], event["event"]) == (2, victim, "leave"), event
    planned = epochs * PER_EPOCH
    assert 0 < event["pushes"] < planned and event["pushes"] + event["not_done"] == planned, event
    to = event["reassigned"]["to"] if "reassigned" in event else []
    extra = sum(5 * (epochs - t["from_epoch"]) for t in to)
    assert s["aggregation"]["updates"] == event["pushes"] + 3 * planned + extra, (s, event)
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]


if __name__ == "__main__":
    h.main([test_parameters_leave_merges_its_round_then_deals_its_rows,
            test_parameters_leave_replays_bit_for_bit_over_ipc_and_tcp,
            test_parameters_leave_in_the_last_epoch_equals_continue,
            test_parameters_below_min_workers_fails_after_the_join_timeout,
            test_async_leave_stops_its_pushes_and_deals_its_rows,
            test_async_sigterm_to_a_worker_is_a_planned_leave])
