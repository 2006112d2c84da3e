"""Each model trains to a stated quality on the sample data, with 4 real worker processes."""

import json

import numpy as np

import harness as h


def load_csv(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
    return header, np.loadtxt(path, delimiter=",", skiprows=1)


def config(tmp, model, data, label="y", extra=""):
    return h.write_config(tmp, f"""
version: 1
name: t
seed: 3
model: {model}
data: {{path: {h.source('data', data)}, label: {label}}}
shards: {{count: 4}}
transport: {{type: ipc}}
output: {{dir: {tmp}/run}}
{extra}
""")


def test_linear_regression_reaches_least_squares(tmp):
    _, table = load_csv(h.source("data", "linear.csv"))
    x, y = table[:, :-1], table[:, -1]
    a = np.hstack([x, np.ones((len(x), 1))])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    ols_mse = float(np.mean((a @ coef - y) ** 2))
    cfg = config(tmp, "{type: linear_regression}", "linear.csv",
                 extra="training: {epochs: 300, batch_size: full, shuffle: false, optimizer: {type: sgd, lr: 0.3}}")
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    summary = r.json()
    assert summary["final_metrics"]["mse"] <= ols_mse * 1.01, (summary["final_loss"], ols_mse)
    assert summary["final_loss"] >= ols_mse * (1 - 1e-9), "better than least squares is impossible"


def test_logistic_regression_separates(tmp):
    cfg = config(tmp, "{type: logistic_regression}", "logistic.csv",
                 extra="training: {epochs: 30, batch_size: 64, optimizer: {type: sgd, lr: 0.5}}")
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    assert r.json()["final_metrics"]["accuracy"] >= 0.95, r.json()


def test_softmax_regression_on_blobs(tmp):
    cfg = config(tmp, "{type: softmax_regression}", "blobs.csv",
                 extra="training: {epochs: 20, batch_size: 32, optimizer: {type: adam, lr: 0.05}}")
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    s = r.json()
    assert s["final_metrics"]["accuracy"] >= 0.95, s
    model = json.loads((tmp / "run" / "model.json").read_text())
    assert model["classes"] == ["0", "1", "2"]
    assert [p["shape"] for p in model["parameters"]] == [[4, 3], [3]]


def test_mlp_learns_xor_where_logistic_cannot(tmp):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(800, 2))
    y = ((x[:, 0] > 0) ^ (x[:, 1] > 0)).astype(int)
    path = tmp / "xor.csv"
    np.savetxt(path, np.column_stack([x, y]), delimiter=",", header="a,b,label", comments="",
               fmt=["%.6f", "%.6f", "%d"])
    common = "training: {epochs: 150, batch_size: 32, optimizer: {type: adam, lr: 0.02}}"
    mlp = h.write_config(tmp, f"""
version: 1
name: xor
seed: 5
model: {{type: mlp, hidden: [16], activation: tanh, task: binary}}
data: {{path: {path}, label: label}}
shards: {{count: 2}}
{common}
output: {{dir: {tmp}/mlp}}
""", "mlp.yaml")
    r = h.run("run", mlp, "--json")
    assert r.code == 0, r
    assert r.json()["final_metrics"]["accuracy"] >= 0.95, r.json()
    logistic = h.write_config(tmp, mlp.read_text().replace(
        "{type: mlp, hidden: [16], activation: tanh, task: binary}", "{type: logistic_regression}"), "lr.yaml")
    r = h.run("run", logistic, "--json", "--set", f"output.dir={tmp}/lr")
    assert r.code == 0, r
    assert r.json()["final_metrics"]["accuracy"] < 0.7, "XOR is not linearly separable"


def test_mlp_regression_and_multiclass(tmp):
    cfg = config(tmp, "{type: mlp, hidden: [16, 8], activation: relu, task: multiclass}", "blobs.csv",
                 extra="training: {epochs: 20, batch_size: 32, optimizer: {type: adam, lr: 0.01}}")
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    assert r.json()["final_metrics"]["accuracy"] >= 0.95, r.json()
    cfg = config(tmp, "{type: mlp, hidden: [8], activation: sigmoid, task: regression}", "linear.csv",
                 extra="training: {epochs: 60, batch_size: 32, optimizer: {type: adam, lr: 0.01}}")
    r = h.run("run", cfg, "--json", "--set", f"output.dir={tmp}/mlpreg")
    assert r.code == 0, r
    # The target is linear with noise 0.5 (variance 0.25): a fitted network gets close to it.
    assert r.json()["final_metrics"]["mse"] < 0.35, r.json()


def memory_total_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal in /proc/meminfo")


def test_summary_reports_peak_memory(tmp):
    rows, features = 200_000, 20
    cfg = h.write_config(tmp, f"""
version: 1
name: rss
seed: 1
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: {rows}, features: {features}}}}}
shards: {{count: 2}}
training: {{epochs: 1, batch_size: 1000}}
transport: {{type: ipc}}
output: {{dir: {tmp}/run}}
""")
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    s = r.json()
    assert s == json.loads((tmp / "run" / "summary.json").read_text())
    limit = memory_total_bytes()
    assert 1 << 20 < s["max_rss_bytes"] < limit, s["max_rss_bytes"]
    assert len(s["worker_stats"]) == 2
    for w in s["worker_stats"]:
        assert 1 << 20 < w["max_rss_bytes"] < limit, w
        # A worker holds its shard's features as doubles, so its peak cannot be below them.
        assert w["max_rss_bytes"] >= w["rows"] * features * 8, w


def test_a_loss_that_explodes_stops_the_run(tmp):
    """Adam at lr 1e6 on softmax: the loss explodes to about 1e5 without overflowing, and the run once
    ended with exit 0. Now it is divergence, as a NaN is: exit 3 naming the lr to lower. The
    yardstick is the first step's loss: log(3) for 3 classes from zero weights."""
    extra = "training: {epochs: 5, batch_size: 32, optimizer: {type: adam, lr: %s}}"
    cfg = config(tmp, "{type: softmax_regression}", "blobs.csv", extra=extra % "1e6")
    r = h.run("run", cfg, "--json")
    assert r.code == 3, r
    message = r.json()["error"]
    assert message.startswith("training diverged by step 10: the loss is "), message
    assert "times the first step's 1.0986122886681098; lower training.optimizer.lr (now 1000000) " \
           "or normalize the data" in message, message
    # A high but workable rate trains on.
    cfg = config(tmp, "{type: softmax_regression}", "blobs.csv", extra=extra % "5")
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r


if __name__ == "__main__":
    h.main([test_linear_regression_reaches_least_squares, test_logistic_regression_separates,
            test_softmax_regression_on_blobs, test_mlp_learns_xor_where_logistic_cannot,
            test_mlp_regression_and_multiclass, test_summary_reports_peak_memory,
            test_a_loss_that_explodes_stops_the_run])
