"""output.timeline / --timeline: timeline.json in Chrome trace format, in every mode. Parsed as
JSON, it has a track for every rank, the coordinator (and each parameter server), every phase
of the mode on them, a track's events in order and never overlapping, one step's (or round's)
phases in the order the mode runs them, and no more than the window's steps on a run longer
than the window (the last ones). Async servers' `apply push` events name the worker and the
staleness summary.json counts. Off by default: no file. Bad values of the key exit 2."""

import json
from collections import Counter, defaultdict

import harness as h

WORKERS = 3
# 1800 training rows; 60 steps in all: batches of 60 (gradients modes) or of 20 rows a worker
# (parameters, async: 30 local steps an epoch); 2 epochs. The window keeps 25.
TOTAL_STEPS = 60
WINDOW = 25
SYNC_EVERY = 5  # parameters mode: 12 rounds of 5 local steps

STAR = ["wait for parameters", "compute", "send"]
SERVERS = ["wait for parameters", "pull parameters", "compute", "push gradient", "send"]
# Per mode: the aggregation, the workers, one step's phases on a worker in order (consecutive
# repeats merged), the coordinator's phases, and the parameter servers' (tid 1, 2, ...).
MODES = {
    "star": {"aggregation": "{mode: gradients}", "worker": STAR,
             "coordinator": {"broadcast", "gather", "apply", "evaluation", "checkpoint"}},
    "servers": {"aggregation": "{mode: gradients, servers: 2}", "worker": SERVERS,
                "coordinator": {"gather", "evaluation", "checkpoint"},
                "servers": ["server apply"] * 2},
    "ring": {"aggregation": "{mode: gradients, topology: ring}",
             "worker": ["compute", "reduce-scatter", "all-gather", "apply"],
             "coordinator": {"evaluation", "checkpoint"}},
    "parameters": {
        "aggregation": f"{{mode: parameters, parameters: {{sync_every: {{steps: {SYNC_EVERY}}}}}}}",
        "batch": 20,
        # A round: the merged model's arrival, its local steps, the reply.
        "worker": ["wait for parameters"] + ["local step"] * SYNC_EVERY + ["send"],
        "coordinator": {"broadcast", "gather", "merge", "evaluation", "checkpoint"}},
    "async": {"aggregation": "{mode: async, servers: 2, async: {max_staleness: 1}}", "batch": 20,
              "worker": ["pull parameters", "compute", "push gradient"],
              "coordinator": {"evaluation", "checkpoint"}, "servers": ["apply push"] * 2},
    "tensor": {"aggregation": "{mode: gradients}", "tensor": 2,
               "coordinator": {"broadcast", "gather", "apply", "evaluation", "checkpoint"}},
    "sparse star": {"aggregation": "{mode: gradients}", "sparse": True, "worker": STAR,
                    "coordinator": {"broadcast", "gather", "apply", "evaluation", "checkpoint"}},
    "sparse servers": {"aggregation": "{mode: gradients, servers: 2}", "sparse": True,
                       "coordinator": {"gather", "evaluation", "checkpoint"},
                       "servers": ["server apply"] * 2},
    "sparse async": {"aggregation": "{mode: async, servers: 2}", "sparse": True, "batch": 20,
                     "worker": ["pull parameters", "compute", "push gradient"],
                     "coordinator": {"evaluation", "checkpoint"}, "servers": ["apply push"] * 2},
}


def clicks(tmp):
    path = tmp / "clicks.csv"
    if not path.exists():
        with open(path, "w") as f:
            r = h.run("gen", "clicks", "--rows", 2000, "--fields", 8, "--seed", 3, stdout=f)
        assert r.code == 0, r
    return path


def config(tmp, out, mode="star", timeline=None):
    m = MODES[mode]
    if m.get("sparse"):
        model = "logistic_regression"
        data = (f"  path: {clicks(tmp)}\n  label: click\n"
                "  hash: {bits: 12, columns: [C1, C2, C3, C4, C5, C6, C7, C8]}\n")
    else:
        model = "linear_regression"
        data = "  synthetic: {kind: linear, rows: 2000, features: 8, noise: 0.1}\n"
    tensor = f"parallelism: {{tensor: {m['tensor']}}}\n" if "tensor" in m else ""
    text = f"""
version: 1
name: tl
seed: 3
model: {{type: {model}}}
data:
{data}  validation: 0.1
shards: {{count: {WORKERS}}}
{tensor}aggregation: {m["aggregation"]}
training: {{epochs: 2, batch_size: {m.get("batch", 60)}, optimizer: {{type: sgd, lr: 0.05}}}}
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


def merged(names):
    return [p for i, p in enumerate(names) if i == 0 or names[i - 1] != p]


def check_worker_order(mode, rank, events):
    """One step's (a round's, in parameters mode) phases in the order the mode runs them."""
    if mode == "parameters":
        # The last full round: steps 56..60 (its wait is on its first step, its send on its last).
        first = TOTAL_STEPS - SYNC_EVERY + 1
        order = [e["name"] for e in events if first <= e["args"]["step"] <= TOTAL_STEPS]
        assert order == MODES[mode]["worker"], (rank, order)
        return
    step = TOTAL_STEPS - 2  # a middle step: whole in the window
    order = [e["name"] for e in events if e["args"]["step"] == step]
    if mode == "tensor":
        # Compute in pieces between the group's all-reduces of partial results.
        inner = order[1:-1]
        assert order[0] == "wait for parameters" and order[-1] == "send", (rank, order)
        assert inner[0] == "compute" and inner[-1] == "compute", (rank, order)
        assert "tensor all-reduce" in inner, (rank, order)
        assert all(a != b for a, b in zip(inner, inner[1:])), (rank, order)
        return
    if mode == "sparse servers":
        # The values of a step's keys come with the step before's push (pulled after its
        # send), or at the step's start when it starts an epoch.
        assert merged(order) in (SERVERS, SERVERS[:1] + SERVERS[2:] + SERVERS[1:2]), (rank, order)
        return
    wanted = MODES[mode]["worker"]
    assert merged([p for p in order if p in wanted]) == wanted, (mode, rank, order)
    if mode == "ring":
        # One reduce-scatter and one all-gather a step, of N - 1 segments each.
        halves = [e for e in events if e["args"]["step"] == step and "-" in e["name"]]
        assert [e["name"] for e in halves] == ["reduce-scatter", "all-gather"], (rank, halves)
        assert all(e["args"]["segments"] == WORKERS - 1 for e in halves), (rank, halves)


def check_run(tmp, out, mode, window=WINDOW):
    m = MODES[mode]
    names, tracks = load(tmp / out / "timeline.json")
    ranks = WORKERS * m.get("tensor", 1)
    coordinator_pid = ranks
    assert names[("process_name", coordinator_pid, None)] == "coordinator", names
    worker_total = TOTAL_STEPS
    for rank in range(ranks):
        assert names[("process_name", rank, None)] == f"worker {rank}", names
        events = tracks[(rank, 0)]
        assert events, (mode, rank, sorted(tracks))
        check_track((mode, rank), events)
        check_window((mode, rank), events, window, worker_total)
        check_worker_order(mode, rank, events)
    coordinator = tracks[(coordinator_pid, 0)]
    check_track((mode, "coordinator"), coordinator)
    assert m["coordinator"] <= {e["name"] for e in coordinator}, (
        mode, {e["name"] for e in coordinator})
    # Async: the coordinator and the servers count applied updates, every worker's.
    total = TOTAL_STEPS * (WORKERS if "async" in mode else 1)
    for k, phase in enumerate(m.get("servers", [])):
        events = tracks[(coordinator_pid, k + 1)]
        assert names[("thread_name", coordinator_pid, k + 1)] == f"server {k}", names
        assert {e["name"] for e in events} == {phase}, (k, events[:3])
        check_track(("server", k), events)
        check_window(("server", k), events, window, total)
    return names, tracks


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


def test_parameters(tmp):
    r = h.run("run", config(tmp, "parameters", "parameters", f"{{steps: {WINDOW}}}"), "--json")
    assert r.code == 0, r
    assert r.json()["steps"] == TOTAL_STEPS, r.json()["steps"]
    _, tracks = check_run(tmp, "parameters", "parameters")
    # The coordinator's spans of a round carry the step it ends at: multiples of SYNC_EVERY.
    rounds = {e["args"]["step"] for e in tracks[(WORKERS, 0)] if e["name"] == "merge"}
    assert rounds == set(range(40, TOTAL_STEPS + 1, SYNC_EVERY)), sorted(rounds)


def test_async(tmp):
    r = h.run("run", config(tmp, "async", "async", f"{{steps: {WINDOW}}}"), "--json")
    assert r.code == 0, r
    _, tracks = check_run(tmp, "async", "async")
    bound = (WORKERS - 1) * (2 * 1 + 1)  # max_staleness 1
    for k in range(2):
        for e in tracks[(WORKERS, k + 1)]:
            assert e["args"]["worker"] in range(WORKERS), e
            assert 0 <= e["args"]["staleness"] <= bound, e


def test_async_staleness_is_the_summary_s(tmp):
    # One server and a window that holds every update: its `apply push` events are every push,
    # with the staleness summary.json counts, each worker's TOTAL_STEPS pushes.
    cfg = config(tmp, "async1", "async", None)
    r = h.run("run", cfg, "--timeline", "--set", "aggregation.servers=1", "--json")
    assert r.code == 0, r
    _, tracks = load(tmp / "async1" / "timeline.json")
    pushes = tracks[(WORKERS, 1)]
    assert Counter(e["args"]["worker"] for e in pushes) == {w: TOTAL_STEPS for w in range(WORKERS)}
    summary = json.loads((tmp / "async1" / "summary.json").read_text())
    histogram = summary["aggregation"]["staleness"]["histogram"]
    seen = Counter(str(e["args"]["staleness"]) for e in pushes)
    assert seen == Counter(histogram), (seen, histogram)


def test_tensor(tmp):
    r = h.run("run", config(tmp, "tensor", "tensor", f"{{steps: {WINDOW}}}"))
    assert r.code == 0, r
    _, tracks = check_run(tmp, "tensor", "tensor")
    exchange = [e for e in tracks[(0, 0)] if e["name"] == "tensor all-reduce"]
    assert all(e["args"]["values"] > 0 for e in exchange), exchange[:3]


def test_sparse(tmp):
    for mode in ("sparse star", "sparse servers", "sparse async"):
        out = mode.replace(" ", "_")
        r = h.run("run", config(tmp, out, mode, f"{{steps: {WINDOW}}}"), "--json")
        assert r.code == 0, (mode, r)
        steps = TOTAL_STEPS * (WORKERS if "async" in mode else 1)
        assert r.json()["steps"] == steps, (mode, r.json()["steps"])
        check_run(tmp, out, mode)


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
    h.main([test_star, test_sharded_servers, test_ring, test_parameters, test_async,
            test_async_staleness_is_the_summary_s, test_tensor, test_sparse,
            test_off_by_default_and_the_flag, test_config_errors])
