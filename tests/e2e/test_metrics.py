"""AUC and log-loss: summary.json, loss.csv, eval and expect against reference computations of
scikit-learn's definitions (roc_auc_score: Mann-Whitney with ties counted half; log_loss:
probabilities clipped to [eps, 1 - eps] and renormalized) on the model's own predictions
(disttrain predict). The references are written here in numpy, so that the test needs no
scikit-learn on a CI machine; the unit tests pin values scikit-learn computed."""

import csv
import io
import json

import numpy as np
import harness as h


def roc_auc_score(y, p):
    """The area under the ROC curve: the Mann-Whitney U of the positives' average ranks."""
    y, p = np.asarray(y), np.asarray(p, dtype=float)
    _, inverse, counts = np.unique(p, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # 1-based, ties get their average rank
    positives = int((y == 1).sum())
    negatives = len(y) - positives
    return (ranks[y == 1].sum() - positives * (positives + 1) / 2.0) / (positives * negatives)


def log_loss(y, p, labels=None):
    """scikit-learn 1.2's log_loss: a binary p is P(y = 1); each row clipped to [eps, 1 - eps]
    and renormalized, then the mean negative log of the true class's probability."""
    p = np.asarray(p, dtype=float)
    if p.ndim == 1:
        p = np.c_[1.0 - p, p]
    eps = np.finfo(float).eps
    p = np.clip(p, eps, 1.0 - eps)
    p = p / p.sum(axis=1, keepdims=True)
    y = np.asarray(y).astype(int)
    return float(-np.mean(np.log(p[np.arange(len(y)), y])))

M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def validation_rows(rows, fraction, seed):
    """The held-out rows of one data file, as base/random.cpp and data::validation_rows draw
    them: the tail of a seeded Fisher-Yates walk (stream 3, kValidationSplit)."""
    h64 = splitmix64(seed ^ 0x6A09E667F3BCC909)
    h64 = splitmix64(h64 ^ 3)
    h64 = splitmix64(h64 ^ 0)
    state = splitmix64(h64 ^ 0x5851F42D4C957F2D)
    held = int(round(fraction * rows))
    order = list(range(rows))
    i = rows
    while i > rows - held and i > 1:
        limit = M64 - (M64 % i)
        while True:
            state = (state + 0x9E3779B97F4A7C15) & M64
            x = splitmix64(state)
            if x < limit:
                break
        j = x % i
        order[i - 1], order[j] = order[j], order[i - 1]
        i -= 1
    return sorted(order[rows - held:])


def train(tmp, name, model, data, extra="", validation=0.25):
    cfg = h.write_config(tmp, f"""
version: 1
name: {name}
seed: 7
model: {model}
data: {{path: {h.source('data', data)}, validation: {validation}}}
shards: {{count: 2}}
training: {{epochs: 3, batch_size: 64, optimizer: {{type: sgd, lr: 0.1}}}}
output: {{dir: {tmp}/{name}, log_every: {{steps: 20}}}}
{extra}
""", name=f"{name}.yaml")
    return cfg, h.run("run", cfg, "--json")


def predicted(model, data):
    r = h.run("predict", model, data)
    assert r.code == 0, r
    rows = list(csv.reader(io.StringIO(r.stdout)))
    return np.array([[float(v) for v in row[1:]] for row in rows[1:]])


def test_binary_metrics_match_sklearn(tmp):
    data = h.source("data", "logistic.csv")
    _, r = train(tmp, "run", "{type: logistic_regression}", "logistic.csv")
    assert r.code == 0, r
    s = r.json()
    p = predicted(tmp / "run" / "model.json", data)[:, 0]
    y = np.loadtxt(data, delimiter=",", skiprows=1)[:, -1].astype(int)
    held = validation_rows(len(y), 0.25, 7)
    v = s["validation"]
    assert v["rows"] == len(held) == 500, (v, len(held))
    # The coordinator holds every validation row: exact.
    assert 0.5 < v["auc"] < 1.0, v
    assert abs(v["auc"] - roc_auc_score(y[held], p[held])) < 1e-12, v
    assert abs(v["log_loss"] - log_loss(y[held], p[held])) < 1e-9, v
    assert "auc_error_bound" not in v
    # Training rows: merged worker histograms, within the bound they report.
    train_rows = np.setdiff1d(np.arange(len(y)), held)
    f = s["final_metrics"]
    exact = roc_auc_score(y[train_rows], p[train_rows])
    assert 0 <= f.get("auc_error_bound", 0) < 1e-3, f
    assert abs(f["auc"] - exact) <= f.get("auc_error_bound", 0) + 1e-12, (f, exact)
    assert abs(f["log_loss"] - log_loss(y[train_rows], p[train_rows])) < 1e-9, f
    # summary.json is what --json printed.
    assert json.loads((tmp / "run" / "summary.json").read_text())["validation"] == v

    # loss.csv: the new columns, its last row the final validation metrics.
    with open(tmp / "run" / "loss.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:8] == ["step", "epoch", "seconds", "train_loss", "validation_loss",
                                 "validation_metric", "validation_log_loss", "validation_auc"]
    assert all(row["validation_auc"] and row["validation_log_loss"] for row in rows), rows
    assert float(rows[-1]["validation_auc"]) == v["auc"], (rows[-1], v)
    assert float(rows[-1]["validation_log_loss"]) == v["log_loss"], (rows[-1], v)

    # eval: exact AUC and log-loss over every row of a file.
    e = h.run("eval", tmp / "run" / "model.json", data, "--json")
    assert e.code == 0, e
    m = e.json()
    assert abs(m["auc"] - roc_auc_score(y, p)) < 1e-12, m
    assert abs(m["log_loss"] - log_loss(y, p)) < 1e-9, m
    line = h.run("eval", tmp / "run" / "model.json", data)
    assert f", auc {m['auc']:.4f}" in line.stdout, line


def test_binary_mlp_metrics_match_sklearn(tmp):
    # An MLP with a binary head goes through the same scores as logistic regression.
    data = h.source("data", "logistic.csv")
    _, r = train(tmp, "mlp", "{type: mlp, task: binary, hidden: [4]}", "logistic.csv")
    assert r.code == 0, r
    v = r.json()["validation"]
    p = predicted(tmp / "mlp" / "model.json", data)[:, 0]
    y = np.loadtxt(data, delimiter=",", skiprows=1)[:, -1].astype(int)
    held = validation_rows(len(y), 0.25, 7)
    assert abs(v["auc"] - roc_auc_score(y[held], p[held])) < 1e-12, v
    assert abs(v["log_loss"] - log_loss(y[held], p[held])) < 1e-9, v


def test_expect_reads_auc_and_log_loss(tmp):
    _, r = train(tmp, "low", "{type: logistic_regression}", "logistic.csv",
                 "expect: {auc: {min: 1.01}}")
    assert r.code == 1, r
    s = r.json()
    assert s["expect"]["met"] is False
    assert s["expect"]["failures"] == [
        f"auc {s['final_metrics']['auc']!r} is below the minimum 1.01"], s["expect"]
    _, r = train(tmp, "ok", "{type: logistic_regression}", "logistic.csv",
                 "expect: {auc: {min: 0.5}, validation_auc: {min: 0.5}, log_loss: {max: 0.69},"
                 " validation_log_loss: {max: 0.69}}")
    assert r.code == 0, r
    assert r.json()["expect"] == {"met": True, "failures": []}
    # Regression has no AUC: the gate says it was not measured.
    _, r = train(tmp, "reg", "{type: linear_regression}", "linear.csv", "expect: {auc: {min: 0.5}}")
    assert r.code == 1, r
    assert r.json()["expect"]["failures"] == ["auc was not measured in this run"], r


def test_multiclass_log_loss_matches_sklearn(tmp):
    data = h.source("data", "blobs.csv")
    _, r = train(tmp, "soft", "{type: softmax_regression}", "blobs.csv", validation=0.2)
    assert r.code == 0, r
    s = r.json()
    p = predicted(tmp / "soft" / "model.json", data)
    model = json.loads((tmp / "soft" / "model.json").read_text())
    labels = [row[-1] for row in csv.reader(open(data))][1:]
    y = np.array([model["classes"].index(label) for label in labels])
    held = validation_rows(len(y), 0.2, 7)
    v = s["validation"]
    assert v["rows"] == len(held)
    assert abs(v["log_loss"] - log_loss(y[held], p[held], labels=range(p.shape[1]))) < 1e-9, v
    assert "auc" not in v and "auc" not in s["final_metrics"], s  # AUC is for binary tasks


def test_one_class_validation_has_no_auc(tmp):
    # 200 rows; the held-out ones (the same draw as the run's) all of class 1, so their AUC is
    # undefined, while the training rows hold both classes.
    held = set(validation_rows(200, 0.25, 7))
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 2))
    lines = ["x0,x1,y"]
    for i in range(200):
        label = 1 if i in held else int(x[i, 0] > 0)
        lines.append(f"{x[i, 0]!r},{x[i, 1]!r},{label}")
    data = tmp / "one_class.csv"
    data.write_text("\n".join(lines) + "\n")
    cfg = h.write_config(tmp, f"""
version: 1
name: one
seed: 7
model: {{type: logistic_regression}}
data: {{path: {data}, validation: 0.25}}
training: {{epochs: 2, batch_size: 32, optimizer: {{type: sgd, lr: 0.1}}}}
output: {{dir: {tmp}/one, log_every: {{steps: 4}}}}
expect: {{validation_auc: {{min: 0.5}}, auc: {{min: 0.5}}}}
""")
    r = h.run("run", cfg, "--json")
    assert r.code == 1, r
    s = r.json()
    assert s["validation"]["rows"] == 50 and s["validation"]["auc"] is None, s["validation"]
    assert s["final_metrics"]["auc"] > 0.5, s["final_metrics"]
    assert s["expect"]["failures"] == [
        "validation_auc is undefined: the validation rows hold one class only"], s["expect"]
    with open(tmp / "one" / "loss.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(row["validation_auc"] == "" and row["validation_log_loss"] for row in rows)


def test_reruns_and_resume_are_byte_identical(tmp):
    extra = "fault_tolerance: {checkpoint_every: {steps: 1}}"
    cfg, r = train(tmp, "a", "{type: logistic_regression}", "logistic.csv", extra)
    assert r.code == 0, r
    _, again = train(tmp, "b", "{type: logistic_regression}", "logistic.csv", extra)
    assert again.code == 0, again

    def without_seconds(path):
        return [line.split(",")[:2] + line.split(",")[3:] for line in path.read_text().splitlines()]

    a, b = tmp / "a", tmp / "b"
    assert without_seconds(a / "loss.csv") == without_seconds(b / "loss.csv")
    assert (a / "model.json").read_bytes() == (b / "model.json").read_bytes()
    sa, sb = r.json(), again.json()
    assert sa["final_metrics"] == sb["final_metrics"] and sa["validation"] == sb["validation"]
    # The loss log (with its log-loss and AUC columns) comes back whole from the checkpoint of
    # the last step: resuming writes the same loss.csv.
    kept = (a / "loss.csv").read_bytes()
    (a / "loss.csv").unlink()
    (a / "summary.json").unlink()
    r = h.run("run", cfg, "--resume", "--json")
    assert r.code == 0, r
    assert (a / "loss.csv").read_bytes() == kept
    assert r.json()["validation"] == sa["validation"]
    assert r.json()["final_metrics"] == sa["final_metrics"]


if __name__ == "__main__":
    h.main([test_binary_metrics_match_sklearn, test_binary_mlp_metrics_match_sklearn,
            test_expect_reads_auc_and_log_loss,
            test_multiclass_log_loss_matches_sklearn, test_one_class_validation_has_no_auc,
            test_reruns_and_resume_are_byte_identical])
