"""Categorical columns (data.categorical): a file with a text ID (excluded), a one_hot color and
a hashed city trains the model.json of the same rows given as precomputed 0/1 columns (the
buckets computed by docs/categorical.md's Python), on every transport, from .gz and stdin, with
tensor parallelism; predict/eval apply the stored encoding (an unseen color is all zeros);
export carries it as metadata; bad columns, cells and keys exit 2 saying where and what to do."""

import gzip
import json
import random
import re

import harness as h

CONFIG = """
version: 1
name: cat
seed: 3
model: {{type: linear_regression}}
data: {{path: {path}, label: y, normalize: {normalize}{extra}}}
shards: {{count: 2}}
training: {{epochs: 3, batch_size: 16, optimizer: {{type: sgd, lr: 0.05}}}}
output: {{dir: {out}}}
"""
CATEGORICAL = ", exclude: [id], categorical: {color: one_hot, city: {hash: 8}}"
COLORS = {"red": 2.0, "green": -1.0, "blue": 0.5, "black": -2.5}
ROWS = 150


def doc_bucket():
    """The bucket function of docs/categorical.md's Python block, run as the docs show it."""
    text = (h.source("docs", "categorical.md")).read_text()
    code = re.search(r"python3 - <<'PY'\n(.*?)\nPY\n", text, re.S).group(1)
    scope = {}
    exec(code.split("\nassert")[0], scope)  # the functions, without the doc's own checks
    return scope["bucket"]


def rows():
    rng = random.Random(11)
    out = []
    for i in range(ROWS):
        color = rng.choice(sorted(COLORS))
        city = f"c{rng.randrange(20)}"
        x = round(rng.uniform(-2, 2), 3)
        y = round(COLORS[color] + 1.5 * x + (0.7 if int(city[1:]) % 2 else -0.7)
                  + rng.gauss(0, 0.1), 3)
        out.append((f"id{i:04d}", color, x, city, y))
    return out


def write_text(path, data=None):
    lines = ["id,color,x,city,y"] + [",".join(map(str, r)) for r in (data or rows())]
    path.write_text("\n".join(lines) + "\n")


def write_encoded(path, data=None, colors=None):
    """The same rows as 0/1 columns named as disttrain names them, in the same places."""
    bucket = doc_bucket()
    colors = colors or sorted(COLORS)
    header = [f"color={c}" for c in colors] + ["x"] + [f"city#{b}" for b in range(8)] + ["y"]
    lines = [",".join(header)]
    for _, color, x, city, y in data or rows():
        onehot = ["1" if color == c else "0" for c in colors]
        hashed = ["1" if bucket(city, 8) == b else "0" for b in range(8)]
        lines.append(",".join(onehot + [str(x)] + hashed + [str(y)]))
    path.write_text("\n".join(lines) + "\n")


def train(tmp, name, path, extra="", normalize="none", *args, stdin=None, env=None):
    cfg = h.write_config(tmp, CONFIG.format(path=path, out=tmp / name, extra=extra,
                                            normalize=normalize), f"{name}.yaml")
    return h.run("run", cfg, "-q", *args, stdin=stdin, env=env)


def model_of(tmp, name):
    return json.loads((tmp / name / "model.json").read_text())


def test_encoded_columns_train_the_precomputed_model(tmp):
    write_text(tmp / "text.csv")
    write_encoded(tmp / "encoded.csv")
    r = train(tmp, "enc", tmp / "encoded.csv")
    assert r.code == 0, r
    r = train(tmp, "cat", tmp / "text.csv", CATEGORICAL)
    assert r.code == 0, r
    cat, enc = model_of(tmp, "cat"), model_of(tmp, "enc")
    assert cat.pop("categorical") == [
        {"column": "color", "encoding": "one_hot", "categories": sorted(COLORS)},
        {"column": "city", "encoding": "hash", "buckets": 8}]
    assert cat == enc  # features, normalization and every parameter's bits
    expected = (tmp / "cat" / "model.json").read_bytes()
    # Reruns, other transports, a gzip file, stdin: the same bytes.
    (tmp / "text.csv.gz").write_bytes(gzip.compress((tmp / "text.csv").read_bytes()))
    _, env = h.private_tmpdir(tmp)
    for name, args, path in [("again", [], tmp / "text.csv"),
                             ("tcp", ["--set", "transport.type=tcp"], tmp / "text.csv"),
                             ("inproc", ["--set", "transport.type=inproc"], tmp / "text.csv"),
                             ("gz", [], tmp / "text.csv.gz"),
                             ("stdin", [], '"-"')]:
        with open(tmp / "text.csv", "rb") as stdin:
            r = train(tmp, name, path, CATEGORICAL, "none", *args, stdin=stdin, env=env)
        assert r.code == 0, (name, r)
        assert (tmp / name / "model.json").read_bytes() == expected, name
    # predict and eval encode the text file as training did.
    for command in ("predict", "eval"):
        a = h.run(command, tmp / "cat" / "model.json", tmp / "text.csv")
        b = h.run(command, tmp / "enc" / "model.json", tmp / "encoded.csv")
        assert a.code == 0 and b.code == 0 and a.stdout == b.stdout, (command, a, b)


def test_normalization_leaves_encoded_features_alone(tmp):
    write_text(tmp / "text.csv")
    cfg = h.write_config(tmp, CONFIG.format(path=tmp / "text.csv", out=tmp / "v", extra=CATEGORICAL,
                                            normalize="standard"), "v.yaml")
    r = h.run("validate", cfg)
    assert r.code == 0 and "encoded:    color one_hot (4 values), city hash (8 buckets)\n" in r.stdout, r
    r = h.run("validate", cfg, "--json")
    assert r.code == 0 and json.loads(r.stdout)["categorical"][1] == \
        {"column": "city", "encoding": "hash", "buckets": 8}, r
    r = train(tmp, "std", tmp / "text.csv", CATEGORICAL, "standard")
    assert r.code == 0, r
    model = model_of(tmp, "std")
    features, norm = model["features"], model["normalization"]
    assert features == [f"color={c}" for c in sorted(COLORS)] + ["x"] + \
        [f"city#{b}" for b in range(8)], features
    for name, shift, scale in zip(features, norm["shift"], norm["scale"]):
        if name == "x":
            assert shift != 0 and scale != 1, (shift, scale)
        else:
            assert (shift, scale) == (0, 1), (name, shift, scale)
    assert "constant" not in r.stderr, r.stderr  # empty buckets are not warned about


def test_unseen_category_predicts_as_all_zeros(tmp):
    write_text(tmp / "text.csv")
    write_encoded(tmp / "encoded.csv")
    assert train(tmp, "cat", tmp / "text.csv", CATEGORICAL).code == 0
    assert train(tmp, "enc", tmp / "encoded.csv").code == 0
    new = [("n1", "purple", 0.5, "c3", 1.0), ("n2", "red", -0.5, "zz-new-city", 0.0)]
    write_text(tmp / "new.csv", new)
    # The precomputed form of the same rows: purple has no color column (all zeros).
    lines = (tmp / "encoded.csv").read_text().splitlines()[:1]
    bucket = doc_bucket()
    for _, color, x, city, y in new:
        onehot = ["1" if color == c else "0" for c in sorted(COLORS)]
        hashed = ["1" if bucket(city, 8) == b else "0" for b in range(8)]
        lines.append(",".join(onehot + [str(x)] + hashed + [str(y)]))
    (tmp / "new_encoded.csv").write_text("\n".join(lines) + "\n")
    a = h.run("predict", tmp / "cat" / "model.json", tmp / "new.csv")
    b = h.run("predict", tmp / "enc" / "model.json", tmp / "new_encoded.csv")
    assert a.code == 0 and b.code == 0 and a.stdout == b.stdout, (a, b)
    # A file without the categorical column: exit 2 naming it.
    (tmp / "nocity.csv").write_text("id,color,x,y\na,red,1,2\n")
    r = h.run("predict", tmp / "cat" / "model.json", tmp / "nocity.csv")
    assert r.code == 2 and "no column 'city', which the model was trained on" in r.stderr, r


def test_tensor_parallel_ranks_encode_their_share(tmp):
    write_text(tmp / "text.csv")
    write_encoded(tmp / "encoded.csv")
    tensor = ["--set", "parallelism.tensor=2", "--set", "shards.count=1"]
    assert train(tmp, "enc", tmp / "encoded.csv", "", "none", *tensor).code == 0
    r = train(tmp, "cat", tmp / "text.csv", CATEGORICAL, "none", *tensor)
    assert r.code == 0, r
    cat, enc = model_of(tmp, "cat"), model_of(tmp, "enc")
    cat.pop("categorical")
    assert cat == enc


def test_export_carries_the_encoding(tmp):
    import numpy as np
    write_text(tmp / "text.csv")
    assert train(tmp, "cat", tmp / "text.csv", CATEGORICAL).code == 0
    model = tmp / "cat" / "model.json"
    stored = json.loads(model.read_text())["categorical"]
    r = h.run("export", model, "--format", "npz", "-o", tmp / "m.npz")
    assert r.code == 0, r
    with np.load(tmp / "m.npz") as npz:
        assert json.loads(str(npz["categorical"])) == stored
    r = h.run("export", model, "--format", "onnx", "-o", tmp / "m.onnx")
    assert r.code == 0, r
    import onnx
    props = {p.key: p.value for p in onnx.load(str(tmp / "m.onnx")).metadata_props}
    assert json.loads(props["categorical"]) == stored
    assert json.loads(props["features"]) == json.loads(model.read_text())["features"]


def test_bad_input_exits_2(tmp):
    write_text(tmp / "text.csv")
    many = ["u,y"] + [f"v{i},1" for i in range(1001)]
    (tmp / "many.csv").write_text("\n".join(many) + "\n")
    lines = (tmp / "text.csv").read_text().splitlines()
    lines[5] = "id0004,,0.5,c1,1.0"
    (tmp / "empty.csv").write_text("\n".join(lines) + "\n")
    cases = [
        ("text.csv", ", exclude: [id], categorical: {colour: one_hot}",
         ["data.categorical: no column 'colour'", "did you mean 'color'"]),
        ("text.csv", ", categorical: {y: one_hot}", ["'y' is the label column"]),
        ("text.csv", ", exclude: [id, color], categorical: {color: one_hot}",
         ["column 'color' is not a feature"]),
        ("text.csv", ", exclude: [id], categorical: {color: onehot}",
         ["data.categorical.color: expected one_hot, hash or {hash: N}"]),
        ("text.csv", ", exclude: [id], categorical: {city: {hash: 0}}",
         ["data.categorical.city.hash"]),
        ("many.csv", ", categorical: {u: one_hot}",
         ["many.csv:1002:1: column 'u' has more than 1000 distinct values",
          "data.categorical: {u: {hash: 256}}"]),
        ("empty.csv", CATEGORICAL, ["empty.csv:6:8: column 'color': empty cell"]),
        ("empty.csv", ", exclude: [id], categorical: {color: hash, city: hash}",
         ["empty.csv:6:8: column 'color': empty cell"]),
        ("text.csv", "", ["column 'id'", "is not a number"]),
    ]
    for file, extra, needles in cases:
        r = train(tmp, "bad", tmp / file, extra)
        assert r.code == 2, (extra, r)
        for needle in needles:
            assert needle in r.stderr, (extra, needle, r.stderr)
        assert "Traceback" not in r.stderr and "terminate" not in r.stderr


if __name__ == "__main__":
    h.main([test_encoded_columns_train_the_precomputed_model,
            test_normalization_leaves_encoded_features_alone,
            test_unseen_category_predicts_as_all_zeros,
            test_tensor_parallel_ranks_encode_their_share,
            test_export_carries_the_encoding,
            test_bad_input_exits_2])
