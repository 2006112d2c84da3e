"""disttrain export: every model type to ONNX, run by a runtime nobody here wrote (onnxruntime's
Node binding, tests/e2e/onnx/, installed by scripts/setup --test), against `disttrain predict`
on the same rows; ONNX's own checker (python3-onnx); .npz read back by numpy against model.json;
and the errors of bad input."""

import csv
import io
import json
import os
import pty
import shutil
import subprocess
import zipfile

import numpy as np

import harness as h

ORT_DIR = "tests/e2e/onnx"

# (name, model, data, extra config): every model type and head, each hidden activation, and
# each normalization kind.
MODELS = [
    ("linear", "{type: linear_regression}", "linear.csv", ""),
    ("linear-raw", "{type: linear_regression}", "linear.csv", "normalize: none"),
    ("logistic", "{type: logistic_regression}", "logistic.csv", ""),
    ("softmax", "{type: softmax_regression}", "blobs.csv", "normalize: minmax"),
    ("mlp-relu", "{type: mlp, hidden: [16, 8], activation: relu, task: multiclass}", "blobs.csv",
     ""),
    ("mlp-tanh-binary", "{type: mlp, hidden: [8], activation: tanh, task: binary}",
     "logistic.csv", ""),
    ("mlp-sigmoid-regression", "{type: mlp, hidden: [8], activation: sigmoid, task: regression}",
     "linear.csv", "normalize: minmax"),
]


def ort_missing():
    if not shutil.which("node"):
        return "no node (Debian: apt-get install nodejs npm; or scripts/setup --test)"
    if not h.source(ORT_DIR, "node_modules", "onnxruntime-node").is_dir():
        return f"onnxruntime-node is not installed (scripts/setup --test, or: npm ci --ignore-scripts --prefix {ORT_DIR})"
    return None


def train(tmp, name, model, data, extra):
    cfg = h.write_config(tmp, f"""
version: 1
name: {name}
seed: 3
model: {model}
data: {{path: {h.source('data', data)}{', ' + extra if extra else ''}}}
shards: {{count: 2}}
training: {{epochs: 3, batch_size: 64, optimizer: {{type: adam, lr: 0.05}}}}
output: {{dir: {tmp}/{name}}}
""", name=f"{name}.yaml")
    r = h.run("run", cfg, "-q")
    assert r.code == 0, r
    return tmp / name / "model.json"


def feature_rows(model_json, data):
    """The CSV's rows as the model's raw inputs, in the model's feature order."""
    features = json.loads(model_json.read_text())["features"]
    rows = list(csv.reader(open(h.source("data", data))))
    where = [rows[0].index(f) for f in features]
    return [[float(r[j]) for j in where] for r in rows[1:]]


def run_ort(tmp, onnx_path, rows, dtype):
    rows_file = tmp / "rows.json"
    rows_file.write_text(json.dumps(rows))
    r = subprocess.run(["node", str(h.source(ORT_DIR, "run_onnx.js")), str(onnx_path),
                        str(rows_file), dtype], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def predictions(model_json, data):
    r = h.run("predict", model_json, h.source("data", data))
    assert r.code == 0, r
    out = list(csv.reader(io.StringIO(r.stdout)))
    return out[0], out[1:]


def check_against_predict(header, rows, got, dtype):
    """The runtime's outputs against predict's: probabilities within 1e-6 (float32) or 1e-12
    (float64), predictions within that times the largest prediction's size; labels equal
    wherever the decision is not within ten times that of a tie."""
    tol = 1e-6 if dtype == "float32" else 1e-12
    outputs = got["outputs"]
    n = len(rows)
    if header == ["prediction"]:
        value = np.array(outputs["prediction"]["data"])
        assert outputs["prediction"]["dims"] == [n, 1]
        expected = np.array([float(r[0]) for r in rows])
        # Relative to the outputs' scale: a prediction near 0 made of terms near 10 carries
        # the terms' float32 rounding (the largest difference seen: 1.0e-6 on outputs up to 6).
        scale = max(1.0, float(np.max(np.abs(expected))))
        worst = float(np.max(np.abs(value - expected))) / scale
        assert worst <= tol, f"{dtype}: largest difference {worst} (relative to the largest |v|)"
        return worst
    labels = outputs["label"]["data"]
    assert len(labels) == n and outputs["label"]["type"] == "string"
    if header == ["prediction", "probability"]:
        p = np.array(outputs["probability"]["data"])
        expected = np.array([float(r[1]) for r in rows])
        worst = np.max(np.abs(p - expected))
        clear = np.abs(expected - 0.5) > 10 * tol
    else:
        k = len(header) - 1
        p = np.array(outputs["probabilities"]["data"]).reshape(n, k)
        expected = np.array([[float(v) for v in r[1:]] for r in rows])
        worst = np.max(np.abs(p - expected))
        top2 = np.sort(expected, axis=1)[:, -2:]
        clear = (top2[:, 1] - top2[:, 0]) > 10 * tol
    assert worst <= tol, f"{dtype}: largest probability difference {worst}"
    mismatched = [i for i in range(n) if clear[i] and labels[i] != rows[i][0]]
    assert not mismatched, f"{dtype}: labels differ from predict's at rows {mismatched[:10]}"
    assert np.sum(clear) > 0.9 * n  # the check above covered most rows
    return worst


def test_onnx_in_onnxruntime_matches_predict(tmp):
    """Every model type, float32 and float64, run by onnxruntime on the data it was trained on:
    the outputs are predict's (1e-6 in float32, 1e-12 in float64), and ONNX's checker passes."""
    why = ort_missing()
    if why:
        print(f"skip test_onnx_in_onnxruntime_matches_predict: {why}")
        return
    import onnx  # python3-onnx: ONNX's own checker, as a consumer would run it
    for name, model, data, extra in MODELS:
        model_json = train(tmp, name, model, data, extra)
        header, rows = predictions(model_json, data)
        inputs = feature_rows(model_json, data)
        for dtype in ("float32", "float64"):
            out = tmp / f"{name}-{dtype}.onnx"
            r = h.run("export", model_json, "-o", out, "--dtype", dtype, "--json")
            assert r.code == 0, r
            assert r.json()["format"] == "onnx" and r.json()["bytes"] == out.stat().st_size
            loaded = onnx.load(str(out))
            onnx.checker.check_model(loaded, full_check=True)
            meta = {p.key: p.value for p in loaded.metadata_props}
            assert json.loads(meta["features"]) == json.loads(model_json.read_text())["features"]
            got = run_ort(tmp, out, inputs, dtype)
            worst = check_against_predict(header, rows, got, dtype)
            print(f"  {name} {dtype}: largest difference from predict {worst:.3g}")


def test_npz_holds_model_json(tmp):
    """numpy reads every array back: the parameters bit for bit with model.json's shapes, the
    normalization, features, classes and the model's description."""
    for name, model, data, extra in (MODELS[2], MODELS[3], MODELS[4]):
        model_json = train(tmp, name, model, data, extra)
        saved = json.loads(model_json.read_text())
        r = h.run("export", model_json, "--format", "npz")
        assert r.code == 0, r
        npz = model_json.with_suffix(".npz")  # the default: beside the model
        assert zipfile.ZipFile(npz).testzip() is None  # every member's CRC checks out
        z = np.load(npz)
        for p in saved["parameters"]:
            a = z[p["name"]]
            assert list(a.shape) == p["shape"] and a.dtype == np.float64
            assert np.array_equal(a.reshape(-1), np.array(p["data"], dtype=np.float64))
        assert list(z["features"]) == saved["features"]
        assert saved["model"]["task"] != "regression"
        assert list(z["classes"]) == saved["classes"]
        assert str(z["label"]) == saved["label"]
        assert str(z["model.type"]) == saved["model"]["type"]
        assert str(z["normalization.kind"]) == saved["normalization"]["kind"]
        assert np.array_equal(z["normalization.scale"], np.array(saved["normalization"]["scale"]))
        if saved["model"]["type"] == "mlp":
            assert list(z["model.hidden"]) == saved["model"]["hidden"]
            assert str(z["model.activation"]) == saved["model"]["activation"]


def test_export_to_stdout_and_bad_input(tmp):
    model_json = train(tmp, "lin", "{type: linear_regression}", "linear.csv", "")
    r = h.run("export", model_json, "-o", tmp / "a.onnx")
    assert r.code == 0, r
    piped = subprocess.run([h.binary(), "export", str(model_json), "-o", "-"], capture_output=True,
                           timeout=60)
    assert piped.returncode == 0 and piped.stdout == (tmp / "a.onnx").read_bytes()

    # Binary bytes to a terminal: refused, with where to send them instead.
    leader, follower = pty.openpty()
    try:
        p = subprocess.run([h.binary(), "export", str(model_json), "-o", "-"], stdout=follower,
                           stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    assert p.returncode == 2 and b"stdout, which is a terminal" in p.stderr, p

    # The format follows -o's extension; a model that is not one, a missing folder, an
    # unknown format or dtype: exit 2 with what to do, and nothing written.
    r = h.run("export", model_json, "-o", tmp / "b.npz")
    assert r.code == 0 and zipfile.is_zipfile(tmp / "b.npz"), r
    bad = tmp / "bad.json"
    bad.write_text('{"format": "disttrain-model", "version": 1, "model": {"type": "mlp"}}')
    cases = [
        (["export", bad], "bad.json"),
        (["export", tmp / "missing.json"], "missing.json"),
        (["export", model_json, "--format", "pmml"], "use onnx or npz"),
        (["export", model_json, "--dtype", "float16"], "use float32 or float64"),
        (["export", model_json, "-o", tmp / "nowhere" / "m.onnx"], "does not exist"),
        (["export", model_json, "-o", model_json], "the model file itself"),
    ]
    for args, says in cases:
        r = h.run(*args)
        assert r.code == 2, (args, r)
        assert says in r.stderr, (args, r.stderr)
    assert not (tmp / "nowhere").exists()
    assert json.loads(model_json.read_text())["format"] == "disttrain-model"


if __name__ == "__main__":
    h.main([test_onnx_in_onnxruntime_matches_predict, test_npz_holds_model_json,
            test_export_to_stdout_and_bad_input])
