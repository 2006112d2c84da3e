"""`disttrain compare RUN_A RUN_B` (exit 0 equal within --tolerance, 1 not, 2 bad input), the
rerun rotation into runs/<name>.prev (the earlier run kept whole, byte for byte, whatever the new
run does: finish, fail, be killed, be resumed), and the messages for a missing or unknown
subcommand."""

import json
import os
import signal

import numpy as np

import harness as h

CONFIG = """
version: 1
name: cmp
seed: 3
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 600, features: 5}}, validation: 0.2}}
shards: {{count: 2}}
training: {{epochs: {epochs}, batch_size: 40, optimizer: {{type: sgd, lr: 0.05}}}}
transport: {{type: ipc}}
fault_tolerance: {{on_worker_failure: abort, heartbeat_ms: 50, worker_timeout_ms: 1000,
                  checkpoint_every: {{steps: 20}}}}
output: {{dir: {out}, log_every: {{steps: 5}}}}
"""


def config(tmp, out, epochs=4, name="config.yaml"):
    return h.write_config(tmp, CONFIG.format(out=out, epochs=epochs), name=name)


def train(cfg, *extra, code=0):
    r = h.run("run", cfg, *extra, timeout=60)
    assert r.code == code, r
    return r


def compare(*args):
    return h.run("compare", *map(str, args), timeout=30)


def snapshot(folder):
    """Every file of a run folder and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def params(folder):
    return {p["name"]: np.array(p["data"], dtype=float).reshape(p["shape"])
            for p in json.loads((folder / "model.json").read_text())["parameters"]}


def test_a_run_against_itself_and_its_rerun(tmp):
    cfg = config(tmp, tmp / "runs" / "x")
    run_dir = tmp / "runs" / "x"
    train(cfg)
    first = snapshot(run_dir)
    r = compare(run_dir, run_dir)
    assert r.code == 0, r
    assert "result: equal (tolerance 0)" in r.stdout, r.stdout
    assert "config: the same" in r.stdout and "loss curves: the same" in r.stdout, r.stdout
    # The rerun keeps the first run whole as x.prev, byte for byte, and replaces x whole.
    train(cfg)
    assert snapshot(tmp / "runs" / "x.prev") == first
    r = compare(tmp / "runs" / "x.prev", run_dir, "--json")
    assert r.code == 0, r
    j = r.json()
    assert j["equal"] and j["model"]["equal"] and j["metrics"]["equal"], j
    assert j["model"]["max_abs_diff"]["diff"] == 0 and j["loss"]["divergence_step"] is None, j
    assert j["config_differences"] == [], j
    assert [w["rank"] for w in j["timing"]["workers"]] == [0, 1], j["timing"]
    assert j["timing"]["workers"][0]["a"]["steps"] > 0, j["timing"]
    assert j["timing"]["workers"][1]["b"]["load_seconds"] > 0, j["timing"]
    assert j["timing"]["workers"][1]["b"]["max_rss_bytes"] > 0, j["timing"]
    # A third run replaces the older .prev (the second run) and keeps no other.
    second = snapshot(run_dir)
    train(cfg)
    assert snapshot(tmp / "runs" / "x.prev") == second
    assert sorted(os.listdir(tmp / "runs")) == ["x", "x.prev"]


def test_runs_of_different_seeds_differ(tmp):
    a, b = tmp / "a", tmp / "b"
    cfg = config(tmp, a)
    train(cfg)
    train(cfg, "--set", "seed=4", "--set", f"output.dir={b}")
    r = compare(a, b, "--json")
    assert r.code == 1, r
    j = r.json()
    assert not j["equal"] and not j["model"]["equal"] and j["model"]["comparable"], j
    keys = {d["key"]: (d["a"], d["b"]) for d in j["config_differences"]}
    assert keys["seed"] == ("3", "4") and keys["output.dir"] == (str(a), str(b)), keys
    # The largest parameter difference, computed here from both model.json files.
    pa, pb = params(a), params(b)
    diffs = {name: np.abs(pa[name] - pb[name]) for name in pa}
    name = max(diffs, key=lambda n: diffs[n].max())
    top = j["model"]["max_abs_diff"]
    assert top["tensor"] == name and top["diff"] == diffs[name].max(), (top, diffs)
    assert list(np.unravel_index(np.argmax(diffs[name]), diffs[name].shape)) == top["index"], top
    # The divergence step: the first logged step whose train or validation loss differs.
    la = np.genfromtxt(a / "loss.csv", delimiter=",", names=True)
    lb = np.genfromtxt(b / "loss.csv", delimiter=",", names=True)
    differs = (la["train_loss"] != lb["train_loss"]) | (la["validation_loss"] != lb["validation_loss"])
    assert j["loss"]["divergence_step"] == int(la["step"][np.argmax(differs)]), j["loss"]
    metric = {m["name"]: m for m in j["metrics"]["values"]}["final_loss"]
    assert metric["delta"] == metric["b"] - metric["a"] and not metric["equal"], metric
    # The readable table says the same.
    r = compare(a, b)
    assert r.code == 1, r
    assert f"loss curves: diverge at step {j['loss']['divergence_step']}" in r.stdout, r.stdout
    assert "largest abs diff" in r.stdout and "result: differ: the models differ" in r.stdout, r.stdout
    # |a - b| <= 2 max(1, |a|, |b|) holds for any two numbers: tolerance 2 makes them equal.
    r = compare(a, b, "--tolerance", "2", "--json")
    assert r.code == 0, r
    assert r.json()["equal"] and r.json()["loss"]["divergence_step"] is None, r.json()


def test_models_of_different_types_are_reported(tmp):
    a, b = tmp / "a", tmp / "b"
    cfg = config(tmp, a)
    train(cfg)
    train(cfg, "--set", "model.type=mlp", "--set", "model.hidden=[3]", "--set", f"output.dir={b}")
    r = compare(a, b, "--json")
    assert r.code == 1, r
    assert not r.json()["model"]["comparable"], r.json()
    assert r.json()["model"]["reason"] == 'the models differ in type: "linear_regression" against "mlp"'
    r = compare(a, b)
    assert 'model: not comparable: the models differ in type: "linear_regression" against "mlp"' in r.stdout


def test_bad_folders_are_bad_input(tmp):
    a = tmp / "a"
    train(config(tmp, a))
    missing = tmp / "missing"
    r = compare(a, missing)
    assert r.code == 2 and r.stdout == "", r
    assert f"data error: {missing}: no such folder; give two run folders" in r.stderr, r.stderr
    (tmp / "empty").mkdir()
    r = compare(tmp / "empty", a)
    assert r.code == 2, r
    assert f"{tmp / 'empty'} is not a run folder: it has no summary.json" in r.stderr, r.stderr
    # A damaged copy: model.json cut short, then summary.json not JSON.
    broken = tmp / "broken"
    broken.mkdir()
    for name, data in snapshot(a).items():
        (broken / name).parent.mkdir(parents=True, exist_ok=True)
        (broken / name).write_bytes(data)
    (broken / "model.json").write_text((a / "model.json").read_text()[:50])
    r = compare(a, broken, "--json")
    assert r.code == 2, r
    assert r.json()["exit_code"] == 2 and r.json()["error"].startswith(f"{broken / 'model.json'}: not JSON"), r.stdout
    (broken / "summary.json").write_text("{")
    r = compare(broken, a)
    assert r.code == 2 and f"{broken / 'summary.json'}: not JSON" in r.stderr, r.stderr
    for bad in ("-1", "nan"):
        r = compare(a, a, "--tolerance", bad)
        assert r.code == 2 and "--tolerance" in r.stderr, r
    r = compare(a)
    assert r.code == 2 and "run_b is required" in r.stderr, r.stderr


def checkpoints(run_dir):
    folder = run_dir / "checkpoint"
    return [p for p in folder.iterdir() if not p.name.startswith(".")] if folder.exists() else []


def test_a_failing_rerun_leaves_the_earlier_run_whole(tmp):
    run_dir = tmp / "runs" / "x"
    prev = tmp / "runs" / "x.prev"
    cfg = config(tmp, run_dir)
    train(cfg)
    good = snapshot(run_dir)
    # A bad config is refused before anything is moved.
    r = train(cfg, "--set", "training.epochs=-1", code=2)
    assert snapshot(run_dir) == good and not prev.exists(), r
    # The coordinator killed outright mid-run: the earlier run is whole in x.prev; --resume
    # finishes the killed run in x and leaves x.prev alone.
    long_cfg = config(tmp, run_dir, epochs=400, name="long.yaml")
    proc = h.start(long_cfg)
    # The earlier run's checkpoints are in x until the new run has moved it away.
    h.wait_for(lambda: (prev.exists() and checkpoints(run_dir)) or proc.poll() is not None, 30,
               "a checkpoint")
    assert proc.poll() is None, "the run ended before it could be killed: make it longer"
    workers = h.children_of(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    h.assert_gone(workers, within=6)
    assert snapshot(prev) == good
    r = compare(prev, run_dir)
    assert r.code == 2 and "is not a run folder" in r.stderr, r  # killed: no summary.json yet
    train(long_cfg, "--resume")
    assert snapshot(prev) == good
    resumed = snapshot(run_dir)
    assert json.loads(resumed["summary.json"])["checkpoint"]["resumed_from_step"] > 0
    # A run that fails midway (a worker killed under abort, exit 3) says so where users look,
    # in x, and the run before it is whole in x.prev.
    train(cfg, "--fault", "rank=1,at_step=12,action=kill", code=3)
    assert snapshot(prev) == resumed
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed" and not (run_dir / "model.json").exists(), summary
    r = compare(prev, run_dir, "--json")
    assert r.code == 1, r
    assert r.json()["model"]["reason"].startswith(f"no model.json in {run_dir} (summary.json's status: failed)")


def test_a_folder_with_other_files_is_not_moved(tmp):
    run_dir = tmp / "mine"
    cfg = config(tmp, run_dir)
    train(cfg)
    (run_dir / "notes.txt").write_text("mine")
    train(cfg)
    assert (run_dir / "notes.txt").read_text() == "mine"
    assert not (tmp / "mine.prev").exists()
    # .prev in the way, not a run folder: refused before the run starts, nothing moved.
    (run_dir / "notes.txt").unlink()
    (tmp / "mine.prev").mkdir()
    (tmp / "mine.prev" / "keep").write_text("x")
    r = train(cfg, code=2)
    assert f"output.dir: {tmp / 'mine.prev'} is in the way: a rerun keeps the run before it there" in r.stderr, r
    assert (tmp / "mine.prev" / "keep").exists() and (run_dir / "model.json").exists()


def test_subcommand_messages(tmp):
    r = h.run("frobnicate")
    assert r.code == 2 and r.stdout == "", r
    lines = r.stderr.splitlines()
    assert lines[0] == "disttrain: unknown subcommand 'frobnicate'", r.stderr
    assert lines[1] == "The subcommands:", r.stderr
    listed = [line.split()[0] for line in lines[2:-1]]
    assert {"run", "validate", "predict", "eval", "compare", "export"} <= set(listed), listed
    r = h.run("-v", "comapre", "a", "b")
    assert r.code == 2, r
    assert r.stderr.startswith("disttrain: unknown subcommand 'comapre' (did you mean 'compare'?)\n"), r.stderr
    for args in ((), ("-v",)):
        r = h.run(*args)
        assert r.code == 2 and r.stdout == "", r
        assert "SUBCOMMANDS:" in r.stderr.upper() and "compare" in r.stderr, r.stderr
        assert r.stderr.rstrip().endswith("disttrain: give a subcommand (disttrain run config.yaml to train)")
    assert h.run("--version").code == 0
    # An option the subcommand does not have: named, with the one meant and where they are.
    cfg = h.source("configs", "quickstart.yaml")
    r = h.run("run", str(cfg), "--jsn")
    assert r.code == 2 and r.stdout == "", r
    assert r.stderr == ("disttrain run: unknown option '--jsn' (did you mean '--json'?); "
                        "'disttrain run --help' lists the options\n"), r.stderr
    r = h.run("run", str(cfg), "--sett=training.epochs=2")
    assert r.code == 2, r
    assert "unknown option '--sett' (did you mean '--set'?)" in r.stderr, r.stderr
    r = h.run("predict", "--frobnicate", "model.json", "x.csv")
    assert r.code == 2, r
    assert r.stderr.startswith("disttrain predict: unknown option '--frobnicate'; "), r.stderr


if __name__ == "__main__":
    h.main([test_a_run_against_itself_and_its_rerun, test_runs_of_different_seeds_differ,
            test_models_of_different_types_are_reported, test_bad_folders_are_bad_input,
            test_a_failing_rerun_leaves_the_earlier_run_whole,
            test_a_folder_with_other_files_is_not_moved, test_subcommand_messages])
