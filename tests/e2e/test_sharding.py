"""Non-IID sharding (by_label, dirichlet, files): validate shows each worker's label histogram,
and training runs end to end with real worker processes over ipc and tcp."""

import json

import numpy as np

import harness as h


def params(run_dir):
    model = json.loads((run_dir / "model.json").read_text())
    return np.concatenate([np.ravel(np.asarray(p["data"], dtype=float)) for p in model["parameters"]])


TRAINING = "{epochs: 4, batch_size: 60, optimizer: {type: adam, lr: 0.05}}"


def config(tmp, shards, data=None, training=TRAINING, name="config.yaml"):
    data = data if data is not None else f"{{path: {h.source('data', 'blobs.csv')}}}"
    return h.write_config(tmp, f"""
version: 1
name: shards
seed: 4
model: {{type: softmax_regression}}
data: {data}
shards: {shards}
transport: {{type: ipc}}
training: {training}
output: {{dir: {tmp}/run}}
""", name)


def histogram(plan):
    """rows[rank][class] from validate --json."""
    return np.array([[s["labels"][c] for c in plan["classes"]] for s in plan["shards"]])


def blobs_labels():
    table = np.loadtxt(h.source("data", "blobs.csv"), delimiter=",", skiprows=1)
    return table[:, -1].astype(int)


def test_by_label_one_class_per_worker(tmp):
    cfg = config(tmp, "{count: 3, strategy: by_label, labels_per_worker: 1}")
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    plan = r.json()
    counts = histogram(plan)
    # Each worker holds one class, all of it; together the three classes.
    assert [int(np.count_nonzero(row)) for row in counts] == [1, 1, 1], counts
    assert sorted(int(np.argmax(row)) for row in counts) == [0, 1, 2], counts
    assert sorted(counts.sum(axis=1)) == sorted(np.bincount(blobs_labels())), counts
    assert plan["warnings"] == []
    # The human output has the same table, classes as columns.
    r = h.run("validate", cfg)
    assert r.code == 0, r
    assert "labels:     rows per class and worker" in r.stdout, r.stdout
    table = r.stdout.split("labels:")[1].splitlines()
    assert table[1].split() == ["rank", "0", "1", "2"], table
    for rank in range(3):
        assert table[2 + rank].split() == [str(rank)] + [str(v) for v in counts[rank]], table
    # Training runs with 3 real worker processes; each reports the rows of its class.
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    summary = r.json()
    assert [w["rows"] for w in summary["worker_stats"]] == [int(v) for v in counts.sum(axis=1)]
    assert summary["final_metrics"]["accuracy"] >= 0.9, summary


def test_by_label_two_classes_over_tcp_with_validation(tmp):
    cfg = config(tmp, "{count: 3, strategy: by_label, labels_per_worker: 2}",
                 data=f"{{path: {h.source('data', 'blobs.csv')}, validation: 0.2}}")
    r = h.run("validate", cfg, "--json", "--set", "transport.type=tcp")
    assert r.code == 0, r
    plan = r.json()
    counts = histogram(plan)
    assert [int(np.count_nonzero(row)) for row in counts] == [2, 2, 2], counts
    assert counts.sum() == plan["train_rows"] == 1200
    assert sum(plan["validation_labels"].values()) == plan["validation_rows"] == 300
    r = h.run("run", cfg, "--json", "--set", "transport.type=tcp")
    assert r.code == 0, r
    assert r.json()["validation"]["accuracy"] >= 0.9, r.json()


def test_by_label_impossible_split_exits_2(tmp):
    cfg = config(tmp, "{count: 2, strategy: by_label, labels_per_worker: 4}")
    r = h.run("validate", cfg)
    assert r.code == 2, r
    assert "shards.labels_per_worker is 4 but the data has only 3 classes ('0', '1', '2'); use at " \
           "most 3" in r.stderr, r.stderr
    r = h.run("run", cfg)
    assert r.code == 2, r
    assert not (tmp / "run").exists()


def test_dirichlet_skew_follows_alpha(tmp):
    def top_share(alpha, seed=4):
        r = h.run("validate", cfg, "--json", "--set", f"shards.alpha={alpha}", "--set", f"seed={seed}")
        assert r.code == 0, r
        counts = histogram(r.json())
        assert counts.sum() == 1500
        return float(np.mean(counts.max(axis=0) / counts.sum(axis=0))), counts

    cfg = config(tmp, "{count: 4, strategy: dirichlet, alpha: 0.5}")
    skewed, a = top_share(0.05)
    even, _ = top_share(1000)
    # An even split puts 1/4 of each class on its largest holder.
    assert skewed > 0.7, a
    assert even < 0.3, even
    # Seeded: the same plan again, another one for another seed.
    assert np.array_equal(top_share(0.05)[1], a)
    assert not np.array_equal(top_share(0.05, seed=5)[1], a)

    out1, out2 = tmp / "d1", tmp / "d2"
    for out in (out1, out2):
        r = h.run("run", cfg, "--json", "--set", f"output.dir={out}")
        assert r.code == 0, r
        assert r.json()["final_metrics"]["accuracy"] >= 0.9, r.json()
    assert (out1 / "model.json").read_bytes() == (out2 / "model.json").read_bytes()


def test_dirichlet_empty_shard_warns_and_trains(tmp):
    # Tiny alpha over 6 workers and 3 classes: at most 3 workers get rows (each class lands
    # almost whole on one worker), so some workers have none.
    cfg = config(tmp, "{count: 6, strategy: dirichlet, alpha: 0.001}")
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    plan = r.json()
    empty = [s["rank"] for s in plan["shards"] if s["rows"] == 0]
    assert empty, plan["shards"]
    assert len(plan["warnings"]) == len(empty)
    assert plan["warnings"][0].startswith(f"shards: worker {empty[0]} has no training rows "
                                          "(dirichlet split)"), plan["warnings"]
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    summary = r.json()
    assert [w["rows"] for w in summary["worker_stats"]] == [s["rows"] for s in plan["shards"]]
    assert summary["warnings"][:len(empty)] == plan["warnings"]
    assert summary["final_metrics"]["accuracy"] >= 0.9, summary


def split_blobs(tmp, sizes, header=None):
    """Writes blobs.csv's rows as consecutive files of the given sizes; returns their paths."""
    lines = h.source("data", "blobs.csv").read_text().splitlines()
    paths, start = [], 1
    for k, n in enumerate(sizes):
        path = tmp / f"client{k}.csv"
        head = header[k] if header and header[k] else lines[0]
        path.write_text("\n".join([head] + lines[start:start + n]) + "\n")
        paths.append(path)
        start += n
    return paths


def test_files_equal_the_contiguous_split(tmp):
    # With no validation split and no shuffling, worker r of a contiguous plan trains on exactly
    # the rows of client file r: the models must be the same bits.
    common = "{epochs: 3, batch_size: 75, shuffle: false, optimizer: {type: adam, lr: 0.05}}"
    contiguous = config(tmp, "{count: 3, strategy: contiguous}", training=common, name="c.yaml")
    r = h.run("run", contiguous, "--set", f"output.dir={tmp}/contiguous")
    assert r.code == 0, r
    files = split_blobs(tmp, [500, 500, 500])
    listed = ", ".join(str(p) for p in files)
    federated = config(tmp, f"{{count: 3, strategy: files, files: [{listed}]}}", data="{label: y}",
                       training=common, name="f.yaml")
    r = h.run("validate", federated, "--json")
    assert r.code == 0, r
    plan = r.json()
    assert [s["file"] for s in plan["shards"]] == [str(p) for p in files]
    assert [s["rows"] for s in plan["shards"]] == [500, 500, 500]
    r = h.run("run", federated, "--set", f"output.dir={tmp}/files")
    assert r.code == 0, r
    a, b = params(tmp / "contiguous"), params(tmp / "files")
    assert np.array_equal(a, b), np.max(np.abs(a - b))
    # Uneven files are not the contiguous split any more: the check above can fail.
    (tmp / "u").mkdir()
    uneven = split_blobs(tmp / "u", [700, 500, 300])
    r = h.run("run", federated, "--set", f"output.dir={tmp}/uneven",
              "--set", f"shards.files=[{', '.join(str(p) for p in uneven)}]")
    assert r.code == 0, r
    assert not np.array_equal(params(tmp / "uneven"), a)


def test_files_with_validation_hold_out_from_each_file(tmp):
    files = split_blobs(tmp, [700, 500, 300])
    listed = ", ".join(str(p) for p in files)
    cfg = config(tmp, f"{{count: 3, strategy: files, files: [{listed}]}}", data="{validation: 0.1}")
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    plan = r.json()
    assert [s["rows"] for s in plan["shards"]] == [630, 450, 270]
    assert plan["validation_rows"] == 150 and plan["rows"] == 1500
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    summary = r.json()
    assert [w["rows"] for w in summary["worker_stats"]] == [630, 450, 270]
    assert summary["validation"]["accuracy"] >= 0.9, summary


def test_files_header_mismatch_exits_2_naming_the_file(tmp):
    files = split_blobs(tmp, [500, 500, 500], header=[None, None, "x0,x1,x2,z3,y"])
    listed = ", ".join(str(p) for p in files)
    cfg = config(tmp, f"{{count: 3, strategy: files, files: [{listed}]}}", data="{label: y}")
    for command in ("validate", "run"):
        r = h.run(command, cfg)
        assert r.code == 2, r
        assert f"{files[2]}:1: the header does not match {files[0]} (shards.files[0]): it lacks " \
               "'x3' and it has 'z3' too; every file of shards.files needs the same columns in the " \
               "same order" in r.stderr, r.stderr
    assert not (tmp / "run").exists()
    # The same columns in another order are a mismatch too.
    files = split_blobs(tmp, [500, 500, 500], header=[None, "x1,x0,x2,x3,y", None])
    r = h.run("validate", cfg)
    assert r.code == 2 and "column 1 is 'x1' where the first file has 'x0'" in r.stderr, r


if __name__ == "__main__":
    h.main([test_by_label_one_class_per_worker, test_by_label_two_classes_over_tcp_with_validation,
            test_by_label_impossible_split_exits_2, test_dirichlet_skew_follows_alpha,
            test_dirichlet_empty_shard_warns_and_trains, test_files_equal_the_contiguous_split,
            test_files_with_validation_hold_out_from_each_file,
            test_files_header_mismatch_exits_2_naming_the_file])
