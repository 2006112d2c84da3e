"""Warming the next step's rows while a worker waits (WorkerSession::warm, models::RowWarmer):
with real worker processes, the workers of the ring (waiting on their peer's chunk) and of the
star (waiting on the coordinator's reply) fetch the next batch's rows during those waits, and the
trained model is the same bytes as with warming off (DISTTRAIN_WARM=0), over ipc and tcp, for a
linear model and an MLP. Each worker's log says how many rows it warmed; with warming off, or
with rows in order (left to the hardware prefetcher), none."""

import os
import re

import harness as h

CONFIG = """
version: 1
name: warm
seed: 5
model: {model}
data: {{synthetic: {{kind: linear, rows: 24000, features: 30, noise: 0.1}}}}
shards: {{count: 2}}
aggregation: {{mode: gradients, topology: {topology}}}
training: {{epochs: 2, batch_size: 400, shuffle: {shuffle}, optimizer: {{type: sgd, lr: 0.05}}}}
transport: {{type: {transport}}}
output: {{dir: {out}}}
"""

LINEAR = "{type: linear_regression}"
MLP = "{type: mlp, hidden: [8]}"


def warmed_rows(out, rank):
    """The rows worker `rank` says it warmed (its log's last word on it)."""
    text = (out / "workers" / f"{rank}.log").read_text()
    found = re.findall(r"warmed (\d+) rows of next steps while waiting", text)
    assert found, f"worker {rank} logged no count of warmed rows:\n{text[-2000:]}"
    return int(found[-1])


def trained(tmp, name, warm, shuffle, **fields):
    out = tmp / name
    cfg = h.write_config(tmp, CONFIG.format(out=out, shuffle=shuffle, **fields),
                         name=f"{name}.yaml")
    env = dict(os.environ, DISTTRAIN_WARM="1" if warm else "0")
    r = h.run("run", cfg, "--json", env=env, timeout=120)
    assert r.code == 0, r
    summary = r.json()
    # 12,000 rows a worker, 2 epochs of 60 steps of 200 rows: at most the batches after the first
    # step of each epoch can be warmed, every row of them once.
    most = 2 * 59 * 200
    counts = [warmed_rows(out, rank) for rank in (0, 1)]
    if warm and shuffle == "true":
        assert all(0 < c <= most for c in counts), f"{name}: rows warmed {counts}, at most {most}"
        if "ring" in name:
            # Waits for the coordinator's next batch of steps alone (one per batch) could warm
            # no more than this: the rest was warmed while waiting on the peer.
            requests = summary["aggregation"]["step_requests"]
            assert sum(counts) > 2 * requests * 200, (name, counts, requests)
    else:
        assert counts == [0, 0], f"{name}: nothing to warm, yet rows warmed {counts}"
    return h.model_bytes(out), summary


def check_same_bits(tmp, name, **fields):
    on, s_on = trained(tmp, f"{name}-on", True, **fields)
    off, s_off = trained(tmp, f"{name}-off", False, **fields)
    assert on == off, f"{name}: warming changed model.json"
    assert s_on["final_loss"] == s_off["final_loss"]
    assert s_on["steps"] == 120


def test_ring_workers_warm_rows_and_train_the_same_bits(tmp):
    for transport in ("ipc", "tcp"):
        check_same_bits(tmp, f"ring-{transport}", model=LINEAR, topology="ring", shuffle="true",
                        transport=transport)
    check_same_bits(tmp, "ring-in-order", model=LINEAR, topology="ring", shuffle="false",
                    transport="ipc")


def test_star_workers_warm_rows_and_train_the_same_bits(tmp):
    check_same_bits(tmp, "star", model=LINEAR, topology="star", shuffle="true", transport="ipc")


def test_mlp_gather_reads_warm_rows_and_trains_the_same_bits(tmp):
    check_same_bits(tmp, "mlp", model=MLP, topology="ring", shuffle="true", transport="ipc")


if __name__ == "__main__":
    h.main([test_ring_workers_warm_rows_and_train_the_same_bits,
            test_star_workers_warm_rows_and_train_the_same_bits,
            test_mlp_gather_reads_warm_rows_and_trains_the_same_bits])
