"""NumPy .npy arrays where a worker reads a file of its own: `shards.strategy: files` with one
array per worker (configs/federated_arrays.yaml), and `disttrain worker --data copy.npy` standing
for the coordinator's array. Both train the model.json bytes of the CSV (or shared-path) run of
the same values; a mix of CSV and arrays, arrays of other widths, data.labels with either, and a
copy of another shape are refused with exit 2 naming the file."""

import numpy as np

import harness as h
from test_remote import CSV_CONFIG, own_copy_run

FILES = """
version: 1
seed: 9
model: {{type: softmax_regression}}
data: {{label: y, validation: 0.1{labels}}}
shards: {{strategy: files, files: [{files}]}}
aggregation: {{mode: parameters, parameters: {{sync_every: {{epochs: 1}}}}}}
training: {{epochs: 3, batch_size: 32, optimizer: {{type: adam, lr: 0.05}}}}
output: {{dir: {out}}}
"""


def files_run(tmp, name, files, labels=""):
    cfg = h.write_config(tmp, FILES.format(files=", ".join(str(f) for f in files),
                                           out=tmp / name, labels=labels), f"{name}.yaml")
    return h.run("run", cfg, "-q"), tmp / name / "model.json"


def test_arrays_per_worker_train_as_the_csv_files(tmp):
    sites = sorted(h.source("data", "clients").glob("site_*.csv"))
    assert len(sites) == 3
    arrays = []
    for site in sites:
        arrays.append(tmp / (site.stem + ".npy"))
        np.save(arrays[-1], np.loadtxt(site, delimiter=",", skiprows=1, ndmin=2))
    r, csv_model = files_run(tmp, "csv", sites)
    assert r.code == 0, r
    r, npy_model = files_run(tmp, "npy", arrays)
    assert r.code == 0, r
    assert npy_model.read_bytes() == csv_model.read_bytes()
    # The sample config and its data: the arrays of scripts/make_clients.sh are those values.
    for site, array in zip(sites, arrays):
        assert np.array_equal(np.load(site.with_suffix(".npy")), np.load(array)), site

    # Refused, before any worker trains.
    np.save(tmp / "wide.npy", np.c_[np.load(arrays[1]), np.zeros(len(np.load(arrays[1])))])
    np.savez(tmp / "z.npz", x=np.load(arrays[2]))
    np.save(tmp / "labels.npy", np.zeros(600))
    cases = [
        ([arrays[0], sites[1], arrays[2]], "", "the first file, ", "is an .npy array"),
        ([sites[0], arrays[1]], "", "site_b.npy: the first file", "is CSV"),
        ([arrays[0], tmp / "wide.npy"], "", "wide.npy: 6 columns, where", "has 5"),
        ([arrays[0], tmp / "z.npz"], "", "z.npz: strategy files reads CSV, .npy or LIBSVM files, not an .npz", ""),
        (arrays, f", labels: {tmp / 'labels.npy'}", "data.labels: applies to data.path only", ""),
    ]
    for i, (files, labels, says, also) in enumerate(cases):
        r, model = files_run(tmp, f"bad{i}", files, labels)
        assert r.code == 2 and says in r.stderr and also in r.stderr, (says, r)
        assert not model.exists()


def test_a_worker_reads_its_own_copy_of_an_array(tmp):
    r = h.run("gen", "logistic", "--rows", "900", "--features", "5", "--seed", "5")
    assert r.code == 0, r
    (tmp / "data.csv").write_text(r.stdout)
    table = np.loadtxt(tmp / "data.csv", delimiter=",", skiprows=1)
    np.save(tmp / "data.npy", table)
    np.save(tmp / "copy.npy", table)  # another file of the same values
    np.save(tmp / "short.npy", table[:-5])
    np.save(tmp / "x.npy", table[:, :-1])
    np.save(tmp / "y.npy", table[:, -1])
    local = h.write_config(tmp, CSV_CONFIG.format(path=tmp / "data.npy", out=tmp / "local"),
                           "l.yaml")
    assert h.run("run", local, "-q").code == 0
    cfg = h.write_config(tmp, CSV_CONFIG.format(path=tmp / "data.npy", out=tmp / "own"))
    code, err, wcode, _ = own_copy_run(cfg, tmp / "copy.npy")
    assert code == 0 and wcode == 0, err
    assert (tmp / "own" / "model.json").read_bytes() == (tmp / "local" / "model.json").read_bytes()

    split = h.write_config(tmp, CSV_CONFIG.format(path=f"{tmp / 'x.npy'}, labels: {tmp / 'y.npy'}",
                                                  out=tmp / "split"), "split.yaml")
    for config, bad, words in (
            (cfg, "short.npy", "it holds 895 rows of 6 columns, the coordinator's data 900 rows of 6"),
            (split, "x.npy", "this run's labels are a separate file")):
        code, err, wcode, werr = own_copy_run(config, tmp / bad)
        assert code == 2 and words in err and "worker 2" in err, err
        assert wcode == 2 and words in werr, werr


if __name__ == "__main__":
    h.main([test_arrays_per_worker_train_as_the_csv_files, test_a_worker_reads_its_own_copy_of_an_array])
