"""model.dtype float32: the MLP's products in float32, its parameters, exchanges and files in
float64. A run converges near the float64 run but not on its bits; it is byte-identical across
reruns and transports (star and ring each; ring against star to 1e-9 as in float64) and
across a resume; model.json says float32 and eval/predict compute as training did; the
combinations it is not available for exit 2 naming the key."""

import csv
import io
import json
import math
import signal

import numpy as np

import harness as h
import test_checkpoint as ck

CONFIG = """
version: 1
name: f32
seed: 3
model: {{type: mlp, hidden: [16, 8], activation: tanh, task: multiclass, dtype: {dtype}}}
data: {{path: {data}}}
shards: {{count: 2, strategy: random}}
aggregation: {{mode: gradients, topology: {topology}}}
training: {{epochs: 6, batch_size: 64, optimizer: {{type: adam, lr: 0.02}}}}
output: {{dir: {out}}}
"""


def config(tmp, dtype="float32", topology="star", name="config.yaml"):
    return h.write_config(tmp, CONFIG.format(dtype=dtype, topology=topology,
                                             data=h.source("data", "blobs.csv"), out=tmp / "run"),
                          name=name)


def train(cfg, out, *sets):
    args = ["run", cfg, "--json", "--set", f"output.dir={out}"]
    for s in sets:
        args += ["--set", s]
    r = h.run(*args, timeout=60)
    assert r.code == 0, r
    return r.json()


def params(run_dir):
    model = json.loads((run_dir / "model.json").read_text())
    return np.concatenate([np.ravel(np.asarray(p["data"], dtype=float)) for p in model["parameters"]])


def test_float32_converges_near_float64_and_says_so(tmp):
    s32 = train(config(tmp), tmp / "f32")
    s64 = train(config(tmp, "float64", name="f64.yaml"), tmp / "f64")
    assert s32["final_metrics"]["accuracy"] >= 0.9, s32["final_metrics"]
    # The same steps up to float32 rounding: the losses agree to far better than training moves
    # them, but the models are not the float64 bits (the products really ran in float32).
    assert abs(s32["final_loss"] - s64["final_loss"]) <= 1e-3 * s64["final_loss"], (s32, s64)
    assert not np.array_equal(params(tmp / "f32"), params(tmp / "f64"))
    m32 = json.loads((tmp / "f32" / "model.json").read_text())["model"]
    m64 = json.loads((tmp / "f64" / "model.json").read_text())["model"]
    assert m32["dtype"] == "float32"
    assert "dtype" not in m64, "a float64 model.json keeps its bytes: no dtype key"
    resolved = (tmp / "f32" / "config.resolved.yaml").read_text()
    assert "dtype: float32" in resolved, resolved
    v = h.run("validate", config(tmp, name="v.yaml"), timeout=30)
    assert v.code == 0 and "parameters, float32 products" in v.stdout, v
    v = h.run("validate", config(tmp, name="v.yaml"), "--json", timeout=30)
    assert v.code == 0 and v.json()["dtype"] == "float32", v


def test_float32_is_byte_identical_across_reruns_and_transports(tmp):
    texts = {}
    for topology in ("star", "ring"):
        cfg = config(tmp, topology=topology, name=f"{topology}.yaml")
        for i, transport in enumerate(("ipc", "ipc", "tcp")):
            out = tmp / f"{topology}-{transport}{i}"
            train(cfg, out, f"transport.type={transport}")
            texts.setdefault(topology, []).append((out / "model.json").read_bytes())
        assert all(t == texts[topology][0] for t in texts[topology]), \
            f"{topology}: model.json differs between reruns or transports"
    # The ring adds the workers' float64 gradients in another order than the star: the same
    # model to 1e-9, as in float64 (test_ring.py).
    star, ring = params(tmp / "star-ipc0"), params(tmp / "ring-ipc0")
    assert np.max(np.abs(ring - star)) / np.max(np.abs(star)) < 1e-9


def test_float32_resume_is_byte_identical(tmp):
    text = ck.CONFIG.replace("hidden: [8]", "hidden: [8], dtype: float32")
    cfg = h.write_config(tmp, text.format(workers=2, extra="", epochs=60, transport="ipc",
                                          every=150, out=tmp / "run"), name="resume.yaml")
    ref = ck.reference(tmp, cfg)
    assert json.loads((ref / "model.json").read_text())["model"]["dtype"] == "float32"
    total = json.loads((ref / "summary.json").read_text())["steps"]
    proc, workers = ck.stop_after_first_checkpoint(cfg, tmp / "run", signal.SIGTERM)
    h.finish(proc, 20)
    assert proc.returncode == 130
    h.assert_gone(workers)
    ck.resume_and_compare(tmp, cfg, ref, tmp / "run", total)
    # Resuming a float32 checkpoint in float64 would continue with other steps: said, not hidden.
    r = h.run("run", cfg, "--resume", "--set", "model.dtype=float64", "--json", timeout=60)
    assert "model.dtype was float32, is now float64 (the default)" in r.stderr, r


def test_eval_and_predict_compute_as_training_did(tmp):
    # One worker over the rows in file order: its sums are eval's, added in the same order (with
    # more workers the shards' sums are added per worker, equal to eval's to rounding only).
    summary = train(config(tmp, topology="star"), tmp / "run", "shards.count=1",
                    "shards.strategy=contiguous")
    model = tmp / "run" / "model.json"
    data = h.source("data", "blobs.csv")
    r = h.run("eval", model, data, "--json")
    assert r.code == 0, r
    e = r.json()
    assert e["rows"] == 1500
    assert e["loss"] == summary["final_loss"], (e, summary["final_loss"])
    assert e["log_loss"] == summary["final_metrics"]["log_loss"]
    assert e["accuracy"] == summary["final_metrics"]["accuracy"]
    # The same parameters read as float64 give another loss: eval did compute in float32.
    j = json.loads(model.read_text())
    del j["model"]["dtype"]
    as64 = tmp / "as64.json"
    as64.write_text(json.dumps(j))
    r64 = h.run("eval", as64, data, "--json")
    assert r64.code == 0, r64
    assert r64.json()["loss"] != e["loss"]
    assert abs(r64.json()["loss"] - e["loss"]) < 1e-4 * e["loss"]
    # predict's probabilities give eval's log-loss (mean of -log p of the true class).
    p = h.run("predict", model, data)
    assert p.code == 0, p
    rows = list(csv.reader(io.StringIO(p.stdout)))
    labels = [row[-1] for row in csv.reader(open(data))][1:]
    header = rows[0]
    total = 0.0
    for row, label in zip(rows[1:], labels):
        total -= math.log(float(row[header.index(f"p_{label}")]))
    assert abs(total / len(labels) - e["log_loss"]) < 1e-9 * e["log_loss"], header


def test_float32_refused_where_it_is_not_available(tmp):
    cfg = config(tmp)
    for sets, message in [
        (["parallelism.tensor=2"],
         "model.dtype: float32 is not available with parallelism.tensor > 1 (the "
         "tensor-parallel slices compute in float64); use dtype: float64 or tensor: 1"),
        (["model.dtype=half"],
         "model.dtype: unknown value 'half' (expected float64 or float32"),
    ]:
        args = ["validate", cfg]
        for s in sets:
            args += ["--set", s]
        r = h.run(*args, timeout=30)
        assert r.code == 2, r
        assert message in r.stderr, r.stderr
    soft = h.write_config(tmp, f"""
version: 1
model: {{type: softmax_regression, dtype: float32}}
data: {{path: {h.source('data', 'blobs.csv')}}}
""", name="softmax.yaml")
    r = h.run("run", soft, timeout=30)
    assert r.code == 2, r
    assert "softmax.yaml:" in r.stderr, r.stderr
    assert (": model.dtype: float32 applies to mlp only (its dense products), "
            "but model.type is softmax_regression, which computes in float64; remove it or set "
            "dtype: float64") in r.stderr, r.stderr


if __name__ == "__main__":
    h.main([test_float32_converges_near_float64_and_says_so,
            test_float32_is_byte_identical_across_reruns_and_transports,
            test_float32_resume_is_byte_identical, test_eval_and_predict_compute_as_training_did,
            test_float32_refused_where_it_is_not_available])
