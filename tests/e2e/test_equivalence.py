"""Synchronous gradient averaging is exact: N workers with full batches equal 1 worker, every
transport gives the same bits, and a run repeated gives a byte-identical model.json."""

import json

import numpy as np

import harness as h


def params(run_dir):
    model = json.loads((run_dir / "model.json").read_text())
    return np.concatenate([np.ravel(np.asarray(p["data"], dtype=float)) for p in model["parameters"]])


def base_config(tmp, model="{type: logistic_regression, l2: 0.01}", data="logistic.csv"):
    return h.write_config(tmp, f"""
version: 1
name: eq
seed: 11
model: {model}
data: {{path: {h.source('data', data)}, validation: 0.2}}
shards: {{count: 1, strategy: round_robin}}
training: {{epochs: 15, batch_size: full, shuffle: false, optimizer: {{type: adam, lr: 0.1}}}}
output: {{dir: {tmp}/base}}
""")


def test_full_batch_n_workers_equals_one_worker(tmp):
    for model, data in [("{type: logistic_regression, l2: 0.01}", "logistic.csv"),
                        ("{type: mlp, hidden: [6], activation: tanh, task: multiclass}", "blobs.csv")]:
        cfg = base_config(tmp, model, data)
        results = {}
        for n in (1, 2, 4):
            out = tmp / f"n{n}"
            r = h.run("run", cfg, "--set", f"shards.count={n}", "--set", f"output.dir={out}")
            assert r.code == 0, r
            results[n] = params(out)
        for n in (2, 4):
            rel = np.max(np.abs(results[n] - results[1])) / np.max(np.abs(results[1]))
            assert rel < 1e-9, f"{model}: {n} workers differ from 1 worker by {rel:.3g} (relative)"
        # A change that matters must show: a different seed for the split gives other parameters.
        r = h.run("run", cfg, "--set", "seed=12", "--set", f"output.dir={tmp}/other")
        assert r.code == 0, r
        assert np.max(np.abs(params(tmp / "other") - results[1])) > 1e-6


def test_repeat_runs_are_byte_identical_on_every_transport(tmp):
    cfg = h.write_config(tmp, f"""
version: 1
name: rep
seed: 5
model: {{type: softmax_regression}}
data: {{path: {h.source('data', 'blobs.csv')}, validation: 0.1}}
shards: {{count: 3, strategy: random}}
training: {{epochs: 3, batch_size: 50, shuffle: true, optimizer: {{type: sgd, lr: 0.1, momentum: 0.9}}}}
""")
    texts = []
    for transport in ("ipc", "ipc", "tcp", "inproc"):
        out = tmp / f"{transport}{len(texts)}"
        r = h.run("run", cfg, "--set", f"transport.type={transport}", "--set", f"output.dir={out}")
        assert r.code == 0, r
        texts.append((out / "model.json").read_bytes())
        assert (out / "loss.csv").read_text().count("\n") >= 2
    assert all(t == texts[0] for t in texts), "model.json differs between runs or transports"


def test_tcp_run_with_four_workers(tmp):
    cfg = base_config(tmp)
    r = h.run("run", cfg, "--json", "--set", "shards.count=4", "--set", "transport.type=tcp",
              "--set", "transport.address=127.0.0.1:0")
    assert r.code == 0, r
    s = r.json()
    assert len(s["worker_stats"]) == 4
    assert sum(w["rows"] for w in s["worker_stats"]) == s["train_rows"] == 1600
    for w in s["worker_stats"]:
        assert w["bytes_sent"] > 0 and w["bytes_received"] > 0 and w["steps"] == 15
        assert not h.alive(w["pid"])


if __name__ == "__main__":
    h.main([test_full_batch_n_workers_equals_one_worker,
            test_repeat_runs_are_byte_identical_on_every_transport, test_tcp_run_with_four_workers])
