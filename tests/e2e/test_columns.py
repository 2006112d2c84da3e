"""Delimiters (data.delimiter): semicolon, tab and pipe files, detected or forced, train the
comma file's bytes, and a forced delimiter the header does not use is refused naming the one it
seems to use. Column selection (data.features, data.exclude): a file with an ID and a text column trains,
with them excluded or the features listed (names, name ranges, number ranges), the bytes of the
file without them; predict/eval of that model read files with extra columns; unknown names and
bad ranges exit 2 with a suggestion."""

import json
import random
import re

import harness as h

CONFIG = """
version: 1
name: cols
seed: 3
model: {{type: linear_regression}}
data: {{path: {path}, validation: 0.2{extra}}}
shards: {{count: 2}}
training: {{epochs: 2, batch_size: 16, optimizer: {{type: sgd, lr: 0.05}}}}
output: {{dir: {out}}}
"""

ROWS = 120


def values():
    rng = random.Random(7)
    out = []
    for i in range(ROWS):
        x = [round(rng.uniform(-2, 2), 3) for _ in range(3)]
        y = round(1.5 * x[0] - 2 * x[1] + 0.5 * x[2] + rng.gauss(0, 0.1), 3)
        out.append((i, x, y))
    return out


def write_plain(path, sep=","):
    lines = [sep.join(["x0", "x1", "x2", "y"])]
    lines += [sep.join(map(str, [*x, y])) for _, x, y in values()]
    path.write_text("\n".join(lines) + "\n")


def write_wide(path, sep=","):
    # An ID column, a quoted text column with the separator in it, then the features and label.
    lines = [sep.join(["id", "x0", "name", "x1", "x2", "y"])]
    lines += [sep.join([f"u{i:04d}", str(x[0]), f'"item {i}{sep} blue"', str(x[1]), str(x[2]),
                        str(y)]) for i, x, y in values()]
    path.write_text("\n".join(lines) + "\n")


def train(tmp, name, path, extra=""):
    cfg = h.write_config(tmp, CONFIG.format(path=path, out=tmp / name, extra=extra), f"{name}.yaml")
    return h.run("run", cfg, "-q")


def test_selected_columns_train_as_the_file_without_the_others(tmp):
    write_plain(tmp / "plain.csv")
    write_wide(tmp / "wide.csv")
    r = train(tmp, "plain", tmp / "plain.csv")
    assert r.code == 0, r
    expected = (tmp / "plain" / "model.json").read_bytes()
    # Without a selection the text column is an error naming the cell.
    r = train(tmp, "all", tmp / "wide.csv")
    assert r.code == 2 and re.search(r"wide\.csv:\d+:1: column 'id': 'u\d+' is not a number",
                                     r.stderr), r
    for name, extra in [("exclude", ", exclude: [id, name]"),
                        ("names", ", features: [x0, x1, x2]"),
                        ("range", ", features: [x0:x2], exclude: name"),
                        ("numbers", ", features: ['2:2', '4:6']")]:
        r = train(tmp, name, tmp / "wide.csv", extra)
        assert r.code == 0, (name, r)
        assert (tmp / name / "model.json").read_bytes() == expected, name
    # The same with semicolons (the quoted text holds one) and with tabs, detected.
    write_wide(tmp / "wide_semi.csv", ";")
    write_wide(tmp / "wide.tsv", "\t")
    for name in ("wide_semi.csv", "wide.tsv"):
        r = train(tmp, "sep-" + name, tmp / name, ", exclude: [id, name]")
        assert r.code == 0, (name, r)
        assert (tmp / ("sep-" + name) / "model.json").read_bytes() == expected, name
    # The resolved config keeps the selection, so a rerun selects the same columns.
    resolved = (tmp / "exclude" / "config.resolved.yaml").read_text()
    assert "exclude: [id, name]" in resolved, resolved
    # predict and eval find the model's features by name in a file with more columns.
    model = tmp / "plain" / "model.json"
    for command in ("predict", "eval"):
        a = h.run(command, model, tmp / "plain.csv")
        b = h.run(command, model, tmp / "wide.csv")
        assert a.code == 0 and b.code == 0 and a.stdout == b.stdout, (command, a, b)


def test_delimiters(tmp):
    write_plain(tmp / "plain.csv")
    r = train(tmp, "plain", tmp / "plain.csv")
    assert r.code == 0, r
    expected = (tmp / "plain" / "model.json").read_bytes()
    write_plain(tmp / "semi.csv", ";")
    write_plain(tmp / "tabs.tsv", "\t")
    write_plain(tmp / "tabs.txt", "\t")
    write_plain(tmp / "pipe.csv", "|")
    for name, file, extra in [("semi", "semi.csv", ""), ("tsv", "tabs.tsv", ""),
                              ("tabs", "tabs.txt", ""), ("pipe", "pipe.csv", ""),
                              ("forced", "semi.csv", ", delimiter: semicolon")]:
        r = train(tmp, name, tmp / file, extra)
        assert r.code == 0, (name, r)
        assert (tmp / name / "model.json").read_bytes() == expected, name
    assert "delimiter: semicolon" in (tmp / "forced" / "config.resolved.yaml").read_text()
    # predict and eval detect their file's separator.
    model = tmp / "plain" / "model.json"
    for command in ("predict", "eval"):
        a = h.run(command, model, tmp / "plain.csv")
        b = h.run(command, model, tmp / "semi.csv")
        assert a.code == 0 and b.code == 0 and a.stdout == b.stdout, (command, a, b)
    # A forced separator the header does not use: the error names the one it seems to use.
    r = train(tmp, "wrong", tmp / "semi.csv", ", delimiter: comma")
    assert r.code == 2, r
    for needle in ["semi.csv:1:", "data.delimiter is comma", "seems to use semicolon",
                   "data.delimiter: semicolon"]:
        assert needle in r.stderr, (needle, r.stderr)
    r = train(tmp, "typo", tmp / "semi.csv", ", delimiter: semicolom")
    assert r.code == 2 and "did you mean 'semicolon'" in r.stderr, r


def test_a_subset_of_features(tmp):
    write_wide(tmp / "wide.csv")
    r = train(tmp, "two", tmp / "wide.csv", ", features: [x2, x0]")
    assert r.code == 0, r
    model = json.loads((tmp / "two" / "model.json").read_text())
    assert model["features"] == ["x0", "x2"], model["features"]  # file order


def test_bad_column_selections(tmp):
    write_wide(tmp / "wide.csv")
    cases = [
        (", exclude: [idd, name]", ["data.exclude", "no column 'idd'", "did you mean 'id'"]),
        (", features: [x0:x9]", ["data.features", "no column 'x9'", "columns are: id, x0"]),
        (", features: ['3:9']", ["data.features", "'3:9'", "<= 6"]),
        (", features: [x2:x0]", ["runs backwards", "x0:x2"]),
        (", features: [y]", ["'y' is the label"]),
        (", exclude: [y]", ["'y' is the label"]),
        (", features: [id, name], exclude: [id, name]", ["no feature columns are left"]),
        (", features: {a: 1}", ["data.features", "expected a list"]),
    ]
    for extra, needles in cases:
        r = train(tmp, "bad", tmp / "wide.csv", extra)
        assert r.code == 2, (extra, r)
        for needle in needles:
            assert needle in r.stderr, (extra, needle, r.stderr)
        assert "Traceback" not in r.stderr and "terminate" not in r.stderr


if __name__ == "__main__":
    h.main([test_delimiters, test_selected_columns_train_as_the_file_without_the_others, test_a_subset_of_features,
            test_bad_column_selections])
