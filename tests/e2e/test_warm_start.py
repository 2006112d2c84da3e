"""model.init: a run that starts from a trained model. Continuing a run is exact: 3 epochs, then
2 more from its model.json, give the bytes of 5 epochs in one run (plain SGD and unshuffled
batches carry no state across the cut), in every synchronous mode; async starts where the model
is; the model's normalization is kept; a model that does not fit the config or the data is
refused with exit 2 by `run` and `validate`."""

import csv
import json

import harness as h

BASE = """
version: 1
name: warm
seed: 4
model: {model}
data: {{path: {data}, validation: 0.1{extra_data}}}
shards: {{count: 2}}
training: {{epochs: {epochs}, batch_size: 64, shuffle: false, optimizer: {{type: sgd, lr: 0.1}}}}
{extra}
output: {{dir: {out}}}
"""


def config(tmp, name, epochs, model="{type: softmax_regression}", data=None, extra="",
           extra_data=""):
    text = BASE.format(model=model, data=data or h.source("data", "blobs.csv"), epochs=epochs,
                       extra=extra, extra_data=extra_data, out=tmp / name)
    return h.write_config(tmp, text, name=f"{name}.yaml")


def train(tmp, name, epochs, init=None, **kw):
    cfg = config(tmp, name, epochs, **kw)
    args = ["run", cfg, "-q"] + (["--set", f"model.init={init}"] if init else [])
    r = h.run(*args)
    assert r.code == 0, r
    return tmp / name / "model.json"


MODES = [
    ("star", {}),
    ("ring", {"extra": "aggregation: {topology: ring}"}),
    ("servers", {"extra": "aggregation: {servers: 2}"}),
    ("tensor", {"model": "{type: mlp, hidden: [8], task: multiclass}",
                "extra": "parallelism: {tensor: 2}"}),
    ("parameters", {"extra": "aggregation: {mode: parameters, parameters: {sync_every: {steps: 11}}}"}),
]


def test_continued_run_equals_one_long_run(tmp):
    for name, kw in MODES:
        whole = train(tmp, f"{name}-5", 5, **kw)
        first = train(tmp, f"{name}-3", 3, **kw)
        rest = train(tmp, f"{name}-3+2", 2, init=first, **kw)
        assert rest.read_bytes() == whole.read_bytes(), f"{name}: 3 + 2 epochs differ from 5"
        # And the cut is real: 3 epochs alone are another model.
        assert first.read_bytes() != whole.read_bytes(), name


def test_resume_of_a_warm_started_run(tmp):
    """A warm-started run killed midway and resumed ends with the bytes of the same run
    uninterrupted: the checkpoint's state wins over model.init on resume (star and ring)."""
    trained = train(tmp, "trained", 2)
    for topology in ("star", "ring"):
        cfg = config(tmp, topology, 5, extra=f"aggregation: {{topology: {topology}}}\n"
                                            "fault_tolerance: {checkpoint_every: {steps: 20}}")
        common = ["--set", f"model.init={trained}", "-q"]
        r = h.run("run", cfg, *common, "--set", f"output.dir={tmp / (topology + '-whole')}")
        assert r.code == 0, r
        r = h.run("run", cfg, *common, "--fault", "rank=1,at_step=50,action=kill")
        assert r.code == 3, r
        r = h.run("run", cfg, *common, "--resume", "--json")
        assert r.code == 0 and r.json()["checkpoint"]["resumed_from_step"] > 0, r
        whole = (tmp / (topology + "-whole") / "model.json").read_bytes()
        assert (tmp / topology / "model.json").read_bytes() == whole, topology


def first_train_loss(model_json):
    with open(model_json.parent / "loss.csv") as f:
        return float(next(csv.DictReader(f))["train_loss"])


def test_async_starts_from_the_model(tmp):
    trained = train(tmp, "trained", 5)
    extra = {"extra": "aggregation: {mode: async}"}
    cold = train(tmp, "cold", 1, **extra)
    warm = train(tmp, "warm", 1, init=trained, **extra)
    # The first logged loss of a run from the trained model is near the trained model's final
    # loss, far below a cold start's.
    final = json.loads((trained.parent / "summary.json").read_text())["final_loss"]
    assert first_train_loss(warm) < 1.5 * final < first_train_loss(cold), (
        first_train_loss(warm), final, first_train_loss(cold))


def test_the_models_normalization_is_kept(tmp):
    trained = train(tmp, "trained", 2)
    # New data: the first 600 rows only, whose statistics differ from all 1500 rows'.
    rows = list(csv.reader(open(h.source("data", "blobs.csv"))))
    part = tmp / "part.csv"
    with open(part, "w", newline="") as f:
        csv.writer(f).writerows(rows[:601])
    r = h.run("run", config(tmp, "tuned", 1, data=part, extra_data=", normalize: minmax"),
              "--set", f"model.init={trained}")
    assert r.code == 0, r
    assert "normalization 'standard'; it is used" in r.stderr, r.stderr
    tuned = json.loads((tmp / "tuned" / "model.json").read_text())
    assert tuned["normalization"] == json.loads(trained.read_text())["normalization"]
    assert tuned["parameters"] != json.loads(trained.read_text())["parameters"]


def test_a_model_that_does_not_fit_is_refused(tmp):
    trained = train(tmp, "trained", 1)
    rows = list(csv.reader(open(h.source("data", "blobs.csv"))))
    renamed = tmp / "renamed.csv"  # x2 called z2
    with open(renamed, "w", newline="") as f:
        csv.writer(f).writerows([[c.replace("x2", "z2") for c in rows[0]]] + rows[1:])
    two_classes = tmp / "two.csv"  # only the rows of classes 0 and 1
    with open(two_classes, "w", newline="") as f:
        csv.writer(f).writerows([rows[0]] + [r for r in rows[1:] if r[-1] != "2"])
    not_a_model = tmp / "notes.json"
    not_a_model.write_text('{"hello": 1}')
    cases = [
        ({"model": "{type: mlp, hidden: [8], task: multiclass}"}, trained,
         "is a softmax_regression model; this config trains a mlp"),
        ({"data": renamed}, trained, "the first difference is feature 3: the model has 'x2', the data 'z2'"),
        ({"data": two_classes}, trained, "trained on the classes [0, 1, 2], this data has [0, 1]"),
        ({}, tmp / "missing.json", "missing.json"),
        ({}, not_a_model, "notes.json"),
    ]
    for i, (kw, init, says) in enumerate(cases):
        cfg = config(tmp, f"bad{i}", 1, **kw)
        for command in ("validate", "run"):
            r = h.run(command, cfg, "--set", f"model.init={init}")
            assert r.code == 2, (command, kw, r)
            assert says in r.stderr and "model.init" in r.stderr, (command, r.stderr)
        assert not (tmp / f"bad{i}" / "model.json").exists()
    # validate names the model it starts from.
    cfg = config(tmp, "good", 1)
    r = h.run("validate", cfg, "--set", f"model.init={trained}")
    assert r.code == 0 and f"starting from {trained}" in r.stdout, r


if __name__ == "__main__":
    h.main([test_continued_run_equals_one_long_run, test_resume_of_a_warm_started_run,
            test_async_starts_from_the_model,
            test_the_models_normalization_is_kept, test_a_model_that_does_not_fit_is_refused])
