"""Training on sparse rows (issue 16): the same LIBSVM file read sparse (data.sparse: true, CSR
rows, the sparse models on each batch's keys) and dense (data.sparse: false) trains the same
model, bit for bit, in every synchronous mode: the star, sharded servers, the ring, parameter
averaging, with sgd, adagrad and ftrl, for linear, logistic and softmax regression, and with a
worker lost under `continue` (its rows dealt to the survivors as sparse rows). Async trains
with the keyed exchange: the dense bits with one worker, a worker restarted or a run resumed
the bits of a run without, a server replaced and a worker lost handled, bytes that follow the
keys.
The mlp and tensor parallelism, which have no sparse form, and widths past 2^30 are refused
with exit 2."""

import json
import math
import random

import harness as h

WIDTH = 60
ROWS = 700

CONFIG = """
version: 1
name: sparse-{name}
seed: 3
model: {{type: {model}}}
data: {{path: {path}, sparse: {sparse}, normalize: none, validation: 0.1}}
shards: {{count: {workers}}}
aggregation: {aggregation}
training: {{epochs: 3, batch_size: 50, optimizer: {optimizer}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1500, on_worker_failure: {policy},
                  checkpoint_every: {{steps: 13}}}}
output: {{dir: {out}, log_every: {{steps: 5}}}}
{extra}
"""

STAR = "{mode: gradients}"
SERVERS = "{mode: gradients, servers: 2}"
RING = "{mode: gradients, topology: ring}"
PARAMETERS = "{mode: parameters, parameters: {sync_every: {steps: 3}}}"
SGD = "{type: sgd, lr: 0.2}"


def libsvm(path, task, seed=7, ones=False):
    """ROWS rows of 1..8 nonzeros among WIDTH features (1-based, ascending), labels from a
    hidden sparse model: a value, 0/1, or one of 3 classes. Values uniform in [-2, 2], or with
    `ones` a hashed click log's: 1, but a 2 in about one row of 30 (two columns in one key)."""
    rng = random.Random(seed)
    truth = [[rng.gauss(0, 1) for _ in range(3)] for _ in range(WIDTH)]
    lines = []
    for _ in range(ROWS):
        keys = sorted(rng.sample(range(WIDTH), rng.randint(1, 8)))
        if ones:
            values = [2 if j == 0 and rng.random() < 1 / 30 else 1 for j in range(len(keys))]
        else:
            values = [round(rng.uniform(-2, 2), 3) for _ in keys]
        z = [sum(truth[k][c] * v for k, v in zip(keys, values)) for c in range(3)]
        if task == "linear":
            label = round(z[0] + rng.gauss(0, 0.1), 4)
        elif task == "binary":
            label = int(z[0] + rng.gauss(0, 0.5) > 0)
        else:
            label = max(range(3), key=lambda c: z[c])
        lines.append(f"{label} " + " ".join(f"{k + 1}:{v}" for k, v in zip(keys, values)))
    path.write_text("\n".join(lines) + "\n")
    return path


def train(tmp, name, data, sparse, model="logistic_regression", aggregation=STAR,
          optimizer=SGD, workers=2, extra="", code=0, policy="continue"):
    out = tmp / f"{name}-{'sparse' if sparse else 'dense'}"
    cfg = h.write_config(tmp, CONFIG.format(
        name=name, model=model, path=data, sparse="true" if sparse else "false",
        workers=workers, aggregation=aggregation, optimizer=optimizer, out=out, extra=extra,
        policy=policy),
        f"{out.name}.yaml")
    r = h.run("run", cfg, "--json", timeout=120)
    assert r.code == code, r
    return r, out


def parameters(out):
    """Each block's values in full: a sparse run's model.json lists its weights' nonzeros only
    (docs/sparse.md), a dense run's every value."""
    model = json.loads((out / "model.json").read_text())
    blocks = {}
    for p in model["parameters"]:
        values = p["data"]
        if p.get("encoding") == "sparse":
            values = [0.0] * math.prod(p["shape"])
            for i, v in zip(p["index"], p["data"]):
                values[i] = v
        blocks[p["name"]] = values
    return blocks


def same_model(tmp, name, data, **kw):
    sparse, sparse_out = train(tmp, name, data, True, **kw)
    dense, dense_out = train(tmp, name, data, False, **kw)
    assert sparse.json()["status"] == "ok", sparse
    weights = parameters(sparse_out)
    assert weights == parameters(dense_out), name
    # Not a model that never moved: training changed the weights.
    assert any(v != 0 for v in weights["weights"]), name
    s, d = sparse.json(), dense.json()
    assert s["final_loss"] == d["final_loss"], (name, s["final_loss"], d["final_loss"])
    return s


def test_sparse_equals_dense_in_every_synchronous_mode(tmp):
    binary = libsvm(tmp / "binary.svm", "binary")
    for name, aggregation in [("star", STAR), ("servers", SERVERS), ("ring", RING),
                              ("parameters", PARAMETERS)]:
        summary = same_model(tmp, name, binary, aggregation=aggregation)
        assert summary["validation"]["auc"] > 0.7, (name, summary["validation"])
    same_model(tmp, "adagrad", binary, optimizer="{type: adagrad, lr: 0.3}")
    same_model(tmp, "ftrl", binary, optimizer="{type: ftrl, lr: 0.3, l1: 0.01, l2: 0.01}")


def test_sparse_equals_dense_for_each_model_type(tmp):
    same_model(tmp, "linear", libsvm(tmp / "linear.svm", "linear"),
               model="linear_regression", optimizer="{type: sgd, lr: 0.05}")
    same_model(tmp, "softmax", libsvm(tmp / "classes.svm", "classes"),
               model="softmax_regression")


def test_implicit_ones_equal_dense(tmp):
    # Values of 1 with a few 2s: a worker compacts a batch without a 2 from its keys alone
    # (implicit ones, docs/sparse.md) and one with a 2 from every value. A 2 taken for a 1
    # would change the model; the dense path reads every value as written.
    for task, model in [("binary", "logistic_regression"), ("classes", "softmax_regression")]:
        data = libsvm(tmp / f"ones-{task}.svm", task, seed=11, ones=True)
        text = data.read_text()
        assert ":2" in text and text.count(":2") < ROWS // 10, task
        for name, aggregation in [("star", STAR), ("servers", SERVERS)]:
            same_model(tmp, f"ones-{task}-{name}", data, model=model, aggregation=aggregation,
                       optimizer="{type: ftrl, lr: 0.3, l1: 0.01, l2: 0.01}")


def test_the_star_moves_the_batch_s_keys_not_the_width(tmp):
    # Width 2^16 (one row uses the last index): a dense star would move 512 KiB a step each
    # way. The keyed star moves ~(8 + 2) bytes a key of the batch: a worker's half of a
    # 50-row batch has at most 25 x 8 keys.
    data = libsvm(tmp / "wide.svm", "binary")
    with open(data, "a") as f:
        f.write(f"1 {2 ** 16}:1\n")
    r, out = train(tmp, "wide", data, True)
    summary = r.json()
    params = 2 ** 16 + 1
    steps = summary["steps"]
    per_step = 25 * 8 * 12 + 1024  # keys x (8 value + a few key bytes) + message overhead
    for w in summary["worker_stats"]:
        # Beyond the steps: the set-up, the final evaluation's full parameter vector down and
        # its AUC histograms up (2 x 32768 counts of 8 bytes).
        assert w["bytes_received"] < 8 * params + steps * per_step + 256 * 1024, w
        assert w["bytes_sent"] < steps * per_step + 256 * 1024 + 2 ** 19, w
    assert steps * 8 * params > 20 * (8 * params + steps * per_step), steps  # a dense star fails


def test_keyed_servers_equal_dense_and_move_the_keys(tmp):
    # Sharded servers exchange keys too: 3 servers (uneven ranges; a softmax key's 3 weights may
    # straddle two of them) train the dense bits; a server killed and replaced, a worker
    # restarted, a worker lost (continue) and a cut run resumed all keep the rules of the dense
    # servers; bytes per step follow the batch's keys.
    three = "{mode: gradients, servers: 3}"
    same_model(tmp, "servers3", libsvm(tmp / "classes.svm", "classes"), model="softmax_regression",
               aggregation=three, optimizer="{type: adagrad, lr: 0.3}")
    binary = libsvm(tmp / "binary.svm", "binary")
    ftrl = "{type: ftrl, lr: 0.3, l1: 0.01}"
    _, ref = train(tmp, "sref", binary, True, aggregation=SERVERS, optimizer=ftrl)
    for name, policy, fault in [
            ("server-killed", "restart", "{server: 1, at_step: 9, action: kill}"),
            ("worker-restarted", "restart", "{rank: 1, at_step: 17, action: kill}")]:
        r, out = train(tmp, name, binary, True, aggregation=SERVERS, optimizer=ftrl,
                       policy=policy, extra=f"faults: [{fault}]")
        assert r.json()["failures"], (name, r.json())
        assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes(), name
    summary = same_model(tmp, "servers-continue", binary, workers=3, aggregation=SERVERS,
                         extra="faults: [{rank: 2, at_step: 8, action: kill}]")
    assert summary["failures"], summary
    cfg_text = (tmp / "sref-sparse.yaml").read_text().replace("epochs: 3", "epochs: 2")
    cut = tmp / "scut"
    cfg = h.write_config(tmp, cfg_text.replace(str(ref), str(cut)), "scut.yaml")
    assert h.run("run", cfg).code == 0
    r = h.run("run", cfg, "--resume", "--json", "--set", "training.epochs=3", timeout=60)
    assert r.code == 0, r
    assert (cut / "model.json").read_bytes() == (ref / "model.json").read_bytes()
    # Width 2^16: dense slices would be 2 x 256 KiB a step each way.
    wide = libsvm(tmp / "wide.svm", "binary")
    with open(wide, "a") as f:
        f.write(f"1 {2 ** 16}:1\n")
    r, out = train(tmp, "swide", wide, True, aggregation=SERVERS)
    summary = r.json()
    steps, params = summary["steps"], 2 ** 16 + 1
    per_step = 25 * 8 * 12 + 2 * 1024  # keys x (8 value + key bytes) + two servers' overhead
    for w in summary["worker_stats"]:
        assert w["bytes_received"] < 8 * params + steps * per_step + 256 * 1024, w
        assert w["bytes_sent"] < steps * per_step + 256 * 1024 + 2 ** 19, w


def test_a_lost_worker_s_sparse_rows_go_to_the_survivors(tmp):
    binary = libsvm(tmp / "binary.svm", "binary")
    kill = "faults: [{rank: 2, at_step: 8, action: kill}]"
    summary = same_model(tmp, "continue", binary, workers=3, extra=kill)
    assert summary["status"] == "ok"
    assert summary["failures"], summary  # the loss was seen and absorbed


def test_the_keyed_star_restarts_and_resumes_exactly(tmp):
    # A worker killed mid-run and replaced (restart): the replacement redoes the step from its
    # own batch's keys, and the run's bytes are those of a run without the failure, as they
    # are over each transport.
    binary = libsvm(tmp / "binary.svm", "binary")
    ftrl = "{type: ftrl, lr: 0.3, l1: 0.01}"
    _, ref = train(tmp, "ref", binary, True, optimizer=ftrl)
    r, out = train(tmp, "restart", binary, True, optimizer=ftrl, policy="restart",
                   extra="faults: [{rank: 1, at_step: 17, action: kill}]")
    assert r.json()["failures"], r.json()
    assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes()
    # The same bytes over every transport (ipc above): workers as threads, and over TCP.
    for transport in ("inproc", "tcp"):
        r, out = train(tmp, transport, binary, True, optimizer=ftrl,
                       extra=f"transport: {{type: {transport}}}")
        assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes(), transport
    # Cut after 2 of 3 epochs (a checkpoint every epoch of 13 steps), resumed: the same bytes.
    cfg_text = (tmp / "ref-sparse.yaml").read_text().replace("epochs: 3", "epochs: 2")
    cut = tmp / "cut"
    cfg = h.write_config(tmp, cfg_text.replace(str(ref), str(cut)), "cut.yaml")
    assert h.run("run", cfg).code == 0
    assert (cut / "model.json").read_bytes() != (ref / "model.json").read_bytes()
    r = h.run("run", cfg, "--resume", "--json", "--set", "training.epochs=3", timeout=60)
    assert r.code == 0, r
    assert r.json()["checkpoint"]["resumed_from_step"] == 26, r.json()["checkpoint"]
    assert (cut / "model.json").read_bytes() == (ref / "model.json").read_bytes()


def test_async_trains_sparse_rows(tmp):
    binary = libsvm(tmp / "binary.svm", "binary")
    r, out = train(tmp, "async", binary, True, aggregation="{mode: async}")
    summary = r.json()
    assert summary["status"] == "ok"
    assert summary["validation"]["auc"] > 0.7, summary["validation"]


ASYNC2 = "{mode: async, servers: 2}"


def test_keyed_async_equals_dense_and_keeps_the_failure_rules(tmp):
    # One worker makes async deterministic: the keyed exchange over 2 servers (a step pushes
    # the gradient at its batch's indices, the answer carries the next batch's values) trains
    # the dense exchange's bits, for sgd, adagrad and ftrl, logistic and softmax.
    binary = libsvm(tmp / "binary.svm", "binary")
    ftrl = "{type: ftrl, lr: 0.3, l1: 0.01}"
    summary = same_model(tmp, "async1", binary, workers=1, aggregation=ASYNC2)
    assert summary["validation"]["auc"] > 0.7, summary["validation"]
    assert summary["aggregation"]["updates"] == 39, summary["aggregation"]  # 13 steps x 3
    same_model(tmp, "async-ftrl", binary, workers=1, aggregation=ASYNC2, optimizer=ftrl)
    same_model(tmp, "async-softmax", libsvm(tmp / "classes.svm", "classes"), workers=1,
               model="softmax_regression", aggregation="{mode: async, servers: 3}",
               optimizer="{type: adagrad, lr: 0.3}")
    # A worker killed and restarted: it resumes at the step the servers applied, pulls that
    # batch's values, and trains the same bits as a run without the failure.
    r, out = train(tmp, "async-restart", binary, True, workers=1, aggregation=ASYNC2,
                   optimizer=ftrl, policy="restart",
                   extra="faults: [{rank: 0, at_step: 17, action: kill}]")
    assert r.json()["failures"], r.json()
    ref = tmp / "async-ftrl-sparse"
    assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes()
    # Cut after 2 of 3 epochs (a checkpoint every 13 updates), resumed: the same bytes.
    cfg_text = (tmp / "async-ftrl-sparse.yaml").read_text().replace("epochs: 3", "epochs: 2")
    cut = tmp / "async-cut"
    cfg = h.write_config(tmp, cfg_text.replace(str(ref), str(cut)), "async-cut.yaml")
    assert h.run("run", cfg).code == 0
    r = h.run("run", cfg, "--resume", "--json", "--set", "training.epochs=3", timeout=60)
    assert r.code == 0, r
    assert r.json()["checkpoint"]["resumed_from_step"] == 26, r.json()["checkpoint"]
    assert (cut / "model.json").read_bytes() == (ref / "model.json").read_bytes()
    # A server killed and replaced: the worker rejoins it with the indices it waits for and is
    # answered with their values (a dense slice would stop it with a protocol error). The
    # replacement starts from the copy the server left at each update (written in part: the
    # keys stepped since the one before), so its slice lacks only the push that killed it:
    # the model is near the unfailed run's, not equal.
    r, out = train(tmp, "async-server", binary, True, workers=1, aggregation=ASYNC2,
                   optimizer=ftrl, policy="restart",
                   extra="faults: [{server: 1, at_step: 9, action: kill}]")
    s = r.json()
    [f] = s["failures"]
    assert f["server"] == 1 and f["action"] == "restart" and f["restored_update"] == 9, f
    assert s["aggregation"]["updates"] == 39 and s["steps"] == 39, s["aggregation"]
    clean = json.loads((ref / "summary.json").read_text())["final_loss"]
    assert s["final_loss"] != clean and abs(s["final_loss"] - clean) < 0.05 * clean, \
        (s["final_loss"], clean)
    # A worker lost under continue: its rows are dealt on the keyed answers (the notice rides
    # on the values) and the survivors train on them from their next local epoch, which
    # lengthens their plans (slowed, they are still in their first epochs when it happens).
    slowed = "{rank: 0, at_step: 0, action: slow, ms: 40}, {rank: 1, at_step: 0, action: slow, ms: 40}"
    r, out = train(tmp, "async-continue", binary, True, workers=3, aggregation=ASYNC2,
                   extra=f"faults: [{{rank: 2, at_step: 3, action: kill}}, {slowed}]")
    s = r.json()
    [f] = s["failures"]
    assert f["action"] == "continue" and f["reassigned"]["from_epoch"] < 3, f
    assert sum(t["rows"] for t in f["reassigned"]["to"]) == f["reassigned"]["rows"] == 210, f
    steps = s["aggregation"]["worker_steps"]
    assert steps[0] + steps[1] > 2 * 15, steps  # 5 steps a local epoch of 210 rows, before
    assert s["validation"]["auc"] > 0.7, s["validation"]


def test_keyed_async_moves_the_batch_s_keys_not_the_width(tmp):
    # Width 2^20 (one row uses the last index): a dense async step would move 2 x 4 MiB of
    # slices down and as much up. The keyed exchange moves ~(8 + 3) bytes a key of the batch:
    # a 50-row batch has at most 50 x 8 keys.
    data = libsvm(tmp / "wide.svm", "binary")
    with open(data, "a") as f:
        f.write(f"1 {2 ** 20}:1\n")
    r, out = train(tmp, "async-wide", data, True, aggregation=ASYNC2)
    summary = r.json()
    assert summary["validation"]["auc"] > 0.7, summary["validation"]
    params = 2 ** 20 + 1
    per_step = 50 * 8 * 12 + 2 * 1024  # keys x (8 value + key bytes) + two servers' overhead
    for w in summary["worker_stats"]:
        steps = w["steps"]
        # Beyond the steps: the final evaluation's full parameter vector down and its AUC
        # histograms up; a dense exchange would receive 8 x params every step.
        bound = 8 * params + steps * per_step + 256 * 1024
        assert w["bytes_received"] < bound, w
        assert w["bytes_sent"] < steps * per_step + 256 * 1024 + 2 ** 19, w
        assert steps * 8 * params > 10 * bound, steps


def test_a_wide_model_s_checkpoints_hold_its_nonzeros(tmp):
    # Width 2^18 + 1, of which the rows touch 61 keys: a checkpoint stores the nonzero entries
    # of the weights and the optimizer's state (format version 3), not 3 x 2 MiB of zeros, and
    # a run cut and resumed from it trains the bytes of a run never cut, through the star, the
    # sharded servers (whose slices make one sparse array) and async.
    wide = libsvm(tmp / "wide.svm", "binary")
    with open(wide, "a") as f:
        f.write(f"1 {2 ** 18}:1\n")
    ftrl = "{type: ftrl, lr: 0.3, l1: 0.01}"
    for name, aggregation, workers in [("star", STAR, 2), ("servers", SERVERS, 2),
                                       ("async", ASYNC2, 1)]:
        _, ref = train(tmp, f"w{name}", wide, True, aggregation=aggregation, optimizer=ftrl,
                       workers=workers)
        cfg_text = (tmp / f"w{name}-sparse.yaml").read_text().replace("epochs: 3", "epochs: 2")
        cut = tmp / f"w{name}-cut"
        cfg = h.write_config(tmp, cfg_text.replace(str(ref), str(cut)), f"w{name}-cut.yaml")
        assert h.run("run", cfg).code == 0
        files = sorted((cut / "checkpoint").glob("step-*.ckpt"))
        assert files, name
        raw = files[-1].read_bytes()
        assert raw.startswith(b"DTCKPT\r\n") and raw[8] == 3, (name, raw[:12])
        assert len(raw) < 8 * 2 ** 18, (name, len(raw))  # one dense array would be 2 MiB
        r = h.run("run", cfg, "--resume", "--json", "--set", "training.epochs=3", timeout=60)
        assert r.code == 0, r
        assert r.json()["checkpoint"]["resumed_from_step"] > 0, r.json()["checkpoint"]
        assert (cut / "model.json").read_bytes() == (ref / "model.json").read_bytes(), name


def test_what_has_no_sparse_form_is_refused(tmp):
    binary = libsvm(tmp / "binary.svm", "binary")
    r, out = train(tmp, "mlp", binary, True, model="mlp", code=2)
    assert "model.type mlp has no sparse form" in r.stderr, r.stderr
    assert not out.exists()
    r, out = train(tmp, "tensor", binary, True, workers=2, extra="parallelism: {tensor: 2}",
                   code=2)
    assert "parallelism.tensor 2 splits the feature columns" in r.stderr, r.stderr
    assert not out.exists()
    # Past 2^30 keys the coordinator's dense vectors would not fit: re-number or hash.
    huge = tmp / "huge.svm"
    huge.write_text("1 1:1 1073741825:1\n0 2:1\n" * 20)
    r, out = train(tmp, "huge", huge, True, code=2)
    assert "1073741825 features (the largest index is 1073741825) are more than sparse models " \
           "take (2^30" in r.stderr, r.stderr
    assert not out.exists()


if __name__ == "__main__":
    h.main([test_sparse_equals_dense_in_every_synchronous_mode,
            test_sparse_equals_dense_for_each_model_type, test_implicit_ones_equal_dense,
            test_the_star_moves_the_batch_s_keys_not_the_width,
            test_keyed_servers_equal_dense_and_move_the_keys,
            test_a_lost_worker_s_sparse_rows_go_to_the_survivors,
            test_the_keyed_star_restarts_and_resumes_exactly, test_async_trains_sparse_rows,
            test_keyed_async_equals_dense_and_keeps_the_failure_rules,
            test_keyed_async_moves_the_batch_s_keys_not_the_width,
            test_a_wide_model_s_checkpoints_hold_its_nonzeros,
            test_what_has_no_sparse_form_is_refused])
