"""Elastic membership across hosts over tcp (network namespaces, netns.py): two workers join a
coordinator host from two other hosts, CURVE-secured, and one of them leaves mid-run (the
`leave` fault: it SIGTERMs itself at a step). The leave travels over tcp like any message: the
run records it without a failure and trains the same bits as the all-local run with the same
leave. `disttrain leave` on the coordinator's host, asked for the worker on another host, says
where to send the signal instead. Needs root and iproute2: skipped with a message otherwise."""

import json

import harness as h
import netns
import test_hosts as hosts

CONFIG = """
version: 1
name: elastic-hosts
seed: 13
model: {{type: logistic_regression}}
data: {{synthetic: {{kind: logistic, rows: 3000, features: 6}}}}
shards: {{count: 4}}
training: {{epochs: {epochs}, batch_size: 64, optimizer: {{type: sgd, lr: 0.1}}}}
transport: {{type: tcp, security: curve, join_timeout_ms: {join},
            keys: {{secret: {keys}/coordinator.key, authorized: {keys}/workers.pub}}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1500, elastic: {{min_workers: 2}}}}
{faults}
output: {{dir: {out}}}
"""


def config(tmp, out, epochs=4, faults=""):
    text = CONFIG.format(epochs=epochs, join=20000, keys=tmp / "keys", out=tmp / out,
                         faults=faults)
    return h.write_config(tmp, text, f"{out}.yaml")


def summary(tmp, out):
    return json.loads((tmp / out / "summary.json").read_text())


def test_a_worker_on_another_host_leaves(tmp):
    if hosts.skipped("test_a_worker_on_another_host_leaves"):
        return
    hosts.keys(tmp)
    leave = "faults: [{rank: 3, at_step: 60, action: leave}]"
    r = h.run("run", config(tmp, "local", faults=leave), "--json")
    assert r.code == 0, r
    expected = (tmp / "local" / "model.json").read_bytes()
    cfg = config(tmp, "hosts", faults=leave)
    before = hosts.root_links()
    with netns.Hosts(2, tmp) as net:
        coord, endpoint = hosts.start_coordinator(net, cfg, "--expect-workers", "2")
        workers = [hosts.join(net, net.workers[i], endpoint, rank, tmp) for i, rank in ((0, 2), (1, 3))]
        assert net.wait(coord, 60) == 0, net.stderr(coord)
        for w in workers:  # the leaver too: a planned leave exits 0
            assert net.wait(w, 20) == 0, net.stderr(w)
        assert "leaving the run (SIGTERM, fault_tolerance.elastic)" in net.stderr(workers[1])
    hosts.check_gone(net, before)
    assert (tmp / "hosts" / "model.json").read_bytes() == expected, "the leave over tcp trained otherwise"
    s = summary(tmp, "hosts")
    assert s["failures"] == [], s["failures"]
    [event] = s["membership"]["events"]
    assert (event["event"], event["rank"], event["step"], event["workers"]) == ("leave", 3, 61, 3), event
    local = summary(tmp, "local")["membership"]["events"][0]
    assert local["step"] == event["step"], (local, event)


def test_leave_names_the_host_of_a_remote_worker(tmp):
    if hosts.skipped("test_leave_names_the_host_of_a_remote_worker"):
        return
    hosts.keys(tmp)
    cfg = config(tmp, "remote", epochs=400)
    before = hosts.root_links()
    with netns.Hosts(2, tmp) as net:
        coord, endpoint = hosts.start_coordinator(net, cfg, "--expect-workers", "2")
        workers = [hosts.join(net, net.workers[i], endpoint, rank, tmp) for i, rank in ((0, 2), (1, 3))]
        members = tmp / "remote" / "members.json"
        h.wait_for(members.exists, 60, "members.json")
        listed = {w["rank"]: w for w in json.loads(members.read_text())["workers"]}
        assert listed[3]["host"] == "node1" and listed[3]["started"] == "", listed
        asked = net.run(net.coord, "leave", "leave", tmp / "remote", "--rank", "3")
        assert net.wait(asked, 20) == 2, net.stderr(asked)
        pid = listed[3]["pid"]
        assert f"worker 3 runs on host node1 (pid {pid}), not on this one; a planned leave is a " \
            f"SIGTERM to its process: run `kill -TERM {pid}` on node1" in net.stderr(asked), \
            net.stderr(asked)
        # A local worker of the coordinator's host leaves when asked there.
        asked = net.run(net.coord, "leave0", "leave", tmp / "remote", "--rank", "0")
        assert net.wait(asked, 60) == 0, net.stderr(asked)
        coord.terminate()
        net.wait(coord, 30)
        for w in workers:
            net.wait(w, 30)
    hosts.check_gone(net, before)
    s = summary(tmp, "remote")
    assert [(e["event"], e["rank"]) for e in s["membership"]["events"]] == [("leave", 0)], s["membership"]


if __name__ == "__main__":
    h.main([test_a_worker_on_another_host_leaves,
            test_leave_names_the_host_of_a_remote_worker])
