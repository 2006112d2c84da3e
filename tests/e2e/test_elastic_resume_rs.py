"""fault_tolerance.elastic across `run --resume` over the ring, sharded servers and async, with
real worker processes. Resumed after a planned leave, a ring or sharded-servers run goes on
with the members of its checkpoint only: the ring forms without the leaver from its first step,
the servers do not wait for the leaver's pushes, and the model is the bits of the run that
never stopped. Async keeps the leaver out too (not bit for bit: async runs differ by design);
its rows are dealt again. Another shards.count on --resume (a resize) re-plans the ring and
the servers from the next epoch, the same bits on a rerun (parameters mode:
test_elastic_resize_pa.py).

Every stopped run ends with a `kill` fault under `abort` (exit 3) after periodic checkpoints
every 50 steps; the resume runs the config without that fault."""

import math
import shutil

import harness as h
import test_elastic_join as join
from test_elastic import summary, without_pids
from test_elastic_join_pa import pa_config
from test_elastic_ring_servers import config

LEAVE = "{rank: 1, at_step: 70, action: leave}"  # it answers step 71, then leaves
PER_EPOCH = 60  # 3600 training rows, a global batch of 60
TRAIN_ROWS = 3600


def stopped(tmp, kind, name, faults, kill_at, workers=4):
    """A run that worker 3's kill ends after step `kill_at`; its last checkpoint (every 50
    steps, or at the stop) is after the leave."""
    kill = f"{{rank: {workers - 1}, at_step: {kill_at}, action: kill}}"
    cfg, out = config(tmp, kind, name, faults=[*faults, kill], checkpoint=50, workers=workers)
    r = h.run("run", cfg)
    assert r.code == 3, (kind, r)
    return out


def check_resume_after_a_leave(tmp, kind):
    cfg, ref = config(tmp, kind, "ref", faults=[LEAVE], checkpoint=50)
    r = h.run("run", cfg)
    assert r.code == 0, r
    model = (ref / "model.json").read_bytes()
    # Stopped before the leaver's rows were dealt (epoch 2 starts at step 121), and after.
    for kill_at in (110, 160):
        out = stopped(tmp, kind, f"cut{kill_at}", [LEAVE], kill_at)
        cfg, _ = config(tmp, kind, f"cut{kill_at}", faults=[LEAVE], checkpoint=50)
        if kill_at == 160:  # a copy resumed over tcp: the same bits too
            tcp = tmp / f"{kind}-tcp"
            shutil.copytree(out, tcp)
            r = h.run("run", cfg, "--resume", "--set", f"output.dir={tcp}",
                      "--set", "transport.type=tcp")
            assert r.code == 0, (kind, r)
            assert (tcp / "model.json").read_bytes() == model, f"{kind}: tcp resume differs"
        r = h.run("run", cfg, "--resume")
        assert r.code == 0, (kind, r)
        s = summary(out)
        assert 71 < s["checkpoint"]["resumed_from_step"] <= kill_at, s["checkpoint"]
        assert "worker 1 had left the run at the checkpoint's step and is not started again" \
            in r.stderr, r.stderr
        assert (out / "model.json").read_bytes() == model, \
            f"{kind}: resumed after the leave (killed at {kill_at}): not the model of the run " \
            "that never stopped"
        assert without_pids(s["membership"]) == without_pids(summary(ref)["membership"]), \
            (s["membership"], summary(ref)["membership"])
        [leaver] = [w for w in s["worker_stats"] if w["rank"] == 1]
        assert leaver["pid"] == 0, leaver  # never started by the resumed run
        assert s["failures"] == [], s["failures"]
    return r


def test_ring_resume_after_a_leave_gives_the_same_bits(tmp):
    r = check_resume_after_a_leave(tmp, "ring")
    # The ring forms over the three from the first step: no re-form, no step done again.
    assert "the ring forms over workers 0, 2, 3" in r.stderr, r.stderr
    assert "is done again" not in r.stderr, r.stderr


def test_servers_resume_after_a_leave_gives_the_same_bits(tmp):
    check_resume_after_a_leave(tmp, "servers")
    s = summary(tmp / "servers-cut160")
    assert [k["version"] for k in s["aggregation"]["servers"]] == [240, 240], s["aggregation"]


def check_resize(tmp, kind, before, after, kill_at):
    out = stopped(tmp, kind, f"resize{before}to{after}", [], kill_at, workers=before)
    stop = summary(out)["checkpoint"]["last_step"]
    copy = tmp / f"{kind}-copy{before}to{after}"
    shutil.copytree(out, copy)
    models = []
    for folder in (out, copy):
        cfg, _ = config(tmp, kind, f"resize{before}to{after}", checkpoint=50, workers=before)
        r = h.run("run", cfg, "--resume", "--set", f"shards.count={after}",
                  "--set", f"output.dir={folder}")
        assert r.code == 0, (kind, r)
        models.append((folder / "model.json").read_bytes())
    assert models[0] == models[1], f"{kind} {before} -> {after} workers: a rerun changed the model"
    s = summary(out)
    assert s["status"] == "ok" and math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s
    assert len(s["worker_stats"]) == after, s["worker_stats"]
    first = -(-stop // PER_EPOCH) * PER_EPOCH  # the next epoch's first step (0-based)
    assert s["membership"]["events"] == [{"event": "resize", "step": stop, "from_workers": before,
                                          "workers": after, "from_epoch": first // PER_EPOCH,
                                          "skipped_steps": first - stop}], s["membership"]
    rows = [TRAIN_ROWS] * 4
    if stop % PER_EPOCH:
        rows[stop // PER_EPOCH] = (stop % PER_EPOCH) * 60
    assert s["membership"]["rows_per_epoch"] == rows, s["membership"]["rows_per_epoch"]
    assert sum(w["rows"] for w in s["worker_stats"]) == TRAIN_ROWS, s["worker_stats"]
    assert s["steps"] == 240, s["steps"]
    return s


def test_ring_resize_on_resume(tmp):
    s = check_resize(tmp, "ring", 4, 2, 110)
    assert sorted(w["rank"] for w in s["aggregation"]["workers"]) == [0, 1], s["aggregation"]
    check_resize(tmp, "ring", 2, 3, 60)


def test_servers_resize_on_resume(tmp):
    s = check_resize(tmp, "servers", 3, 2, 110)
    # Every server counts the rounds on from the next epoch's first step (121): 240 at the end.
    assert [k["version"] for k in s["aggregation"]["servers"]] == [240, 240], s["aggregation"]


def test_async_resume_after_a_leave_keeps_the_leaver_out(tmp):
    # Async runs differ by design: checked is that the leaver is not started again, the run
    # trains to the end without a failure, and the leaver's rows are dealt again (every row
    # is still in the workers' hands).
    out = tmp / "async"
    base = ["--set", f"output.dir={out}", "--set", "aggregation.mode=async",
            "--set", "aggregation.servers=2", "--set", "fault_tolerance.checkpoint_every.steps=50"]
    cfg = h.source("configs", "elastic_leave_servers.yaml")
    # 84 local steps a worker (2700 rows, 21 batches of 128 an epoch), each slowed 3 ms so that
    # the coordinator logs (and checkpoints) as they go: worker 2 leaves at its step 20, worker
    # 0 is killed at its step 60.
    slow = [f"{{rank: {r}, at_step: 0, action: slow, ms: 3}}" for r in range(4)]
    leave = "{rank: 2, at_step: 20, action: leave}"
    r = h.run("run", cfg, *base, "--set", f"faults=[{', '.join(slow + [leave])}]",
              "--fault", "rank=0,at_step=60,action=kill")
    assert r.code == 3, r
    before = summary(out)["membership"]
    assert [(e["event"], e["rank"]) for e in before["events"]] == [("leave", 2)], before
    r = h.run("run", cfg, *base, "--set", f"faults=[{', '.join(slow)}]", "--resume", "--json")
    assert r.code == 0, r
    assert "worker 2 had left the run at the checkpoint's step and is not started again" \
        in r.stderr, r.stderr
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    [leaver] = [w for w in s["worker_stats"] if w["rank"] == 2]
    assert leaver["pid"] == 0, leaver
    [event] = s["membership"]["events"]
    dealt = event["reassigned"]
    assert dealt["rows"] == 2700, dealt  # its whole shard, dealt again on resume
    assert sorted(t["rank"] for t in dealt["to"]) == [0, 1, 3], dealt
    assert sum(t["rows"] for t in dealt["to"]) == 2700, dealt
    # Every training row is in the hands of a worker still training.
    assert sum(w["rows"] for w in s["worker_stats"] if w["rank"] != 2) == s["train_rows"], \
        s["worker_stats"]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.2, s["final_loss"]


def test_resume_after_a_join_refills_the_slot(tmp):
    # Gradients over the star, 2 workers, max 3: the joiner is admitted after step 70 and its
    # rows come with the re-plan of epoch 2 (step 121). Stopped at step 100 (the re-plan still
    # to come) and at 150 (after it), the resumed run starts the joiner's slot itself (no
    # `--join` needed): the model of the run that never stopped, bit for bit.
    elastic = "max_workers: 3, admit_at_steps: [70]"
    cfg, ref = join.config(tmp, "ref", elastic=elastic)
    join.run_with_joiner(cfg)
    model = (ref / "model.json").read_bytes()
    for stop in (100, 150):
        cfg, out = join.config(tmp, f"cut{stop}", elastic=elastic)
        run = join.Run(cfg, "--fault", f"rank=0,at_step={stop},action=kill")
        worker = join.joiner(run.join_endpoint())
        code, err = run.finish()
        assert code == 3, err
        join.finish_joiner(worker)
        assert summary(out)["checkpoint"]["last_step"] == stop, summary(out)["checkpoint"]
        r = h.run("run", cfg, "--resume")
        assert r.code == 0, r
        assert "the slot of worker 2, which joined the run before the checkpoint, is refilled " \
            "by a worker this coordinator starts" in r.stderr, r.stderr
        s = summary(out)
        assert (out / "model.json").read_bytes() == model, \
            f"resumed at step {stop} after a join: not the model of the run that never stopped"
        assert without_pids(s["membership"]) == without_pids(summary(ref)["membership"]), \
            (s["membership"], summary(ref)["membership"])
        stats = {w["rank"]: w for w in s["worker_stats"]}
        assert stats[2]["pid"] > 0 and stats[2]["rows"] == 1200, stats[2]
        assert (out / "workers" / "2.log").exists()  # this run's own child


def test_parameters_resume_after_a_join_refills_the_slot(tmp):
    # Parameters mode, 2 workers in rounds of one epoch (30 local steps): the joiner is admitted
    # at the end of round 1 (step 30) and counts its own 20 local steps an epoch. Stopped in
    # round 3 (checkpoint at step 60) and resumed, the coordinator refills its slot, which
    # counts the same steps: the model of the run that never stopped.
    elastic = "max_workers: 3, admit_at_steps: [30]"
    every = ("--set", "fault_tolerance.checkpoint_every.steps=30")
    cfg, ref = pa_config(tmp, "ref", elastic)
    join.run_with_joiner(cfg, *every)
    cfg, out = pa_config(tmp, "cut", elastic)
    run = join.Run(cfg, *every, "--fault", "rank=0,at_step=75,action=kill")
    worker = join.joiner(run.join_endpoint())
    code, err = run.finish()
    assert code == 3, err
    join.finish_joiner(worker)
    assert summary(out)["checkpoint"]["last_step"] == 60, summary(out)["checkpoint"]
    r = h.run("run", cfg, "--resume", *every)
    assert r.code == 0, r
    assert "the slot of worker 2, which joined the run before the checkpoint, is refilled" \
        in r.stderr, r.stderr
    assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes(), \
        "a parameters-mode resume after a join trained otherwise than the run that never stopped"
    s = summary(out)
    assert s["aggregation"]["local_steps_per_epoch"] == [30, 30, 20], s["aggregation"]
    assert without_pids(s["membership"]) == without_pids(summary(ref)["membership"])


def test_ring_and_servers_resume_after_a_join_refill_the_slot(tmp):
    # As in the star: 2 workers, the joiner admitted after step 70, its rows re-planned from
    # epoch 2 (step 121). Stopped at step 100 (before the re-plan) and 140 (after), by a kill of
    # worker 1 (the ring's leader, rank 0, sends the checkpoint's state), and resumed: the slot
    # is refilled and the ring re-forms with it, or the servers count it: the unbroken run's bits.
    elastic = "max_workers: 3, admit_at_steps: [70]"
    every = ("--set", "fault_tolerance.checkpoint_every.steps=20")
    for kind in ("ring", "servers"):
        cfg, ref = config(tmp, kind, "ref", workers=2, epochs=3, elastic=elastic)
        join.run_with_joiner(cfg, *every)
        for stop in (100, 150):
            cfg, out = config(tmp, kind, f"cut{stop}", workers=2, epochs=3, elastic=elastic)
            run = join.Run(cfg, *every, "--fault", f"rank=1,at_step={stop},action=kill")
            worker = join.joiner(run.join_endpoint())
            code, err = run.finish()
            assert code == 3, err
            join.finish_joiner(worker)
            r = h.run("run", cfg, *every, "--resume")
            assert r.code == 0, r
            saved = summary(out)["checkpoint"]["resumed_from_step"]
            assert saved in (stop, stop - 10), summary(out)["checkpoint"]
            assert "is refilled by a worker this coordinator starts" in r.stderr, r.stderr
            assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes(), \
                f"{kind}: resumed at step {saved} after a join: not the unbroken run's model"


if __name__ == "__main__":
    h.main([test_ring_resume_after_a_leave_gives_the_same_bits,
            test_servers_resume_after_a_leave_gives_the_same_bits,
            test_ring_resize_on_resume,
            test_servers_resize_on_resume,
            test_async_resume_after_a_leave_keeps_the_leaver_out,
            test_resume_after_a_join_refills_the_slot,
            test_parameters_resume_after_a_join_refills_the_slot,
            test_ring_and_servers_resume_after_a_join_refill_the_slot])
