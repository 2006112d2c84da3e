"""fault_tolerance.elastic, workers joining a running job in aggregation.mode async, with real
processes: the test starts the run, reads the join command it prints and starts `disttrain worker
--connect ADDR --join` itself. The coordinator admits the joiner between two pushes (with
`admit_at_steps`, once server 0 has applied the listed number of updates), sends it the servers
and its share of every training row, and deals the others their shares on their next slice;
each takes its share as its whole shard from the run's next epoch (or its own next local epoch
when past it). Async runs are not reproducible, so the checks are the accounting, from what the
run measured: the joiner's pushes and rows, the updates the servers applied (which a re-plan
that added to the shards instead of replacing them would inflate), the loss. Above max_workers
a joiner is refused; a join after a leave re-deals every row among the two left, and a leave
after a join (of a joiner into the slot a worker left) re-deals every row again; with
max_staleness the config is refused."""

import math

import elastic_config as ec
import harness as h
from test_elastic import summary
from test_elastic_join import run_with_joiner, second_joiner_refused

# 2 workers start: 1800 training rows each, 30 local steps of 60 rows an epoch, 4 epochs. After
# a join each of the 3 holds 1200 rows: 20 steps an epoch. Each starting worker sleeps 20 ms a
# step (a slow fault) so that the run lasts while the joiner starts.
EPOCHS = 4
OLD, NEW = 30, 20
ASYNC = "{mode: async, servers: 2}"
SLOW = ["{rank: 0, at_step: 0, action: slow, ms: 20}", "{rank: 1, at_step: 0, action: slow, ms: 20}"]


def async_config(tmp, name, elastic, faults=SLOW, aggregation=ASYNC):
    return ec.config(tmp, name, workers=2, epochs=EPOCHS, aggregation=aggregation,
                     elastic=elastic, faults=faults, checkpoint=None, log_every=10,
                     title="elastic-join-async")


def steps_of(per_epoch_before, per_epoch_after, from_epoch):
    """A worker's pushes: its old local steps per epoch before from_epoch, the new ones after."""
    return per_epoch_before * from_epoch + per_epoch_after * (EPOCHS - from_epoch)


def test_async_joiner_trains_its_share_of_every_row(tmp):
    cfg, out = async_config(tmp, "join", "max_workers: 3, admit_at_steps: [10]")
    err, werr = run_with_joiner(cfg)
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    [event] = s["membership"]["events"]
    assert {k: event[k] for k in ("event", "rank", "step", "workers")} == \
        {"event": "join", "rank": 2, "step": 10, "workers": 3}, event
    assert event["updates"] >= 10, event
    plan = event["replanned"]
    to = {t["rank"]: t for t in plan["to"]}
    # Every training row dealt in three shares, each from an epoch after the join's.
    assert sorted(to) == [0, 1, 2] and [t["rows"] for t in plan["to"]] == [1200] * 3, plan
    assert all(1 <= t["from_epoch"] < EPOCHS for t in plan["to"]), plan
    joined_from = to[2]["from_epoch"]
    assert joined_from == plan["from_epoch"], plan
    # Measured: each worker's pushes and the servers' count of updates. Had a re-plan added its
    # share to the shard (3000 rows, 50 steps an epoch) instead of replacing it, they would differ.
    stats = {w["rank"]: w for w in s["worker_stats"]}
    for rank in (0, 1):
        assert stats[rank]["steps"] == steps_of(OLD, NEW, to[rank]["from_epoch"]), (stats, plan)
    assert stats[2]["steps"] == NEW * (EPOCHS - joined_from) > 0, (stats[2], plan)
    assert stats[2]["rows"] == 1200 and stats[2]["pid"] == event["pid"], stats[2]
    assert s["aggregation"]["updates"] == sum(stats[r]["steps"] for r in (0, 1, 2)), s
    assert s["aggregation"]["worker_steps"] == [stats[r]["steps"] for r in (0, 1, 2)], s
    # From the last member's epoch on, every training row is in each epoch once: 3 x 1200.
    assert sum(t["rows"] for t in plan["to"]) == s["train_rows"] == 3600, s
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    assert "worker 2 joined the run" in err and "every training row is re-dealt" in err, err
    assert "error" not in werr, werr


def test_async_second_joiner_above_max_workers_is_refused(tmp):
    cfg, out = async_config(tmp, "full", "max_workers: 3, admit_at_steps: [10, 20]")
    second_joiner_refused(cfg, 3)
    s = summary(out)
    assert [(e["event"], e["rank"]) for e in s["membership"]["events"]] == [("join", 2)], s
    assert s["aggregation"]["worker_steps"][2] > 0, s["aggregation"]


def test_async_join_after_a_leave(tmp):
    # Worker 1 leaves at its local step 5 (6 pushes); worker 0 takes its 1800 rows from its next
    # local epoch (1). After 20 updates a joiner takes the free slot 2 and every row is re-dealt
    # between 0 and 2 (1800 each): worker 0 trains 1800 rows an epoch again from its epoch then.
    # Over tcp: the joiner reaches the coordinator and the servers by their tcp endpoints.
    faults = [SLOW[0], "{rank: 1, at_step: 5, action: leave}"]
    cfg, out = async_config(tmp, "refill", "max_workers: 3, admit_at_steps: [20]", faults)
    err, _ = run_with_joiner(cfg, "--set", "transport.type=tcp")  # the servers too, over tcp
    assert "--connect tcp://127.0.0.1:" in err, err
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    leave, join = s["membership"]["events"]
    assert (leave["event"], leave["rank"], leave["pushes"]) == ("leave", 1, 6), leave
    [took] = leave["reassigned"]["to"]
    assert (took["rank"], took["rows"]) == (0, 1800), leave
    assert (join["event"], join["rank"], join["step"], join["workers"]) == \
        ("join", 2, 20, 2), join
    to = {t["rank"]: t for t in join["replanned"]["to"]}
    assert sorted(to) == [0, 2] and [t["rows"] for t in to.values()] == [1800, 1800], join
    # Worker 0: 30 steps in epoch 0, 60 (3600 rows) from epoch 1 until its re-plan, then 30.
    took_from, replan_from = took["from_epoch"], to[0]["from_epoch"]
    assert 1 <= took_from <= replan_from < EPOCHS, (took, to)
    stats = {w["rank"]: w for w in s["worker_stats"]}
    w0 = OLD * took_from + 2 * OLD * (replan_from - took_from) + OLD * (EPOCHS - replan_from)
    assert stats[0]["steps"] == w0, (stats[0], leave, join)
    assert stats[2]["steps"] == OLD * (EPOCHS - to[2]["from_epoch"]) > 0, (stats[2], join)
    assert s["aggregation"]["updates"] == 6 + stats[0]["steps"] + stats[2]["steps"], s
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]


def test_async_join_into_a_left_slot_then_a_leave_re_deals_every_row(tmp):
    # max_workers 2: worker 1 leaves at its step 5 (6 pushes); its rows go to worker 0. After 20
    # updates a joiner takes the only free slot, 1 (fresh on the servers: its clock at 0), and
    # every row is re-dealt between 0 and 1. The joiner holds slot 1's faults too (as slow as
    # worker 0): it leaves at its own step 5 (6 pushes), and, the rows following the re-plan,
    # every training row goes to worker 0 from its next local epoch (3600: 60 steps an epoch).
    faults = [SLOW[0], SLOW[1], "{rank: 1, at_step: 5, action: leave}"]
    cfg, out = async_config(tmp, "refill", "max_workers: 2, admit_at_steps: [20]", faults)
    run_with_joiner(cfg)
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    leave, join, again = s["membership"]["events"]
    assert [(e["event"], e["rank"]) for e in (leave, join, again)] == \
        [("leave", 1), ("join", 1), ("leave", 1)], s["membership"]
    assert (leave["pushes"], again["pushes"]) == (6, 6), (leave, again)
    assert join["pid"] == again["pid"] != leave["pid"], (leave, join, again)
    [took] = leave["reassigned"]["to"]
    assert (took["rank"], took["rows"]) == (0, 1800), leave
    to = {t["rank"]: t for t in join["replanned"]["to"]}
    assert sorted(to) == [0, 1] and [t["rows"] for t in to.values()] == [1800, 1800], join
    [passed] = again["reassigned"]["to"]
    assert (passed["rank"], passed["rows"], again["reassigned"]["rows"]) == (0, 3600, 1800), again
    # Worker 0's local epochs: 1800 rows (30 steps) at first; 3600 (60) from the first leave's
    # epoch; 1800 from the join's; 3600 from the second leave's. A later deal replaces an
    # earlier one not yet reached.
    a, b, c = took["from_epoch"], to[0]["from_epoch"], passed["from_epoch"]
    assert 1 <= a <= b <= c < EPOCHS, (a, b, c)
    shard = [3600 if e >= c else 1800 if e >= b else 3600 if e >= a else 1800
             for e in range(EPOCHS)]
    w0 = {w["rank"]: w for w in s["worker_stats"]}[0]
    assert w0["steps"] == sum(r // 60 for r in shard), (w0, shard)
    assert w0["rows"] == 3600, w0
    assert s["aggregation"]["updates"] == 6 + 6 + w0["steps"], s["aggregation"]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]


def test_async_joins_need_no_max_staleness(tmp):
    aggregation = "{mode: async, servers: 2, async: {max_staleness: 2}}"
    cfg, _ = async_config(tmp, "ssp", "max_workers: 3", aggregation=aggregation)
    r = h.run("validate", cfg)
    assert r.code == 2, r
    assert ("workers may join only in gradients mode (star, sharded servers, ring), parameters "
            "mode (at a round boundary) and async mode without max_staleness yet; set "
            "max_workers: 2") in r.stderr, r
    # Without max_staleness the same config is valid.
    cfg, _ = async_config(tmp, "free", "max_workers: 3")
    assert h.run("validate", cfg).code == 0


if __name__ == "__main__":
    h.main([test_async_joiner_trains_its_share_of_every_row,
            test_async_second_joiner_above_max_workers_is_refused,
            test_async_join_after_a_leave,
            test_async_join_into_a_left_slot_then_a_leave_re_deals_every_row,
            test_async_joins_need_no_max_staleness])
