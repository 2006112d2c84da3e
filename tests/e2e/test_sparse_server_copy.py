"""The coordinator's copy of keyed (sparse) parameter servers after many rounds: it is updated
at each round's stepped keys only (ServerGroup::keep, ParameterServer::capture), so a server
killed at round 150 of 210 fails with a copy that 150 partial updates made. The replacement
(restart) must train the bits of an unfailed run, and under abort the checkpoint of the last
completed step (157, no multiple of checkpoint_every), which holds the dead server's slice from
the copy, must resume to them."""

import json
import random

import harness as h

WIDTH = 60
ROWS = 700

CONFIG = """
version: 1
name: sparse-server-copy
seed: 5
model: {{type: logistic_regression}}
data: {{path: {path}, sparse: true, normalize: none}}
shards: {{count: 2}}
aggregation: {{mode: gradients, servers: 2}}
training: {{epochs: 3, batch_size: 10, optimizer: {{type: ftrl, lr: 0.3, l1: 0.01}}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1500, on_worker_failure: {policy},
                  checkpoint_every: {{steps: 50}}}}
output: {{dir: {out}, log_every: {{steps: 50}}}}
{extra}
"""


def libsvm(path, seed=9):
    """ROWS rows of 1..8 nonzeros among WIDTH features, 0/1 labels from a hidden model."""
    rng = random.Random(seed)
    truth = [rng.gauss(0, 1) for _ in range(WIDTH)]
    lines = []
    for _ in range(ROWS):
        keys = sorted(rng.sample(range(WIDTH), rng.randint(1, 8)))
        values = [round(rng.uniform(-2, 2), 3) for _ in keys]
        z = sum(truth[k] * v for k, v in zip(keys, values))
        label = int(z + rng.gauss(0, 0.5) > 0)
        lines.append(f"{label} " + " ".join(f"{k + 1}:{v}" for k, v in zip(keys, values)))
    path.write_text("\n".join(lines) + "\n")
    return path


def config(tmp, name, data, policy="restart", extra=""):
    out = tmp / name
    cfg = h.write_config(tmp, CONFIG.format(path=data, policy=policy, out=out, extra=extra),
                         f"{name}.yaml")
    return cfg, out


def reference(tmp, data):
    cfg, out = config(tmp, "reference", data)
    r = h.run("run", cfg, "--json", timeout=120)
    assert r.code == 0, r
    assert r.json()["steps"] == 210, r.json()["steps"]
    return out


def test_a_replaced_server_starts_from_the_copy(tmp):
    data = libsvm(tmp / "clicks.svm")
    ref = reference(tmp, data)
    cfg, out = config(tmp, "restart", data,
                      extra="faults: [{server: 1, at_step: 150, action: kill}]")
    r = h.run("run", cfg, "--json", timeout=120)
    assert r.code == 0, r
    [f] = r.json()["failures"]
    assert f["server"] == 1 and f["action"] == "restart" and f["restored_update"] == 150, f
    assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes()


def test_abort_checkpoints_the_dead_server_from_the_copy(tmp):
    data = libsvm(tmp / "clicks.svm")
    ref = reference(tmp, data)
    cfg, out = config(tmp, "abort", data, policy="abort")
    # On the command line: the resumed run below goes without it.
    r = h.run("run", cfg, "--fault", "server=0,at_step=157,action=kill", timeout=120)
    assert r.code == 3, r
    assert "parameter server 0 (keys [0, " in r.stderr, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    [f] = summary["failures"]
    assert f["server"] == 0 and f["action"] == "abort", f
    # Step 157 is no multiple of checkpoint_every: the stop's checkpoint, from the copy.
    assert (out / "checkpoint" / "step-000000000157.ckpt").exists()
    r = h.run("run", cfg, "--resume", timeout=120)
    assert r.code == 0, r
    assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes()


if __name__ == "__main__":
    h.main([test_a_replaced_server_starts_from_the_copy,
            test_abort_checkpoints_the_dead_server_from_the_copy])
