"""Sparse data (data.hash, data.sparse): `disttrain gen clicks` writes a click log, and
`disttrain validate` reads it hashed (data.hash) into sparse rows and reports the width, the
nonzeros per row and the shards' memory; the same for a LIBSVM file with data.sparse: true, its
figures computed here from the file; `run` trains both (test_sparse_training.py checks what it
trains). Bad hashed configs and cells exit 2 naming where and what to do."""

import json

import harness as h

FIELDS = 39
CONFIG = """
version: 1
name: sparse
seed: 1
model: {{type: logistic_regression}}
data:
  path: {path}
  label: click
  hash: {{bits: {bits}, columns: [{columns}]{crosses}}}{extra}
shards: {{count: 2}}
output: {{dir: {out}}}
"""


def gen_clicks(path, rows, seed, fields=FIELDS):
    with open(path, "w") as f:
        r = h.run("gen", "clicks", "--rows", rows, "--fields", fields, "--seed", seed, stdout=f)
    assert r.code == 0, r
    return path


def hashed_config(tmp, data, name="hashed", bits=18, columns=None, crosses="", extra=""):
    columns = columns or ", ".join(f"C{f}" for f in range(1, FIELDS + 1))
    return h.write_config(tmp, CONFIG.format(path=data, bits=bits, columns=columns,
                                             crosses=crosses, extra=extra, out=tmp / name),
                          f"{name}.yaml")


def validate(cfg):
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    return json.loads(r.stdout)


def test_gen_clicks_and_validate_hashed(tmp):
    data = gen_clicks(tmp / "clicks.csv", 3000, 5)
    lines = data.read_text().splitlines()
    assert lines[0] == "click," + ",".join(f"C{f}" for f in range(1, FIELDS + 1)), lines[0]
    assert len(lines) == 3001
    labels = [line.split(",")[0] for line in lines[1:]]
    assert set(labels) == {"0", "1"}, set(labels)
    assert all(len(line.split(",")) == FIELDS + 1 for line in lines[1:])
    # Deterministic for a seed, another seed another log.
    assert gen_clicks(tmp / "again.csv", 3000, 5).read_bytes() == data.read_bytes()
    assert gen_clicks(tmp / "other.csv", 3000, 6).read_bytes() != data.read_bytes()

    cfg = hashed_config(tmp, data, crosses=", crosses: [[C1, C2]]")
    plan = validate(cfg)
    sparse = plan["sparse"]
    assert plan["features"] == sparse["width"] == 2 ** 18, plan
    assert plan["parameters"] == 2 ** 18 + 1
    # 39 values and one cross a row: 40 keys, fewer only where two fall in one bucket.
    assert sparse["nonzeros_per_row_max"] == 40, sparse
    assert 39.5 < sparse["nonzeros_per_row_mean"] <= 40, sparse
    rows = sum(s["rows"] for s in plan["shards"])
    assert rows == 3000
    nonzeros = sum(s["nonzeros"] for s in plan["shards"])
    assert nonzeros == sparse["nonzeros"]
    assert abs(sparse["nonzeros_per_row_mean"] - nonzeros / rows) < 1e-9
    # The CSR: 12 bytes a nonzero (4 key + 8 value) and 8 a row offset (+1 per shard).
    for s in plan["shards"]:
        assert s["memory_bytes"] == 12 * s["nonzeros"] + 8 * (s["rows"] + 1), s
    assert sparse["memory_bytes"] == sum(s["memory_bytes"] for s in plan["shards"])
    text = h.run("validate", cfg)
    assert text.code == 0, text
    assert "sparse:     262144 keys (2^18 hashed), " in text.stdout, text.stdout
    assert "nonzeros per row (max 40)" in text.stdout, text.stdout

    # `run` trains the sparse rows: 2^18 weights and a bias.
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    model = json.loads((tmp / "hashed" / "model.json").read_text())
    assert sum(p["shape"][0] for p in model["parameters"] if p["name"] == "weights") == 2 ** 18


def test_validate_libsvm_sparse(tmp):
    rows = ["1 1:0.5 7:2 12:1", "0 3:1", "1", "0 2:1 12:-1.5", "1 5:1 6:1 7:1 8:1"] * 20
    data = tmp / "a.svm"
    data.write_text("\n".join(rows) + "\n")
    cfg = h.write_config(tmp, f"""
version: 1
model: {{type: logistic_regression}}
data: {{path: {data}, sparse: true}}
shards: {{count: 2}}
output: {{dir: {tmp / "out"}}}
""")
    plan = validate(cfg)
    sparse = plan["sparse"]
    counts = [len(row.split()) - 1 for row in rows]
    assert sparse["width"] == 12, sparse  # 1-based indices 1..12
    assert sparse["nonzeros"] == sum(counts)
    assert sparse["nonzeros_per_row_max"] == max(counts)
    assert abs(sparse["nonzeros_per_row_mean"] - sum(counts) / len(counts)) < 1e-9
    assert [s["rows"] for s in plan["shards"]] == [50, 50]
    # Each worker's shard holds its own rows: the first 50 and the last 50.
    assert [s["nonzeros"] for s in plan["shards"]] == [sum(counts[:50]), sum(counts[50:])]
    assert sparse["memory_bytes"] == 12 * sum(counts) + 8 * (100 + 2)
    r = h.run("run", cfg)
    assert r.code == 0, r


def test_bad_hashed_input(tmp):
    data = tmp / "c.csv"
    data.write_text("click,C1,C2\n1,a,b\n0,c,\n")
    cases = [
        ({"bits": 31}, "data.hash.bits"),
        ({"columns": "C1, C3"}, "c.csv: data.hash.columns: no column 'C3' (did you mean 'C1'?)"),
        ({"columns": "C1, click"}, "c.csv: data.hash.columns: 'click' is the label column; a "
                                   "label cannot be a feature: remove it from data.hash.columns"),
        ({"columns": "C1, C2"}, "c.csv:3:5: column 'C2': missing value (an empty cell); fill it "
                                "in the file, or set data.missing: mean or zero"),
        ({"extra": "\n  sparse: false"}, "data.hash: makes sparse rows, but data.sparse is false"),
    ]
    for i, (change, says) in enumerate(cases):
        args = {"bits": 8, "columns": "C1, C2", "extra": ""} | change
        cfg = hashed_config(tmp, data, name=f"bad{i}", **args)
        r = h.run("validate", cfg)
        assert r.code == 2, (change, r)
        assert says in r.stderr, (change, says, r.stderr)
    # data.missing: zero gives the empty cell no key.
    cfg = hashed_config(tmp, data, name="zero", bits=8, columns="C1, C2",
                        extra="\n  missing: zero")
    assert validate(cfg)["sparse"]["nonzeros"] == 3


if __name__ == "__main__":
    h.main([test_gen_clicks_and_validate_hashed, test_validate_libsvm_sparse, test_bad_hashed_input])
