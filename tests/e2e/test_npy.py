"""NumPy data (data.format npy / npz): an .npy (float64 or float32, the label a column or a
data.labels file) and an .npz (stored or compressed) train the same model.json bytes as a CSV of
the same values with the columns the arrays get (x0..x{k-1}, the label y); predict and eval on
them print what they print on the CSV (a pipe and a gzip file of the .npy too); bad arrays get exit 2 naming the file and what to do.
The files are written in the test with Debian's numpy."""

import gzip
import json
import subprocess

import numpy as np

import harness as h

CONFIG = """
version: 1
name: arrays
seed: 3
model: {{type: softmax_regression}}
data: {{path: {path}, validation: 0.1{extra}}}
shards: {{count: 2}}
training: {{epochs: 2, batch_size: 32, optimizer: {{type: adam, lr: 0.05}}}}
output: {{dir: {out}}}
"""


def run(tmp, name, path, extra="", env=None):
    cfg = h.write_config(tmp, CONFIG.format(path=path, out=tmp / name, extra=extra), f"{name}.yaml")
    return h.run("run", cfg, "-q", env=env)


def blobs():
    table = np.loadtxt(h.source("data", "blobs.csv"), delimiter=",", skiprows=1)
    return table[:, :-1], table[:, -1]


def write_csv(path, header, columns):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for row in zip(*columns):
            f.write(",".join(repr(float(v)) if isinstance(v, float) else str(v) for v in row) + "\n")


def trained(tmp, name, path, extra=""):
    r = run(tmp, name, path, extra)
    assert r.code == 0, (name, r)
    return (tmp / name / "model.json").read_bytes()


def test_arrays_train_as_the_csv(tmp):
    x, y = blobs()
    labels = y.astype(np.int64)
    names = [f"x{c}" for c in range(x.shape[1])]
    write_csv(tmp / "d.csv", names + ["y"], [*x.T.tolist(), labels.tolist()])
    expected = trained(tmp, "csv", tmp / "d.csv")
    np.save(tmp / "d.npy", np.column_stack([x, y]))      # float64, the label the last column
    np.save(tmp / "f.npy", x)                             # features only ...
    np.save(tmp / "y.npy", labels)                        # ... and int64 labels
    np.savez(tmp / "s.npz", x=x, y=labels)                # stored members
    np.savez_compressed(tmp / "c.npz", X=x, target=y)     # deflated; X found for x
    runs = [("npy", tmp / "d.npy", ""), ("labels", tmp / "f.npy", f", labels: {tmp / 'y.npy'}"),
            ("stored", tmp / "s.npz", ""), ("deflated", tmp / "c.npz", ", arrays: {y: target}")]
    for name, path, extra in runs:
        assert trained(tmp, name, path, extra) == expected, name
    assert "format: npz" in (tmp / "stored" / "config.resolved.yaml").read_text()
    # A pipe (stdin's copy is told by its first bytes) and a gzip file of the .npy.
    cfg = h.write_config(tmp, CONFIG.format(path='"-"', out=tmp / "pipe", extra=""), "pipe.yaml")
    r = subprocess.run([h.binary(), "run", str(cfg), "-q"], input=(tmp / "d.npy").read_bytes(),
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp / "pipe" / "model.json").read_bytes() == expected
    (tmp / "d.npy.gz").write_bytes(gzip.compress((tmp / "d.npy").read_bytes()))
    assert trained(tmp, "gz", tmp / "d.npy.gz") == expected
    # float32, the label the first column (data.label by index): the CSV of the same float32
    # values as doubles, its label first and named y.
    x32 = x.astype(np.float32)
    np.save(tmp / "f32.npy", np.column_stack([y.astype(np.float32), x32]))
    write_csv(tmp / "f32.csv", ["y"] + [f"x{c + 1}" for c in range(x.shape[1])],
              [labels.tolist(), *x32.astype(np.float64).T.tolist()])
    assert trained(tmp, "f32", tmp / "f32.npy", ", label: 0") == \
        trained(tmp, "f32csv", tmp / "f32.csv", ", label: y")
    # predict and eval: the .npy with its label column, the features alone, and an .npz.
    model = tmp / "csv" / "model.json"
    for command, path in [("predict", tmp / "d.npy"), ("predict", tmp / "f.npy"),
                          ("eval", tmp / "d.npy"), ("eval", tmp / "s.npz")]:
        a = h.run(command, model, tmp / "d.csv")
        b = h.run(command, model, path)
        assert a.code == 0 and b.code == 0 and a.stdout == b.stdout, (command, path, b)
    r = h.run("eval", model, tmp / "f.npy")  # no label column to evaluate against
    assert r.code == 2 and "no label column 'y'" in r.stderr, r


def test_bad_arrays(tmp):
    x, y = blobs()
    good = np.column_stack([x, y])
    np.save(tmp / "good.npy", good)
    raw = (tmp / "good.npy").read_bytes()
    (tmp / "cut.npy").write_bytes(raw[:-2 * 5 * 8 - 3])
    (tmp / "text.npy").write_bytes(h.source("data", "blobs.csv").read_bytes())
    (tmp / "hidden.csv").write_bytes(raw)
    np.save(tmp / "fortran.npy", np.asfortranarray(good))
    np.save(tmp / "big.npy", good.astype(">f8"))
    np.save(tmp / "short.npy", y[:-1].astype(np.int64))
    np.save(tmp / "feat.npy", x)
    nan = good.copy()
    nan[17, 2] = np.nan
    np.save(tmp / "nan.npy", nan)
    inf = good.copy()
    inf[40, 4] = -np.inf  # in the label column, after the features a block copies
    np.save(tmp / "inf.npy", inf)
    np.savez(tmp / "arch.npz", a=x, b=y)
    rows = good.shape[0]
    cases = [
        ("cut.npy", "", f"cut.npy: the header says {rows} rows of 5 float64, the file holds {rows - 3} rows"),
        ("text.npy", "", "the name says a NumPy .npy file, but the file starts like text (CSV): name it"),
        ("hidden.csv", "", "the name says text (CSV), but the file starts like a NumPy .npy file: name it"),
        ("fortran.npy", "", "Fortran (column-major) order; save it in C order"),
        ("big.npy", "", "big-endian"),
        ("feat.npy", f", labels: {tmp / 'short.npy'}", f"{rows - 1} labels, but data.path"),
        ("nan.npy", "", "nan.npy: row 17, column 2 ('x2'): missing value (NaN); fill it in the file, or set data.missing: mean or zero"),
        ("inf.npy", "", "inf.npy: row 40, column 4 ('y'): -inf is not a finite number; replace or drop it"),
        ("arch.npz", "", "arch.npz: no array 'x'; the arrays are: a, b (set data.arrays.x"),
        ("good.npy", ", format: csv", "data.format is csv, but the file looks like a NumPy .npy file"),
        ("good.npy", ", label: x9", "data.label 'x9' is not a column of the array"),
    ]
    for i, (name, extra, says) in enumerate(cases):
        r = run(tmp, f"bad{i}", tmp / name, extra)
        assert r.code == 2, (name, extra, r)
        assert says in r.stderr, (name, says, r.stderr)
        assert not (tmp / f"bad{i}" / "model.json").exists()
    # strategy files reads CSV or .npy files, not an .npz (test_npy_files.py has the .npy ones).
    cfg = h.write_config(tmp, "version: 1\nmodel: {type: softmax_regression}\n"
                         f"shards: {{count: 2, strategy: files, files: [{tmp / 'good.npy'}, {tmp / 'arch.npz'}]}}\n"
                         f"output: {{dir: {tmp / 'files'}}}\n", "files.yaml")
    r = h.run("run", cfg, "-q")
    assert r.code == 2 and "arch.npz: strategy files reads CSV, .npy or LIBSVM files, not an .npz" in r.stderr, r
    # Forced: an .npy under another name trains when data.format says so.
    r = run(tmp, "forced", tmp / "hidden.csv", ", format: npy")
    assert r.code == 0, r


def test_validate_reads_a_large_array_in_pieces(tmp):
    # 25,000 rows of 201 float64 (40 MB): validate reads a shard 16 MiB at a time (about 10,000
    # rows here), around the held-out rows. Every row is counted once: the labels of the shards
    # and of the validation split add up to the array's.
    rng = np.random.default_rng(2)
    x = rng.integers(0, 5, (25000, 200)).astype(np.float64)
    y = (rng.random(25000) < 0.3).astype(np.float64)
    np.save(tmp / "wide.npy", np.column_stack([x, y]))
    cfg = h.write_config(tmp, "version: 1\nmodel: {type: logistic_regression}\n"
                         f"data: {{path: {tmp / 'wide.npy'}, validation: 0.1}}\n"
                         "shards: {count: 2}\n", "wide.yaml")
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    report = json.loads(r.stdout)
    shards = report["shards"]
    assert sum(s["rows"] for s in shards) + report["validation_rows"] == 25000, report
    ones = sum(s["labels"].get("1", 0) for s in shards) + report["validation_labels"].get("1", 0)
    assert ones == int(y.sum()), (ones, int(y.sum()))


if __name__ == "__main__":
    h.main([test_arrays_train_as_the_csv, test_bad_arrays,
            test_validate_reads_a_large_array_in_pieces])
