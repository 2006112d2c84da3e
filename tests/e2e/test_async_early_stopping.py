"""training.early_stopping in aggregation.mode async, with real worker processes: on a run made
to overfit, the check that runs out of patience ends training well before the planned updates
(the servers answer the workers' next push or pull with an end), the workers exit 0 and report,
summary.json's early_stopping follows from loss.csv's validation column as Keras counts it, and
the model written is the best check's (eval on the held-out rows scores the best metric). Also
over two servers with a staleness bound, on the keyed exchange of sparse rows, and resumed from
a checkpoint (the best check and the count since are kept; resumed from the stop, it ends at
once). Without early stopping the same run
trains every planned update. Async runs differ from run to run, so nothing here compares bytes:
every expected value comes from the run's own loss.csv or from its planned updates."""

import json
import random

import harness as h

from test_early_stopping import expected_stop
from test_metrics import validation_rows

EPOCHS = 2000  # 2 workers x 1 full-batch step an epoch: 4000 planned updates
PLANNED = 2 * EPOCHS
SEED = 1


def overfit_files(tmp, sparse=False):
    """test_early_stopping's overfit data (80 rows, 40 features, only x0 matters, a fifth of the
    labels flipped; half held out), and a file of the held-out rows alone (as the run draws
    them), for eval. LIBSVM rows (1-based keys) with `sparse`."""
    rng = random.Random(7)
    rows = []
    for _ in range(80):
        x = [rng.gauss(0, 1) for _ in range(40)]
        rows.append((x, int(x[0] > 0) ^ int(rng.random() < 0.2)))

    def write(name, part):
        if sparse:
            lines = [f"{y} " + " ".join(f"{i + 1}:{v:.6f}" for i, v in enumerate(x)) for x, y in part]
        else:
            lines = [",".join([f"x{i}" for i in range(40)] + ["y"])]
            lines += [",".join([f"{v:.6f}" for v in x] + [str(y)]) for x, y in part]
        path = tmp / name
        path.write_text("\n".join(lines) + "\n")
        return path

    ext = "svm" if sparse else "csv"
    held = [rows[i] for i in validation_rows(len(rows), 0.5, SEED)]
    return write(f"data.{ext}", rows), write(f"held.{ext}", held)


def config(tmp, train, held, out, aggregation="{mode: async}", epochs=EPOCHS, patience=4,
           sparse=False, early=True, extra=""):
    data = (f"{{path: {train}, sparse: true, normalize: none, validation: 0.5}}" if sparse
            else f"{{path: {train}, label: y, normalize: none, validation: 0.5}}")
    stopping = f"  early_stopping: {{metric: val_loss, patience: {patience}}}\n" if early else ""
    return h.write_config(tmp, f"""
version: 1
name: es-async
seed: {SEED}
model: {{type: logistic_regression}}
data: {data}
shards: {{count: 2}}
aggregation: {aggregation}
training:
  epochs: {epochs}
  batch_size: full
  shuffle: false
  optimizer: {{type: sgd, lr: 0.02}}
{stopping}fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 5000}}
output: {{dir: {tmp}/{out}, log_every: {{steps: 5}}}}
{extra}
""", name=f"{out}.yaml")


def check_stopped(tmp, out, summary, held, patience=4):
    """The stop as loss.csv's checks say, well before the planned updates; the best check's
    model written; every worker ended cleanly. Returns the summary's early_stopping."""
    es = summary["early_stopping"]
    stopped_at, best_step, best, rows = expected_stop(tmp / out, patience)
    assert stopped_at is not None and best_step > 5, (stopped_at, best_step, es)
    assert (es["stopped_at"], es["best_step"], es["best_metric"]) == (stopped_at, best_step, best), es
    assert int(rows[-1]["step"]) == stopped_at == summary["steps"], (rows[-1], summary["steps"])
    # Ended well before the plan: the servers applied only the updates up to the stop and the
    # few on their way when the end reached them; each worker pushed that many steps, no more.
    agg = summary["aggregation"]
    assert stopped_at < PLANNED // 4, (stopped_at, PLANNED)
    assert stopped_at <= agg["updates"] < PLANNED // 2, (agg["updates"], stopped_at)
    assert agg["updates"] == sum(agg["worker_steps"]), agg
    # The workers ended cleanly: each sent its report (its steps as it counted them, no more than
    # the servers applied), none exited with an error, nothing failed.
    assert summary["failures"] == [], summary["failures"]
    assert not [w for w in summary.get("warnings", []) if "worker" in w], summary["warnings"]
    assert [w["rank"] for w in summary["worker_stats"]] == [0, 1], summary["worker_stats"]
    for w, applied in zip(summary["worker_stats"], agg["worker_steps"]):
        assert 0 < w["steps"] and applied <= w["steps"] <= applied + 1, (w, agg["worker_steps"])
        assert w["pid"] > 0 and w["bytes_sent"] > 0, w
    # model.json is the best check's parameters: the held-out rows score the best metric
    # (validation loss = log-loss of logistic regression), not the last check's.
    assert summary["validation"]["loss"] == best, (summary["validation"], best)
    assert float(rows[-1]["validation_loss"]) > best, (rows[-1], best)
    e = h.run("eval", tmp / out / "model.json", held, "--json")
    assert e.code == 0, e
    assert abs(e.json()["log_loss"] - best) <= 1e-9 * best, (e.json(), best)
    return es


def test_stops_early_and_writes_the_best_check(tmp):
    train, held = overfit_files(tmp)
    r = h.run("run", config(tmp, train, held, "run"), "--json")
    assert r.code == 0, r
    es = check_stopped(tmp, "run", r.json(), held)
    assert json.loads((tmp / "run" / "summary.json").read_text())["early_stopping"] == es
    # The same run without early stopping trains every planned update (the stop above was
    # early stopping's), and its last check is worse than the stopped run's best.
    r = h.run("run", config(tmp, train, held, "full", early=False), "--json")
    assert r.code == 0, r
    s = r.json()
    assert s["steps"] == PLANNED and s["aggregation"]["updates"] == PLANNED, s["aggregation"]
    assert s["aggregation"]["worker_steps"] == [EPOCHS, EPOCHS] and "early_stopping" not in s
    assert s["validation"]["loss"] > es["best_metric"], (s["validation"], es)


def test_two_servers_with_a_staleness_bound(tmp):
    train, held = overfit_files(tmp)
    aggregation = "{mode: async, servers: 2, async: {max_staleness: 2}}"
    r = h.run("run", config(tmp, train, held, "servers", aggregation=aggregation), "--json")
    assert r.code == 0, r
    check_stopped(tmp, "servers", r.json(), held)
    assert len(r.json()["aggregation"]["servers"]) == 2


def test_a_worker_restarted_before_the_stop(tmp):
    # Worker 1 is killed at its step 5 and restarted (the staleness bound holds worker 0 until
    # the replacement catches up, so the kill comes before any stop): the run still stops at
    # the check loss.csv says and writes the best check, and the replacement, which has pushed
    # fewer steps than its plan, ends as the others do.
    train, held = overfit_files(tmp)
    cfg = config(tmp, train, held, "restart", aggregation="{mode: async, async: {max_staleness: 2}}")
    cfg.write_text(cfg.read_text().replace("worker_timeout_ms: 5000}",
                                           "worker_timeout_ms: 5000, on_worker_failure: restart}"))
    r = h.run("run", cfg, "--json", "--fault", "rank=1,at_step=5,action=kill")
    assert r.code == 0, r
    s = r.json()
    assert [(f["rank"], f["action"]) for f in s["failures"]] == [(1, "restart")], s["failures"]
    stopped_at, best_step, best, _ = expected_stop(tmp / "restart", 4)
    es = s["early_stopping"]
    assert (es["stopped_at"], es["best_step"], es["best_metric"]) == (stopped_at, best_step, best), es
    assert s["steps"] == stopped_at < PLANNED // 4 and s["validation"]["loss"] == best, s
    assert s["aggregation"]["updates"] < PLANNED // 2, s["aggregation"]


def test_keyed_exchange_of_sparse_rows(tmp):
    train, held = overfit_files(tmp, sparse=True)
    r = h.run("run", config(tmp, train, held, "keyed", aggregation="{mode: async, servers: 2}",
                            sparse=True), "--json")
    assert r.code == 0, r
    check_stopped(tmp, "keyed", r.json(), held)


def test_resume_keeps_the_best_check_and_the_count(tmp):
    # Part one trains every update of fewer epochs, ending after its best check (the
    # validation loss has turned up) with a checkpoint at its last update; the resumed run,
    # with the whole run's epochs, continues its count since that best: with no better check
    # after the resume it stops after the checks patience has left, keeping part one's best.
    # A resume that forgot the state would take its first check as the best.
    train, held = overfit_files(tmp)
    patience = 40
    first = 90  # epochs: 180 updates, past the best check (about update 80) by fewer than 40 checks
    cfg = config(tmp, train, held, "parts", epochs=first, patience=patience,
                 extra="fault_tolerance: {heartbeat_ms: 100, worker_timeout_ms: 5000, "
                       "checkpoint_every: {steps: 5}}")
    cfg.write_text(cfg.read_text().replace(
        "fault_tolerance: {heartbeat_ms: 100, worker_timeout_ms: 5000}\n", ""))
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    one = r.json()
    es1 = one["early_stopping"]
    _, best_step, best, rows = expected_stop(tmp / "parts", patience)
    assert es1["stopped_at"] is None and one["steps"] == 2 * first, (es1, one["steps"])
    assert (es1["best_step"], es1["best_metric"]) == (best_step, best), es1
    since = sum(1 for row in rows if int(row["step"]) > best_step)  # checks without improvement
    assert 0 < since < patience, (since, es1)
    r = h.run("run", cfg, "--resume", "--set", f"training.epochs={EPOCHS}", "--json")
    assert r.code == 0, r
    two = r.json()
    assert two["checkpoint"]["resumed_from_step"] == 2 * first, two["checkpoint"]
    es2 = two["early_stopping"]
    assert (es2["best_step"], es2["best_metric"]) == (best_step, best), (es2, es1)
    assert es2["stopped_at"] == 2 * first + (patience - since) * 5, (es2, since)
    assert two["validation"]["loss"] == best, (two["validation"], best)
    # Resumed again, from the checkpoint of the stop: the servers end training at once (every
    # worker's pull gets the end), and the run writes the same best check.
    r = h.run("run", cfg, "--resume", "--set", f"training.epochs={EPOCHS}", "--json")
    assert r.code == 0, r
    three = r.json()
    assert three["checkpoint"]["resumed_from_step"] == es2["stopped_at"], three["checkpoint"]
    assert three["early_stopping"] == es2 and three["steps"] == es2["stopped_at"], three
    assert three["aggregation"]["updates"] == es2["stopped_at"], three["aggregation"]
    assert [w["steps"] for w in three["worker_stats"]] == [0, 0], three["worker_stats"]
    assert three["validation"]["loss"] == best and three["failures"] == [], three


if __name__ == "__main__":
    h.main([test_stops_early_and_writes_the_best_check, test_two_servers_with_a_staleness_bound,
            test_a_worker_restarted_before_the_stop, test_keyed_exchange_of_sparse_rows,
            test_resume_keeps_the_best_check_and_the_count])
