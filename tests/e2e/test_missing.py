"""Missing values (data.missing: error | mean | zero), end to end with real worker processes:
`zero` trains the bytes of the same file with 0s; `mean` fills each column with the mean of its
present values over all training shards (the same model on reruns and over ipc and tcp; the
fill and the normalization as numpy computes them; an .npy with NaN trains the bytes of the CSV
with empty cells); predict and eval apply the stored fill values (the predictions of the file
with the fill written in); onnxruntime runs the exported fill; and every bad input exits 2
naming the file, the line or row, and what to do."""

import json
import math
import random

import numpy as np

import harness as h

CONFIG = """
version: 1
name: missing
seed: 5
model: {{type: linear_regression}}
data: {{path: {path}, label: y{extra}}}
shards: {{count: {workers}}}
transport: {{type: {transport}}}
training: {{epochs: 3, batch_size: 16, optimizer: {{type: sgd, lr: 0.05}}}}
output: {{dir: {out}}}
"""

ROWS = 150
MARKERS = ["", "NA", "?", "nan", "NULL", " N/A ", '""']


def table():
    """Rows of (features, label) with about one feature in six missing (None)."""
    rng = random.Random(11)
    out = []
    for i in range(ROWS):
        x = [round(rng.uniform(-3, 3), 4) for _ in range(4)]
        y = round(2 * x[0] - x[1] + 0.5 * x[2] + 3 * x[3] + rng.gauss(0, 0.1), 4)
        x = [None if rng.random() < 0.17 else v for v in x]
        out.append((x, y))
    return out


def write_csv(path, rows, hole):
    """hole(i, j) is the text of the missing cell at row i, feature j."""
    lines = ["a,b,c,d,y"]
    for i, (x, y) in enumerate(rows):
        lines.append(",".join(hole(i, j) if v is None else repr(v) for j, v in enumerate(x))
                     + "," + repr(y))
    path.write_text("\n".join(lines) + "\n")


def with_markers(i, j):
    return MARKERS[(i + j) % len(MARKERS)]


def train(tmp, name, path, extra="", workers=2, transport="ipc"):
    cfg = h.write_config(tmp, CONFIG.format(path=path, out=tmp / name, extra=extra,
                                            workers=workers, transport=transport), f"{name}.yaml")
    return h.run("run", cfg, "-q"), tmp / name / "model.json"


def test_zero_trains_the_file_with_zeros(tmp):
    rows = table()
    write_csv(tmp / "holes.csv", rows, with_markers)
    write_csv(tmp / "zeros.csv", rows, lambda i, j: "0")
    r, holes = train(tmp, "holes", tmp / "holes.csv", ", missing: zero")
    assert r.code == 0, r
    r, zeros = train(tmp, "zeros", tmp / "zeros.csv", ", missing: zero")
    assert r.code == 0, r
    assert holes.read_bytes() == zeros.read_bytes()
    saved = json.loads(holes.read_text())
    assert saved["missing"] == {"policy": "zero", "fill": [0, 0, 0, 0]}
    # Under the default policy the same file with 0s trains the same parameters (model.json
    # then has no "missing" member).
    r, plain = train(tmp, "plain", tmp / "zeros.csv")
    assert r.code == 0, r
    plain_saved = json.loads(plain.read_text())
    assert "missing" not in plain_saved
    assert plain_saved["parameters"] == saved["parameters"]
    assert plain_saved["normalization"] == saved["normalization"]


def test_mean_fills_with_the_present_values_mean(tmp):
    rows = table()
    write_csv(tmp / "holes.csv", rows, with_markers)
    r, model = train(tmp, "mean", tmp / "holes.csv", ", missing: mean")
    assert r.code == 0, r
    saved = json.loads(model.read_text())
    x = np.array([[math.nan if v is None else v for v in xs] for xs, _ in rows])
    assert np.isnan(x).sum() > 50  # the data does have holes, in every column
    assert all(np.isnan(x[:, j]).any() for j in range(4))
    fill = np.array(saved["missing"]["fill"])
    assert saved["missing"]["policy"] == "mean"
    assert np.allclose(fill, np.nanmean(x, axis=0), rtol=1e-13, atol=0)
    # Normalization statistics over the present values: a filled cell normalizes to 0.
    assert np.allclose(saved["normalization"]["shift"], np.nanmean(x, axis=0), rtol=1e-13, atol=0)
    assert np.allclose(saved["normalization"]["scale"], np.nanstd(x, axis=0), rtol=1e-12, atol=0)
    assert saved["normalization"]["shift"] == saved["missing"]["fill"]

    # The same bytes on a rerun and over tcp; 3 workers merge to the same fill (to rounding).
    r, again = train(tmp, "again", tmp / "holes.csv", ", missing: mean")
    assert r.code == 0 and again.read_bytes() == model.read_bytes(), r
    r, tcp = train(tmp, "tcp", tmp / "holes.csv", ", missing: mean", transport="tcp")
    assert r.code == 0 and tcp.read_bytes() == model.read_bytes(), r
    r, three = train(tmp, "three", tmp / "holes.csv", ", missing: mean", workers=3)
    assert r.code == 0, r
    assert np.allclose(json.loads(three.read_text())["missing"]["fill"], fill, rtol=1e-14, atol=0)

    # predict and eval fill as training did: the predictions of the file with the fill values
    # written into its holes (repr: the same doubles), and the same metrics.
    write_csv(tmp / "filled.csv", rows, lambda i, j: repr(float(fill[j])))
    for command in ("predict", "eval"):
        a = h.run(command, model, tmp / "holes.csv")
        b = h.run(command, model, tmp / "filled.csv")
        assert a.code == 0 and b.code == 0, (a, b)
        assert a.stdout == b.stdout, command
    # The validation split and `validate` take the policy too.
    r, held = train(tmp, "held", tmp / "holes.csv", ", missing: mean, validation: 0.2")
    assert r.code == 0, r
    cfg = tmp / "mean.yaml"
    r = h.run("validate", cfg)
    assert r.code == 0, r


def test_npy_nan_trains_the_csv_with_empty_cells(tmp):
    rows = table()
    write_csv(tmp / "holes.csv", rows, lambda i, j: "")
    table_values = np.array([[math.nan if v is None else v for v in xs] + [y] for xs, y in rows])
    np.save(tmp / "holes.npy", table_values)
    # The array's columns are x0..x3 and y: rename the CSV's header to match.
    text = (tmp / "holes.csv").read_text().replace("a,b,c,d,y", "x0,x1,x2,x3,y", 1)
    (tmp / "named.csv").write_text(text)
    r, from_named = train(tmp, "named", tmp / "named.csv", ", missing: mean")
    assert r.code == 0, r
    r, from_npy = train(tmp, "npy", tmp / "holes.npy", ", missing: mean")
    assert r.code == 0, r
    assert from_npy.read_bytes() == from_named.read_bytes()
    # A NaN label is never filled.
    bad = table_values.copy()
    bad[7, 4] = math.nan
    np.save(tmp / "nan_label.npy", bad)
    r, _ = train(tmp, "nan_label", tmp / "nan_label.npy", ", missing: mean")
    assert r.code == 2 and "nan_label.npy: row 7, column 4 ('y'): nan is not a finite number" in r.stderr, r
    # Under the default policy a NaN feature is refused, pointing at data.missing.
    r, _ = train(tmp, "npy_error", tmp / "holes.npy")
    assert r.code == 2, r
    assert "holes.npy: row " in r.stderr and "missing value (NaN); fill it in the file, or set data.missing: mean or zero" in r.stderr, r


def test_bad_input_exits_2_with_where_and_what_to_do(tmp):
    rows = table()
    write_csv(tmp / "holes.csv", rows, lambda i, j: "NA")
    first = next(i for i, (x, _) in enumerate(rows) if any(v is None for v in x))
    col = next(j for j, v in enumerate(rows[first][0]) if v is None)
    line = first + 2
    column = len(",".join(repr(v) if v is not None else "NA" for v in rows[first][0][:col])) + (2 if col else 1)
    # The default (error): the first hole, by file:line:column, and the way out (one worker:
    # with more, whichever reaches a hole first reports it).
    r, model = train(tmp, "default", tmp / "holes.csv", workers=1)
    assert r.code == 2 and not model.exists(), r
    assert (f"holes.csv:{line}:{column}: column '{'abcd'[col]}': missing value ('NA'); fill it in "
            "the file, or set data.missing: mean or zero to fill missing values") in r.stderr, r
    r = h.run("validate", tmp / "default.yaml")
    assert r.code == 2 and "missing value ('NA')" in r.stderr, r

    # A missing label, an infinity, text: errors under every policy.
    label = [(x, y) for x, y in rows]
    write_csv(tmp / "label.csv", label, lambda i, j: "")
    text = (tmp / "label.csv").read_text().splitlines()
    text[3] = text[3].rsplit(",", 1)[0] + ",NA"
    (tmp / "label.csv").write_text("\n".join(text) + "\n")
    r, _ = train(tmp, "label", tmp / "label.csv", ", missing: mean")
    assert r.code == 2 and ":4:" in r.stderr and "label 'y': missing value ('NA'); a row needs its label" in r.stderr, r
    text = (tmp / "holes.csv").read_text().replace("NA", "inf", 1)
    (tmp / "inf.csv").write_text(text)
    r, _ = train(tmp, "inf", tmp / "inf.csv", ", missing: zero")
    assert r.code == 2 and "'inf' is not a finite number" in r.stderr, r

    # mean with a column that has no present value: named, at validate and at run.
    lines = ["a,b,y"] + [f"{i},,{i * 2}" for i in range(20)]
    (tmp / "empty_col.csv").write_text("\n".join(lines) + "\n")
    r, _ = train(tmp, "empty_col", tmp / "empty_col.csv", ", missing: mean")
    assert r.code == 2, r
    says = ("column 'b': every training row's value is missing, so data.missing: mean has no mean "
            "to fill it with; drop the column (data.exclude: [b]) or use data.missing: zero")
    assert says in r.stderr, r
    r = h.run("validate", tmp / "empty_col.yaml")
    assert r.code == 2 and says in r.stderr, r
    r, zero_model = train(tmp, "empty_zero", tmp / "empty_col.csv", ", missing: zero")
    assert r.code == 0, r
    # A model with fill values still refuses a missing label (eval), without blaming itself.
    r = h.run("eval", zero_model, tmp / "label.csv")
    assert r.code == 2 and "label 'y': missing value ('NA'); a row needs its label" in r.stderr, r
    assert "the model was trained with" not in r.stderr, r

    # A bad policy name: exit 2 with the choices.
    r, _ = train(tmp, "typo", tmp / "holes.csv", ", missing: average")
    assert r.code == 2 and "data.missing" in r.stderr and "mean" in r.stderr, r

    # A model trained under error refuses holes at predict time, saying why.
    write_csv(tmp / "full.csv", rows, lambda i, j: "1.5")
    r, model = train(tmp, "full", tmp / "full.csv")
    assert r.code == 0, r
    r = h.run("predict", model, tmp / "holes.csv")
    assert r.code == 2, r
    assert ("the model was trained with data.missing: error, so it has no values to fill "
            "missing cells with") in r.stderr and f"holes.csv:{line}:{column}" in r.stderr, r


def test_onnx_fills_nan_inputs(tmp):
    import test_export as ex
    why = ex.ort_missing()
    if why:
        print(f"skip test_onnx_fills_nan_inputs: {why}")
        return
    rows = table()
    write_csv(tmp / "holes.csv", rows, lambda i, j: "")
    r, model = train(tmp, "mean", tmp / "holes.csv", ", missing: mean")
    assert r.code == 0, r
    p = h.run("predict", model, tmp / "holes.csv")
    assert p.code == 0, p
    expected = np.array([float(v) for v in p.stdout.split()[1:]])
    inputs = [[v for v in xs] for xs, _ in rows]  # None: JSON null, a NaN for the runtime
    for dtype, tol in (("float64", 1e-12), ("float32", 1e-5)):
        out = tmp / f"m-{dtype}.onnx"
        r = h.run("export", model, "-o", out, "--dtype", dtype)
        assert r.code == 0, r
        got = ex.run_ort(tmp, out, inputs, dtype)["outputs"]["prediction"]["data"]
        scale = max(1.0, float(np.max(np.abs(expected))))
        worst = float(np.max(np.abs(np.array(got) - expected))) / scale
        assert worst <= tol, (dtype, worst)
    r = h.run("export", model, "--format", "npz")
    assert r.code == 0, r
    z = np.load(model.with_suffix(".npz"))
    assert list(z["missing.fill"]) == json.loads(model.read_text())["missing"]["fill"]


if __name__ == "__main__":
    h.main([test_zero_trains_the_file_with_zeros, test_mean_fills_with_the_present_values_mean,
            test_npy_nan_trains_the_csv_with_empty_cells, test_bad_input_exits_2_with_where_and_what_to_do,
            test_onnx_fills_nan_inputs])
