"""Combinations of the issue-3 features with edge-case data, as a user would hit them: tiny and
empty shards under tensor parallelism, strategy files with tensor parallelism, and the like.
Each test is a regression test for a bug found by running the real binary on such inputs."""

import json

import harness as h


def gen(tmp, kind, rows, features, seed=1, name=None, extra=()):
    r = h.run("gen", kind, "--rows", rows, "--features", features, "--seed", seed, *extra)
    assert r.code == 0, r
    path = tmp / (name or f"{kind}_{rows}.csv")
    path.write_text(r.stdout)
    return path


def config(tmp, body, name="config.yaml", output=None):
    output = output or f"{{dir: {tmp}/run}}"
    return h.write_config(tmp, f"""
version: 1
name: combo
seed: 3
transport: {{type: ipc}}
output: {output}
{body}
""", name)


def run_json(cfg, *sets, code=0):
    args = []
    for s in sets:
        args += ["--set", s]
    r = h.run("run", cfg, "--json", *args, timeout=60)
    assert r.code == code, r
    return r.json()


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def test_tensor_with_an_empty_batch_share(tmp):
    # 5 rows over 3 replicas with global batches of 2: some replica's share of a step is 0 rows.
    # The shuffled batch of 0 rows had 0 columns, and the tensor slice refused it (exit 3).
    data = gen(tmp, "linear", 5, 3)
    cfg = config(tmp, f"""
model: {{type: linear_regression}}
data: {{path: {data}}}
shards: {{count: 3, strategy: round_robin}}
training: {{epochs: 3, batch_size: 2, shuffle: true, optimizer: {{type: sgd, lr: 0.05}}}}
""")
    star = run_json(cfg)
    tensor = run_json(cfg, "parallelism.tensor=2")
    assert tensor["workers"] == 6 and tensor["status"] == "ok", tensor
    # The same global batches and the same mathematics: the same model, up to rounding.
    assert close(tensor["final_loss"], star["final_loss"]), (tensor, star)


def test_tensor_with_an_empty_dirichlet_shard(tmp):
    # A dirichlet replica with no rows at all trains (its T ranks compute on empty batches), and
    # the warning names the replica and its workers, not "worker <replica index>".
    data = gen(tmp, "blobs", 12, 2, extra=("--classes", "3"))
    cfg = config(tmp, f"""
model: {{type: softmax_regression}}
data: {{path: {data}}}
shards: {{count: 4, strategy: dirichlet, alpha: 0.01}}
parallelism: {{tensor: 2}}
training: {{epochs: 2, batch_size: full, optimizer: {{type: sgd, lr: 0.1}}}}
""")
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    plan = r.json()
    empty = [s["replica"] for s in plan["shards"] if s["rows"] == 0 and s["slice"] == 0]
    assert empty, plan  # the seed gives at least one empty replica
    expected = [f"shards: replica {d} (workers {2 * d}..{2 * d + 1}) has no training rows "
                "(dirichlet split)" for d in empty]
    assert [w.split(";")[0] for w in plan["warnings"]] == expected, plan["warnings"]
    summary = run_json(cfg)
    assert summary["status"] == "ok" and summary["workers"] == 8, summary
    assert [w.split(";")[0] for w in summary["warnings"]] == expected, summary["warnings"]
    plain = run_json(cfg, "parallelism.tensor=1")
    assert close(summary["final_loss"], plain["final_loss"]), (summary, plain)


def split_file(tmp, source, sizes):
    lines = source.read_text().splitlines()
    header, rows = lines[0], lines[1:]
    paths, start = [], 0
    for k, n in enumerate(sizes):
        path = tmp / f"part_{k}.csv"
        path.write_text("\n".join([header] + rows[start:start + n]) + "\n")
        paths.append(path)
        start += n
    return paths


def test_files_with_tensor_validate_on_each_files_held_out_rows(tmp):
    # With parallelism.tensor the plan lists each file once per tensor rank; the validation rows
    # (numbered across the files in order) were read from the wrong file, and validate listed
    # every file T times.
    files = split_file(tmp, h.source("data", "blobs.csv"), [300, 200, 100])
    listed = ", ".join(str(p) for p in files)
    cfg = config(tmp, f"""
model: {{type: softmax_regression}}
data: {{label: y, validation: 0.2}}
shards: {{count: 3, strategy: files, files: [{listed}]}}
training: {{epochs: 2, batch_size: 60, optimizer: {{type: adam, lr: 0.05}}}}
""")
    r = h.run("validate", cfg, "--json", "--set", "parallelism.tensor=2")
    assert r.code == 0, r
    plan = r.json()
    assert plan["data"] == listed, plan["data"]
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    assert plan["validation_labels"] == r.json()["validation_labels"], (plan, r.json())
    plain = run_json(cfg)
    tensor = run_json(cfg, "parallelism.tensor=2")
    assert tensor["validation"]["rows"] == plain["validation"]["rows"] == 120
    assert close(tensor["validation"]["loss"], plain["validation"]["loss"]), (tensor, plain)
    assert tensor["validation"]["accuracy"] == plain["validation"]["accuracy"], (tensor, plain)


def test_validate_counts_async_steps_as_the_run_does(tmp):
    # Async batches are per worker: validate printed the global-batch step count (66) while the
    # run made 3 workers x ceil(450 / 64) x 3 epochs = 72 updates.
    cfg = config(tmp, f"""
model: {{type: softmax_regression}}
data: {{path: {h.source('data', 'blobs.csv')}, validation: 0.1}}
shards: {{count: 3, strategy: round_robin}}
aggregation: {{mode: async}}
training: {{epochs: 3, batch_size: 64, optimizer: {{type: sgd, lr: 0.05}}}}
""")
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    plan = r.json()
    assert (plan["steps_per_epoch"], plan["steps"]) == (24, 72), plan
    r = h.run("validate", cfg)
    assert "24 steps per epoch x 3 epochs = 72 steps" in r.stdout, r.stdout
    assert run_json(cfg)["steps"] == 72


def test_validate_counts_parameters_steps_and_rounds_as_the_run_does(tmp):
    # parameters mode: batches are per worker, and the log's axis is the largest shard's local
    # steps: ceil(450 / 40) = 12 per epoch, 36 in 3 epochs, merged every 5: ceil(36 / 5) = 8
    # rounds. validate used to print the global-batch count, ceil(1350 / 40) = 34 per epoch.
    cfg = config(tmp, f"""
model: {{type: softmax_regression}}
data: {{path: {h.source('data', 'blobs.csv')}, validation: 0.1}}
shards: {{count: 3, strategy: round_robin}}
aggregation: {{mode: parameters, parameters: {{sync_every: {{steps: 5}}}}}}
training: {{epochs: 3, batch_size: 40, optimizer: {{type: sgd, lr: 0.05}}}}
""")
    r = h.run("validate", cfg, "--json")
    assert r.code == 0, r
    plan = r.json()
    assert (plan["steps_per_epoch"], plan["steps"], plan["rounds"]) == (12, 36, 8), plan
    r = h.run("validate", cfg)
    assert "12 steps per epoch x 3 epochs = 36 steps in 8 rounds" in r.stdout, r.stdout
    summary = run_json(cfg)
    assert (summary["steps"], summary["aggregation"]["rounds"]) == (36, 8), summary


def validation_column(run_dir):
    lines = (run_dir / "loss.csv").read_text().splitlines()
    col = lines[0].split(",").index("validation_loss")
    return [float(l.split(",")[col]) for l in lines[1:]]


def test_async_loss_log_validates_the_parameters_of_each_log_step(tmp):
    # The async loss log evaluated validation on the servers' parameters at the time the
    # coordinator drained the update log; on a fast run every row showed the final model. With
    # one worker async is sequential SGD: its log must match gradients mode's, row by row.
    cfg = config(tmp, f"""
model: {{type: linear_regression}}
data: {{path: {h.source('data', 'linear.csv')}, label: y, validation: 0.2}}
shards: {{count: 1}}
training: {{epochs: 2, batch_size: 50, optimizer: {{type: sgd, lr: 0.02}}}}
""", output="{log_every: {steps: 8}}")
    sync = run_json(cfg, f"output.dir={tmp}/sync")
    async_ = run_json(cfg, f"output.dir={tmp}/async", "aggregation.mode=async",
                      "aggregation.servers=2")
    assert sync["steps"] == async_["steps"] == 64, (sync, async_)
    expected, got = validation_column(tmp / "sync"), validation_column(tmp / "async")
    assert len(got) == len(expected) == 8, (got, expected)
    assert all(close(a, b) for a, b in zip(got, expected)), (got, expected)
    assert got[0] > 2 * got[-1], got  # the curve falls: not the final model on every row


if __name__ == "__main__":
    h.main([test_tensor_with_an_empty_batch_share, test_tensor_with_an_empty_dirichlet_shard,
            test_files_with_tensor_validate_on_each_files_held_out_rows,
            test_validate_counts_async_steps_as_the_run_does,
            test_validate_counts_parameters_steps_and_rounds_as_the_run_does,
            test_async_loss_log_validates_the_parameters_of_each_log_step])
