"""fault_tolerance.elastic: `run --resume` with another shards.count (a resize) in
aggregation.mode parameters (model averaging), with real worker processes. The rows are planned
for the new count afresh; the rounds go on from the checkpoint's on the log's step axis of the
run's start; a slot that trained at the checkpoint goes on at its next local epoch (its new
shard), a new slot, or one a worker had left, starts afresh as a joiner does, and the slots
above the new count are gone. Checked: every training row in every epoch after it
(rows_per_epoch, worker_stats), the `resize` event with each member's share, a final loss close
to the unbroken runs', the same bits on a rerun (over tcp) and after a second --resume, rounds of
steps (the rest of an interrupted local epoch skipped), kept optimizer states (optimizer_state
keep), fp16 (a new slot gets the model whole), and the refusals (exit 2).

Every stopped run ends with a `kill` fault under `abort` (exit 3) after periodic checkpoints at
round boundaries; the resume runs without that fault."""

import shutil

import elastic_config as ec
import harness as h
from test_checkpoint_edited import decode
from test_elastic import summary

# 3600 training rows, batches of 60 rows per worker: 2 workers hold 1800 rows (30 local steps
# an epoch), 3 hold 1200 (20). Four rounds of one local epoch each.
ROUNDS = "{mode: parameters, parameters: {sync_every: {epochs: 1}}}"
TRAIN_ROWS = ec.TRAIN_ROWS


def pa_config(tmp, name, workers, out=None, aggregation=ROUNDS, elastic="min_workers: 1",
              faults=()):
    return ec.config(tmp, name, out, workers=workers, aggregation=aggregation, checkpoint=None,
                     elastic=elastic, faults=faults, log_every=10, title="resize-pa")


def stop(cfg, kill, every):
    """Runs cfg until the kill fault (rank, local step) ends it (exit 3) with checkpoints every
    `every` steps (round boundaries)."""
    r = h.run("run", cfg, "--set", f"fault_tolerance.checkpoint_every.steps={every}",
              "--fault", f"rank={kill[0]},at_step={kill[1]},action=kill")
    assert r.code == 3, r
    return r


def resume(cfg, folder, workers, every, *more):
    r = h.run("run", cfg, "--resume", "--set", f"shards.count={workers}",
              "--set", f"output.dir={folder}",
              "--set", f"fault_tolerance.checkpoint_every.steps={every}", *more)
    return r


def check_resize(tmp, before, after, kill, every, aggregation=ROUNDS, faults=()):
    """A run of `before` workers stopped by `kill`, resumed with `after` twice (the folder over
    ipc, a copy over tcp): the same bits both times. Returns the summary, the model, the
    checkpoint's step and the first resume's stderr."""
    elastic = f"max_workers: {max(before, after)}"
    cfg, out = pa_config(tmp, "cut", before, aggregation=aggregation, elastic=elastic,
                         faults=faults)
    stop(cfg, kill, every)
    step = summary(out)["checkpoint"]["last_step"]
    copy = tmp / "copy"
    shutil.copytree(out, copy)
    models, errs = [], []
    # The config's faults are dropped: a slot that starts afresh would count its local steps
    # from 0 again, and a `leave` fault of its slot would fire again.
    for folder, transport in ((out, "ipc"), (copy, "tcp")):
        r = resume(cfg, folder, after, every, "--set", "faults=[]",
                   "--set", f"transport.type={transport}")
        assert r.code == 0, r
        models.append((folder / "model.json").read_bytes())
        errs.append(r.stderr)
    assert models[0] == models[1], \
        f"{before} -> {after} workers: a rerun (over tcp) changed the model"
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    assert s["checkpoint"]["resumed_from_step"] == step, s["checkpoint"]
    assert len([w for w in s["worker_stats"] if w["pid"] > 0]) == after, s["worker_stats"]
    assert sum(w["rows"] for w in s["worker_stats"]) == TRAIN_ROWS, s["worker_stats"]
    return s, models[0], step, errs[0]


def without_pids(membership):
    """The record less the pids, which differ from run to run (a resize event has none)."""
    events = [{k: v for k, v in e.items() if k != "pid"} for e in membership["events"]]
    return {**membership, "events": events}


def check_loss(tmp, got, before, after):
    """FedAvg's loss after four rounds depends on the worker count (each merge averages models
    trained on smaller shards): the resized run's final loss lies between the unbroken runs' with
    the two counts, 5% either side."""
    losses = []
    for workers in (before, after):
        cfg, out = pa_config(tmp, f"unbroken{workers}", workers,
                             elastic=f"max_workers: {max(before, after)}")
        r = h.run("run", cfg)
        assert r.code == 0, r
        losses.append(summary(out)["final_loss"])
    assert 0.95 * min(losses) <= got <= 1.05 * max(losses), (got, losses)


def test_grow_from_2_to_3_workers(tmp):
    # Stopped in round 3 (worker 1's local step 75), checkpoint at step 60 (round 2's end).
    # Resumed with 3: workers 0 and 1 go on at their local epoch 2 with 1200 rows (20 local
    # steps an epoch), worker 2 starts afresh at its epoch 0; the log's axis stays 30 an epoch.
    s, model, step, err = check_resize(tmp, 2, 3, kill=(1, 75), every=30)
    assert step == 60, step
    [event] = s["membership"]["events"]
    assert event == {"event": "resize", "step": 60, "from_workers": 2, "workers": 3,
                     "from_epoch": 0, "skipped_steps": 0, "from_round": 2,
                     "to": [{"rank": 0, "rows": 1200, "from_epoch": 2},
                            {"rank": 1, "rows": 1200, "from_epoch": 2},
                            {"rank": 2, "rows": 1200, "from_epoch": 0}]}, event
    # Every training row in every round, before and after the resize.
    assert s["membership"]["rows_per_epoch"] == [TRAIN_ROWS] * 4, s["membership"]
    agg = s["aggregation"]
    assert agg["local_steps_per_epoch"] == [20, 20, 20], agg
    assert agg["participation"] == [4, 4, 2], agg
    assert s["steps"] == 120, s["steps"]  # four rounds of 30 steps on the log's axis
    stats = {w["rank"]: w for w in s["worker_stats"]}
    assert stats[2]["rows"] == 1200 and stats[2]["steps"] == 2 * 20, stats[2]
    assert "worker 2 starts afresh, as joiners do" in err, err
    check_loss(tmp, s["final_loss"], 2, 3)


def test_a_second_resume_replays_the_resize(tmp):
    # Grown 2 -> 3 from step 60 and stopped again in round 4 (worker 0's local step 65: it went
    # on at 40), checkpoint at 90; resumed with the same 3 workers: the bits of the run resumed
    # once, and the same membership record.
    elastic = "max_workers: 3"
    cfg, out = pa_config(tmp, "cut", 2, elastic=elastic)
    stop(cfg, (1, 75), 30)
    copy = tmp / "copy"
    shutil.copytree(out, copy)
    assert resume(cfg, out, 3, 30).code == 0
    r = resume(cfg, copy, 3, 30, "--fault", "rank=0,at_step=65,action=kill")
    assert r.code == 3, r
    assert summary(copy)["checkpoint"]["last_step"] == 90, summary(copy)["checkpoint"]
    r = resume(cfg, copy, 3, 30)
    assert r.code == 0, r
    assert summary(copy)["checkpoint"]["resumed_from_step"] == 90
    assert (copy / "model.json").read_bytes() == (out / "model.json").read_bytes(), \
        "a second --resume after a resize trained otherwise than the run resumed once"
    assert without_pids(summary(copy)["membership"]) == without_pids(summary(out)["membership"])


def test_shrink_from_3_to_2_workers(tmp):
    # 3 workers (20 local steps an epoch), stopped in round 3 (worker 2's local step 50),
    # checkpoint at step 40. Resumed with 2: worker 2's slot is gone, 0 and 1 go on at their
    # local epoch 2 with 1800 rows each (30 local steps); the log's axis stays 20 an epoch.
    s, model, step, _ = check_resize(tmp, 3, 2, kill=(2, 50), every=20)
    assert step == 40, step
    [event] = s["membership"]["events"]
    assert event["to"] == [{"rank": 0, "rows": 1800, "from_epoch": 2},
                           {"rank": 1, "rows": 1800, "from_epoch": 2}], event
    assert (event["from_workers"], event["workers"], event["from_epoch"]) == (3, 2, 2), event
    assert s["membership"]["rows_per_epoch"] == [TRAIN_ROWS] * 4, s["membership"]
    assert s["aggregation"]["local_steps_per_epoch"] == [30, 30, 0], s["aggregation"]
    assert s["aggregation"]["participation"] == [4, 4, 2], s["aggregation"]
    assert s["steps"] == 80, s["steps"]
    check_loss(tmp, s["final_loss"], 3, 2)


def test_shrink_in_rounds_of_steps(tmp):
    # Rounds of 5 local steps: 3 workers (20 an epoch) stopped in round 7 (worker 2's local step
    # 33), checkpoint at step 30, the two left at local step 30, in the middle of their epoch 1.
    # Resumed with 2 (30 local steps an epoch), they skip the rest of it and go on at epoch 2
    # (local step 60). The log's axis stays 20 steps an epoch: its epoch 1 has 10 steps of three
    # workers' 60-row batches and 10 of two, the later ones 20 of two.
    steps = "{mode: parameters, parameters: {sync_every: {steps: 5}}}"
    s, _, step, _ = check_resize(tmp, 3, 2, kill=(2, 33), every=10, aggregation=steps)
    assert step == 30, step
    [event] = s["membership"]["events"]
    assert (event["from_round"], event["from_epoch"]) == (6, 2), event
    assert [t["from_epoch"] for t in event["to"]] == [2, 2], event
    assert s["membership"]["rows_per_epoch"] == [TRAIN_ROWS, 3000, 2400, 2400], s["membership"]
    assert s["steps"] == 80 and s["aggregation"]["rounds"] == 16, s


def test_shrink_with_a_leaver_in_the_checkpoint(tmp):
    # 3 workers; worker 1 leaves in round 2 (its local step 25) and worker 2's kill in round 3
    # stops the run, checkpoint at 40 with 0 and 2 training. Resumed with 2: slot 1, which its
    # worker had left, starts afresh (local epoch 0, no state), slot 2 is gone; every row is in
    # the new two shards.
    leave = "{rank: 1, at_step: 25, action: leave}"
    s, _, step, err = check_resize(tmp, 3, 2, kill=(2, 50), every=20, faults=[leave])
    assert step == 40, step
    leave_event, event = s["membership"]["events"]
    assert leave_event["event"] == "leave" and leave_event["rank"] == 1, leave_event
    assert event["from_workers"] == 2 and event["workers"] == 2, event
    assert event["to"] == [{"rank": 0, "rows": 1800, "from_epoch": 2},
                           {"rank": 1, "rows": 1800, "from_epoch": 0}], event
    assert s["membership"]["rows_per_epoch"][2:] == [TRAIN_ROWS] * 2, s["membership"]
    assert "worker 1 starts afresh, as joiners do" in err, err


def test_a_run_left_below_min_workers_resumes_with_every_rank(tmp):
    # min_workers 3 of 3: worker 1's leave in round 2 fails the run once join_timeout_ms has
    # passed (checkpoint at step 40). The resume is a resize of the same count: the slot it
    # left starts afresh, the others go on at their local epoch 2.
    leave = "{rank: 1, at_step: 25, action: leave}"
    cfg, out = pa_config(tmp, "below", 3, elastic="min_workers: 3, join_timeout_ms: 300",
                         faults=[leave])
    r = h.run("run", cfg, "--set", "fault_tolerance.checkpoint_every.steps=20")
    assert r.code == 3 and "below fault_tolerance.elastic.min_workers = 3" in r.stderr, r
    r = resume(cfg, out, 3, 20, "--set", "faults=[]")
    assert r.code == 0, r
    assert "worker 1 starts afresh, as joiners do" in r.stderr, r.stderr
    s = summary(out)
    assert [(e["event"], e["step"]) for e in s["membership"]["events"]] == \
        [("leave", 40), ("resize", 40)], s["membership"]
    assert [(t["rank"], t["from_epoch"]) for t in s["membership"]["events"][1]["to"]] == \
        [(0, 2), (1, 0), (2, 2)], s["membership"]
    assert s["membership"]["rows_per_epoch"] == [TRAIN_ROWS] * 4, s["membership"]
    assert s["aggregation"]["participation"] == [4, 4, 4], s["aggregation"]


def test_kept_optimizer_states_across_a_grow(tmp):
    # optimizer_state keep (sgd with momentum): grown 2 -> 3 from step 60 and stopped again in
    # round 4, checkpoint at step 90. Workers 0 and 1 kept their states: 60 optimizer steps
    # before the resize (two rounds of 30) and 20 after; worker 2's started afresh (20). Their
    # positions: local epoch 3 of 20 steps, and 1 (20) for the new one; the log's axis, 30.
    keep = "{mode: parameters, parameters: {sync_every: {epochs: 1}, optimizer_state: keep}}"
    momentum = ("--set", "training.optimizer.momentum=0.9")
    cfg, out = pa_config(tmp, "cut", 2, aggregation=keep, elastic="max_workers: 3")
    r = h.run("run", cfg, *momentum, "--set", "fault_tolerance.checkpoint_every.steps=30",
              "--fault", "rank=1,at_step=75,action=kill")
    assert r.code == 3, r
    r = resume(cfg, out, 3, 30, *momentum, "--fault", "rank=0,at_step=65,action=kill")
    assert r.code == 3, r
    newest = sorted((out / "checkpoint").glob("step-*.ckpt"))[-1]
    _, manifest, _ = decode(newest.read_bytes())
    assert manifest["step"] == 90, manifest["step"]
    steps = {k: v["steps"] for k, v in manifest["optimizers"].items()}
    assert steps == {"client.0.optimizer": 80, "client.1.optimizer": 80,
                     "client.2.optimizer": 20}, steps
    state = manifest["mode_state"]
    assert state["positions"] == [60, 60, 20] and state["steps_per_epoch"] == 30, state


def test_compressed_resize(tmp):
    # fp16 and bf16 models on the wire: grown 2 -> 3 from step 60. The resumed run's tally: no
    # worker of it holds a model, so each of the 3 gets it whole in round 3 (the new one too),
    # then a delta in round 4; up, a delta from each in both rounds. 7 parameters a model. The
    # final loss within 1% of the uncompressed resize's.
    cfg, plain = pa_config(tmp, "plain", 2, elastic="max_workers: 3")
    stop(cfg, (1, 75), 30)
    assert resume(cfg, plain, 3, 30).code == 0
    want = summary(plain)["final_loss"]
    for codec in ("fp16", "bf16"):
        rounds = ROUNDS.replace("{mode: parameters,", f"{{mode: parameters, compression: {codec},")
        (tmp / codec).mkdir()
        s, model, step, _ = check_resize(tmp / codec, 2, 3, kill=(1, 75), every=30,
                                         aggregation=rounds)
        assert step == 60, step
        assert s["membership"]["rows_per_epoch"] == [TRAIN_ROWS] * 4, s["membership"]
        c = s["aggregation"]["compression"]
        assert c["codec"] == codec and c["whole_models"] == 3, c
        assert c["values"] == 4 * 3 * 7 and c["float64_bytes"] == 8 * c["values"], c
        assert abs(s["final_loss"] - want) <= 0.01 * abs(want), (codec, s["final_loss"], want)
        assert (plain / "model.json").read_bytes() != model  # the deltas really were 16 bits


def test_resizes_refused(tmp):
    cfg, out = pa_config(tmp, "cut", 2, elastic="max_workers: 3")
    stop(cfg, (1, 75), 30)
    # Above max_workers: the config says so (exit 2), nothing trains.
    r = resume(cfg, out, 4, 30)
    assert r.code == 2, r
    assert "max_workers" in r.stderr and "set max_workers >= 4" in r.stderr, r.stderr
    # Without fault_tolerance.elastic a parameters-mode run keeps its count.
    cfg, plain = pa_config(tmp, "plain", 2, elastic=None)
    stop(cfg, (1, 75), 30)
    r = resume(cfg, plain, 3, 30)
    assert r.code == 2, r
    assert "Resuming with another worker count needs fault_tolerance.elastic" in r.stderr, r.stderr


if __name__ == "__main__":
    h.main([test_grow_from_2_to_3_workers,
            test_a_second_resume_replays_the_resize,
            test_shrink_from_3_to_2_workers,
            test_shrink_in_rounds_of_steps,
            test_shrink_with_a_leaver_in_the_checkpoint,
            test_a_run_left_below_min_workers_resumes_with_every_rank,
            test_kept_optimizer_states_across_a_grow,
            test_compressed_resize,
            test_resizes_refused])
