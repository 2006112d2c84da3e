"""fault_tolerance.elastic, workers joining a running job over the ring all-reduce and over
sharded parameter servers, with real processes (test_elastic_join.py does the star). The
joiner (`disttrain worker --connect ADDR --join`) is admitted at a fixed step boundary
(admit_at_steps). Ring: it is handed a member's parameters and optimizer state and the ring
re-forms with it in rank order (the final digests of every replica must agree, or the run
fails). Servers: each server waits for its pushes from the round it is admitted at, and it
pulls the parameters from them; the model is the star's with the same join, bit for bit (the
servers' arithmetic is the star's). Both: rows re-dealt from the next epoch (every row once
per epoch), the same join replayed gives the same bits over ipc and tcp, a join takes a
leaver's slot, and a joiner above max_workers is refused."""

import math

import harness as h
import test_hosts
from test_elastic import summary
from test_elastic_join import (Run, finish_joiner, join_across_hosts, joiner, run_with_joiner,
                               the_join)
from test_elastic_ring_servers import SPARSE, config, sparse_data

def join(at):
    return f"max_workers: 3, admit_at_steps: [{at}]"


def check_join_mid_run(tmp, kind, at):
    # 3600 training rows, global batch 60: 60 steps an epoch, 180 in all. Two workers start;
    # the joiner is admitted after step `at` and trains steps at+1..180: with no rows until the
    # next epoch (at 70), or at once (at 60: an epoch's last step), when the rows are re-dealt
    # among the three.
    cfg, out = config(tmp, kind, "join", workers=2, epochs=3, elastic=join(at))
    err, werr = run_with_joiner(cfg)
    s, event = the_join(out, at)
    m = s["membership"]
    plan = event["replanned"]
    assert plan["from_epoch"] == (at + 59) // 60, plan  # the next epoch to start
    assert [(t["rank"], t["rows"]) for t in plan["to"]] == [(0, 1200), (1, 1200), (2, 1200)]
    assert m["rows_per_epoch"] == [3600, 3600, 3600], m["rows_per_epoch"]
    stats = {w["rank"]: w for w in s["worker_stats"]}
    assert stats[2]["steps"] == 180 - at and stats[2]["rows"] == 1200, stats[2]
    assert stats[0]["steps"] == 180, stats[0]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    assert "worker 2 joined the run" in err and f"after step {at}" in err, err
    # Replayed over tcp: the same join at the same step gives the same bits.
    cfg, again = config(tmp, kind, "again", workers=2, epochs=3, elastic=join(at))
    err, _ = run_with_joiner(cfg, "--set", "transport.type=tcp")
    assert "--connect tcp://127.0.0.1:" in err, err
    assert (again / "model.json").read_bytes() == (out / "model.json").read_bytes(), \
        "a replayed join changed the model"
    # The join changed the training: the two alone train another model.
    cfg, alone = config(tmp, kind, "alone", workers=2, epochs=3)
    assert h.run("run", cfg).code == 0
    assert (alone / "model.json").read_bytes() != (out / "model.json").read_bytes()
    return s, out


def test_ring_join_mid_run_reforms_the_ring_with_the_joiner(tmp):
    s, _ = check_join_mid_run(tmp, "ring", 70)
    agg = s["aggregation"]
    assert agg["replicas_agree"] is True, agg  # the joiner's digest is the others'
    assert [w["rank"] for w in agg["workers"]] == [0, 1, 2], agg
    # It all-reduced every step it trained (110), after the ring re-formed with it.
    assert {w["rank"]: w["allreduces"] for w in agg["workers"]}[2] == 110, agg


def test_servers_join_mid_run_trains_the_stars_model(tmp):
    # Admitted at an epoch's end, the joiner trains on rows at its first step, from the
    # parameters it pulled.
    _, out = check_join_mid_run(tmp, "servers", 60)
    # Two servers sum the same pushes in the same order as the star's one coordinator: the
    # same join over the star gives the same bits (a joiner counted from another round, or
    # starting from other parameters, would not).
    cfg, star = config(tmp, "star", "join", workers=2, epochs=3, elastic=join(60))
    run_with_joiner(cfg)
    assert (star / "model.json").read_bytes() == (out / "model.json").read_bytes(), \
        "the servers' join trained otherwise than the star's"


LEAVES = ["{rank: 1, at_step: 30, action: leave}", "{rank: 1, at_step: 150, action: leave}"]


def check_join_after_leave(tmp, kind):
    # Three workers, max 3, 20 rows a step each: worker 1 leaves after its step 30 (loss.csv's
    # 31); epoch 0 misses its share of steps 32..60 (29 steps), and from epoch 1 the two hold
    # its rows. The joiner, admitted after step 90 (epoch 1), takes its slot (the only free
    # one); every row is re-dealt among the three from epoch 2. It is rank 1 too: the second
    # fault makes it leave after step 151 (its own leave, not the first holder's): epoch 2
    # misses its share of steps 152..180, and the two left hold every row from epoch 3.
    cfg, out = config(tmp, kind, "refill", workers=3, epochs=4, faults=LEAVES,
                      elastic="max_workers: 3, admit_at_steps: [90]")
    run_with_joiner(cfg)
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    leave, join, again = s["membership"]["events"]
    assert (leave["event"], leave["rank"], leave["step"]) == ("leave", 1, 31), leave
    assert (join["event"], join["rank"], join["step"], join["workers"]) == \
        ("join", 1, 90, 3), join
    assert join["replanned"]["from_epoch"] == 2, join
    assert [t["rows"] for t in join["replanned"]["to"]] == [1200, 1200, 1200], join
    assert (again["event"], again["rank"], again["step"], again["pid"]) == \
        ("leave", 1, 151, join["pid"]), again
    assert again["reassigned"]["from_epoch"] == 3, again
    assert [t["rows"] for t in again["reassigned"]["to"]] == [1800, 1800], again
    assert s["membership"]["rows_per_epoch"] == [3600 - 580, 3600, 3600 - 580, 3600], s
    # Replayed: the same bits.
    cfg, replay = config(tmp, kind, "refill-again", workers=3, epochs=4, faults=LEAVES,
                         elastic="max_workers: 3, admit_at_steps: [90]")
    run_with_joiner(cfg)
    assert (replay / "model.json").read_bytes() == (out / "model.json").read_bytes()


def test_ring_join_after_a_leave_takes_its_slot(tmp):
    check_join_after_leave(tmp, "ring")


def test_servers_join_after_a_leave_takes_its_slot(tmp):
    check_join_after_leave(tmp, "servers")


def test_a_joiner_above_max_workers_is_refused_over_ring_and_servers(tmp):
    for kind in ("ring", "servers"):
        cfg, out = config(tmp, kind, "full", workers=2, epochs=2,
                          elastic="max_workers: 2, admit_at_steps: [20]")
        run = Run(cfg)
        worker = joiner(run.join_endpoint())
        wcode, werr = finish_joiner(worker)
        code, err = run.finish()
        assert code == 0, err
        assert wcode == 2, werr
        assert ("the coordinator refused this worker's join: the run has 2 workers, its "
                "fault_tolerance.elastic.max_workers") in werr, werr
        s = summary(out)
        assert s["membership"]["events"] == [] and s["status"] == "ok", s["membership"]


def test_servers_and_star_join_with_sparse_rows(tmp):
    # The keyed exchange (LIBSVM rows read sparse; 630 training rows, global batch 50: 13 steps
    # an epoch, 39 in all): the joiner, admitted after step 15, pulls its first step's values
    # from the servers, and its rows come at epoch 2's re-plan. Replayed: the same bits.
    # Over the star with one server (the coordinator's keyed exchange) the same join gives the
    # same bits as well.
    data = sparse_data(tmp)
    models = []
    for name in ("sparse-join", "sparse-again", "sparse-star"):
        out = tmp / name
        text = SPARSE.format(path=data, policy="abort", fault="", out=out,
                             elastic=", elastic: {max_workers: 4, admit_at_steps: [15]}")
        if name == "sparse-star":
            text = text.replace("servers: 2", "servers: 1")
        cfg = h.write_config(tmp, text, f"{name}.yaml")
        run_with_joiner(cfg)
        s = summary(out)
        assert s["status"] == "ok" and s["failures"] == [], s
        [event] = s["membership"]["events"]
        assert (event["event"], event["rank"], event["step"]) == ("join", 3, 15), event
        assert event["replanned"]["from_epoch"] == 2, event
        assert len(set(s["membership"]["rows_per_epoch"])) == 1, s["membership"]
        assert {w["rank"]: w["steps"] for w in s["worker_stats"]}[3] == s["steps"] - 15, s
        models.append((out / "model.json").read_bytes())
    assert models[0] == models[1], "a replayed sparse join changed the model"
    assert models[2] == models[0], "the star's sparse join trained otherwise than the servers'"


def test_a_ring_worker_joins_from_another_host_over_tcp(tmp):
    """test_elastic_join.py's join across hosts (CURVE keys, the joiner in another network
    namespace), over the ring: the peer links to and from the joiner cross the bridge, and the
    model is that of the same join on one host."""
    if test_hosts.skipped("test_a_ring_worker_joins_from_another_host_over_tcp"):
        return
    s = join_across_hosts(tmp, "--set", "aggregation.topology=ring")
    assert s["aggregation"]["topology"] == "ring", s["aggregation"]
    [event] = s["membership"]["events"]
    assert (event["rank"], event["step"]) == (2, 70), event


if __name__ == "__main__":
    h.main([test_ring_join_mid_run_reforms_the_ring_with_the_joiner,
            test_servers_join_mid_run_trains_the_stars_model,
            test_ring_join_after_a_leave_takes_its_slot,
            test_servers_join_after_a_leave_takes_its_slot,
            test_servers_and_star_join_with_sparse_rows,
            test_a_joiner_above_max_workers_is_refused_over_ring_and_servers,
            test_a_ring_worker_joins_from_another_host_over_tcp])
