"""Several hosts on one machine: the test makes its own network namespaces (a coordinator host
and worker hosts, joined by veth links to a bridge, see netns.py) and runs a CURVE-secured run
across them: the coordinator listens on its host's address, workers join from the other hosts
with keys from `disttrain keygen`, ring peers link up across the bridge, and the model equals
the all-local run's, bit for bit. Then one worker host's cable is pulled mid-run and the
fault-tolerance policy is applied (abort, continue, restart by a worker from a spare host),
while the cut worker gives up on its own; a cable pulled for a moment changes nothing, nor do links
that lose 3% of their packets, and a worker killed while its cable is out (a half-open
connection) is still found. Needs root and iproute2: skipped with a message
otherwise. Everything is torn down and checked gone, also on failure."""

import json
import os
import re
import shutil
import signal
import time

import harness as h
import netns

# Small and quick: the equality tests.
CONFIG = """
version: 1
name: hosts
seed: 11
model: {{type: logistic_regression}}
data: {{synthetic: {{kind: logistic, rows: 3000, features: 6}}}}
shards: {{count: 4}}
aggregation: {{topology: {topology}}}
training: {{epochs: 4, batch_size: 64, optimizer: {{type: sgd, lr: 0.1}}}}
transport: {{type: tcp, security: curve, join_timeout_ms: {join},
            keys: {{secret: {keys}/coordinator.key, authorized: {keys}/workers.pub}}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1500, on_worker_failure: {policy}}}
output: {{dir: {out}}}
"""

# Long enough to pull a cable in the middle (a checkpoint every 100 steps marks progress).
LONG = """
version: 1
name: hosts-cut
seed: 7
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 8000, features: 10, noise: 0.1}}}}
shards: {{count: 4}}
aggregation: {{topology: {topology}}}
training: {{epochs: 20, batch_size: 32, optimizer: {{type: sgd, lr: 0.01, momentum: 0.9}}}}
transport: {{type: tcp, security: curve, join_timeout_ms: {join},
            keys: {{secret: {keys}/coordinator.key, authorized: {keys}/workers.pub}}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1500, on_worker_failure: {policy}}}
output: {{dir: {out}, log_every: {{steps: 500}}}}
"""


def skipped(test):
    why = netns.unavailable()
    if why:
        print(f"skip {test}: {why}")
    return why is not None


def keys(tmp):
    """A key pair for the coordinator and one per worker host (the README's recipe)."""
    folder = tmp / "keys"
    folder.mkdir()
    pubs = []
    for name in ("coordinator", "host0", "host1", "host2"):
        r = h.run("keygen", folder / name)
        assert r.code == 0, r
        if name != "coordinator":
            pubs.append((folder / f"{name}.pub").read_text())
    (folder / "workers.pub").write_text("".join(pubs))
    return folder


def config(tmp, template, out, topology="star", policy="abort", join=20000):
    text = template.format(topology=topology, policy=policy, join=join, keys=tmp / "keys",
                           out=tmp / out)
    return h.write_config(tmp, text, f"{out}.yaml")


def local_model(tmp, template, out, **kw):
    """The all-local run of the same config, in the test's own namespace."""
    r = h.run("run", config(tmp, template, out, **kw), "--json")
    assert r.code == 0, r
    return (tmp / out / "model.json").read_bytes(), r.json()


def start_coordinator(net, cfg, *args, listen=None):
    """`disttrain -v run cfg --listen ADDR:0 ...` on the coordinator's host; returns it and the
    endpoint it printed (the port picked by the system)."""
    proc = net.run(net.coord, "coordinator", "-v", "run", cfg,
                   "--listen", listen or f"{net.addr[net.coord]}:0", *args)
    found = h.wait_for(lambda: re.search(r"worker --connect (tcp://\S+)", net.stderr(proc))
                       or proc.poll() is not None, 20, "the coordinator's endpoint")
    assert found is not True, "the coordinator exited early:\n" + net.stderr(proc)
    endpoint = found.group(1)
    assert endpoint.startswith(f"tcp://{net.addr[net.coord]}:"), endpoint
    return proc, endpoint


def join(net, host, endpoint, rank, tmp, name=None):
    """`disttrain worker --connect endpoint --rank R` on `host`, with that host's key."""
    key = tmp / "keys" / f"host{(net.workers + net.spares).index(host)}.key"
    return net.run(host, name or f"worker{rank}", "worker", "--connect", endpoint,
                   "--rank", rank, "--key", key, "--server-key", tmp / "keys" / "coordinator.pub")


def check_gone(net, before):
    """After teardown: no namespace of this run, no interface of its in the host's namespace,
    no process it started."""
    assert not set(net.made) & set(netns.ours()), netns.ours()
    new = set(root_links()) - set(before)
    assert not new & {"br0", "eth0"} and not [n for n in new if n.startswith("veth")], new
    h.assert_gone([p.pid for p in net.procs] + sorted(net.killed))


def root_links():
    return [line.split(":")[1].strip().split("@")[0]
            for line in netns.ip("-o", "link", "show").stdout.splitlines()]


def test_workers_on_other_hosts_train_the_local_model(tmp):
    """Two worker hosts join a coordinator host that runs two workers of its own, in the star
    topology and in the ring (peer links cross the bridge, both ways): the local model."""
    if skipped("test_workers_on_other_hosts_train_the_local_model"):
        return
    keys(tmp)
    for topology in ("star", "ring"):
        expected, _ = local_model(tmp, CONFIG, f"local-{topology}", topology=topology)
        cfg = config(tmp, CONFIG, f"hosts-{topology}", topology=topology)
        before = root_links()
        with netns.Hosts(2, tmp) as net:
            coord, endpoint = start_coordinator(net, cfg, "--expect-workers", "2")
            workers = [join(net, net.workers[i], endpoint, rank, tmp) for i, rank in ((0, 2), (1, 3))]
            assert net.wait(coord, 60) == 0, net.stderr(coord)
            for w in workers:
                assert net.wait(w, 20) == 0, net.stderr(w)
            err = net.stderr(coord)
            for rank, host in ((2, "node0"), (3, "node1")):
                assert f"worker {rank} joined from {host} (pid" in err, (topology, err)
        check_gone(net, before)
        assert (tmp / f"hosts-{topology}" / "model.json").read_bytes() == expected, topology


def test_every_interface_advertised(tmp):
    """`--listen 0.0.0.0:0 --advertise ADDR` on the coordinator's host: its listeners bind every
    interface and the workers on the other hosts are told ADDR (ring: their peer links too).
    Without --advertise the host's address on its default route is announced, and a host with
    no default route (the test's own hosts have none) is told to give --advertise."""
    if skipped("test_every_interface_advertised"):
        return
    keys(tmp)
    expected, _ = local_model(tmp, CONFIG, "local-ring", topology="ring")
    before = root_links()
    with netns.Hosts(2, tmp) as net:
        head = net.addr[net.coord]
        r = net.run(net.coord, "no-route", "run", config(tmp, CONFIG, "no-route"),
                    "--listen", "0.0.0.0:0")
        assert net.wait(r, 30) == 2, net.stderr(r)
        assert "no default route" in net.stderr(r) and "--advertise" in net.stderr(r), net.stderr(r)
        for advertise in (["--advertise", head], []):
            if not advertise:  # the coordinator's host gets a default route, through its bridge
                netns.ip("route", "add", "default", "dev", "br0", ns=net.coord)
            out = "advertised" if advertise else "default-route"
            coord, endpoint = start_coordinator(net, config(tmp, CONFIG, out, topology="ring"),
                                                "--expect-workers", "2", *advertise,
                                                listen="0.0.0.0:0")
            port = endpoint.rsplit(":", 1)[1]
            assert f"bound to 0.0.0.0:{port}; other processes are told tcp://{head}:{port}" in \
                net.stderr(coord), net.stderr(coord)
            workers = [join(net, net.workers[i], endpoint, rank, tmp) for i, rank in ((0, 2), (1, 3))]
            assert net.wait(coord, 60) == 0, net.stderr(coord)
            for w in workers:
                assert net.wait(w, 20) == 0, net.stderr(w)
            assert (tmp / out / "model.json").read_bytes() == expected, out
    check_gone(net, before)


def cut_mid_run(tmp, net, cfg, out, victim=3):
    """Starts the run with ranks 2 and 3 joined from the two worker hosts, and pulls rank
    `victim`'s cable once training is under way. Returns (coordinator, workers by rank, time)."""
    coord, endpoint = start_coordinator(net, cfg, "--expect-workers", "2")
    workers = {rank: join(net, net.workers[rank - 2], endpoint, rank, tmp) for rank in (2, 3)}
    # Training has started once the first checkpoint (step 100) is on disk: a worker lost
    # before that aborts whatever the policy (documented), which is not what is tested here.
    folder = out / "checkpoint"
    h.wait_for(lambda: (folder.exists() and any(p.name.startswith("step-") for p in folder.iterdir()))
               or coord.poll() is not None, 60, "the first checkpoint")
    assert coord.poll() is None, "the run ended before the cut:\n" + net.stderr(coord)
    net.cut(net.workers[victim - 2])
    return coord, workers, endpoint, time.monotonic()


def summary(out):
    return json.loads((out / "summary.json").read_text())


def test_cut_link_aborts_naming_the_worker(tmp):
    if skipped("test_cut_link_aborts_naming_the_worker"):
        return
    keys(tmp)
    for topology in ("star", "ring"):
        out = tmp / f"abort-{topology}"
        cfg = config(tmp, LONG, out.name, topology=topology, policy="abort")
        before = root_links()
        with netns.Hosts(2, tmp) as net:
            coord, workers, _, cut_at = cut_mid_run(tmp, net, cfg, out)
            assert net.wait(coord, 30) == 3, net.stderr(coord)
            # Found by its silence within worker_timeout_ms (1.5 s); the deadline is generous.
            assert time.monotonic() - cut_at < 10, "abort took too long"
            err = net.stderr(coord)
            assert f"worker 3 (pid {workers[3].pid} on node1) sent no heartbeat for" in err, err
            # The cut worker hears nothing either and gives up on its own (no hang); the other
            # joined worker is told why the run ended.
            for rank in (3, 2):
                assert net.wait(workers[rank], 30) == 3, net.stderr(workers[rank])
            assert "lost the coordinator at tcp://" in net.stderr(workers[3])
            assert "the coordinator ended the run: worker 3 (pid" in net.stderr(workers[2]), \
                net.stderr(workers[2])
            s = summary(out)
            assert s["status"] == "failed", s
            [f] = s["failures"]
            assert f["rank"] == 3 and f["action"] == "abort" and f["pid"] == workers[3].pid, f
        check_gone(net, before)


def test_cut_link_continue_and_restart(tmp):
    """continue: the run finishes with the other three (the ring re-forms over them) and a
    sane model; restart: a new worker 3 joins from a spare host and the model is the unfailed
    run's, bit for bit."""
    if skipped("test_cut_link_continue_and_restart"):
        return
    keys(tmp)
    for topology in ("star", "ring"):
        expected, clean = local_model(tmp, LONG, f"clean-{topology}", topology=topology)
        for policy in ("continue", "restart"):
            out = tmp / f"{policy}-{topology}"
            cfg = config(tmp, LONG, out.name, topology=topology, policy=policy)
            before = root_links()
            with netns.Hosts(2, tmp, spares=1) as net:
                coord, workers, endpoint, _ = cut_mid_run(tmp, net, cfg, out)
                if policy == "restart":
                    spare = join(net, net.spares[0], endpoint, 3, tmp, "replacement3")
                assert net.wait(coord, 90) == 0, net.stderr(coord)
                err = net.stderr(coord)
                assert f"worker 3 (pid {workers[3].pid} on node1) sent no heartbeat for" in err, err
                assert net.wait(workers[3], 30, "the cut worker") != 0, net.stderr(workers[3])
                assert net.wait(workers[2], 20) == 0, net.stderr(workers[2])
                s = summary(out)
                [f] = s["failures"]
                assert f["rank"] == 3 and f["action"] == policy and f["pid"] == workers[3].pid, f
                if policy == "continue":
                    assert "continuing with 3 workers" in err, err
                    assert f["reassigned"]["rows"] == 2000, f
                    assert s["steps"] == clean["steps"], (s["steps"], clean["steps"])
                    assert abs(s["final_loss"] - clean["final_loss"]) < 0.05 * clean["final_loss"], \
                        (topology, s["final_loss"], clean["final_loss"])
                else:
                    assert net.wait(spare, 20) == 0, net.stderr(spare)
                    assert f"worker 3 is back (pid {spare.pid})" in err, err
                    assert f["replacement_pid"] == spare.pid, f
                    assert (out / "model.json").read_bytes() == expected, topology
            check_gone(net, before)


def test_partition_that_heals_changes_nothing(tmp):
    """A worker host's cable pulled twice for 300 ms mid-run (far shorter than
    worker_timeout_ms, 1.5 s): TCP retransmits what was in flight once it is back, nobody is
    declared lost, and the model is the all-local run's, bit for bit (no message lost or
    applied twice). (tc netem's loss and delay need the kernel's sch_netem, which the
    development VM's kernel lacks: a link that goes down and up is what every kernel has.)"""
    if skipped("test_partition_that_heals_changes_nothing"):
        return
    keys(tmp)
    for topology in ("star", "ring"):
        expected, _ = local_model(tmp, LONG, f"clean-{topology}", topology=topology)
        out = tmp / f"flap-{topology}"
        cfg = config(tmp, LONG, out.name, topology=topology, policy="abort")
        before = root_links()
        with netns.Hosts(2, tmp) as net:
            coord, workers, _, _ = cut_mid_run(tmp, net, cfg, out)
            victim = net.workers[1]
            # Twice, 2 s apart: TCP's retransmission timer backs off while the cable is out,
            # so what was in flight needs some time after each heal to get through.
            for cut in range(2):
                if cut:
                    time.sleep(2)
                    net.cut(victim)
                time.sleep(0.3)
                net.heal(victim)
            assert net.wait(coord, 90) == 0, net.stderr(coord)
            for rank in (2, 3):
                assert net.wait(workers[rank], 20) == 0, net.stderr(workers[rank])
            s = summary(out)
            assert s["failures"] == [], s["failures"]
            assert (out / "model.json").read_bytes() == expected, topology
        check_gone(net, before)


def lossy(ns, probability):
    """Drops each packet into and out of host `ns` with `probability` (iptables' statistic
    match, in the host's own namespace). The kernel's tc netem would add delay too, but not
    every kernel has it (the development VM's does not); this needs only iptables."""
    for chain in ("INPUT", "OUTPUT"):
        netns.ip("netns", "exec", ns, "iptables", "-A", chain, "-m", "statistic", "--mode",
                 "random", "--probability", str(probability), "-j", "DROP", ns=None)


def iptables_missing():
    return None if shutil.which("iptables") else "no iptables (Debian: apt-get install iptables)"


def test_lossy_links_change_nothing(tmp):
    """Both worker hosts lose 3% of their packets, both ways, for the whole run (star and
    ring, the ring's peer links crossing the lossy links too): TCP retransmits, nobody is
    declared lost, and the model is the all-local run's, bit for bit."""
    if skipped("test_lossy_links_change_nothing"):
        return
    why = iptables_missing()
    if why:
        print(f"skip test_lossy_links_change_nothing: {why}")
        return
    keys(tmp)
    for topology in ("star", "ring"):
        expected, _ = local_model(tmp, CONFIG, f"local-{topology}", topology=topology)
        out = tmp / f"lossy-{topology}"
        cfg = config(tmp, CONFIG, out.name, topology=topology)
        before = root_links()
        with netns.Hosts(2, tmp) as net:
            for ns in net.workers:
                lossy(ns, 0.03)
            coord, endpoint = start_coordinator(net, cfg, "--expect-workers", "2")
            workers = [join(net, net.workers[i], endpoint, rank, tmp) for i, rank in ((0, 2), (1, 3))]
            assert net.wait(coord, 120) == 0, net.stderr(coord)
            for w in workers:
                assert net.wait(w, 20) == 0, net.stderr(w)
            assert summary(out)["failures"] == [], summary(out)["failures"]
            # Packets were dropped indeed (else this test would prove nothing).
            for ns in net.workers:
                listing = netns.ip("netns", "exec", ns, "iptables", "-L", "-v", "-n", "-x").stdout
                dropped = sum(int(line.split()[0]) for line in listing.splitlines()
                              if "DROP" in line and "statistic" in line)
                assert dropped > 0, listing
        check_gone(net, before)
        assert (out / "model.json").read_bytes() == expected, topology


def test_half_open_link_is_found(tmp):
    """A worker killed while its cable is out: its FIN is lost, so once the cable is back the
    coordinator holds a half-open connection to a process that is gone (its host answers with
    a reset only when something is sent). The coordinator must still find the worker lost and
    apply the policy in time (abort: exit 3 naming it), not wait on the connection."""
    if skipped("test_half_open_link_is_found"):
        return
    keys(tmp)
    out = tmp / "half-open"
    cfg = config(tmp, LONG, out.name, topology="star", policy="abort")
    before = root_links()
    with netns.Hosts(2, tmp) as net:
        coord, workers, _, cut_at = cut_mid_run(tmp, net, cfg, out)
        os.killpg(workers[3].pid, signal.SIGKILL)
        workers[3].wait(timeout=10)
        net.heal(net.workers[1])
        assert net.wait(coord, 30) == 3, net.stderr(coord)
        assert time.monotonic() - cut_at < 10, "finding the lost worker took too long"
        err = net.stderr(coord)
        assert f"worker 3 (pid {workers[3].pid} on node1)" in err, err
        assert net.wait(workers[2], 30) == 3, net.stderr(workers[2])
        [f] = summary(out)["failures"]
        assert f["rank"] == 3 and f["action"] == "abort", f
    check_gone(net, before)


if __name__ == "__main__":
    h.main([test_workers_on_other_hosts_train_the_local_model,
            test_every_interface_advertised, test_cut_link_aborts_naming_the_worker,
            test_cut_link_continue_and_restart, test_partition_that_heals_changes_nothing,
            test_half_open_link_is_found, test_lossy_links_change_nothing])
