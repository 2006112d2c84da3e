"""summary.json's worker_stats `load_seconds`: each worker's own time from the start of loading
its shard to the shard ready for step 1 (read, checked, statistics, normalized), without the wait
for the other workers in between. Two workers with shards of 400,000 and 20 rows (shards.files,
.npy arrays written in the test with Debian's numpy): both report a time, under the run's wall
time, and the small shard's is far below the large one's (it would be the large one's or more if
the wait were counted). A CSV run reports it too."""

import numpy as np

import harness as h

CONFIG = """
version: 1
name: load-time
seed: 1
model: {{type: linear_regression}}
data: {{label: y{extra}}}
shards: {{count: 2, strategy: files, files: [{big}, {small}]}}
training: {{epochs: 1, batch_size: 4096, optimizer: {{type: sgd, lr: 0.05}}}}
output: {{dir: {out}}}
"""


def array(rows, seed):
    x = np.random.default_rng(seed).standard_normal((rows, 31))
    x[:, 30] = x[:, :30] @ np.linspace(-1, 1, 30)  # the label, the last column
    return x


def test_each_worker_reports_its_own_load(tmp):
    np.save(tmp / "big.npy", array(400000, 1))  # 99 MB: a load of tens of ms or more
    np.save(tmp / "small.npy", array(20, 2))
    cfg = h.write_config(tmp, CONFIG.format(big=tmp / "big.npy", small=tmp / "small.npy",
                                            out=tmp / "run", extra=""))
    s = h.run_json(cfg, tmp / "run")
    big, small = sorted(s["worker_stats"], key=lambda w: w["rank"])
    assert (big["rows"], small["rows"]) == (400000, 20), s["worker_stats"]
    for w in (big, small):
        assert 0 < w["load_seconds"] < s["wall_seconds"], (w, s["wall_seconds"])
    # The small worker waits for the large one's statistics before its shard is normalized: that
    # wait is not its load.
    assert small["load_seconds"] < big["load_seconds"] / 2, s["worker_stats"]
    log = (tmp / "run" / "workers" / "0.log").read_text()
    assert "loaded 400000 rows of 30 feature columns in " in log, log


def test_a_csv_run_reports_it_too(tmp):
    s = h.run_json(h.source("configs", "linear_regression.yaml"), tmp / "csv")
    assert s["worker_stats"], s
    for w in s["worker_stats"]:
        assert 0 < w["load_seconds"] < s["wall_seconds"], (w, s["wall_seconds"])


if __name__ == "__main__":
    h.main([test_each_worker_reports_its_own_load, test_a_csv_run_reports_it_too])
