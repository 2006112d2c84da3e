"""fault_tolerance.elastic in aggregation.mode async across `run --resume` and a second leave,
with real processes. A checkpoint keeps each worker's pushes, not where each was in its own
epochs nor the shares it held, so a resumed run that cannot go on with the plan's shards
(after a join, or with another shards.count) re-plans: from the run's next epoch (by the
updates applied) every training row is dealt among the members (after a join: the slot is
refilled by a local worker) or each trains the new plan's shard (a resize), and each worker's
step count goes on from its pushes. Async runs differ from run to run by design, so the checks
are the accounting the run measured: every slot trains, each holds its share of every row,
each pushes exactly its share's steps for the epochs left, the updates add up, the loss falls.
A second leaver that had been dealt rows of a first passes on every row (a re-plan), not only
its plan shard.

Every stopped run ends with a worker killed under `abort` (exit 3) after periodic checkpoints;
the resume runs the config without that kill. After a join the test kills the worker itself
(SIGKILL, as the `kill` fault does) once the join is in and a checkpoint follows it: a `kill`
fault at a fixed local step could fire before a slow-starting joiner was admitted.
"""

import math
import os
import re
import shutil
import signal

import elastic_config as ec
import harness as h
import test_elastic_join as join
from test_elastic import summary

EPOCHS = 4
ASYNC = "{mode: async, servers: 2}"


def slow(ranks, ms=20):
    """Each rank's steps slowed, so that the workers' epochs stay close and the run lasts
    while a joiner starts (a join slot takes no faults: a joiner runs at its own pace)."""
    return [f"{{rank: {r}, at_step: 0, action: slow, ms: {ms}}}" for r in ranks]


def async_config(tmp, name, out, workers, elastic, faults, checkpoint=20, epochs=EPOCHS):
    return ec.config(tmp, name, out, workers=workers, epochs=epochs, aggregation=ASYNC,
                     elastic=elastic, faults=faults, checkpoint=checkpoint, log_every=10,
                     title="elastic-async-resume")


def steps_per_epoch(rows):
    return -(-rows // 60)  # a batch of 60 rows a step


def check_resumed(s, members, rows, from_epoch, epochs=EPOCHS):
    """Each member of the resumed run held `rows` and pushed its steps of the epochs left (this
    process's own count), and server 0's count of updates adds up."""
    stats = {w["rank"]: w for w in s["worker_stats"]}
    for rank in members:
        w = stats[rank]
        assert w["pid"] > 0 and w["rows"] == rows, w
        assert w["steps"] == (epochs - from_epoch) * steps_per_epoch(rows) > 0, (w, from_epoch)
    agg = s["aggregation"]
    assert sum(agg["worker_steps"]) == agg["updates"], agg
    resumed = s["checkpoint"]["resumed_from_step"]
    assert agg["updates"] == resumed + sum(stats[r]["steps"] for r in members), (agg, resumed)
    assert sum(stats[r]["rows"] for r in members) == s["train_rows"] == ec.TRAIN_ROWS, stats
    assert s["status"] == "ok" and s["failures"] == [], s
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]


JOIN_EPOCHS = 8


def kill_after_the_join(run, out, rank):
    """Once the joiner is in (the coordinator's "joins after N updates" line: the re-plan is
    made) and a checkpoint of a later step is on disk, SIGKILLs worker `rank` (a child of the
    coordinator; the joiner is the test's). The run trains for seconds after that (its workers
    are slowed), so the kill lands mid-run. Returns N."""
    updates = int(run.wait_line(r"worker 2 joins after (\d+) updates", timeout=60).group(1))

    def later_checkpoint():
        assert run.proc.poll() is None, \
            f"the run ended before a checkpoint after the join:\n{''.join(run.lines)}"
        names = [p.name for p in (out / "checkpoint").glob("step-*.ckpt")]
        return any(int(re.search(r"\d+", n).group()) > updates for n in names)

    h.wait_for(later_checkpoint, 60, f"a checkpoint after the join's {updates} updates")
    def rank_of(pid):
        try:
            return h.rank_of(pid)
        except (OSError, ValueError):  # exited: a leaver not yet reaped has no command line
            return None

    [pid] = [p for p in h.children_of(run.proc.pid) if rank_of(p) == rank]
    os.kill(pid, signal.SIGKILL)
    return updates


def stop_after_a_join_and_resume(tmp, out, faults, kill_rank, first=None):
    """A run of 2 workers (8 epochs) that a joiner joins into slot 2 after 10 updates and the
    test stops, killing worker `kill_rank`, after a checkpoint (every 20 updates) that follows
    the join; then its resume with `faults`. `first`: a stderr pattern the joiner starts after
    (what must come before the join). Returns the join event, the checkpoint's updates, the
    resume's run."""
    elastic = "max_workers: 3, admit_at_steps: [10]"
    cfg, _ = async_config(tmp, f"{out.name}-stop", out, 2, elastic, faults, epochs=JOIN_EPOCHS)
    run = join.Run(cfg)
    endpoint = run.join_endpoint()
    if first:
        run.wait_line(first)
    worker = join.joiner(endpoint)
    updates = kill_after_the_join(run, out, kill_rank)
    code, err = run.finish()
    assert code == 3, err
    assert f"worker {kill_rank}" in err and "killed by signal 9" in err, err
    join.finish_joiner(worker)
    stopped = summary(out)
    event = stopped["membership"]["events"][-1]
    assert (event["event"], event["rank"], event["updates"]) == ("join", 2, updates), event
    saved = stopped["checkpoint"]["last_step"]
    assert saved > event["updates"], (stopped["checkpoint"], event)
    cfg, _ = async_config(tmp, f"{out.name}-resume", out, 2, elastic, faults, epochs=JOIN_EPOCHS)
    return event, saved, h.run("run", cfg, "--resume")


def test_async_resume_after_a_join_refills_the_slot_and_re_deals_every_row(tmp):
    # 2 workers (1800 rows, 30 steps an epoch; 8 epochs, 60 updates each), a joiner admitted
    # after 10 updates into slot 2 (then 1200 rows each: 20 steps an epoch). The workers train
    # on while the run waits for the joiner to start (an epoch or two); worker 1 is killed
    # after a checkpoint (every 20 updates) that follows the join. The resumed run starts
    # slot 2 itself and deals every row among workers 0, 1 and 2 from the run's next epoch.
    out = tmp / "join"
    event, saved, r = stop_after_a_join_and_resume(tmp, out, slow([0, 1]), 1)
    assert r.code == 0, r
    assert "the slot of worker 2, which joined the run before the checkpoint, is refilled by a " \
        "worker this coordinator starts" in r.stderr, r.stderr
    assert "every training row is re-dealt among workers 0, 1, 2 from epoch" in r.stderr, r.stderr
    s = summary(out)
    assert s["checkpoint"]["resumed_from_step"] == saved, s["checkpoint"]
    join_event, resume = s["membership"]["events"]
    assert join_event == event, (join_event, event)
    assert (resume["event"], resume["step"], resume["workers"]) == ("resume", saved, 3), resume
    from_epoch = resume["from_epoch"]
    assert resume["replanned"] == {"from_epoch": from_epoch,
                                   "to": [{"rank": r, "rows": 1200} for r in (0, 1, 2)]}, resume
    assert 1 <= from_epoch < JOIN_EPOCHS, resume
    check_resumed(s, (0, 1, 2), 1200, from_epoch, JOIN_EPOCHS)
    assert (out / "workers" / "2.log").exists()  # the resumed run's own child


def test_async_resume_after_a_leave_and_a_join(tmp):
    # Worker 1 leaves at its step 5; a joiner, started once it has left, takes slot 2 after 10
    # updates (or later); worker 0 is killed after a checkpoint that follows the join. Both
    # orders are the test's own: a kill at worker 0's local step 150 could come before a
    # slow-starting joiner was admitted (no join event), and a joiner started at once could be
    # admitted before a slow-starting worker 1 had left. The resumed run does not start
    # worker 1, refills slot 2, and deals every row between workers 0 and 2 (1800 each: 30
    # steps an epoch).
    out = tmp / "leftjoin"
    faults = [*slow([0, 1]), "{rank: 1, at_step: 5, action: leave}"]
    event, saved, r = stop_after_a_join_and_resume(
        tmp, out, faults, 0, first=r"worker 1 \(pid \d+\) left the run")
    assert r.code == 0, r
    assert "worker 1 had left the run at the checkpoint's step and is not started again" \
        in r.stderr, r.stderr
    s = summary(out)
    leave, joined, resume = s["membership"]["events"]
    assert (leave["event"], leave["rank"], joined) == ("leave", 1, event), s["membership"]
    assert (resume["event"], resume["step"], resume["workers"]) == ("resume", saved, 2), resume
    assert resume["replanned"]["to"] == [{"rank": 0, "rows": 1800}, {"rank": 2, "rows": 1800}]
    [left] = [w for w in s["worker_stats"] if w["rank"] == 1]
    assert left["pid"] == 0, left  # never started by the resumed run
    check_resumed(s, (0, 2), 1800, resume["from_epoch"], JOIN_EPOCHS)


def test_async_resize_on_resume(tmp):
    # 4 workers (900 rows, 15 steps an epoch) stopped by a kill of worker 3 at its local step 30,
    # after checkpoints every 50 updates; resumed with 2 (1800 rows, 30 steps an epoch) and with
    # 3 (1200 rows, 20 steps), from a copy: each trains the new plan's shard from the run's next
    # epoch, and the resize event says from when and the updates skipped.
    out = tmp / "resize"
    elastic = "min_workers: 1, max_workers: 4"
    kill = "{rank: 3, at_step: 30, action: kill}"
    cfg, _ = async_config(tmp, "resize-stop", out, 4, elastic,
                          [*slow(range(4), 5), kill], checkpoint=50)
    r = h.run("run", cfg)
    assert r.code == 3, r
    saved = summary(out)["checkpoint"]["last_step"]
    assert saved >= 50, summary(out)["checkpoint"]
    copy = tmp / "resize-copy"
    shutil.copytree(out, copy)
    for folder, count in ((out, 2), (copy, 3)):
        cfg, _ = async_config(tmp, f"resize-{count}", folder, 4, elastic, slow(range(count), 5),
                              checkpoint=50)
        r = h.run("run", cfg, "--resume", "--set", f"shards.count={count}")
        assert r.code == 0, r
        assert "each worker trains the new plan's shard among workers" in r.stderr, r.stderr
        s = summary(folder)
        assert len(s["worker_stats"]) == count, s["worker_stats"]
        [event] = s["membership"]["events"]
        # The run's epochs by updates: 240 at the checkpoint's plan, 60 an epoch.
        from_epoch = -(-saved // 60)
        assert event == {"event": "resize", "step": saved, "from_workers": 4, "workers": count,
                         "from_epoch": from_epoch, "skipped_steps": from_epoch * 60 - saved}, event
        assert from_epoch < EPOCHS, event
        check_resumed(s, range(count), ec.TRAIN_ROWS // count, from_epoch)


def test_async_second_leaver_passes_on_every_row(tmp):
    # 3 workers (1200 rows, 20 steps an epoch). Worker 1 leaves at its step 5 (6 pushes): its
    # rows go to workers 0 and 2 (600 each) from their next local epoch (1), where they train
    # 1800 rows (30 steps). Worker 2 leaves at its step 45, in that epoch: it holds 1800 rows,
    # and passing on only its plan shard (1200) would drop 600 of worker 1's rows. Its leave
    # re-plans instead: every training row goes to worker 0 (3600 rows, 60 steps an epoch).
    out = tmp / "second"
    faults = [*slow([0, 1, 2]), "{rank: 1, at_step: 5, action: leave}",
              "{rank: 2, at_step: 45, action: leave}"]
    cfg, _ = async_config(tmp, "second", out, 3, "min_workers: 1", faults)
    r = h.run("run", cfg)
    assert r.code == 0, r
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    first, second = s["membership"]["events"]
    assert [(e["event"], e["rank"], e["pushes"]) for e in (first, second)] == \
        [("leave", 1, 6), ("leave", 2, 46)], s["membership"]
    # Dealt to both (the record lists the takers that finished: worker 0).
    assert "worker 1's 1200 rows are dealt to workers 0, 2 from their next local epoch" \
        in r.stderr, r.stderr
    [took] = first["reassigned"]["to"]
    assert (took["rank"], took["rows"]) == (0, 600), first
    [passed] = second["reassigned"]["to"]
    assert (passed["rank"], passed["rows"], second["reassigned"]["rows"]) == (0, 3600, 1800), \
        second
    a, b = took["from_epoch"], passed["from_epoch"]
    assert 1 <= a < b < EPOCHS, (a, b)
    w0 = {w["rank"]: w for w in s["worker_stats"]}[0]
    assert w0["rows"] == 3600, w0
    assert w0["steps"] == 20 * a + 30 * (b - a) + 60 * (EPOCHS - b), (w0, a, b)
    assert s["aggregation"]["updates"] == 6 + 46 + w0["steps"], s["aggregation"]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    assert "worker 2's 1800 rows are dealt to workers 0 from their next local epoch, with every " \
        "other row (a re-plan)" in r.stderr, r.stderr



def test_async_restart_after_a_join_ends_clearly_and_resumes(tmp):
    # Under restart, a replacement would plan its steps from the plan's shard, not from the
    # re-plan a join made: the servers, counting by the re-plan, would never see it finish (the
    # run hung). The run ends instead (exit 3), saying why and how to go on, and --resume
    # (re-planning every row among workers 0, 1, 2) finishes it.
    # Worker 0 is killed after the join (and a checkpoint that follows it).
    out = tmp / "restart"
    elastic = "max_workers: 3, admit_at_steps: [10]"
    cfg, _ = ec.config(tmp, "restart-stop", out, workers=2, epochs=JOIN_EPOCHS,
                       aggregation=ASYNC, policy="restart", elastic=elastic,
                       faults=slow([0, 1]), checkpoint=20, log_every=10)
    run = join.Run(cfg)
    worker = join.joiner(run.join_endpoint())
    kill_after_the_join(run, out, 0)
    code, err = run.finish()
    join.finish_joiner(worker)
    assert code == 3, err
    assert "worker 0 was lost after its rows changed (every row was re-dealt after a join or a " \
        "leave); async mode cannot restart a worker on re-planned rows" in err, err
    stopped = summary(out)
    [failure] = stopped["failures"]
    assert (failure["rank"], failure["action"]) == (0, "abort"), failure
    cfg, _ = ec.config(tmp, "restart-resume", out, workers=2, epochs=JOIN_EPOCHS,
                       aggregation=ASYNC, policy="restart", elastic=elastic,
                       faults=slow([0, 1]), checkpoint=20, log_every=10)
    r = h.run("run", cfg, "--resume")
    assert r.code == 0, r
    s = summary(out)
    resume = s["membership"]["events"][-1]
    assert (resume["event"], resume["workers"]) == ("resume", 3), resume
    check_resumed(s, (0, 1, 2), 1200, resume["from_epoch"], JOIN_EPOCHS)


if __name__ == "__main__":
    h.main([test_async_resume_after_a_join_refills_the_slot_and_re_deals_every_row,
            test_async_resume_after_a_leave_and_a_join,
            test_async_resize_on_resume,
            test_async_second_leaver_passes_on_every_row,
            test_async_restart_after_a_join_ends_clearly_and_resumes])
