"""LIBSVM files where a worker reads a file of its own: `shards.strategy: files` with one LIBSVM
file per worker, whose largest indices differ (every worker gets the widest, the missing features
read as zeros), and `disttrain worker --data copy.svm` standing for the coordinator's LIBSVM file.
Both train the model.json bytes of the CSV (or shared-path) run of the same values; a mix of
LIBSVM and CSV, a copy with other rows, and a copy with an index past the coordinator's features
are refused with exit 2 naming the file."""

import harness as h
from test_libsvm import sparse, table, write_csv, write_svm
from test_remote import CSV_CONFIG, own_copy_run

FILES = """
version: 1
seed: 9
model: {{type: logistic_regression}}
data: {{validation: 0.1}}
shards: {{strategy: files, files: [{files}]}}
aggregation: {{mode: parameters, parameters: {{sync_every: {{epochs: 1}}}}}}
training: {{epochs: 3, batch_size: 32, optimizer: {{type: adam, lr: 0.05}}}}
output: {{dir: {out}}}
"""


def files_run(tmp, name, files):
    cfg = h.write_config(tmp, FILES.format(files=", ".join(str(f) for f in files),
                                           out=tmp / name), f"{name}.yaml")
    return h.run("run", cfg, "-q"), tmp / name / "model.json"


def test_libsvm_files_per_worker_train_as_the_csv_files(tmp):
    rows = sparse(table("logistic.csv"), lambda y: y)
    half = len(rows) // 2
    # The second client never uses the last feature: its file alone is one feature narrower.
    last = len(rows[0][0]) - 1
    second = [(x[:last] + ["0"], y) for x, y in rows[half:]]
    parts = [rows[:half], second]
    csvs = [tmp / "a.csv", tmp / "b.csv"]
    svms = [tmp / "a.svm", tmp / "b.svm"]
    for part, csv, svm in zip(parts, csvs, svms):
        write_csv(csv, part)
        write_svm(svm, part, lambda y: y)
    assert f"{last + 1}:" not in svms[1].read_text()
    r, csv_model = files_run(tmp, "csv", csvs)
    assert r.code == 0, r
    r, svm_model = files_run(tmp, "svm", svms)
    assert r.code == 0, r
    assert svm_model.read_bytes() == csv_model.read_bytes()

    r, model = files_run(tmp, "mixed", [svms[0], csvs[1]])
    assert r.code == 2 and "b.csv: the first file, " in r.stderr, r
    assert "is LIBSVM text; give every worker the same kind of file" in r.stderr, r
    assert not model.exists()


def test_worker_reads_its_own_libsvm_copy(tmp):
    rows = sparse(table("logistic.csv"), lambda y: y)
    write_svm(tmp / "data.svm", rows, lambda y: y)
    # The same rows without the comments and blank line: other byte offsets, same data.
    (tmp / "copy.svm").write_text("".join(
        line.split("#")[0].rstrip() + "\n" for line in (tmp / "data.svm").read_text().splitlines()
        if line.split("#")[0].strip()))
    lines = (tmp / "copy.svm").read_text().splitlines()
    (tmp / "short.svm").write_text("\n".join(lines[:-5]) + "\n")
    width = len(rows[0][0])
    (tmp / "wide.svm").write_text("\n".join(lines[:-1] + [lines[-1] + f" {width + 4}:1"]) + "\n")
    local = h.write_config(tmp, CSV_CONFIG.format(path=tmp / "data.svm", out=tmp / "local"),
                           "l.yaml")
    r = h.run("run", local)
    assert r.code == 0, r
    cfg = h.write_config(tmp, CSV_CONFIG.format(path=tmp / "data.svm", out=tmp / "own"))
    code, err, wcode, _ = own_copy_run(cfg, tmp / "copy.svm")
    assert code == 0 and wcode == 0, err
    assert (tmp / "own" / "model.json").read_bytes() == (tmp / "local" / "model.json").read_bytes()

    for bad, words in (("short.svm", f"it has {len(rows) - 5} rows, the coordinator's data has"),
                       ("wide.svm", f"index {width + 4} is past the coordinator's last feature, "
                                    f"f{width}")):
        code, err, wcode, werr = own_copy_run(cfg, tmp / bad)
        assert code == 2 and words in err and "worker 2" in err, err
        assert wcode == 2 and words in werr, werr


if __name__ == "__main__":
    h.main([test_libsvm_files_per_worker_train_as_the_csv_files, test_worker_reads_its_own_libsvm_copy])
