"""fault_tolerance.elastic, planned leaves over the ring all-reduce and over sharded parameter
servers, with real worker processes: the leaver (the `leave` fault, or a real SIGTERM) finishes
its step (its all-reduce; its pushes to every server) and exits 0; the ring re-forms without it,
or the servers stop waiting for it from the next round; no failure is recorded, its rows are
dealt to the others from the next epoch, and a replayed leave gives the same bits: the same
model as `continue` after a kill one step later. Below min_workers the run fails (exit 3)."""

import math
import os
import random
import signal

import elastic_config as ec
import harness as h
from test_elastic import summary, without_pids


KINDS = {"ring": "{topology: ring}", "servers": "{servers: 2}"}
STAR = "{mode: gradients}"  # for one check of the star's gather (below)


def config(tmp, kind, name, faults=(), **given):
    """A config over `kind` (KINDS, else the star) and its output folder (elastic_config's
    keys in `given`)."""
    return ec.config(tmp, f"{kind}-{name}", aggregation=KINDS.get(kind, STAR), faults=faults,
                     title=f"elastic-{kind}", **given)


def check_leave_replans(tmp, kind, rank):
    # 3600 training rows, global batch 60: 60 steps an epoch. The leaver leaves at its step 70
    # (0-based; epoch 2's 11th step) after finishing it: steps 72..120 of epoch 2 run without
    # it, and from epoch 3 on the others hold its rows.
    cfg, out = config(tmp, kind, "leave", faults=[f"{{rank: {rank}, at_step: 70, action: leave}}"])
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s["failures"]
    assert s["warnings"] == [], s["warnings"]  # the leaver exited 0
    total = s["train_rows"]
    assert total == 3600, total
    m = s["membership"]
    [event] = m["events"]
    assert {k: event[k] for k in ("event", "rank", "step", "workers")} == \
        {"event": "leave", "rank": rank, "step": 71, "workers": 3}, event
    dealt = event["reassigned"]
    assert dealt["from_epoch"] == 2 and dealt["rows"] == 900, dealt
    assert sorted(t["rank"] for t in dealt["to"]) == sorted({0, 1, 2, 3} - {rank}), dealt
    assert sum(t["rows"] for t in dealt["to"]) == 900, dealt
    # All rows before the leave; its share (15 rows a step) of the 49 steps after it missing
    # in epoch 2; then every row once per epoch.
    assert m["rows_per_epoch"] == [total, total - 49 * 15, total, total], m["rows_per_epoch"]
    assert sum(w["rows"] for w in s["worker_stats"] if w["rank"] != rank) == total
    assert s["steps"] == 240, s["steps"]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    assert "leaving the run (SIGTERM, fault_tolerance.elastic)" in \
        (out / "workers" / f"{rank}.log").read_text()
    assert f"left the run after step 71 (a planned leave)" in r.stderr, r
    return s, r


def test_ring_leave_replans_without_a_failure(tmp):
    # Rank 0 is the ring's leader (it sends the final parameters): the next one takes over.
    s, r = check_leave_replans(tmp, "ring", 0)
    assert "the ring re-forms over workers 1, 2, 3" in r.stderr, r
    assert s["aggregation"]["replicas_agree"] is True
    assert sorted(w["rank"] for w in s["aggregation"]["workers"]) == [1, 2, 3]


def test_servers_leave_replans_without_a_failure(tmp):
    s, _ = check_leave_replans(tmp, "servers", 1)
    # Every server applied every round: the leaver's pushes up to its step, then the others'.
    assert [k["version"] for k in s["aggregation"]["servers"]] == [240, 240], \
        s["aggregation"]["servers"]


def check_replay(tmp, kind, variants):
    """Runs the leave of rank 2 after its step 100 under each list of extra faults (which change
    the timing, never the membership): every run gives the same model and membership record,
    which is that of `continue` after rank 2 is killed at its step 101, not that of no leave."""
    leave = "{rank: 2, at_step: 100, action: leave}"
    models, records = [], []
    for i, extra in enumerate(variants):
        cfg, out = config(tmp, kind, f"replay{i}", faults=[leave, *extra])
        r = h.run("run", cfg)
        assert r.code == 0, r
        models.append((out / "model.json").read_bytes())
        records.append(without_pids(summary(out)["membership"]))
    assert all(m == models[0] for m in models), "a replayed leave changed the model"
    assert all(rec == records[0] for rec in records), records
    assert records[0]["events"][0]["step"] == 101, records[0]
    cfg, lost = config(tmp, kind, "lost", policy="continue", elastic=None,
                       faults=["{rank: 2, at_step: 101, action: kill}"])
    r = h.run("run", cfg)
    assert r.code == 0, r
    assert summary(lost)["failures"][0]["action"] == "continue"
    assert (lost / "model.json").read_bytes() == models[0], \
        "a leave trained otherwise than continue after a kill one step later"
    cfg, stay = config(tmp, kind, "stay")
    assert h.run("run", cfg).code == 0
    assert (stay / "model.json").read_bytes() != models[0]
    assert summary(stay)["membership"]["events"] == []


def test_ring_replayed_leave_gives_the_same_bits(tmp):
    # Plain, the leave is mostly read in the next step's wait, while the others wait on the
    # leaver in its all-reduce (they abandon it, the ring re-forms, the step is done again);
    # with another member's replies held back, with the leaver's last losses (the ring re-forms
    # before the next step). The same bits either way.
    check_replay(tmp, "ring", [[], ["{rank: 0, at_step: 100, action: delay, ms: 10}"]])


def test_servers_replayed_leave_gives_the_same_bits(tmp):
    # The leaver's leave is read in the gather of its last step when another worker is slow
    # then (its pushes of that round still count), or only in the next round when the leaver is
    # the slow one: the same bits either way.
    check_replay(tmp, "servers", [[],
                                  ["{rank: 0, at_step: 100, action: slow, ms: 15}"],
                                  ["{rank: 2, at_step: 100, action: slow, ms: 300}"]])


SPARSE = """
version: 1
name: elastic-sparse
seed: 3
model: {{type: logistic_regression}}
data: {{path: {path}, sparse: true, normalize: none, validation: 0.1}}
shards: {{count: 3}}
aggregation: {{mode: gradients, servers: 2}}
training: {{epochs: 3, batch_size: 50, optimizer: {{type: sgd, lr: 0.2}}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1500, on_worker_failure: {policy},
                  checkpoint_every: {{steps: 0}}{elastic}}}
faults: [{fault}]
output: {{dir: {out}, log_every: {{steps: 5}}}}
"""


def sparse_data(tmp):
    """700 LIBSVM rows over 60 keys, 1 to 8 a row, labelled by a hidden linear rule."""
    rng = random.Random(7)
    truth = [rng.gauss(0, 1) for _ in range(60)]
    lines = []
    for _ in range(700):
        keys = sorted(rng.sample(range(60), rng.randint(1, 8)))
        values = [round(rng.uniform(-2, 2), 3) for _ in keys]
        label = int(sum(truth[k] * v for k, v in zip(keys, values)) > 0)
        lines.append(f"{label} " + " ".join(f"{k + 1}:{v}" for k, v in zip(keys, values)))
    data = tmp / "sparse.svm"
    data.write_text("\n".join(lines) + "\n")
    return data


def test_servers_leave_with_sparse_rows(tmp):
    # The keyed exchange (LIBSVM rows read sparse): the leave of worker 2 after its step 8 is
    # `continue` after a kill at its step 9, bit for bit.
    data = sparse_data(tmp)
    runs = {}
    for name, policy, elastic, fault in [
            ("leave", "abort", ", elastic: {min_workers: 1}", "{rank: 2, at_step: 8, action: leave}"),
            ("lost", "continue", "", "{rank: 2, at_step: 9, action: kill}")]:
        out = tmp / f"sparse-{name}"
        cfg = h.write_config(tmp, SPARSE.format(path=data, policy=policy, elastic=elastic,
                                                fault=fault, out=out), f"sparse-{name}.yaml")
        r = h.run("run", cfg, "--json")
        assert r.code == 0, (name, r)
        runs[name] = (summary(out), (out / "model.json").read_bytes())
    s, model = runs["leave"]
    assert s["failures"] == [] and s["warnings"] == [], s
    [event] = s["membership"]["events"]
    assert (event["rank"], event["step"], event["workers"]) == (2, 9, 2), event
    assert runs["lost"][0]["failures"][0]["action"] == "continue"
    assert runs["lost"][1] == model, "a sparse leave trained otherwise than continue"


def test_star_leave_read_with_its_last_reply_keeps_it(tmp):
    # Over the star too: a leave read in the same gather as the leaver's last gradient (another
    # worker slow then) keeps that gradient in the step, as when it is read in the next one.
    check_replay(tmp, "star", [[], ["{rank: 0, at_step: 100, action: slow, ms: 15}"]])


def test_below_min_workers_fails_after_the_join_timeout(tmp):
    for kind in KINDS:
        cfg, out = config(tmp, kind, "below", workers=2,
                          elastic="min_workers: 2, join_timeout_ms: 300",
                          faults=["{rank: 0, at_step: 30, action: leave}"])
        r = h.run("run", cfg, "--json")
        assert r.code == 3, (kind, r)
        message = ("worker 0 left after step 31, leaving 1 worker, below "
                   "fault_tolerance.elastic.min_workers = 2, and not enough workers joined within "
                   "join_timeout_ms = 300 ms")
        assert message in r.stderr, (kind, r)
        s = summary(out)
        assert s["status"] == "failed" and message in s["error"], (kind, s)
        assert s["failures"] == [], (kind, s["failures"])
        assert [e["rank"] for e in s["membership"]["events"]] == [0], kind


def workers_by_rank(proc):
    """{rank: pid} once the 4 worker processes have exec'd (a child just forked has the
    coordinator's command line still), else None."""
    try:
        return {h.rank_of(pid): pid for pid in h.worker_processes(proc, 4)}
    except ValueError:
        return None


def test_sigterm_to_a_worker_is_a_planned_leave(tmp):
    # A real signal, at whatever step it lands (training has started: a checkpoint is there).
    for kind, rank in (("ring", 2), ("servers", 1)):
        cfg, out = config(tmp, kind, "sigterm", epochs=150, checkpoint=1000)
        proc = h.start(cfg)
        pids = h.wait_for(lambda: workers_by_rank(proc), 20, f"{kind}: 4 started workers")
        h.wait_for(lambda: list((out / "checkpoint").glob("step-*")), 60, f"{kind}: training")
        os.kill(pids[rank], signal.SIGTERM)
        _, err = h.finish(proc, 120)
        h.assert_gone(pids.values())
        s = summary(out)
        events = s["membership"]["events"]
        assert (proc.returncode, s["failures"], s["warnings"], len(events)) == (0, [], [], 1), \
            (kind, err, s["failures"], s["warnings"], events)
        assert (events[0]["event"], events[0]["rank"], events[0]["pid"]) == \
            ("leave", rank, pids[rank]), (kind, events)
        assert 0 < events[0]["step"] < s["steps"], (kind, events, s["steps"])
        assert s["membership"]["rows_per_epoch"][-1] == s["train_rows"], kind
        assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, (kind, s["final_loss"])


if __name__ == "__main__":
    h.main([test_ring_leave_replans_without_a_failure,
            test_servers_leave_replans_without_a_failure,
            test_ring_replayed_leave_gives_the_same_bits,
            test_servers_replayed_leave_gives_the_same_bits,
            test_servers_leave_with_sparse_rows,
            test_star_leave_read_with_its_last_reply_keeps_it,
            test_below_min_workers_fails_after_the_join_timeout,
            test_sigterm_to_a_worker_is_a_planned_leave])
