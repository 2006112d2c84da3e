"""fault_tolerance.elastic, workers joining a running job, with real processes: the test starts
the run, reads the join command the coordinator prints, and starts `disttrain worker --connect
ADDR --join` itself. A joiner is admitted at a step boundary (`admit_at_steps` makes the step
fixed), trains from the next step, and is dealt rows from the next epoch (every training row
once per epoch: rows_per_epoch); the same join at the same step gives the same bits, over ipc,
over tcp, and from another host (network namespaces, netns.py; skipped without root). Above
max_workers it is refused (exit 2) and the run goes on, as it does when a joiner dies during
its admission; below min_workers a leave then a join continues the run; without a joiner the
wait fails with exit 3."""

import math
import os
import re
import subprocess
import threading
import time

import harness as h
import netns
import test_hosts
from test_elastic import config as elastic_config, summary


def config(tmp, name, workers=2, epochs=3, elastic="max_workers: 3", fault=""):
    """test_elastic.py's run (3600 training rows, global batch 60: 60 steps an epoch)."""
    return elastic_config(tmp, name, workers=workers, epochs=epochs, fault=fault,
                          elastic=elastic)


class Run:
    """`disttrain run` in the background, its stderr read line by line as it comes."""

    def __init__(self, cfg, *args):
        self.proc = subprocess.Popen([h.binary(), "run", str(cfg), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()

    def wait_line(self, pattern, timeout=30):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    m = re.search(pattern, line)
                    if m:
                        return m
                ended = not self.reader.is_alive()
                assert time.monotonic() < deadline and not ended, \
                    f"no line matching {pattern!r} on stderr:\n{''.join(self.lines)}"
                self.cond.wait(0.1)

    def join_endpoint(self):
        return self.wait_line(r"disttrain worker --connect (\S+) --join").group(1)

    def finish(self, timeout=120):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"the run did not finish within {timeout} s")
        self.reader.join(5)
        return self.proc.returncode, "".join(self.lines)


def joiner(endpoint, *extra, env=None):
    return subprocess.Popen([h.binary(), "worker", "--connect", endpoint, "--join", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)


def finish_joiner(proc, timeout=120):
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the joiner did not finish within {timeout} s")
    return proc.returncode, err


def run_with_joiner(cfg, *args):
    run = Run(cfg, *args)
    worker = joiner(run.join_endpoint())
    code, err = run.finish()
    wcode, werr = finish_joiner(worker)
    assert code == 0, err
    assert wcode == 0, werr
    return err, werr


def the_join(out, step, rank=2, workers=3):
    """The summary of a run that ended well after one join (of `rank` after `step`), and that
    join's event."""
    s = summary(out)
    assert s["status"] == "ok" and s["failures"] == [], s
    [event] = s["membership"]["events"]
    assert {k: event[k] for k in ("event", "rank", "step", "workers")} == \
        {"event": "join", "rank": rank, "step": step, "workers": workers}, event
    return s, event


def second_joiner_refused(cfg, workers):
    """Runs `cfg` with a first joiner (admitted: worker `workers - 1`) and a second, which must
    be refused: the run already has `workers`, its max_workers. Both the run and the first
    joiner must end well."""
    run = Run(cfg)
    endpoint = run.join_endpoint()
    first = joiner(endpoint)
    run.wait_line(rf"worker {workers - 1} joined the run")
    second = joiner(endpoint)
    scode, serr = finish_joiner(second)
    code, err = run.finish()
    fcode, ferr = finish_joiner(first)
    assert (code, fcode) == (0, 0), (err, ferr)
    assert scode == 2, serr
    assert (f"the coordinator refused this worker's join: the run has {workers} workers, its "
            "fault_tolerance.elastic.max_workers; raise max_workers, or join when a worker has "
            "left") in serr, serr


def test_a_worker_joins_mid_run_and_is_dealt_rows(tmp):
    # 3600 training rows, global batch 60: 60 steps an epoch, 180 in all. Two workers start;
    # the joiner is admitted after step 70 (epoch 2), trains steps 71..180 with no rows until
    # epoch 3, whose rows are re-dealt among the three.
    elastic = "max_workers: 3, admit_at_steps: [70]"
    cfg, out = config(tmp, "join", elastic=elastic)
    err, werr = run_with_joiner(cfg)
    s, event = the_join(out, 70)
    m = s["membership"]
    assert (m["min_workers"], m["max_workers"], m["workers"]) == (1, 3, 2), m
    plan = event["replanned"]
    assert plan["from_epoch"] == 2, plan
    assert [t["rank"] for t in plan["to"]] == [0, 1, 2], plan
    assert [t["rows"] for t in plan["to"]] == [1200, 1200, 1200], plan  # every row, once
    # Every epoch saw every training row once: the join's epoch without the joiner's help.
    assert m["rows_per_epoch"] == [3600, 3600, 3600], m["rows_per_epoch"]
    stats = {w["rank"]: w for w in s["worker_stats"]}
    assert sorted(stats) == [0, 1, 2], stats
    assert stats[2]["steps"] == 110 and stats[2]["rows"] == 1200, stats[2]
    assert stats[0]["steps"] == 180, stats[0]
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    assert "worker 2 joined the run" in err and "after step 70" in err, err
    header = (out / "loss.csv").read_text().splitlines()[0]
    assert header.endswith("worker_0_loss,worker_1_loss,worker_2_loss"), header
    # Replayed, over tcp this time (the joiner connects to tcp://127.0.0.1:PORT): the same join
    # at the same step gives the same bits.
    cfg, again = config(tmp, "again", elastic=elastic)
    err, _ = run_with_joiner(cfg, "--set", "transport.type=tcp")
    assert "--connect tcp://127.0.0.1:" in err, err
    assert (again / "model.json").read_bytes() == (out / "model.json").read_bytes(), \
        "a replayed join changed the model"
    # And the join changed the training: a run of the two alone differs.
    cfg, alone = config(tmp, "alone")
    assert h.run("run", cfg).code == 0
    assert (alone / "model.json").read_bytes() != (out / "model.json").read_bytes()
    assert summary(alone)["membership"]["events"] == []


def test_a_joiner_above_max_workers_is_refused(tmp):
    # max_workers 2 = the starting count: the joiner is refused at step 20 and the run goes on.
    cfg, out = config(tmp, "full", elastic="max_workers: 2, admit_at_steps: [20]")
    run = Run(cfg)
    worker = joiner(run.join_endpoint())
    wcode, werr = finish_joiner(worker)
    code, err = run.finish()
    assert code == 0, err
    assert wcode == 2, werr
    assert ("the coordinator refused this worker's join: the run has 2 workers, its "
            "fault_tolerance.elastic.max_workers; raise max_workers, or join when a worker has "
            "left") in werr, werr
    assert "refused a worker asking to join" in err, err
    s = summary(out)
    assert s["membership"]["events"] == [] and s["status"] == "ok", s["membership"]
    assert s["membership"]["rows_per_epoch"] == [3600, 3600, 3600]


def test_below_min_workers_a_leave_then_a_join_continue(tmp):
    # Two workers, min 2: worker 0 leaves after step 31; the run waits; the test starts a
    # joiner when the coordinator says it waits, which takes the leaver's slot (the only one).
    cfg, out = config(tmp, "refill", epochs=3,
                      elastic="min_workers: 2, max_workers: 2, join_timeout_ms: 30000",
                      fault="{rank: 0, at_step: 30, action: leave}")
    run = Run(cfg)
    endpoint = run.join_endpoint()
    run.wait_line(r"waiting up to 30000 ms for workers to join")
    worker = joiner(endpoint)
    code, err = run.finish()
    wcode, werr = finish_joiner(worker)
    assert code == 0, err
    assert wcode == 0, werr
    s = summary(out)
    assert s["failures"] == [] and s["status"] == "ok", s
    leave, join = s["membership"]["events"]
    assert (leave["event"], leave["rank"], leave["step"]) == ("leave", 0, 31), leave
    assert (join["event"], join["rank"], join["workers"]) == ("join", 0, 2), join
    assert join["step"] >= 31 and join["pid"] != leave["pid"], (leave, join)
    assert join["replanned"]["from_epoch"] == 1, join
    # The leave's epoch misses the leaver's share of the steps without it; then every row.
    rows = s["membership"]["rows_per_epoch"]
    assert rows[1:] == [3600, 3600] and rows[0] < 3600, rows
    assert {w["rank"]: w["pid"] for w in s["worker_stats"]}[0] == join["pid"]


def test_without_a_joiner_the_wait_fails_with_exit_3(tmp):
    cfg, out = config(tmp, "below", elastic="min_workers: 2, max_workers: 2, join_timeout_ms: 300",
                      fault="{rank: 0, at_step: 30, action: leave}")
    r = h.run("run", cfg)
    assert r.code == 3, r
    assert re.search(r"worker 0 left after step 31, leaving 1 worker, below "
                     r"fault_tolerance.elastic.min_workers = 2, and not enough workers joined "
                     r"within join_timeout_ms = 300 ms \(`disttrain worker --connect ipc://\S+ "
                     r"--join` joins one\); lower min_workers, or rerun with --resume", r.stderr), r
    # admit_at_steps with no joiner: the same exit, naming the step.
    cfg, out = config(tmp, "nobody", elastic="max_workers: 3, join_timeout_ms: 300, "
                      "admit_at_steps: [10]")
    r = h.run("run", cfg)
    assert r.code == 3, r
    assert "admit_at_steps: no worker joined after step 10 within join_timeout_ms = 300 ms" \
        in r.stderr, r


def test_a_joiner_that_does_not_complete_its_admission_is_given_up(tmp):
    # The joiner dies as its setup arrives (a kill point): the coordinator waits for its
    # loaded message worker_timeout_ms (2000), gives it up, and the run goes on without it.
    cfg, out = config(tmp, "dies", elastic="max_workers: 3, admit_at_steps: [20]")
    run = Run(cfg)
    env = dict(os.environ, DISTTRAIN_TEST_KILL_POINT="worker (joining)|receive setup|1",
               DISTTRAIN_TEST_KILL_MARK=str(tmp / "killed"))
    worker = joiner(run.join_endpoint(), env=env)
    wcode, werr = finish_joiner(worker)
    code, err = run.finish()
    assert wcode == -9 and (tmp / "killed").exists(), (wcode, werr)  # SIGKILL, by itself
    assert code == 0, err
    assert re.search(r"a worker asking to join \(pid \d+ on \S+\) did not complete its admission: "
                     r"the worker joining as worker 2 did not join in time \(no loaded message\); "
                     r"the run goes on without it", err), err
    s = summary(out)
    assert s["membership"]["events"] == [] and s["failures"] == [], s["membership"]
    assert s["membership"]["rows_per_epoch"] == [3600, 3600, 3600]
    assert sorted(w["rank"] for w in s["worker_stats"]) == [0, 1]


HOSTS = """
version: 1
name: join-hosts
seed: 5
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 4000, features: 6, noise: 0.1}}, validation: 0.1}}
shards: {{count: 2}}
training: {{epochs: 3, batch_size: 60, optimizer: {{type: sgd, lr: 0.02}}}}
{transport}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 3000,
                  elastic: {{max_workers: 3, admit_at_steps: [70]}}}}
output: {{dir: {out}}}
"""


def join_across_hosts(tmp, *args):
    """HOSTS (with `args` for `run`) twice: all on one host, then the coordinator and its two
    workers on one host (a network namespace) and the joiner on another, across the bridge with
    CURVE keys. Checks that both give the same model; returns the second run's summary."""
    keys = test_hosts.keys(tmp)
    local = h.write_config(tmp, HOSTS.format(transport="", out=tmp / "local"), "local.yaml")
    run_with_joiner(local, *args)
    transport = (f"transport: {{type: tcp, security: curve, keys: {{secret: "
                 f"{keys}/coordinator.key, authorized: {keys}/workers.pub}}}}")
    cfg = h.write_config(tmp, HOSTS.format(transport=transport, out=tmp / "hosts"), "hosts.yaml")
    before = test_hosts.root_links()
    with netns.Hosts(1, tmp) as net:
        coord, endpoint = test_hosts.start_coordinator(net, cfg, *args)
        worker = net.run(net.workers[0], "joiner", "worker", "--connect", endpoint, "--join",
                         "--key", keys / "host0.key", "--server-key", keys / "coordinator.pub")
        assert net.wait(coord, 90) == 0, net.stderr(coord)
        assert net.wait(worker, 20) == 0, net.stderr(worker)
        assert "worker 2 joined the run" in net.stderr(coord) and "on node0" in \
            net.stderr(coord), net.stderr(coord)
    test_hosts.check_gone(net, before)
    assert (tmp / "hosts" / "model.json").read_bytes() == \
        (tmp / "local" / "model.json").read_bytes(), "the join across hosts trained otherwise"
    return summary(tmp / "hosts")


def test_a_worker_joins_from_another_host_over_tcp(tmp):
    """The coordinator and its two workers on one host, the joiner on another: the model of
    the same join on one host."""
    if test_hosts.skipped("test_a_worker_joins_from_another_host_over_tcp"):
        return
    [event] = join_across_hosts(tmp)["membership"]["events"]
    assert (event["rank"], event["step"]) == (2, 70), event


if __name__ == "__main__":
    h.main([test_a_worker_joins_mid_run_and_is_dealt_rows,
            test_a_joiner_above_max_workers_is_refused,
            test_below_min_workers_a_leave_then_a_join_continue,
            test_without_a_joiner_the_wait_fails_with_exit_3,
            test_a_joiner_that_does_not_complete_its_admission_is_given_up,
            test_a_worker_joins_from_another_host_over_tcp])
