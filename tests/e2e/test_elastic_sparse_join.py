"""fault_tolerance.elastic, workers joining a running job that trains on sparse rows (LIBSVM read
with data.sparse: true), with real processes, where the other join tests do not go: over the
ring (which densifies sparse gradients: the joiner is handed a member's state, as a dense-row
joiner is, and reads its sparse rows at the re-plan), in parameters mode (whole models) and in
async mode (the keyed exchange: the joiner pulls the values of its first batch's keys). Ring:
the same join replayed gives the same bits (over ipc and tcp), the model is the star's with the
same join when the ring has two members (bit for bit), and close to it with four (the ring adds
each segment in its own order); --resume after the join gives the unbroken run's bits.
Parameters: every row once per epoch, replayed bits. Async (not reproducible by design): the
accounting of every push and row, and the loss. Also: a ring run with compression that fails
(on_worker_failure abort) still reports the frames of the steps it recorded in summary.json."""

import json
import math

import harness as h
from test_elastic import summary
from test_elastic_join import Run, finish_joiner, joiner, run_with_joiner
from test_elastic_ring_servers import SPARSE, sparse_data

# test_elastic_ring_servers.SPARSE: 700 LIBSVM rows over 60 keys, 630 for training, 3 workers,
# a global batch of 50 (13 steps an epoch), 3 epochs; logistic regression, sgd (no L2).
TRAIN_ROWS = 630
PER_EPOCH = 13


def sparse_config(tmp, name, *, aggregation, workers=3, epochs=3, elastic="", faults=""):
    out = tmp / name
    text = (SPARSE.format(path=sparse_data(tmp), policy="abort", fault=faults, out=out,
                          elastic=f", elastic: {{{elastic}}}" if elastic else "")
            .replace("{mode: gradients, servers: 2}", aggregation)
            .replace("shards: {count: 3}", f"shards: {{count: {workers}}}")
            .replace("epochs: 3,", f"epochs: {epochs},"))
    assert aggregation in text and f"count: {workers}" in text, text
    return h.write_config(tmp, text, f"{name}.yaml"), out


RING = "{mode: gradients, topology: ring}"
STAR = "{mode: gradients}"


def ring_join(tmp, name, aggregation, workers, at, *args):
    """A run of `workers` that a joiner enters after step `at` (max_workers: workers + 1): its
    summary and model bytes, after the checks every such run must pass."""
    cfg, out = sparse_config(tmp, name, aggregation=aggregation, workers=workers,
                             elastic=f"max_workers: {workers + 1}, admit_at_steps: [{at}]")
    err, werr = run_with_joiner(cfg, *args)
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    [event] = s["membership"]["events"]
    assert {k: event[k] for k in ("event", "rank", "step", "workers")} == \
        {"event": "join", "rank": workers, "step": at, "workers": workers + 1}, event
    # Rows re-dealt among all the members from the next epoch: every row once per epoch.
    plan = event["replanned"]
    assert plan["from_epoch"] == (at + PER_EPOCH - 1) // PER_EPOCH, plan
    assert sum(t["rows"] for t in plan["to"]) == TRAIN_ROWS, plan
    assert [t["rank"] for t in plan["to"]] == list(range(workers + 1)), plan
    assert s["membership"]["rows_per_epoch"] == [TRAIN_ROWS] * 3, s["membership"]
    stats = {w["rank"]: w for w in s["worker_stats"]}
    assert stats[workers]["steps"] == 3 * PER_EPOCH - at, stats[workers]
    assert stats[workers]["rows"] == plan["to"][-1]["rows"] > 0, stats[workers]
    assert math.isfinite(s["final_loss"]), s
    assert "error" not in werr.lower(), werr
    if "ring" in aggregation:
        agg = s["aggregation"]
        assert agg["replicas_agree"] is True, agg  # the joiner's digest is the others'
        # It all-reduced every step from its admission, over the re-formed ring.
        assert {w["rank"]: w["allreduces"] for w in agg["workers"]}[workers] == \
            3 * PER_EPOCH - at, agg
        assert "to take in the joined worker" in err, err
    return s, (out / "model.json").read_bytes()


def test_ring_join_with_sparse_rows(tmp):
    # Three workers, a joiner after step 15 (epoch 1): it all-reduces a zero gradient until
    # epoch 2's re-plan deals it its sparse rows. Replayed over tcp: the same bits.
    s, model = ring_join(tmp, "ring", RING, 3, 15)
    _, again = ring_join(tmp, "ring-tcp", RING, 3, 15, "--set", "transport.type=tcp")
    assert again == model, "a replayed sparse join over the ring changed the model"
    # The star (keyed) with the same join: the same training, summed in another order (each
    # ring segment starts at another member), so the same loss to rounding, not the same bits.
    star, star_model = ring_join(tmp, "star", STAR, 3, 15)
    assert abs(star["final_loss"] - s["final_loss"]) <= 1e-9 * abs(star["final_loss"]), \
        (star["final_loss"], s["final_loss"])
    # Without the join the three train another model.
    cfg, alone = sparse_config(tmp, "alone", aggregation=RING)
    assert h.run("run", cfg).code == 0
    assert (alone / "model.json").read_bytes() != model, "the join changed nothing"


def test_ring_of_two_equals_the_star_with_the_same_join(tmp):
    # One worker, a joiner after step 20 (epoch 1): two members from then on, whose sum a + b
    # is b + a: the ring's bits are the keyed star's with the same join.
    _, ring = ring_join(tmp, "ring2", RING, 1, 20)
    _, star = ring_join(tmp, "star2", STAR, 1, 20)
    assert ring == star, "the sparse ring's join trained otherwise than the star's"


def test_ring_resume_after_a_sparse_join_gives_the_same_bits(tmp):
    # A checkpoint every 5 steps; worker 1 killed (abort: exit 3) at step 22 (before epoch 2's
    # re-plan, step 27) or 32 (after it): --resume refills the joiner's slot, re-forms the ring
    # with it and re-deals the rows as the unbroken run did: its model, bit for bit.
    every = ("--set", "fault_tolerance.checkpoint_every.steps=5")
    elastic = "max_workers: 4, admit_at_steps: [15]"
    cfg, ref = sparse_config(tmp, "ref", aggregation=RING, elastic=elastic)
    run_with_joiner(cfg, *every)
    for stop in (22, 32):
        cfg, out = sparse_config(tmp, f"cut{stop}", aggregation=RING, elastic=elastic)
        run = Run(cfg, *every, "--fault", f"rank=1,at_step={stop},action=kill")
        worker = joiner(run.join_endpoint())
        code, err = run.finish()
        assert code == 3, err
        finish_joiner(worker)
        r = h.run("run", cfg, *every, "--resume")
        assert r.code == 0, r
        assert "is refilled by a worker this coordinator starts" in r.stderr, r.stderr
        assert stop - 5 < summary(out)["checkpoint"]["resumed_from_step"] <= stop, summary(out)
        assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes(), \
            f"resumed at step {stop} after a sparse join: not the unbroken run's model"


def test_parameters_join_with_sparse_rows(tmp):
    # Mode parameters (a dense exchange: whole models), a round an epoch: 2 workers with 315 rows
    # (7 local steps an epoch); the joiner, admitted after the first round (step 7), is sent the
    # merged model and its share, 210 rows (5 steps an epoch), at once; the others take theirs
    # from their next local epoch (1), keeping 7 steps an epoch. Every row once per epoch, and
    # the same join replayed gives the same bits.
    models = []
    for name in ("params", "params-again"):
        cfg, out = sparse_config(tmp, name, workers=2,
                                 aggregation="{mode: parameters, parameters: {sync_every: "
                                             "{epochs: 1}}}",
                                 elastic="max_workers: 3, admit_at_steps: [7]")
        run_with_joiner(cfg)
        s = summary(out)
        assert s["status"] == "ok" and s["failures"] == [], s
        [event] = s["membership"]["events"]
        assert (event["event"], event["rank"], event["step"]) == ("join", 2, 7), event
        assert [(t["rank"], t["rows"], t["from_epoch"]) for t in event["replanned"]["to"]] == \
            [(0, 210, 1), (1, 210, 1), (2, 210, 0)], event
        assert s["membership"]["rows_per_epoch"] == [TRAIN_ROWS] * 3, s["membership"]
        stats = {w["rank"]: (w["steps"], w["rows"]) for w in s["worker_stats"]}
        assert stats == {0: (21, 210), 1: (21, 210), 2: (10, 210)}, stats
        models.append((out / "model.json").read_bytes())
    assert models[0] == models[1], "a replayed sparse join in parameters mode changed the model"


# Async: 2 workers start with 315 rows each (7 local steps of 50 rows an epoch); after a join
# each of the 3 holds 210 (5 steps). Each starting worker sleeps 30 ms a step so that the run
# lasts while the joiner starts.
EPOCHS = 12
SLOW = "{rank: 0, at_step: 0, action: slow, ms: 30}, {rank: 1, at_step: 0, action: slow, ms: 30}"


def test_async_join_with_sparse_rows(tmp):
    cfg, out = sparse_config(tmp, "async", aggregation="{mode: async, servers: 2}", workers=2,
                             epochs=EPOCHS, elastic="max_workers: 3, admit_at_steps: [20]",
                             faults=SLOW)
    err, werr = run_with_joiner(cfg)
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    [event] = s["membership"]["events"]
    assert {k: event[k] for k in ("event", "rank", "step", "workers")} == \
        {"event": "join", "rank": 2, "step": 20, "workers": 3}, event
    plan = event["replanned"]
    to = {t["rank"]: t for t in plan["to"]}
    # Every training row dealt in three shares, each taken from an epoch after the join's.
    assert sorted(to) == [0, 1, 2] and [t["rows"] for t in plan["to"]] == [210] * 3, plan
    assert sum(t["rows"] for t in plan["to"]) == s["train_rows"] == TRAIN_ROWS, s
    assert all(1 <= t["from_epoch"] < EPOCHS for t in plan["to"]), plan
    # Measured pushes: 7 a local epoch before a member's share, 5 after; the joiner trains only
    # the epochs from its own. Had a share been added to a shard instead of replacing it, or
    # the joiner's keyed pushes not been applied, the servers' count would differ.
    stats = {w["rank"]: w for w in s["worker_stats"]}
    for rank in (0, 1):
        f = to[rank]["from_epoch"]
        assert stats[rank]["steps"] == 7 * f + 5 * (EPOCHS - f), (stats[rank], plan)
    assert stats[2]["steps"] == 5 * (EPOCHS - to[2]["from_epoch"]) > 0, (stats[2], plan)
    assert stats[2]["rows"] == 210 and stats[2]["pid"] == event["pid"], stats[2]
    assert s["aggregation"]["updates"] == sum(stats[r]["steps"] for r in (0, 1, 2)), s
    # It converges: the hidden linear rule is learnt (chance is log 2 = 0.69, AUC 0.5).
    assert s["final_loss"] < 0.5, s["final_loss"]
    assert s["validation"]["auc"] > 0.8, s["validation"]
    assert "worker 2 joined the run" in err and "error" not in werr.lower(), (err, werr)


def test_failed_ring_run_counts_what_travelled(tmp):
    # A ring run that fails (worker 1 killed at its step 40, on_worker_failure abort: exit 3)
    # still reports the frames of the steps it recorded: each of the 4 workers sends 2(N-1)
    # segments a step, the N segments of P values once a phase, so 2(N-1) x P values a step.
    out = tmp / "ring-killed"
    r = h.run("run", h.source("configs", "linear_regression.yaml"), "--set",
              "aggregation.topology=ring", "--set", "aggregation.compression=bf16", "--set",
              f"output.dir={out}", "--fault", "rank=1,at_step=40,action=kill", timeout=60)
    assert r.code == 3, r
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == "failed", s
    c = s["aggregation"]["compression"]
    p, n = 9, 4  # data/linear.csv: 8 features and the bias
    assert 0 < s["steps"] <= 40, s["steps"]
    assert c["codec"] == "bf16" and c["values"] == s["steps"] * 2 * (n - 1) * p, (c, s["steps"])
    assert c["bytes"] < c["float64_bytes"] == 8 * c["values"], c


if __name__ == "__main__":
    h.main([test_ring_join_with_sparse_rows,
            test_ring_of_two_equals_the_star_with_the_same_join,
            test_ring_resume_after_a_sparse_join_gives_the_same_bits,
            test_parameters_join_with_sparse_rows,
            test_async_join_with_sparse_rows,
            test_failed_ring_run_counts_what_travelled])
