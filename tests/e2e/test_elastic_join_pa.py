"""fault_tolerance.elastic, workers joining a running job in aggregation.mode parameters (model
averaging), with real processes: the test starts the run, reads the join command it prints and
starts `disttrain worker --connect ADDR --join` itself. The joiner is admitted at a round
boundary (`admit_at_steps` lists one), takes a free rank slot afresh (position 0, no optimizer
state), is sent the merged model with the next round's request, and is dealt its share of every
training row at the same boundary, each member from its own next local epoch: with rounds of
one epoch, every training row is in every round after the join (rows_per_epoch). The same join
replayed gives the same bits, over ipc and tcp; above max_workers it is refused; a join takes the
slot of a worker that left. Async joins: test_elastic_join_async.py."""

import math

import harness as h
from test_elastic import summary
from test_elastic_join import run_with_joiner, second_joiner_refused, the_join
from test_elastic_modes import ROUNDS_BY_EPOCH, config

# 2 workers start: 1800 training rows each, 30 local steps of 60 rows an epoch; 4 rounds of one
# epoch end at steps 30, 60, 90 and 120. After a join at step 30 each of the 3 holds 1200 rows.
PER_EPOCH = 30


def pa_config(tmp, name, elastic, aggregation=ROUNDS_BY_EPOCH, fault=""):
    return config(tmp, name, aggregation, workers=2, elastic=elastic, fault=fault)


def test_parameters_joiner_is_admitted_at_a_round_and_dealt_every_rows_share(tmp):
    elastic = "max_workers: 3, admit_at_steps: [30]"
    cfg, out = pa_config(tmp, "join", elastic)
    err, werr = run_with_joiner(cfg)
    s, event = the_join(out, PER_EPOCH)
    m = s["membership"]
    # Re-planned at the same boundary: the two at their second local epoch (1), the joiner at
    # its first (0); 3600 rows dealt in three shares.
    plan = event["replanned"]
    assert [(t["rank"], t["rows"], t["from_epoch"]) for t in plan["to"]] == \
        [(0, 1200, 1), (1, 1200, 1), (2, 1200, 0)], plan
    assert plan["from_epoch"] == 0, plan
    # Every training row in every round, the rounds after the join included.
    assert m["rows_per_epoch"] == [3600] * 4, m["rows_per_epoch"]
    agg = s["aggregation"]
    assert agg["participation"] == [4, 4, 3], agg  # the joiner's model in rounds 2-4's merges
    # The two keep their planned 30 local steps (40-row batches); the joiner counts its own.
    assert agg["local_steps_per_epoch"] == [30, 30, 20], agg
    stats = {w["rank"]: w for w in s["worker_stats"]}
    assert stats[2]["rows"] == 1200 and stats[2]["steps"] == 3 * 20, stats[2]
    assert stats[2]["pid"] == event["pid"], stats[2]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    assert "worker 2 joined the run" in err and "after step 30" in err, err
    header = (out / "loss.csv").read_text().splitlines()[0]
    assert header.endswith("worker_0_loss,worker_1_loss,worker_2_loss"), header
    # Replayed, over tcp: the same join at the same round gives the same bits.
    cfg, again = pa_config(tmp, "again", elastic)
    err, _ = run_with_joiner(cfg, "--set", "transport.type=tcp")
    assert "--connect tcp://127.0.0.1:" in err, err
    assert (again / "model.json").read_bytes() == (out / "model.json").read_bytes(), \
        "a replayed join changed the model"
    # And the join changed the training: the two alone give another model.
    cfg, alone = pa_config(tmp, "alone", "max_workers: 3")
    assert h.run("run", cfg).code == 0
    assert (alone / "model.json").read_bytes() != (out / "model.json").read_bytes()
    assert summary(alone)["membership"]["events"] == []


def test_parameters_joiner_in_a_compressed_run_is_sent_the_model_whole(tmp):
    # aggregation.compression fp16 sends half-float deltas from the model a worker holds; a
    # joiner holds none, so its first round's model travels whole (float64), and it trains from
    # the very model the others start from: the loss stays within 1% of the uncompressed join.
    elastic = "max_workers: 3, admit_at_steps: [30]"
    losses = []
    for codec in ("none", "fp16"):
        cfg, out = pa_config(tmp, f"join-{codec}", elastic)
        run_with_joiner(cfg, "--set", f"aggregation.compression={codec}")
        s = summary(out)
        assert [e["event"] for e in s["membership"]["events"]] == ["join"], s["membership"]
        assert {w["rank"]: w for w in s["worker_stats"]}[2]["steps"] == 3 * 20, s["worker_stats"]
        losses.append(s["final_loss"])
    compression = s["aggregation"]["compression"]
    # Whole: both workers' first round, and the joiner's first (round 2).
    assert compression["whole_models"] == 3, compression
    assert abs(losses[1] - losses[0]) <= 0.01 * losses[0], losses


def test_parameters_join_in_rounds_of_steps(tmp):
    # Rounds of 5 local steps: the joiner comes in after step 40 (round 8). The others take the
    # new plan from their next local epoch (2, at step 60); the joiner trains its share at once.
    steps = "{mode: parameters, parameters: {sync_every: {steps: 5}}}"
    cfg, out = pa_config(tmp, "steps", "max_workers: 3, admit_at_steps: [40]", aggregation=steps)
    run_with_joiner(cfg)
    s = summary(out)
    [event] = s["membership"]["events"]
    assert (event["rank"], event["step"]) == (2, 40), event
    assert [(t["rank"], t["from_epoch"]) for t in event["replanned"]["to"]] == \
        [(0, 2), (1, 2), (2, 0)], event
    stats = {w["rank"]: w for w in s["worker_stats"]}
    assert stats[2]["steps"] == 120 - 40, stats[2]  # 16 rounds of 5 local steps
    assert s["aggregation"]["participation"] == [24, 24, 16], s["aggregation"]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    cfg, again = pa_config(tmp, "steps-again", "max_workers: 3, admit_at_steps: [40]",
                           aggregation=steps)
    run_with_joiner(cfg)
    assert (again / "model.json").read_bytes() == (out / "model.json").read_bytes(), \
        "a replayed join (rounds of steps) changed the model"
    # A step that is not a round's end is refused before training, naming the boundaries.
    cfg, _ = pa_config(tmp, "between", "max_workers: 3, admit_at_steps: [42]", aggregation=steps)
    r = h.run("run", cfg)
    assert r.code == 2, r
    assert ("fault_tolerance.elastic.admit_at_steps: step 42 is not a round boundary; in "
            "aggregation.mode parameters a joiner is admitted between two rounds, and the rounds of "
            "this run end at steps 5, 10, 15, 20, 25, 30, ... (the last, 120, ends training); list "
            "0 or steps among those") in r.stderr, r


def test_parameters_second_joiner_above_max_workers_is_refused(tmp):
    # max_workers 3: the first joiner is admitted after round 1, the second (after round 2)
    # would make 4 and is refused; the run goes on with three.
    cfg, out = pa_config(tmp, "full", "max_workers: 3, admit_at_steps: [30, 60]")
    second_joiner_refused(cfg, 3)
    s = summary(out)
    assert [(e["event"], e["rank"], e["step"]) for e in s["membership"]["events"]] == \
        [("join", 2, 30)], s["membership"]
    assert s["aggregation"]["participation"] == [4, 4, 3], s["aggregation"]


def test_parameters_join_after_a_leave_takes_its_slot_then_leaves(tmp):
    # Worker 0 leaves in round 1 (its local step 3): it finishes the round (step 30) and its
    # rows go to worker 1 from its local epoch 1. After round 2 (step 60) a joiner takes the
    # only free slot, 0, and every row is re-dealt: worker 1 from its epoch 2, the joiner from 0.
    # The joiner holds slot 0's `leave` fault too, at its own local step 3: it leaves after
    # round 3 (step 90), and all the rows go to worker 1 from its epoch 3 (a re-plan).
    cfg, out = pa_config(tmp, "refill", "max_workers: 2, admit_at_steps: [60]",
                         fault="{rank: 0, at_step: 3, action: leave}")
    run_with_joiner(cfg)
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    leave, join, again = s["membership"]["events"]
    assert (leave["event"], leave["rank"], leave["step"], leave["workers"]) == \
        ("leave", 0, 30, 1), leave
    assert [(t["rank"], t["rows"]) for t in leave["reassigned"]["to"]] == [(1, 1800)], leave
    assert (join["event"], join["rank"], join["step"], join["workers"]) == \
        ("join", 0, 60, 2), join
    assert join["pid"] != leave["pid"], (leave, join)
    assert [(t["rank"], t["rows"], t["from_epoch"]) for t in join["replanned"]["to"]] == \
        [(0, 1800, 0), (1, 1800, 2)], join
    assert (again["event"], again["rank"], again["pid"], again["step"], again["workers"]) == \
        ("leave", 0, join["pid"], 90, 1), again
    dealt = again["reassigned"]
    assert dealt["rows"] == 1800 and dealt["from_epoch"] == 3, dealt
    assert [(t["rank"], t["rows"]) for t in dealt["to"]] == [(1, 3600)], dealt
    # Every round saw every training row: one worker, then two, then one again.
    assert s["membership"]["rows_per_epoch"] == [3600] * 4, s["membership"]
    assert s["aggregation"]["participation"] == [2, 4], s["aggregation"]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]


if __name__ == "__main__":
    h.main([test_parameters_joiner_is_admitted_at_a_round_and_dealt_every_rows_share,
            test_parameters_joiner_in_a_compressed_run_is_sent_the_model_whole,
            test_parameters_join_in_rounds_of_steps,
            test_parameters_second_joiner_above_max_workers_is_refused,
            test_parameters_join_after_a_leave_takes_its_slot_then_leaves])
