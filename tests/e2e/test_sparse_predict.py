"""predict and eval on a sparse model (model.json version 2, docs/sparse.md): runs on a hashed
click log and on a LIBSVM file write it (its nonzeros, its "sparse" description), and predict on
the same rows equals numpy on keys computed here from that description; hand-written models
over LIBSVM rows (1- and 0-based, a file and stdin, indices past the model's keys skipped with a
warning) and over a CSV hashed with the model's own data.hash (FNV-1a keys computed here,
crosses, a numeric column, empty cells under missing: zero, columns in another order), checked
against numpy on the same rows; the refusals (an .npy, the wrong text format, a missing column,
export) exit 2 saying what to do. Everything is written in the test."""

import gzip
import json
import subprocess

import numpy as np
import harness as h
from test_metrics import log_loss, roc_auc_score


def write_model(path, model, sparse, label, classes, weights, bias):
    """A sparse model.json: `weights` the full [width x outputs] array, written as nonzeros."""
    flat = np.asarray(weights, dtype=float).reshape(-1)
    index = [int(i) for i in np.flatnonzero(flat)]
    outputs = len(bias)
    shape = [sparse["width"], outputs] if model == "softmax_regression" else [sparse["width"]]
    j = {"format": "disttrain-model", "version": 2,
         "model": {"type": model,
                   "task": {"linear_regression": "regression", "logistic_regression": "binary",
                            "softmax_regression": "multiclass"}[model],
                   "l2": 0, "inputs": sparse["width"], "outputs": outputs},
         "sparse": sparse, "label": label}
    if classes:
        j["classes"] = classes
    j["parameters"] = [
        {"name": "weights", "shape": shape, "encoding": "sparse", "index": index,
         "data": [float(flat[i]) for i in index]},
        {"name": "bias", "shape": [] if outputs == 1 else [outputs],
         "data": [float(b) for b in bias]}]
    path.write_text(json.dumps(j, indent=1))
    return path


def predictions(r):
    """predict's CSV as (first column as text, the numbers after it as an array)."""
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    rows = [line.split(",") for line in lines[1:]]
    return lines[0], [row[0] for row in rows], np.array([[float(v) for v in row[1:]] for row in rows])


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def libsvm_rows(rng, n, top, base):
    """n rows of indices base..top (some past the model's width), values in [-1, 1]."""
    rows = []
    for _ in range(n):
        idx = sorted(rng.choice(np.arange(base, top + 1), size=rng.integers(1, 6), replace=False))
        rows.append([(int(i), float(np.round(rng.uniform(-1, 1), 3))) for i in idx])
    return rows


def dense(rows, width, base):
    x = np.zeros((len(rows), width))
    for r, row in enumerate(rows):
        for i, v in row:
            if 0 <= i - base < width:
                x[r, i - base] = v
    return x


def test_libsvm_logistic(tmp):
    rng = np.random.default_rng(1)
    width = 20
    w = np.zeros(width)
    w[[0, 3, 7, 19]] = [1.5, -2.0, 0.75, 3.0]
    model = write_model(tmp / "model.json", "logistic_regression",
                        {"format": "libsvm", "width": width, "index_base": 1}, "y", ["0", "1"],
                        w, [0.25])
    rows = libsvm_rows(rng, 300, 26, 1)  # indices 21..26 are past the model's keys
    labels = rng.integers(0, 2, size=len(rows))
    text = "".join(f"{'+1' if y else '-1'} " + " ".join(f"{i}:{v}" for i, v in row) + "\n"
                   for row, y in zip(rows, labels))
    (tmp / "rows.svm").write_text(text)
    p = sigmoid(dense(rows, width, 1) @ w + 0.25)

    r = h.run("predict", model, tmp / "rows.svm")
    header, cls, got = predictions(r)
    assert header == "prediction,probability"
    np.testing.assert_allclose(got[:, 0], p, rtol=1e-13, atol=0)
    assert cls == ["1" if q >= 0.5 else "0" for q in p]
    assert "indices outside this sparse model's 20 keys from 1; they are skipped" in r.stderr, r
    # Through stdin: the same lines.
    piped = subprocess.run([h.binary(), "predict", str(model), "-"], input=text,
                           capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and piped.stdout == r.stdout, piped.stderr

    e = h.run("eval", model, tmp / "rows.svm", "--json")
    assert e.code == 0, e
    m = e.json()
    assert m["rows"] == len(rows)
    assert m["accuracy"] == np.mean((p >= 0.5) == labels)
    np.testing.assert_allclose(m["log_loss"], log_loss(labels, p), rtol=1e-12)
    np.testing.assert_allclose(m["loss"], log_loss(labels, p), rtol=1e-9)
    np.testing.assert_allclose(m["auc"], roc_auc_score(labels, p), rtol=1e-12)


def test_libsvm_softmax_zero_based(tmp):
    rng = np.random.default_rng(2)
    width, k = 12, 3
    w = np.where(rng.uniform(size=(width, k)) < 0.5, rng.normal(size=(width, k)), 0.0)
    b = [0.1, -0.2, 0.3]
    model = write_model(tmp / "model.json", "softmax_regression",
                        {"format": "libsvm", "width": width, "index_base": 0}, "y",
                        ["0", "1", "2"], w, b)
    rows = libsvm_rows(rng, 200, width - 1, 0)
    labels = rng.integers(0, k, size=len(rows))
    (tmp / "rows.txt").write_text("".join(
        f"{y} " + " ".join(f"{i}:{v}" for i, v in row) + "\n" for row, y in zip(rows, labels)))
    # Named .txt: told LIBSVM by its content, as for a dense model.
    p = softmax(dense(rows, width, 0) @ w + b)
    header, cls, got = predictions(h.run("predict", model, tmp / "rows.txt"))
    assert header == "prediction,p_0,p_1,p_2"
    np.testing.assert_allclose(got, p, rtol=1e-12, atol=1e-15)
    assert cls == [str(c) for c in p.argmax(axis=1)]
    m = h.run("eval", model, tmp / "rows.txt", "--json").json()
    assert m["accuracy"] == np.mean(p.argmax(axis=1) == labels)
    np.testing.assert_allclose(m["log_loss"], log_loss(labels, p), rtol=1e-12)


def fnv1a64(data):
    x = 0xcbf29ce484222325
    for byte in data:
        x = ((x ^ byte) * 0x100000001b3) % 2**64
    return x


def key(column, value, bits):
    return fnv1a64(f"{column}={value}".encode("utf-8")) >> (64 - bits)


def cross(a, x, b, y, bits):
    return fnv1a64(f"{a}={x}\x1f{b}={y}".encode("utf-8")) >> (64 - bits)


def test_hashed_csv(tmp):
    rng = np.random.default_rng(3)
    bits = 8
    width = 2**bits + 1  # the buckets, then the numeric column n
    w = np.where(rng.uniform(size=width) < 0.7, rng.normal(size=width), 0.0)
    sparse = {"format": "csv", "width": width, "hash_bits": bits, "hashed": ["C1", "C2"],
              "crosses": [["C1", "C2"]], "numeric": ["n"], "missing": "zero"}
    model = write_model(tmp / "model.json", "logistic_regression", sparse, "click", ["0", "1"],
                        w, [-0.5])
    # Columns in another order than training's, an extra column, empty cells (no key under
    # missing: zero), a quoted cell with a comma.
    lines = ["extra,C2,click,n,C1"]
    x = np.zeros((400, width))
    labels = rng.integers(0, 2, size=400)
    for r in range(400):
        c1 = "" if r % 17 == 0 else f"a{rng.integers(0, 40)}"
        c2 = '"x,y"' if r % 23 == 0 else f"b{rng.integers(0, 30)}"
        n = "" if r % 11 == 0 else f"{rng.uniform(-2, 2):.4f}"
        lines.append(f"e{r},{c2},{labels[r]},{n},{c1}")
        v2 = c2.strip('"')
        if c1:
            x[r, key("C1", c1, bits)] += 1
            x[r, cross("C1", c1, "C2", v2, bits)] += 1
        x[r, key("C2", v2, bits)] += 1
        if n:
            x[r, 2**bits] = float(n)
    text = "\n".join(lines) + "\n"
    (tmp / "clicks.csv").write_text(text)
    p = sigmoid(x @ w - 0.5)

    header, cls, got = predictions(h.run("predict", model, tmp / "clicks.csv"))
    np.testing.assert_allclose(got[:, 0], p, rtol=1e-12, atol=0)
    assert cls == ["1" if q >= 0.5 else "0" for q in p]
    piped = subprocess.run([h.binary(), "predict", str(model), "-"], input=text,
                           capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    with gzip.open(tmp / "clicks.csv.gz", "wt") as f:
        f.write(text)
    zipped = h.run("predict", model, tmp / "clicks.csv.gz")
    assert zipped.code == 0 and zipped.stdout == piped.stdout, zipped
    np.testing.assert_allclose(predictions(zipped)[2][:, 0], p, rtol=1e-12, atol=0)

    m = h.run("eval", model, tmp / "clicks.csv", "--json").json()
    assert m["rows"] == 400
    assert m["accuracy"] == np.mean((p >= 0.5) == labels)
    np.testing.assert_allclose(m["log_loss"], log_loss(labels, p), rtol=1e-12)
    np.testing.assert_allclose(m["auc"], roc_auc_score(labels, p), rtol=1e-12)

    # missing: error refuses an empty cell, naming it.
    sparse["missing"] = "error"
    strict = write_model(tmp / "strict.json", "logistic_regression", sparse, "click", ["0", "1"],
                         w, [-0.5])
    r = h.run("predict", strict, tmp / "clicks.csv")
    assert r.code == 2 and "clicks.csv:2:" in r.stderr, r


def test_refusals(tmp):
    w = np.zeros(5)
    w[1] = 1.0
    libsvm = write_model(tmp / "libsvm.json", "linear_regression",
                         {"format": "libsvm", "width": 5, "index_base": 1}, "y", None, w, [0.0])
    hashed = write_model(tmp / "hashed.json", "linear_regression",
                         {"format": "csv", "width": 4, "hash_bits": 2, "hashed": ["C1", "C2"],
                          "crosses": [], "numeric": [], "missing": "error"}, "y", None, w[:4],
                         [0.0])
    (tmp / "rows.svm").write_text("1 1:2 3:1\n")
    (tmp / "rows.csv").write_text("C1,y\na,1\n")
    np.save(tmp / "rows.npy", np.zeros((2, 3)))
    cases = [
        (["predict", libsvm, tmp / "rows.csv"], "this sparse model reads LIBSVM rows (index:value), not a CSV"),
        (["predict", hashed, tmp / "rows.svm"], "this sparse model hashes CSV columns (C1), so it reads a CSV"),
        (["predict", hashed, tmp / "rows.csv"], "no column 'C2', which the model was trained on"),
        (["eval", libsvm, tmp / "rows.npy"], "a sparse model reads LIBSVM or CSV rows, not a NumPy array"),
        (["export", libsvm, "-o", tmp / "m.onnx"], "export: this is a sparse model (5 keys, 1 nonzero weights), which ONNX export does not take"),
        (["export", libsvm, "-o", tmp / "m.npz"], "which npz export does not take"),
    ]
    for args, says in cases:
        r = h.run(*args)
        assert r.code == 2 and says in r.stderr, (args, says, r)
    # A hostile file: a width past the widest sparse model is refused before anything is made.
    bad = json.loads(libsvm.read_text())
    bad["sparse"]["width"] = 2**40
    (tmp / "bad.json").write_text(json.dumps(bad))
    r = h.run("predict", tmp / "bad.json", tmp / "rows.svm")
    assert r.code == 2 and "field 'width' is 1099511627776, not a whole number from 0 to 2147483647" in r.stderr, r
    # The LIBSVM row's indices 1 and 3 are keys 0 and 2, whose weights are 0: the bias, 0.
    r = h.run("predict", libsvm, tmp / "rows.svm")
    assert r.code == 0 and r.stdout == "prediction\n0\n", r


RUN_CONFIG = """
version: 1
name: {name}
seed: 2
model: {{type: {model}}}
data: {data}
shards: {{count: 2}}
training: {{epochs: 2, batch_size: 32, optimizer: {{type: adagrad, lr: 0.1}}}}
output: {{dir: {out}}}
"""


def nonzeros(model_json, width, outputs):
    """The full weights [width, outputs] and biases of a sparse model.json."""
    j = json.loads(model_json.read_text())
    assert j["version"] == 2, j["version"]
    weights, bias = j["parameters"]
    assert weights["encoding"] == "sparse"
    w = np.zeros(width * outputs)
    w[weights["index"]] = weights["data"]
    return j, w.reshape(width, outputs), np.array(bias["data"])


def test_run_on_hashed_clicks_then_predict(tmp):
    """A run on a hashed click log writes a sparse model.json, and predict on the same rows
    equals numpy on the keys computed here from the model's own "sparse" description."""
    gen = h.run("gen", "clicks", "--rows", "600", "--fields", "4", "--seed", "5")
    assert gen.code == 0, gen
    (tmp / "clicks.csv").write_text(gen.stdout)
    cfg = h.write_config(tmp, RUN_CONFIG.format(
        name="clicks", model="logistic_regression", out=tmp / "run",
        data=f"{{path: {tmp / 'clicks.csv'}, label: click, hash: {{bits: 12, columns: [C1, C2, C3, C4], "
             f"crosses: [[C1, C2]]}}}}"))
    r = h.run("run", cfg, "-q")
    assert r.code == 0, r
    j, w, b = nonzeros(tmp / "run" / "model.json", 2**12, 1)
    assert j["sparse"] == {"format": "csv", "width": 4096, "hash_bits": 12,
                           "hashed": ["C1", "C2", "C3", "C4"], "crosses": [["C1", "C2"]],
                           "numeric": [], "missing": "error"}
    assert "features" not in j and np.count_nonzero(w) > 0
    lines = gen.stdout.splitlines()
    header = lines[0].split(",")
    x = np.zeros((len(lines) - 1, 2**12))
    for r_, line in enumerate(lines[1:]):
        cells = dict(zip(header, line.split(",")))
        for c in ["C1", "C2", "C3", "C4"]:
            x[r_, key(c, cells[c], 12)] += 1
        x[r_, cross("C1", cells["C1"], "C2", cells["C2"], 12)] += 1
    p = sigmoid(x @ w[:, 0] + b[0])
    _, _, got = predictions(h.run("predict", tmp / "run" / "model.json", tmp / "clicks.csv"))
    np.testing.assert_allclose(got[:, 0], p, rtol=1e-12, atol=0)


def test_run_on_libsvm_then_predict(tmp):
    """data.sparse: true on a LIBSVM file: a sparse softmax model.json, and predict equals numpy."""
    rng = np.random.default_rng(4)
    rows = libsvm_rows(rng, 300, 30, 1)
    labels = rng.integers(0, 3, size=len(rows))
    (tmp / "rows.svm").write_text("".join(
        f"{y} " + " ".join(f"{i}:{v}" for i, v in row) + "\n" for row, y in zip(rows, labels)))
    cfg = h.write_config(tmp, RUN_CONFIG.format(
        name="svm", model="softmax_regression", out=tmp / "run",
        data=f"{{path: {tmp / 'rows.svm'}, sparse: true}}"))
    r = h.run("run", cfg, "-q")
    assert r.code == 0, r
    j, w, b = nonzeros(tmp / "run" / "model.json", 30, 3)
    assert j["sparse"] == {"format": "libsvm", "width": 30, "index_base": 1}
    p = softmax(dense(rows, 30, 1) @ w + b)
    _, _, got = predictions(h.run("predict", tmp / "run" / "model.json", tmp / "rows.svm"))
    np.testing.assert_allclose(got, p, rtol=1e-12, atol=1e-15)


def test_model_init_from_a_sparse_model(tmp):
    """model.init: a sparse model continues on data read into the same keys, and is refused
    (exit 2, naming the difference) on data hashed another way."""
    gen = h.run("gen", "clicks", "--rows", "300", "--fields", "3", "--seed", "6")
    (tmp / "clicks.csv").write_text(gen.stdout)
    data = f"{{path: {tmp / 'clicks.csv'}, label: click, hash: {{bits: {{bits}}, columns: [C1, C2, C3]}}}}"
    first = h.write_config(tmp, RUN_CONFIG.format(name="first", model="logistic_regression",
                                                  out=tmp / "first", data=data.replace("{bits}", "10")),
                           "first.yaml")
    assert h.run("run", first, "-q").code == 0
    init = f"\nmodel: {{type: logistic_regression, init: {tmp / 'first' / 'model.json'}}}"
    again = RUN_CONFIG.format(name="again", model="logistic_regression", out=tmp / "again",
                              data=data.replace("{bits}", "10"))
    again = again.replace("model: {type: logistic_regression}", init.strip())
    r = h.run("run", h.write_config(tmp, again, "again.yaml"), "-q")
    assert r.code == 0, r
    other = again.replace("bits: 10", "bits: 11")
    r = h.run("run", h.write_config(tmp, other, "other.yaml"), "-q")
    assert r.code == 2 and "does not read this data as its training did: the model is 1024 keys " \
                           "wide, this data 2048" in r.stderr, r


if __name__ == "__main__":
    h.main([test_libsvm_logistic, test_libsvm_softmax_zero_based, test_hashed_csv, test_refusals,
            test_run_on_hashed_clicks_then_predict, test_run_on_libsvm_then_predict,
            test_model_init_from_a_sparse_model])
