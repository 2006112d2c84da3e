"""LIBSVM / svmlight data (data.format libsvm): a LIBSVM file (zeros left out, -1/+1 labels,
comments, qid, 1-based or 0-based indices) trains the same model.json bytes as the CSV of the same
values with the columns the file gets (f1..fW, the label y), with 2 workers each reading its own
rows; so do a pipe, a gzip file and a name that says nothing (.txt). predict and eval on it print
what they print on the CSV, skipping indices past the model's width. Bad files get exit 2 naming
file:line:column and what to do. The files are written in the test."""

import gzip
import subprocess

import harness as h

CONFIG = """
version: 1
name: libsvm
seed: 3
model: {{type: {model}}}
data: {{path: {path}, validation: 0.1{extra}}}
shards: {{count: 2}}
training: {{epochs: 2, batch_size: 32, optimizer: {{type: adam, lr: 0.05}}}}
output: {{dir: {out}}}
"""


def run(tmp, name, path, extra="", model="logistic_regression"):
    cfg = h.write_config(tmp, CONFIG.format(path=path, out=tmp / name, extra=extra, model=model),
                         f"{name}.yaml")
    return h.run("run", cfg, "-q")


def trained(tmp, name, path, extra="", model="logistic_regression"):
    r = run(tmp, name, path, extra, model)
    assert r.code == 0, (name, r)
    return (tmp / name / "model.json").read_bytes()


def table(name):
    """The rows of data/NAME.csv: (features as text, label as text)."""
    lines = h.source("data", name).read_text().splitlines()[1:]
    return [(cells[:-1], cells[-1]) for cells in (line.split(",") for line in lines)]


def sparse(rows, labels, base=1, every=3):
    """Every `every`-th cell of a row set to 0 (so the files have real zeros to leave out)."""
    out = []
    for r, (x, y) in enumerate(rows):
        x = ["0" if (r + c) % every == 0 else v for c, v in enumerate(x)]
        out.append((x, labels(y)))
    return out


def write_csv(path, rows, base=1):
    width = len(rows[0][0])
    with open(path, "w") as f:
        f.write(",".join(f"f{base + c}" for c in range(width)) + ",y\n")
        for x, y in rows:
            f.write(",".join(x) + f",{y}\n")


def write_svm(path, rows, label_text, base=1, extra=""):
    with open(path, "w") as f:
        f.write("# written by test_libsvm.py\n")
        for r, (x, y) in enumerate(rows):
            pairs = " ".join(f"{base + c}:{v}" for c, v in enumerate(x) if v != "0")
            qid = f" qid:{r % 3}" if r % 5 == 0 else ""
            note = "  # row comment" if r % 7 == 0 else ""
            f.write(f"{label_text(y)}{qid} {pairs}{extra}{note}\n")
            if r == 10:
                f.write("\n")  # a blank line is not a row


def test_libsvm_trains_as_the_csv(tmp):
    rows = sparse(table("logistic.csv"), lambda y: y)
    write_csv(tmp / "d.csv", rows)
    expected = trained(tmp, "csv", tmp / "d.csv")
    signed = lambda y: "+1" if y == "1" else "-1"  # svmlight's labels
    write_svm(tmp / "d.svm", rows, signed)
    write_svm(tmp / "d.txt", rows, lambda y: y)  # 0/1 labels, a name that says nothing
    assert trained(tmp, "svm", tmp / "d.svm") == expected
    assert trained(tmp, "txt", tmp / "d.txt") == expected
    assert "format: libsvm" in (tmp / "txt" / "config.resolved.yaml").read_text()
    # A pipe (stdin's copy is told by its first line) and a gzip file.
    cfg = h.write_config(tmp, CONFIG.format(path='"-"', out=tmp / "pipe", extra="",
                                            model="logistic_regression"), "pipe.yaml")
    r = subprocess.run([h.binary(), "run", str(cfg), "-q"], input=(tmp / "d.svm").read_bytes(),
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp / "pipe" / "model.json").read_bytes() == expected
    (tmp / "d.svm.gz").write_bytes(gzip.compress((tmp / "d.svm").read_bytes()))
    assert trained(tmp, "gz", tmp / "d.svm.gz") == expected
    # 0-based: the CSV's columns are f0..f4; auto finds index 0.
    write_csv(tmp / "z.csv", rows, base=0)
    write_svm(tmp / "z.svm", rows, signed, base=0)
    assert trained(tmp, "zsvm", tmp / "z.svm") == trained(tmp, "zcsv", tmp / "z.csv")
    # predict and eval: as on the CSV; an index past the model's width (9) is skipped.
    write_svm(tmp / "wide.svm", rows, signed, extra=" 9:123.5")
    model = tmp / "csv" / "model.json"
    for command in ("predict", "eval"):
        a = h.run(command, model, tmp / "d.csv")
        assert a.code == 0, a
        for path in (tmp / "d.svm", tmp / "wide.svm"):
            b = h.run(command, model, path)
            assert b.code == 0 and a.stdout == b.stdout, (command, path, b)
    r = subprocess.run([h.binary(), "predict", str(model), "-"], input=(tmp / "d.svm").read_bytes(),
                       capture_output=True, timeout=120)
    assert r.returncode == 0 and r.stdout.decode() == h.run("predict", model, tmp / "d.csv").stdout
    # A model trained on other columns cannot read a LIBSVM file.
    r = h.run("predict", h.source("data", "models", "blobs_softmax.json"), tmp / "d.svm")
    assert r.code == 2 and "is not a LIBSVM column" in r.stderr, r


def test_classes_and_feature_count(tmp):
    rows = table("blobs.csv")  # class indices 0, 1, 2
    write_csv(tmp / "b.csv", rows)
    write_svm(tmp / "b.svm", rows, lambda y: y)
    assert trained(tmp, "bsvm", tmp / "b.svm", model="softmax_regression") == \
        trained(tmp, "bcsv", tmp / "b.csv", model="softmax_regression")
    # data.feature_count: a wider model (f5, f6 all zero: constant columns, warned about).
    r = run(tmp, "wider", tmp / "b.svm", ", feature_count: 6", model="softmax_regression")
    assert r.code == 0, r
    assert '"f6"' in (tmp / "wider" / "model.json").read_text()
    # data.features picks by index.
    r = run(tmp, "picked", tmp / "b.svm", ", features: [f1, f3]", model="softmax_regression")
    assert r.code == 0, r
    text = (tmp / "picked" / "model.json").read_text()
    assert '"f1"' in text and '"f3"' in text and '"f2"' not in text


def test_bad_libsvm(tmp):
    good = "1 1:0.5 3:2\n0 2:1\n1 1:1 2:1\n0 3:1\n" * 10
    files = {
        "unsorted.svm": good + "1 3:1 2:1\n",
        "value.svm": good + "1 2:abc\n",
        "zero.svm": "1 0:1 2:1\n" + good,
        "label.svm": good + "2 1:1\n",
        "multi.svm": good + "1,2 1:1\n",
        "hidden.csv": good,
        "table.svm": "a,b,y\n1,2,1\n",
        "table.csv": "a,b,y\n1,2,1\n",
        "good.svm": good,
        "huge.svm": "1 1:1 2147483648:1\n" + good,  # its first line is still LIBSVM, not CSV
    }
    for name, text in files.items():
        (tmp / name).write_text(text)
    cases = [
        ("unsorted.svm", "", "unsorted.svm:41:7: index 2 comes after index 3; indices must increase"),
        ("value.svm", "", "value.svm:41:5: the value of index 2, 'abc', is not a finite number"),
        ("zero.svm", ", index_base: 1", "zero.svm:1: index 0, but data.index_base is 1"),
        ("label.svm", "", "label.svm:41:1: label 2 is not 0 or 1 (nor -1 or +1"),
        ("multi.svm", "", "multi.svm:41:1: label '1,2' is a list (multi-label LIBSVM)"),
        ("good.svm", ", feature_count: 2", "good.svm:1: index 3 is past data.feature_count 2"),
        ("huge.svm", "", "huge.svm:1:7: index 2147483648 is too large (at most 2147483647)"),
        ("good.svm", ", max_dense_gib: 0.000000001, sparse: false",
         "more than data.max_dense_gib (1e-09); set data.sparse: auto (or true) to keep the rows "
         "sparse, raise"),
        ("good.svm", ", label: target", "data.label 'target': a LIBSVM file's label is the first"),
        ("hidden.csv", "", "the name says text (CSV), but the file starts like LIBSVM sparse text "
                           "(label index:value ...): name it"),
        ("hidden.csv", ", format: csv", "data.format is csv, but the file looks like LIBSVM"),
        ("table.svm", "", "the name says LIBSVM sparse text (label index:value ...), but the file "
                          "starts like text (CSV)"),
        ("table.csv", ", format: libsvm", "data.format is libsvm, but the file looks like text (CSV); "
                                          "set data.format: csv"),
        ("good.svm", ", categorical: {f1: one_hot}",
         "good.svm: data.categorical applies to CSV data; a LIBSVM file holds only numbers"),
        ("good.svm", ", missing: mean", "good.svm: data.missing applies to CSV and NumPy data"),
    ]
    for i, (name, extra, says) in enumerate(cases):
        r = run(tmp, f"bad{i}", tmp / name, extra)
        assert r.code == 2, (name, extra, r)
        assert says in r.stderr, (name, says, r.stderr)
        assert not (tmp / f"bad{i}" / "model.json").exists()
    # Forced: a LIBSVM file under a CSV name trains when data.format says so.
    assert run(tmp, "forced", tmp / "hidden.csv", ", format: libsvm").code == 0
    # data.sparse: auto reads it sparse past data.max_dense_gib, and trains it so.
    assert run(tmp, "auto_sparse", tmp / "good.svm", ", max_dense_gib: 0.000000001").code == 0


if __name__ == "__main__":
    h.main([test_libsvm_trains_as_the_csv, test_classes_and_feature_count, test_bad_libsvm])
