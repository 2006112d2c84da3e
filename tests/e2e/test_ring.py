"""Ring all-reduce (aggregation.topology: ring) with real worker processes over ipc and tcp:
the same model as the star to 1e-9 for N = 2, 3, 4 (parameter counts not divisible by N), the
same bytes run after run and transport after transport, gradients moving worker to worker
(2(N-1)/N of the vector each) instead of through the coordinator, and a killed worker ending the
run fast with its rank named."""

import json
import os
import socket
import signal
import time

import numpy as np

import harness as h


def params(run_dir):
    model = json.loads((run_dir / "model.json").read_text())
    return np.concatenate([np.ravel(np.asarray(p["data"], dtype=float)) for p in model["parameters"]])


def loss_table(run_dir):
    return np.genfromtxt(run_dir / "loss.csv", delimiter=",", names=True)


# linear_regression on 4 features: 5 parameters (7 values all-reduced with rows and loss),
# divisible by none of 2, 3, 4. The mlp on blobs (4 features, 3 classes, hidden [5]) has 43.
LINEAR = """
version: 1
name: ring
seed: 21
model: {{type: linear_regression, l2: 0.01}}
data: {{synthetic: {{kind: linear, rows: 360, features: 4, noise: 0.1}}, validation: 0.1}}
shards: {{count: 2, strategy: random}}
aggregation: {{mode: gradients, topology: star}}
training: {{epochs: 4, batch_size: 40, shuffle: true, optimizer: {{type: adam, lr: 0.05}}}}
output: {{dir: {out}, log_every: {{steps: 5}}}}
"""

MLP = """
version: 1
name: ring-mlp
seed: 4
model: {{type: mlp, hidden: [5], activation: tanh, task: multiclass}}
data: {{path: {data}, validation: 0.2}}
shards: {{count: 2, strategy: round_robin}}
aggregation: {{mode: gradients, topology: star}}
training: {{epochs: 2, batch_size: 64, optimizer: {{type: sgd, lr: 0.2, momentum: 0.9}}}}
output: {{dir: {out}, log_every: {{steps: 10}}}}
"""


def run(cfg, out, *sets, env=None):
    args = ["run", cfg, "--json", "--set", f"output.dir={out}"]
    for s in sets:
        args += ["--set", s]
    r = h.run(*args, env=env)
    assert r.code == 0, r
    assert "warning" not in r.stderr, r.stderr
    return r.json()


def assert_close(a, b, what):
    rel = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)
    assert rel < 1e-9, f"{what}: ring differs from star by {rel:.3g} (relative)"


def test_ring_equals_star_for_2_3_4_workers_over_ipc_and_tcp(tmp):
    cfg = h.write_config(tmp, LINEAR.format(out=tmp / "unused"))
    for n in (2, 3, 4):
        star = tmp / f"star{n}"
        run(cfg, star, f"shards.count={n}")
        expected = params(star)
        assert len(expected) == 5 and len(expected) % n != 0
        texts = []
        for transport in ("ipc", "tcp"):
            ring = tmp / f"ring{n}-{transport}"
            s = run(cfg, ring, f"shards.count={n}", "aggregation.topology=ring",
                    f"transport.type={transport}")
            assert_close(params(ring), expected, f"{n} workers over {transport}")
            assert s["aggregation"]["topology"] == "ring" and s["aggregation"]["replicas_agree"]
            texts.append((ring / "model.json").read_bytes())
            # loss.csv keeps the star's meaning: the same train and validation losses per row
            # (the validation pass sees the ring's current parameters, not the initial ones).
            a, b = loss_table(ring), loss_table(star)
            assert len(a) == len(b) >= 3
            for column in ("step", "train_loss", "validation_loss"):
                assert np.allclose(a[column], b[column], rtol=1e-9, atol=0), column
        assert texts[0] == texts[1], f"{n} workers: ipc and tcp give different model.json"


def test_ring_equals_star_for_an_mlp(tmp):
    cfg = h.write_config(tmp, MLP.format(data=h.source("data", "blobs.csv"), out=tmp / "unused"))
    for n in (3, 4):
        run(cfg, tmp / f"star{n}", f"shards.count={n}")
        run(cfg, tmp / f"ring{n}", f"shards.count={n}", "aggregation.topology=ring")
        expected = params(tmp / f"star{n}")
        assert len(expected) == 43
        assert_close(params(tmp / f"ring{n}"), expected, f"mlp, {n} workers")


def test_ring_is_reproducible_and_moves_gradients_between_workers(tmp):
    # 61 parameters, no validation split: rank 0 never sends its parameters mid-run.
    cfg = h.write_config(tmp, f"""
version: 1
name: rep
seed: 9
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 400, features: 60}}}}
shards: {{count: 3}}
aggregation: {{mode: gradients, topology: ring}}
training: {{epochs: 2, batch_size: 50}}
""")
    summaries, texts = [], []
    tmpdir, env = h.private_tmpdir(tmp)
    for i, transport in enumerate(("ipc", "ipc", "inproc")):
        out = tmp / f"run{i}"
        summaries.append(run(cfg, out, f"transport.type={transport}", env=env))
        texts.append((out / "model.json").read_bytes())
    assert texts[0] == texts[1] == texts[2], "model.json differs between ring runs"
    assert list(tmpdir.iterdir()) == [], "socket files or temp folders left behind"

    s = summaries[0]
    steps, length, n = s["steps"], 61 + 2, 3
    assert steps == 16
    bounds = [k * length // n for k in range(n + 1)]
    seg = [bounds[k + 1] - bounds[k] for k in range(n)]
    agg = {w["rank"]: w for w in s["aggregation"]["workers"]}
    for rank in range(n):
        w = agg[rank]
        # Reduce-scatter sends every segment but (i+1), all-gather every one but (i+2).
        per_step = 2 * length - seg[(rank + 1) % n] - seg[(rank + 2) % n]
        assert w["allreduces"] == steps
        assert w["values_sent"] == w["values_received"] == steps * per_step
        assert w["peer_bytes_sent"] >= 8 * w["values_sent"]
        assert w["peer_messages_dropped"] == 0
    # worker_stats count the ring's bytes too; without them, the coordinator's link carries
    # losses, not gradients: each worker sends it far less than in the star (which sends one
    # 61-value gradient per step).
    star = run(cfg, tmp / "star", "aggregation.topology=star")
    for w, v in zip(s["worker_stats"], star["worker_stats"]):
        assert w["steps"] == v["steps"] == steps
        to_coordinator = w["bytes_sent"] - agg[w["rank"]]["peer_bytes_sent"]
        assert 0 < to_coordinator < v["bytes_sent"] - steps * 61 * 8 / 2, (w, v)


def test_killed_ring_worker_fails_the_run_fast(tmp):
    for transport in ("ipc", "tcp"):
        out = tmp / transport
        cfg = h.write_config(tmp, h.long_run(transport, out,
                                             "aggregation: {mode: gradients, topology: ring}"))
        tmpdir, env = h.private_tmpdir(out)
        proc = h.start(cfg, env)
        workers = h.worker_processes(proc, 4)
        time.sleep(1.0)  # well into training
        assert proc.poll() is None, proc.communicate()
        victim = next(pid for pid in workers if h.rank_of(pid) == 2)
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        _, err = h.finish(proc, 20, f"{transport}: the run")
        assert proc.returncode == 3, (proc.returncode, err)
        assert time.monotonic() - killed_at < 5, "the failure took too long to notice"
        assert f"worker 2 (pid {victim} on {socket.gethostname()}) was killed by signal 9 (SIGKILL); last completed step " in err, err
        h.assert_gone(workers)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["status"] == "failed" and "worker 2" in summary["error"]
        # Workers' peer sockets live in the coordinator's private folder: even the killed
        # worker's goes with it.
        assert list(tmpdir.iterdir()) == [], "socket files or temp folders left behind"




def test_batched_steps_change_nothing_but_the_coordinator_round_trips(tmp):
    """Under abort the coordinator sends the ring its steps in batches (one request for up to
    64 steps, cut at checkpoints, validation log steps and epoch ends); under restart every step
    is its own request. Both must train the same model to the byte and log the same losses."""
    cfg = h.write_config(tmp, f"""
version: 1
name: batches
seed: 5
model: {{type: logistic_regression}}
data: {{synthetic: {{kind: logistic, rows: 6000, features: 12}}, validation: 0.1}}
shards: {{count: 2}}
aggregation: {{mode: gradients, topology: ring}}
training: {{epochs: 3, batch_size: 20, optimizer: {{type: adam, lr: 0.01}}}}
fault_tolerance: {{checkpoint_every: {{steps: 70}}}}
output: {{log_every: {{steps: 25}}}}
""")
    batched = run(cfg, tmp / "batched", "fault_tolerance.on_worker_failure=abort")
    stepwise = run(cfg, tmp / "stepwise", "fault_tolerance.on_worker_failure=restart")
    steps = batched["steps"]
    assert steps == stepwise["steps"] == 3 * 270
    assert stepwise["aggregation"]["step_requests"] == steps
    # Cuts: 3 epoch ends, 32 log steps (validation), 11 checkpoints; the rest in long batches.
    assert batched["aggregation"]["step_requests"] < steps // 4, batched["aggregation"]
    for name in ("model.json", "loss.csv"):
        a = (tmp / "batched" / name).read_text()
        b = (tmp / "stepwise" / name).read_text()
        if name == "loss.csv":  # the seconds column differs
            a, b = (loss_table(tmp / d) for d in ("batched", "stepwise"))
            for col in a.dtype.names:
                if col != "seconds":
                    assert np.array_equal(a[col], b[col], equal_nan=True), col
        else:
            assert a == b, "batched steps trained another model"
    assert batched["final_loss"] == stepwise["final_loss"]
    assert (tmp / "batched" / "checkpoint").is_dir()


if __name__ == "__main__":
    h.main([test_ring_equals_star_for_2_3_4_workers_over_ipc_and_tcp,
            test_ring_equals_star_for_an_mlp,
            test_ring_is_reproducible_and_moves_gradients_between_workers,
            test_killed_ring_worker_fails_the_run_fast,
            test_batched_steps_change_nothing_but_the_coordinator_round_trips])
