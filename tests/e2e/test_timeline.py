"""output.timeline / --timeline: timeline.json in Chrome trace format. Parsed as JSON, it has a
track for every rank, the coordinator (and each parameter server), every phase of the mode on
them, a track's events in order and never overlapping, the phases of one step of a worker in
the order the mode runs them, and no more than the window's steps on a run longer than the
window (the last ones). Off by default: no file. Bad values of the key exit 2."""

import json
from collections import defaultdict

import harness as h

WORKER_PHASES = {
    "star": ["wait for parameters", "compute", "send"],
    "servers": ["wait for parameters", "pull parameters", "compute", "push gradient", "send"],
    "ring": ["compute", "reduce-scatter", "all-gather", "apply"],
}
COORDINATOR_PHASES = {
    "star": {"broadcast", "gather", "apply", "evaluation", "checkpoint"},
    "servers": {"gather", "evaluation", "checkpoint"},
    "ring": {"evaluation", "checkpoint"},
}
AGGREGATION = {
    "star": "{mode: gradients}",
    "servers": "{mode: gradients, servers: 2}",
    "ring": "{mode: gradients, topology: ring}",
}
WORKERS = 3
# 1800 training rows, batches of 60: 30 steps an epoch, 60 in all; the window keeps 25.
TOTAL_STEPS = 60
WINDOW = 25


def config(tmp, out, mode="star", timeline="output_timeline_here"):
    text = f"""
version: 1
name: tl
seed: 3
model: {{type: linear_regression}}
data:
  synthetic: {{kind: linear, rows: 2000, features: 8, noise: 0.1}}
  validation: 0.1
shards: {{count: {WORKERS}}}
aggregation: {AGGREGATION[mode]}
training: {{epochs: 2, batch_size: 60, optimizer: {{type: sgd, lr: 0.05}}}}
fault_tolerance: {{checkpoint_every: {{steps: 20}}}}
output:
  dir: {tmp}/{out}
  log_every: {{steps: 10}}
"""
    if timeline is not None:
        text += f"  timeline: {timeline}\n"
    return h.write_config(tmp, text, name=f"{out}.yaml")


def ns(micros):
    return round(float(micros) * 1000)


def load(path):
    trace = json.loads(path.read_text())
    assert trace["displayTimeUnit"] == "ms", trace.keys()
    names, tracks = {}, defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "M":
            if e["name"] in ("process_name", "thread_name"):
                names[(e["name"], e["pid"], e["tid"] if e["name"] == "thread_name" else None)] = \
                    e["args"]["name"]
            continue
        assert e["ph"] == "X" and e["cat"] == "step", e
        assert isinstance(e["args"]["step"], int) and e["args"]["step"] >= 1, e
        tracks[(e["pid"], e["tid"])].append(e)
    return names, tracks


def check_track(key, events):
    # In the file's order, which is time order, and never overlapping (one thread, one phase at
    # a time); the steps never go back.
    for a, b in zip(events, events[1:]):
        assert ns(a["ts"]) + ns(a["dur"]) <= ns(b["ts"]), (key, a, b)
        assert a["args"]["step"] <= b["args"]["step"], (key, a, b)


def check_window(key, events, window, total):
    steps = {e["args"]["step"] for e in events}
    assert len(steps) <= window, (key, len(steps))
    assert max(steps) == total, (key, max(steps))
    assert min(steps) > total - window, (key, min(steps))


def check_run(tmp, out, mode, window=WINDOW):
    names, tracks = load(tmp / out / "timeline.json")
    coordinator_pid = WORKERS
    assert names[("process_name", coordinator_pid, None)] == "coordinator", names
    for rank in range(WORKERS):
        assert names[("process_name", rank, None)] == f"worker {rank}", names
        events = tracks[(rank, 0)]
        assert events, (mode, rank, sorted(tracks))
        check_track((mode, rank), events)
        check_window((mode, rank), events, window, TOTAL_STEPS)
        phases = [e["name"] for e in events]
        assert set(WORKER_PHASES[mode]) <= set(phases), (mode, rank, set(phases))
        # One step's phases in the order the mode runs them (a middle step: whole in the window).
        step = TOTAL_STEPS - 2
        order = [e["name"] for e in events if e["args"]["step"] == step]
        wanted = [p for p in order if p in WORKER_PHASES[mode]]
        dedup = [p for i, p in enumerate(wanted) if i == 0 or wanted[i - 1] != p]
        assert dedup == WORKER_PHASES[mode], (mode, rank, order)
        if mode == "ring":
            # 2 (N - 1) segments a step: N - 1 of each half, numbered 0 .. N - 2.
            for half in ("reduce-scatter", "all-gather"):
                segs = [e["args"]["segment"] for e in events
                        if e["args"]["step"] == step and e["name"] == half]
                assert segs == list(range(WORKERS - 1)), (rank, half, segs)
    coordinator = tracks[(coordinator_pid, 0)]
    check_track((mode, "coordinator"), coordinator)
    assert COORDINATOR_PHASES[mode] <= {e["name"] for e in coordinator}, (
        mode, {e["name"] for e in coordinator})
    if mode == "servers":
        for k in range(2):
            events = tracks[(coordinator_pid, k + 1)]
            assert names[("thread_name", coordinator_pid, k + 1)] == f"server {k}", names
            assert {e["name"] for e in events} == {"server apply"}, (k, events[:3])
            check_track(("server", k), events)
            check_window(("server", k), events, window, TOTAL_STEPS)
    return tracks


def test_star(tmp):
    r = h.run("run", config(tmp, "star", "star", f"{{steps: {WINDOW}}}"), "--json")
    assert r.code == 0, r
    assert r.json()["steps"] == TOTAL_STEPS, r.json()["steps"]
    check_run(tmp, "star", "star")


def test_sharded_servers(tmp):
    r = h.run("run", config(tmp, "servers", "servers", f"{{steps: {WINDOW}}}"))
    assert r.code == 0, r
    check_run(tmp, "servers", "servers")


def test_ring(tmp):
    r = h.run("run", config(tmp, "ring", "ring", f"{{steps: {WINDOW}}}"))
    assert r.code == 0, r
    check_run(tmp, "ring", "ring")


def test_off_by_default_and_the_flag(tmp):
    r = h.run("run", config(tmp, "off", timeline=None))
    assert r.code == 0, r
    assert (tmp / "off" / "model.json").exists()
    assert not (tmp / "off" / "timeline.json").exists()
    resolved = (tmp / "off" / "config.resolved.yaml").read_text()
    assert "timeline" not in resolved, resolved
    # --timeline: the default window (1000 steps) holds the whole run; the model is the same
    # bytes as without it.
    r = h.run("run", config(tmp, "on", timeline=None), "--timeline")
    assert r.code == 0, r
    assert (tmp / "on" / "model.json").read_bytes() == (tmp / "off" / "model.json").read_bytes()
    names, tracks = load(tmp / "on" / "timeline.json")
    steps = {e["args"]["step"] for e in tracks[(0, 0)]}
    assert steps == set(range(1, TOTAL_STEPS + 1)), sorted(steps)
    r = h.run("run", config(tmp, "true", timeline="true"))
    assert r.code == 0, r
    assert (tmp / "true" / "timeline.json").exists()
    r = h.run("run", config(tmp, "false", timeline="false"))
    assert r.code == 0 and not (tmp / "false" / "timeline.json").exists(), r


def test_config_errors(tmp):
    for value, words in [("maybe", "output.timeline: expected true, false or a map"),
                         ("{steps: 0}", "output.timeline.steps"),
                         ("{step: 5}", "did you mean 'output.timeline.steps'")]:
        r = h.run("run", config(tmp, "bad", timeline=value))
        assert r.code == 2, (value, r)
        assert words in r.stderr, (value, r.stderr)


if __name__ == "__main__":
    h.main([test_star, test_sharded_servers, test_ring, test_off_by_default_and_the_flag,
            test_config_errors])
