"""`disttrain leave RUN_DIR --rank N`, with real worker processes: it finds worker N of the
elastic run writing RUN_DIR through RUN_DIR/members.json, signals it, and waits until the run
records the planned leave, then says at which step. members.json lists who trains, follows the
leave, and is gone when the run ends. Asked of a folder without a running elastic run, of a rank
not in the run, or of a run whose coordinator is gone, it refuses (exit 2) saying why."""

import json
import math
import os
import signal
import subprocess

import elastic_config as ec
import harness as h



# Worker 0 sleeps 1 ms a step: the 1800 steps take a few seconds on any machine, long enough to
# be asked to leave in the middle.
SLOW = "{rank: 0, at_step: 0, action: slow, ms: 1}"


def config(tmp, name, epochs=30, elastic="min_workers: 1"):
    return ec.config(tmp, name, epochs=epochs, elastic=elastic, faults=[SLOW], seed=9,
                     title="leave_command")


def members(out):
    return json.loads((out / "members.json").read_text())


def test_leave_signals_the_worker_and_reports_the_step(tmp):
    cfg, out = config(tmp, "leave")
    proc = h.start(cfg)
    workers = h.worker_processes(proc, 4)
    # Written once the first step is done: every worker takes SIGTERM as a leave by then.
    h.wait_for(lambda: (out / "members.json").exists(), 60, "members.json")
    m = members(out)
    assert m["format"] == "disttrain-members" and m["coordinator"]["pid"] == proc.pid, m
    assert [(w["rank"], w["pid"]) for w in m["workers"]] == \
        sorted((h.rank_of(pid), pid) for pid in workers), (m, workers)
    victim = next(pid for pid in workers if h.rank_of(pid) == 2)
    r = h.run("leave", out, "--rank", 2, "--json")
    assert r.code == 0, r
    said = json.loads(r.stdout)
    assert said["rank"] == 2 and said["pid"] == victim and said["recorded"] is True, said
    assert said["workers"] == 3 and said["step"] > 0, said
    # The file follows the leave at once: worker 2 is off it, its leave among the events.
    m = members(out)
    assert [w["rank"] for w in m["workers"]] == [0, 1, 3], m
    assert [(e["event"], e["rank"], e["step"]) for e in m["events"]] == [("leave", 2, said["step"])]
    # Asked again, it is refused: the worker has left.
    again = h.run("leave", out, "--rank", 2)
    assert again.code == 2 and f"worker 2 has already left the run in {out} (after step " \
        f"{said['step']})" in again.stderr, again
    _, err = h.finish(proc, 120)
    assert proc.returncode == 0, err
    h.assert_gone(workers)
    assert not (out / "members.json").exists(), "members.json outlived the run"
    s = json.loads((out / "summary.json").read_text())
    assert s["failures"] == [], s["failures"]
    [event] = s["membership"]["events"]
    assert (event["rank"], event["pid"], event["step"]) == (2, victim, said["step"]), event
    assert math.isfinite(s["final_loss"]) and s["final_loss"] < 0.1, s["final_loss"]
    # The run is over: nothing to leave.
    after = h.run("leave", out, "--rank", 1)
    assert after.code == 2 and "no run with fault_tolerance.elastic is training in" in after.stderr, after


def test_leave_refuses_what_it_cannot_do(tmp):
    r = h.run("leave", tmp / "nowhere", "--rank", 0)
    assert r.code == 2 and "is not a folder" in r.stderr, r
    (tmp / "empty").mkdir()
    r = h.run("leave", tmp / "empty", "--rank", 0)
    assert r.code == 2 and "members.json is absent" in r.stderr, r
    # A members file whose coordinator is gone (killed outright, it could not remove it).
    gone = subprocess.Popen(["true"])
    gone.wait()
    host = os.uname().nodename
    stale = tmp / "stale"
    stale.mkdir()
    (stale / "members.json").write_text(json.dumps({
        "format": "disttrain-members", "version": 1, "job": "00000000000000ab",
        "coordinator": {"rank": -1, "pid": gone.pid, "host": host, "started": "1"},
        "workers": [{"rank": 0, "pid": gone.pid, "host": host, "started": "1"}], "events": []}))
    r = h.run("leave", stale, "--rank", 0)
    assert r.code == 2 and f"(its coordinator, pid {gone.pid}, has ended" in r.stderr, r
    (stale / "members.json").write_text("{\"format\": \"something else\"}")
    r = h.run("leave", stale, "--rank", 0)
    assert r.code == 2 and "is not a members file of this disttrain" in r.stderr, r
    # A rank that is not in a running run.
    cfg, out = config(tmp, "ranks")
    proc = h.start(cfg)
    workers = h.worker_processes(proc, 4)
    h.wait_for(lambda: (out / "members.json").exists(), 60, "members.json")
    r = h.run("leave", out, "--rank", 7)
    assert r.code == 2 and "has no worker 7 training; its workers are 0, 1, 2, 3" in r.stderr, r
    r = h.run("leave", out, "--rank", 1, "--no-wait")
    assert r.code == 0 and "sent SIGTERM to worker 1 (pid" in r.stdout, r
    _, err = h.finish(proc, 120)
    assert proc.returncode == 0, err
    h.assert_gone(workers)
    s = json.loads((out / "summary.json").read_text())
    assert [(e["event"], e["rank"]) for e in s["membership"]["events"]] == [("leave", 1)], s


def test_a_run_without_elastic_writes_no_members_file(tmp):
    cfg, out = config(tmp, "fixed", elastic=None)
    text = cfg.read_text().replace("checkpoint_every: {steps: 0}", "checkpoint_every: {steps: 20}")
    cfg.write_text(text)
    proc = h.start(cfg)
    workers = h.worker_processes(proc, 4)
    folder = out / "checkpoint"
    h.wait_for(lambda: folder.exists() and any(p.name.startswith("step-") for p in folder.iterdir()),
               60, "the first checkpoint")
    assert not (out / "members.json").exists(), "a run without elastic wrote members.json"
    r = h.run("leave", out, "--rank", 0)
    assert r.code == 2 and "a run without elastic has no planned leave" in r.stderr, r
    proc.send_signal(signal.SIGINT)
    h.finish(proc, 60)
    assert proc.returncode == 130, proc.returncode
    h.assert_gone(workers)


if __name__ == "__main__":
    h.main([test_leave_signals_the_worker_and_reports_the_step,
            test_leave_refuses_what_it_cannot_do,
            test_a_run_without_elastic_writes_no_members_file])
