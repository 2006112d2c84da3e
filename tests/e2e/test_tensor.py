"""Tensor parallelism (parallelism.tensor = T) with real worker processes: the model split over
T ranks trains the same parameters as the unsplit model (to 1e-9), for every model type and for
feature counts and hidden widths that T does not divide; D = 2 replicas x T = 2 equals D = 2 x
T = 1; model.json holds the merged model that predict and eval read; linear ranks load only
their own feature columns; splits that cannot work exit 2 with a clear message."""

import csv
import io
import json

import numpy as np

import harness as h


def params(run_dir):
    model = json.loads((run_dir / "model.json").read_text())
    return np.concatenate([np.ravel(np.asarray(p["data"], dtype=float)) for p in model["parameters"]])


def config(tmp, model, data, extra=""):
    # Mini-batches with shuffling: the T ranks of a group must walk their shard in one order.
    return h.write_config(tmp, f"""
version: 1
name: tp
seed: 3
model: {model}
data: {{path: {h.source('data', data)}, validation: 0.1}}
shards: {{count: 1, strategy: random}}
training: {{epochs: 2, batch_size: 100, shuffle: true, optimizer: {{type: sgd, lr: 0.1, momentum: 0.9}}}}
output: {{dir: {tmp}/unused, log_every: {{steps: 5}}}}
{extra}
""")


def train(tmp, cfg, name, *sets):
    out = tmp / name
    args = ["run", cfg, "--json", "--set", f"output.dir={out}"]
    for s in sets:
        args += ["--set", s]
    r = h.run(*args)
    assert r.code == 0, r
    return r.json(), params(out)


def assert_same(a, b, what):
    rel = np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))
    assert rel < 1e-9, f"{what}: differs by {rel:.3g} (relative)"


# (model, data): features linear 8, logistic 5, blobs 4 -- none divisible by 3, 5 not by 2.
MODELS = [
    ("{type: linear_regression, l2: 0.01}", "linear.csv"),
    ("{type: logistic_regression}", "logistic.csv"),
    ("{type: softmax_regression, l2: 0.001}", "blobs.csv"),
    # One Megatron pair (hidden width 7: not divisible by 2 or 3).
    ("{type: mlp, hidden: [7], activation: relu, task: binary}", "logistic.csv"),
    # A pair and a replicated output layer (hidden 5 split, hidden 2 whole on every rank).
    ("{type: mlp, hidden: [5, 2], activation: tanh, task: multiclass, l2: 0.001}", "blobs.csv"),
]


def test_tensor_2_and_3_equal_one_rank(tmp):
    for i, (model, data) in enumerate(MODELS):
        cfg = config(tmp, model, data)
        base_summary, base = train(tmp, cfg, f"m{i}-t1")
        for tensor, transport in ((2, "ipc"), (3, "tcp" if i % 2 else "ipc")):
            summary, got = train(tmp, cfg, f"m{i}-t{tensor}", f"parallelism.tensor={tensor}",
                                 f"transport.type={transport}")
            assert_same(got, base, f"{model} with tensor {tensor} over {transport}")
            assert len(summary["worker_stats"]) == tensor
            assert summary["train_rows"] == base_summary["train_rows"]
            # Every rank of the group holds the whole shard's rows.
            assert [w["rows"] for w in summary["worker_stats"]] == [summary["train_rows"]] * tensor
            assert abs(summary["final_loss"] - base_summary["final_loss"]) < 1e-9 * max(1, base_summary["final_loss"])
            assert summary["steps"] == base_summary["steps"]
    # A change that matters shows: another seed trains other parameters.
    cfg = config(tmp, *MODELS[1])
    _, a = train(tmp, cfg, "seed3", "parallelism.tensor=2")
    _, b = train(tmp, cfg, "seed4", "parallelism.tensor=2", "seed=4")
    assert np.max(np.abs(a - b)) > 1e-6


def test_two_replicas_of_two_ranks_equal_two_replicas(tmp):
    for model, data, transport in ((MODELS[1][0], MODELS[1][1], "ipc"),
                                   (MODELS[4][0], MODELS[4][1], "tcp")):
        cfg = config(tmp, model, data)
        base_summary, base = train(tmp, cfg, "d2t1", "shards.count=2", f"transport.type={transport}")
        summary, got = train(tmp, cfg, "d2t2", "shards.count=2", "parallelism.tensor=2",
                             f"transport.type={transport}")
        assert_same(got, base, f"{model}: 2 x 2 against 2 x 1 over {transport}")
        ranks = summary["worker_stats"]
        assert len(ranks) == 4
        # Ranks 0, 1 are replica 0 and ranks 2, 3 replica 1: each pair shares one shard.
        base_rows = [w["rows"] for w in base_summary["worker_stats"]]
        assert [w["rows"] for w in ranks] == [base_rows[0], base_rows[0], base_rows[1], base_rows[1]]
        for w in ranks:
            assert w["steps"] == summary["steps"] and w["bytes_sent"] > 0


def test_linear_ranks_load_only_their_columns(tmp):
    # linear.csv has 8 features: T = 3 gives ranks 3, 3 and 2 columns.
    cfg = config(tmp, *MODELS[0])
    train(tmp, cfg, "t3", "parallelism.tensor=3")
    for rank, columns in enumerate((3, 3, 2)):
        log = (tmp / "t3" / "workers" / f"{rank}.log").read_text()
        assert f"of {columns} feature columns" in log, log
    # The mlp's ranks read every feature.
    cfg = config(tmp, *MODELS[3])
    train(tmp, cfg, "mlp", "parallelism.tensor=2")
    for rank in (0, 1):
        assert "of 5 feature columns" in (tmp / "mlp" / "workers" / f"{rank}.log").read_text()


def test_model_json_is_the_merged_model_for_predict_and_eval(tmp):
    # No validation split: eval over the data file covers exactly the training rows, so its
    # metrics must equal the run's final metrics, which the split ranks computed.
    for model, data in (MODELS[2], MODELS[4]):
        cfg = config(tmp, model, data, "")
        summary, _ = train(tmp, cfg, "run", "parallelism.tensor=3", "data.validation=0")
        model_json = tmp / "run" / "model.json"
        shapes = [p["shape"] for p in json.loads(model_json.read_text())["parameters"]]
        if "softmax" in model:
            assert shapes == [[4, 3], [3]]
        else:
            assert shapes == [[4, 5], [5], [5, 2], [2], [2, 3], [3]]
        r = h.run("eval", model_json, h.source("data", data), "--json")
        assert r.code == 0, r
        metrics = r.json()
        assert metrics["rows"] == summary["train_rows"] == 1500
        assert abs(metrics["accuracy"] - summary["final_metrics"]["accuracy"]) < 1e-12
        assert abs(metrics["log_loss"] - summary["final_metrics"]["log_loss"]) < 1e-9
        r = h.run("predict", model_json, h.source("data", data))
        assert r.code == 0, r
        out = list(csv.reader(io.StringIO(r.stdout)))
        assert out[0] == ["prediction", "p_0", "p_1", "p_2"] and len(out) == 1501


def test_splits_that_cannot_work_exit_2(tmp):
    cases = [
        (MODELS[1], 6, "parallelism.tensor = 6 splits logistic_regression by input feature, but "
                       "the data has only 5 feature columns; use parallelism.tensor <= 5"),
        (("{type: mlp, hidden: [2, 8], task: binary}", "logistic.csv"), 3,
         "parallelism.tensor = 3 splits mlp hidden layer 0 (model.hidden[0]) into 3 parts, but it "
         "has only 2 units; use parallelism.tensor <= 2 or a wider layer"),
    ]
    for (model, data), tensor, message in cases:
        cfg = config(tmp, model, data)
        for command in ("validate", "run"):
            r = h.run(command, cfg, "--set", f"parallelism.tensor={tensor}",
                      "--set", f"output.dir={tmp}/bad")
            assert r.code == 2, r
            assert message in r.stderr, r.stderr
        assert not (tmp / "bad" / "model.json").exists()


if __name__ == "__main__":
    h.main([test_tensor_2_and_3_equal_one_rank, test_two_replicas_of_two_ranks_equal_two_replicas,
            test_linear_ranks_load_only_their_columns,
            test_model_json_is_the_merged_model_for_predict_and_eval,
            test_splits_that_cannot_work_exit_2])
