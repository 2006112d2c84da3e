"""The small run the fault_tolerance.elastic tests share (test_elastic*.py, test_leave_command.py):
linear regression over 4000 synthetic rows, 3600 of them for training, a global batch of 60, so
60 steps an epoch. A test sets what it varies; the rest stays the same in every file."""

import harness as h

TEMPLATE = """
version: 1
name: {title}
seed: {seed}
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 4000, features: 6, noise: 0.1}}, validation: 0.1}}
shards: {{count: {workers}}}
{aggregation}
training: {{epochs: {epochs}, batch_size: 60, optimizer: {{type: sgd, lr: {lr}}}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 2000, on_worker_failure: {policy}{checkpoint}{elastic}}}
{faults}
output: {{dir: {out}, log_every: {{steps: {log_every}}}}}
{transport}
"""
PER_EPOCH = 60
TRAIN_ROWS = 3600


def config(tmp, name, out=None, *, workers=4, epochs=4, aggregation=None, policy="abort",
           checkpoint=0, elastic="min_workers: 1", faults=(), seed=5, lr=0.02, log_every=20,
           transport="", title="elastic"):
    """Writes tmp/<name>.yaml; returns it and the run's output folder (`out`, else tmp/<name>).
    `aggregation`: the section's flow mapping (None: the default star); `checkpoint`: steps
    between checkpoints (None: the default); `elastic`: the flow mapping's contents (None: not
    elastic); `faults`: entries of `faults:`; `title`: the config's `name`."""
    out = out if out is not None else tmp / name
    text = TEMPLATE.format(
        title=title, seed=seed, workers=workers, epochs=epochs, lr=lr, policy=policy, out=out,
        log_every=log_every, transport=transport,
        aggregation=f"aggregation: {aggregation}" if aggregation else "",
        checkpoint="" if checkpoint is None else f", checkpoint_every: {{steps: {checkpoint}}}",
        elastic="" if elastic is None else f", elastic: {{{elastic}}}",
        faults=f"faults: [{', '.join(faults)}]" if faults else "")
    return h.write_config(tmp, text, f"{name}.yaml"), out
