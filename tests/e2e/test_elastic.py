"""fault_tolerance.elastic, planned leaves, with real worker processes: a worker that leaves
(the `leave` fault, which SIGTERMs itself at a step, or a real SIGTERM sent from here) finishes
its step and exits 0; the run goes on without it, records no failure, deals its rows to the
others from the next epoch (every training row once per epoch again), and a replayed leave
gives the same bits: the same model as `continue` after a kill one step later, which is the
same membership. Below min_workers the run fails (exit 3) once join_timeout_ms has passed
without a joiner (joins: test_elastic_join.py). With
elastic set, a failing run still stops its workers at once."""

import json
import math
import os
import signal

import elastic_config as ec
import harness as h



def config(tmp, name, fault="", **given):
    return ec.config(tmp, name, faults=[fault] if fault else (), **given)


def summary(out):
    return json.loads((out / "summary.json").read_text())


def test_a_leave_at_a_step_replans_without_a_failure(tmp):
    # 3600 training rows, global batch 60: 60 steps an epoch. Worker 1 leaves at its step 70
    # (0-based; epoch 2's 11th step) after answering it: steps 72..120 of epoch 2 run without it.
    cfg, out = config(tmp, "leave", fault="{rank: 1, at_step: 70, action: leave}")
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s["failures"]
    assert s["warnings"] == [], s["warnings"]  # the leaver exited 0 (a bad exit is a warning)
    total = s["train_rows"]
    assert total == 3600, total
    m = s["membership"]
    assert (m["min_workers"], m["max_workers"], m["workers"]) == (1, 4, 4), m
    [event] = m["events"]
    # It trained steps 1..71 (loss.csv's numbering); from step 72 on the others go alone.
    assert {k: event[k] for k in ("event", "rank", "step", "workers")} == \
        {"event": "leave", "rank": 1, "step": 71, "workers": 3}, event
    dealt = event["reassigned"]
    assert dealt["from_epoch"] == 2 and dealt["rows"] == 900, dealt  # from the third epoch
    assert sorted(t["rank"] for t in dealt["to"]) == [0, 2, 3], dealt
    assert sum(t["rows"] for t in dealt["to"]) == 900, dealt  # every row of its shard, once
    # Rows seen per epoch: all of them before the leave; in the epoch of the leave its share
    # of the 49 steps after it (15 rows a step) is missing; then every row once per epoch.
    assert m["rows_per_epoch"] == [total, total - 49 * 15, total, total], m["rows_per_epoch"]
    # The survivors hold its shard now: their rows add up to every training row.
    assert sum(w["rows"] for w in s["worker_stats"] if w["rank"] != 1) == total
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    assert "leaving the run (SIGTERM, fault_tolerance.elastic)" in (out / "workers" / "1.log").read_text()
    assert "worker 1 (pid" in r.stderr and "left the run after step 71 (a planned leave)" in r.stderr, r


def without_pids(membership):
    for event in membership["events"]:
        del event["pid"]  # the only part of the record that differs from run to run
    return membership


def test_a_leave_at_an_epochs_last_step_is_not_dealt_a_share(tmp):
    # Worker 1 leaves after step 71; worker 2 after step 120, the last of epoch 1, and its
    # reply to it says so: the deal of worker 1's rows before step 121 goes to 0 and 3 only
    # (none to a leaver, whose share would be lost), in every run, and worker 2's rows follow
    # from epoch 3 (a leave after an epoch's last step is dealt one epoch later).
    faults = "{rank: 1, at_step: 70, action: leave}, {rank: 2, at_step: 119, action: leave}"
    models = []
    for name in ("first", "again"):
        cfg, out = config(tmp, name, fault=faults)
        r = h.run("run", cfg)
        assert r.code == 0, r
        m = summary(out)["membership"]
        assert [(e["rank"], e["step"]) for e in m["events"]] == [(1, 71), (2, 120)], m["events"]
        first = m["events"][0]["reassigned"]
        assert (first["from_epoch"], first["to"]) == \
            (2, [{"rank": 0, "rows": 450}, {"rank": 3, "rows": 450}]), first
        assert m["rows_per_epoch"] == [3600, 3600 - 49 * 15, 3600 - 900, 3600], m
        models.append((out / "model.json").read_bytes())
    assert models[0] == models[1], "the same leaves trained differently"


def test_a_replayed_leave_gives_the_same_bits(tmp):
    fault = "{rank: 2, at_step: 100, action: leave}"
    cfg, out = config(tmp, "first", fault=fault)
    r = h.run("run", cfg)
    assert r.code == 0, r
    cfg, again = config(tmp, "again", fault=fault)
    r = h.run("run", cfg)
    assert r.code == 0, r
    model = (out / "model.json").read_bytes()
    assert (again / "model.json").read_bytes() == model, "a replayed leave changed the model"
    assert without_pids(summary(again)["membership"]) == without_pids(summary(out)["membership"])
    # The same membership reached by a failure: `continue` after worker 2 is killed at its
    # step 101 (it answered step 100, as the leaver did) deals the same rows the same way.
    cfg, lost = config(tmp, "lost", policy="continue", elastic=None,
                       fault="{rank: 2, at_step: 101, action: kill}")
    r = h.run("run", cfg)
    assert r.code == 0, r
    assert summary(lost)["failures"][0]["action"] == "continue"
    assert (lost / "model.json").read_bytes() == model, "a leave trained otherwise than continue"
    # And not the model of a run where nobody leaves (the check could not pass by accident).
    cfg, stay = config(tmp, "stay")
    r = h.run("run", cfg)
    assert r.code == 0, r
    assert (stay / "model.json").read_bytes() != model
    assert summary(stay)["membership"]["events"] == []


def test_a_leave_read_in_the_gather_of_its_last_step_counts_that_step(tmp):
    # The leaver sends its reply, then its leave. Most often the reply completes the step and
    # the leave is read in the next one; with worker 0 slow from that step on, both are read
    # while the coordinator still waits for worker 0. Either way the reply is part of the step:
    # the same bits (a gather that dropped it trained otherwise, found across hosts over tcp).
    leave = "{rank: 2, at_step: 100, action: leave}"
    cfg, out = config(tmp, "fast", fault=leave)
    r = h.run("run", cfg)
    assert r.code == 0, r
    cfg, slow = config(tmp, "slow", fault=leave + ", {rank: 0, at_step: 100, action: slow, ms: 30}")
    r = h.run("run", cfg)
    assert r.code == 0, r
    assert (slow / "model.json").read_bytes() == (out / "model.json").read_bytes()
    assert [e["step"] for e in summary(slow)["membership"]["events"]] == [101]


def test_below_min_workers_fails_after_the_join_timeout(tmp):
    cfg, out = config(tmp, "below", workers=2, elastic="min_workers: 2, join_timeout_ms: 300",
                      fault="{rank: 0, at_step: 30, action: leave}")
    r = h.run("run", cfg, "--json")
    assert r.code == 3, r
    message = ("worker 0 left after step 31, leaving 1 worker, below "
               "fault_tolerance.elastic.min_workers = 2, and not enough workers joined within "
               "join_timeout_ms = 300 ms (`disttrain worker --connect ")
    assert message in r.stderr, r
    message = r.stderr[r.stderr.index(message):].splitlines()[0]
    assert message.endswith("--join` joins one); lower min_workers, or rerun with --resume to "
                            "continue from the last checkpoint"), message
    s = summary(out)
    assert s["status"] == "failed" and message in s["error"], s
    assert [e["rank"] for e in s["membership"]["events"]] == [0]


def sigterm_mid_run(cfg, out, rank, workers=4):
    """Runs `cfg`, sends worker `rank` SIGTERM once the first checkpoint shows that training
    started, checks that the run exits 0 and leaves no worker behind; returns the victim's pid."""
    proc = h.start(cfg)
    pids = h.worker_processes(proc, workers)
    folder = out / "checkpoint"
    h.wait_for(lambda: folder.exists() and any(p.name.startswith("step-") for p in folder.iterdir()),
               60, "the first checkpoint")
    victim = next(pid for pid in pids if h.rank_of(pid) == rank)
    os.kill(victim, signal.SIGTERM)
    _, err = h.finish(proc, 120)
    assert proc.returncode == 0, err
    h.assert_gone(pids)
    return victim


def test_sigterm_to_a_worker_is_a_planned_leave(tmp):
    # Long enough to be hit mid-training (the first checkpoint shows that training started).
    cfg, out = config(tmp, "sigterm", epochs=150, checkpoint=1000)
    victim = sigterm_mid_run(cfg, out, 3)
    s = summary(out)
    assert s["failures"] == [] and s["warnings"] == [], (s["failures"], s["warnings"])
    [event] = s["membership"]["events"]
    assert event["rank"] == 3 and event["pid"] == victim and event["event"] == "leave", event
    assert 0 < event["step"] < s["steps"], (event, s["steps"])
    rows = s["membership"]["rows_per_epoch"]
    assert len(rows) == 150 and rows[-1] == s["train_rows"], rows[-3:]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]


def test_a_failing_elastic_run_still_stops_its_workers(tmp):
    # The launcher SIGTERMs the workers of a failed run: under elastic they take it as a leave
    # and exit at once (they do not wait out the SIGKILL grace).
    cfg, out = config(tmp, "abort", epochs=400, fault="{rank: 2, at_step: 40, action: kill}")
    proc = h.start(cfg)
    workers = h.worker_processes(proc, 4)
    _, err = h.finish(proc, 60)
    assert proc.returncode == 3, err
    assert "worker 2 (pid" in err and "was killed by signal 9 (SIGKILL)" in err, err
    h.assert_gone(workers)
    s = summary(out)
    assert [f["action"] for f in s["failures"]] == ["abort"], s["failures"]
    assert s["membership"]["events"] == [], s["membership"]  # stopping is not leaving
    for rank in (0, 1, 3):  # they left at once, not at the SIGKILL after the launcher's grace
        log = (out / "workers" / f"{rank}.log").read_text()
        assert "leaving the run (SIGTERM, fault_tolerance.elastic)" in log, (rank, log)


if __name__ == "__main__":
    h.main([test_a_leave_at_a_step_replans_without_a_failure,
            test_a_leave_at_an_epochs_last_step_is_not_dealt_a_share,
            test_a_replayed_leave_gives_the_same_bits,
            test_a_leave_read_in_the_gather_of_its_last_step_counts_that_step,
            test_below_min_workers_fails_after_the_join_timeout,
            test_sigterm_to_a_worker_is_a_planned_leave,
            test_a_failing_elastic_run_still_stops_its_workers])
