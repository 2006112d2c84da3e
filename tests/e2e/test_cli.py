"""The other subcommands: predict and eval on a trained model, gen, validate, reference."""

import csv
import io
import json
import os

import numpy as np

import harness as h


def train(tmp, model, data, extra=""):
    cfg = h.write_config(tmp, f"""
version: 1
name: cli
seed: 2
model: {model}
data: {{path: {h.source('data', data)}}}
shards: {{count: 2}}
training: {{epochs: 10, batch_size: 64, optimizer: {{type: adam, lr: 0.05}}}}
output: {{dir: {tmp}/run}}
{extra}
""")
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    return r.json(), tmp / "run" / "model.json"


def test_predict_and_eval_match_training(tmp):
    summary, model = train(tmp, "{type: softmax_regression}", "blobs.csv")
    data = h.source("data", "blobs.csv")
    r = h.run("eval", model, data, "--json")
    assert r.code == 0, r
    metrics = r.json()
    # eval over every row = the run's final metrics over every training row (no validation split).
    assert metrics["rows"] == 1500
    assert abs(metrics["accuracy"] - summary["final_metrics"]["accuracy"]) < 1e-12
    assert abs(metrics["log_loss"] - summary["final_metrics"]["log_loss"]) < 1e-9

    # Columns in another order and an extra column: predict finds features by name.
    rows = list(csv.reader(open(data)))
    shuffled = tmp / "shuffled.csv"
    with open(shuffled, "w", newline="") as f:
        w = csv.writer(f)
        for row in rows:
            w.writerow([row[3], "extra" if row is rows[0] else "1", row[0], row[2], row[1]])
    r = h.run("predict", model, shuffled)
    assert r.code == 0, r
    out = list(csv.reader(io.StringIO(r.stdout)))
    assert out[0] == ["prediction", "p_0", "p_1", "p_2"]
    assert len(out) == 1501
    predicted = np.array([int(row[0]) for row in out[1:]])
    labels = np.array([int(row[4]) for row in rows[1:]])
    assert abs(np.mean(predicted == labels) - metrics["accuracy"]) < 1e-12
    probs = np.array([[float(v) for v in row[1:]] for row in out[1:]])
    assert np.allclose(probs.sum(axis=1), 1.0)

    broken = json.loads(model.read_text())
    broken["classes"] = ["only-one"]
    (tmp / "broken.json").write_text(json.dumps(broken))
    r = h.run("predict", tmp / "broken.json", data)
    assert r.code == 2, r
    assert "broken.json: a multiclass model needs 2 or more classes" in r.stderr, r.stderr

    missing = tmp / "missing.csv"
    missing.write_text("x0,x1,x3\n1,2,3\n")
    r = h.run("predict", model, missing)
    assert r.code == 2, r
    assert f"{missing}: no column 'x2', which the model was trained on" in r.stderr, r.stderr


def test_regression_predictions_follow_the_saved_model(tmp):
    _, model_path = train(tmp, "{type: linear_regression}", "linear.csv")
    model = json.loads(model_path.read_text())
    table = np.loadtxt(h.source("data", "linear.csv"), delimiter=",", skiprows=1)
    x = table[:, :-1]
    norm = model["normalization"]
    z = (x - np.array(norm["shift"])) / np.array(norm["scale"])
    w = np.array(model["parameters"][0]["data"])
    b = model["parameters"][1]["data"][0]
    r = h.run("predict", model_path, h.source("data", "linear.csv"))
    assert r.code == 0, r
    got = np.array([float(v) for v in r.stdout.split()[1:]])
    assert np.allclose(got, z @ w + b, rtol=1e-12, atol=1e-12)


def test_gen_is_deterministic_and_validated(tmp):
    a = h.run("gen", "blobs", "--rows", "300", "--features", "3", "--classes", "4", "--seed", "9")
    b = h.run("gen", "blobs", "--rows", "300", "--features", "3", "--classes", "4", "--seed", "9")
    c = h.run("gen", "blobs", "--rows", "300", "--features", "3", "--classes", "4", "--seed", "10")
    assert a.code == 0 and a.stdout == b.stdout and a.stdout != c.stdout
    lines = a.stdout.splitlines()
    assert lines[0] == "x0,x1,x2,y" and len(lines) == 301
    assert {l.rsplit(",", 1)[1] for l in lines[1:]} == {"0", "1", "2", "3"}
    with open("/dev/full", "w") as full:
        r = h.run("gen", "linear", "--rows", "10000", stdout=full)
    assert r.code == 3 and "cannot write to standard output: No space left on device" in r.stderr, r
    r = h.run("gen", "linera", "--rows", "5")
    assert r.code == 2 and "did you mean 'linear'?" in r.stderr, r


def test_validate_prints_the_plan(tmp):
    cfg = h.write_config(tmp, f"""
version: 1
model: {{type: softmax_regression}}
data: {{path: {h.source('data', 'blobs.csv')}, validation: 0.2}}
shards: {{count: 3, strategy: round_robin}}
training: {{epochs: 2, batch_size: 100}}
""")
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    plan = r.json()
    assert plan["train_rows"] == 1200 and plan["validation_rows"] == 300
    assert [s["rows"] for s in plan["shards"]] == [400, 400, 400]
    assert plan["classes"] == ["0", "1", "2"] and plan["parameters"] == 15
    assert plan["steps_per_epoch"] == 12 and plan["steps"] == 24
    r = h.run("validate", cfg)
    assert r.code == 0 and "rank 2: 400 rows" in r.stdout, r
    assert not (tmp / "runs").exists(), "validate writes nothing"


def test_reference_matches_docs(tmp):
    r = h.run("reference")
    assert r.code == 0, r
    assert r.stdout == h.source("docs", "config.md").read_text(), \
        "docs/config.md is out of date: run `disttrain reference > docs/config.md`"


def test_subnormal_results_are_flushed_to_zero(tmp):
    """disttrain flushes subnormal doubles to zero in every process (base/subnormals.hpp): a
    model saturated to the logit -720 predicts the probability e^-720 (2.03e-313, subnormal)
    as 0, while -700 keeps e^-700 (9.86e-305, normal)."""
    _, model_path = train(tmp, "{type: logistic_regression}", "logistic.csv")
    model = json.loads(model_path.read_text())
    weights, bias = model["parameters"]
    assert bias["name"] == "bias", model["parameters"]
    weights["data"] = [0.0] * len(weights["data"])
    for logit, expected in ((-720.0, 0.0), (-700.0, 9.85967654375977e-305)):
        bias["data"] = [logit]
        saturated = tmp / f"saturated{int(-logit)}.json"
        saturated.write_text(json.dumps(model))
        r = h.run("predict", saturated, h.source("data", "logistic.csv"))
        assert r.code == 0, r
        rows = list(csv.reader(io.StringIO(r.stdout)))
        assert rows[0] == ["prediction", "probability"], rows[0]
        assert {float(row[1]) for row in rows[1:]} == {expected}, (logit, rows[1])


WITHOUT_AVX2 = {"prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge", "atom",
                "katmai", "coppermine", "northwood", "banias", "opteron", "opteron_sse3",
                "barcelona", "bobcat", "bulldozer", "piledriver"}


def test_dense_products_run_the_cpus_kernels(tmp):
    """An MLP's products run OpenBLAS kernels with AVX2 where the CPU has AVX2 and FMA, even when
    OpenBLAS does not know the CPU model (base/blas_kernels.hpp); the user's OPENBLAS_CORETYPE
    wins; summary.json names the kernels."""
    flags = set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    mlp = "{type: mlp, hidden: [8], task: multiclass}"
    summary, _ = train(tmp, mlp, "blobs.csv")
    kernels = summary["blas_kernels"]
    assert kernels, summary
    if {"avx2", "fma"} <= flags:
        assert kernels.lower() not in WITHOUT_AVX2, kernels
    cfg = tmp / "config.yaml"
    r = h.run("run", cfg, "--json", env=dict(os.environ, OPENBLAS_CORETYPE="Prescott"))
    assert r.code == 0, r
    assert r.json()["blas_kernels"] == "Prescott", r.json()["blas_kernels"]


def test_model_files_are_checked_field_by_field(tmp):
    """A model.json whose fields disagree (a shape not the model's, huge, negative, or whose
    product wraps 64 bits; a zero scale; a repeated feature) is refused with exit 2 naming the
    field: predict once printed predictions (and -inf/nan) from such files with exit 0."""
    _, model_path = train(tmp, "{type: linear_regression}", "linear.csv")
    model = json.loads(model_path.read_text())
    assert model["parameters"][0]["shape"] == [8], model["parameters"][0]["shape"]
    data = h.source("data", "linear.csv")
    cases = {
        "shape [5,9]": (lambda m: m["parameters"][0].update(shape=[5, 9]),
                        "parameter 'weights' has shape [5,9]; this model's needs [8]"),
        "huge": (lambda m: m["parameters"][0].update(shape=[100000, 100000]),
                 "parameter 'weights' has shape [100000,100000]; this model's needs [8]"),
        "negative": (lambda m: m["parameters"][0].update(shape=[-8]),
                     "parameter 'weights' has shape [-8]; this model's needs [8]"),
        "wraps": (lambda m: m["parameters"][0].update(shape=[2 ** 32, 2 ** 32]),
                  "parameter 'weights' has shape [4294967296,4294967296]; this model's needs [8]"),
        "zero scale": (lambda m: m["normalization"]["scale"].__setitem__(2, 0),
                       "normalization of feature 'x2' has shift"),
        "repeated feature": (lambda m: m["features"].__setitem__(1, "x0"),
                             "feature 'x0' is listed twice"),
    }
    for name, (change, message) in cases.items():
        bad = json.loads(json.dumps(model))
        change(bad)
        path = tmp / f"{name.replace(' ', '_')}.json"
        path.write_text(json.dumps(bad))
        for command in ("predict", "eval"):
            r = h.run(command, path, data)
            assert r.code == 2, (name, command, r)
            assert f"{path}: {message}" in r.stderr, (name, r.stderr)
            assert r.stdout == "", (name, "nothing is printed from a refused model")


if __name__ == "__main__":
    h.main([test_predict_and_eval_match_training, test_regression_predictions_follow_the_saved_model,
            test_gen_is_deterministic_and_validated, test_validate_prints_the_plan,
            test_reference_matches_docs, test_subnormal_results_are_flushed_to_zero,
            test_dense_products_run_the_cpus_kernels, test_model_files_are_checked_field_by_field])
