"""Failure paths with real processes and real signals: a killed worker, Ctrl-C, bad configs,
bad CSVs and unmet expectations each give the documented exit code and message, and leave no
process behind."""

import os
import socket
import signal
import time

import harness as h




def test_killed_worker_fails_the_run_fast(tmp):
    for transport in ("ipc", "tcp"):
        cfg = h.write_config(tmp, h.long_run(transport, tmp / transport))
        tmpdir, env = h.private_tmpdir(tmp / transport)
        proc = h.start(cfg, env)
        workers = h.worker_processes(proc, 4)
        time.sleep(1.0)  # well into training
        victim = next(pid for pid in workers if h.rank_of(pid) == 2)
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        out, err = h.finish(proc, 20)
        assert proc.returncode == 3, (proc.returncode, err)
        assert time.monotonic() - killed_at < 5, "the failure took too long to notice"
        assert f"(pid {victim} on {socket.gethostname()}) was killed by signal 9 (SIGKILL); last completed step " in err, err
        assert "worker 2" in err, err
        h.assert_gone(workers)
        summary = (tmp / transport / "summary.json").read_text()
        assert '"status": "failed"' in summary and "SIGKILL" in summary
        assert not (tmp / transport / "model.json").exists()
        assert list(tmpdir.iterdir()) == [], "socket files or temp folders left behind"


def test_hung_worker_is_found_by_its_silence(tmp):
    cfg = h.write_config(tmp, h.long_run("ipc", tmp / "run")
                         + "fault_tolerance: {heartbeat_ms: 100, worker_timeout_ms: 1000}\n")
    proc = h.start(cfg)
    workers = h.worker_processes(proc, 4)
    time.sleep(0.5)
    victim = next(pid for pid in workers if h.rank_of(pid) == 1)
    os.kill(victim, signal.SIGSTOP)  # alive to waitpid, silent on the network
    stopped_at = time.monotonic()
    out, err = h.finish(proc, 20)
    assert proc.returncode == 3, (proc.returncode, err)
    assert time.monotonic() - stopped_at < 4, "a 1000 ms timeout took too long to fire"
    assert f"worker 1 (pid {victim} on {socket.gethostname()}) sent no heartbeat for" in err, err
    assert "(fault_tolerance.worker_timeout_ms = 1000)" in err, err
    h.assert_gone(workers)


def test_coordinator_killed_leaves_no_worker(tmp):
    cfg = h.write_config(tmp, h.long_run("ipc", tmp / "run"))
    proc = h.start(cfg)
    workers = h.worker_processes(proc, 4)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)  # no handler runs: the kernel's PR_SET_PDEATHSIG must act
    proc.communicate(timeout=10)
    h.assert_gone(workers, within=5)


def test_ctrl_c_stops_everything_with_130(tmp):
    for sig, transport in ((signal.SIGINT, "ipc"), (signal.SIGTERM, "tcp"), (signal.SIGINT, "inproc")):
        out = tmp / f"{transport}-{sig}"
        cfg = h.write_config(tmp, h.long_run(transport, out))
        tmpdir, env = h.private_tmpdir(out)
        proc = h.start(cfg, env)
        h.wait_for(lambda: (out / "config.resolved.yaml").exists(), 20, "the run to start")
        time.sleep(0.8)
        workers = h.children_of(proc.pid)
        assert len(workers) == (0 if transport == "inproc" else 4), workers
        os.kill(proc.pid, sig)
        _, err = h.finish(proc, 15)
        assert proc.returncode == 130, (transport, proc.returncode, err)
        assert "interrupted" in err, err
        h.assert_gone(workers)
        assert '"status": "interrupted"' in (out / "summary.json").read_text()
        assert list(tmpdir.iterdir()) == [], "socket files or temp folders left behind"


def test_bad_config_exits_2_with_location(tmp):
    cfg = h.write_config(tmp, "version: 1\nname: bad\nmodel:\n  type: linear_regresion\n"
                              "data: {synthetic: {kind: linear}}\n")
    r = h.run("run", cfg)
    assert r.code == 2, r
    assert f"{cfg}:4:9: model.type: unknown value 'linear_regresion'" in r.stderr, r.stderr
    assert "did you mean 'linear_regression'?" in r.stderr, r.stderr
    assert r.stdout == ""
    r = h.run("run", cfg, "--json")
    assert r.code == 2 and r.json()["exit_code"] == 2 and r.json()["status"] == "failed", r
    assert "did you mean 'linear_regression'?" in r.json()["error"]
    cfg2 = h.write_config(tmp, "version: 1\ntraning: {epochs: 2}\ndata: {synthetic: {kind: linear}}\n", "b.yaml")
    r = h.run("validate", cfg2)
    assert r.code == 2 and f"{cfg2}:2:1: unknown key 'traning' (did you mean 'training'?)" in r.stderr, r


def test_bad_csv_exits_2_with_file_line_column(tmp):
    csv = tmp / "bad.csv"
    cfg = h.write_config(tmp, f"version: 1\nmodel: {{type: linear_regression}}\n"
                              f"data: {{path: {csv}}}\nshards: {{count: 2}}\noutput: {{dir: {tmp}/run}}\n")
    # Structural errors are found by the coordinator's index, before anything starts.
    csv.write_text("a,b,y\n1,2,3\n4,5\n")
    r = h.run("run", cfg)
    assert r.code == 2 and f"{csv}:3:1: row has 2 fields, the header has 3" in r.stderr, r
    assert not (tmp / "run").exists(), "bad data found before start leaves no run folder"
    # A good run first: its model.json must not survive a failed run into the same folder.
    csv.write_text("a,b,y\n1,2,3\n4,5,6\n7,8,9\n10,11,12\n")
    assert h.run("run", cfg).code == 0 and (tmp / "run" / "model.json").exists()
    # Cell errors are found by the worker that owns the row, and reported through the coordinator.
    csv.write_text("a,b,y\n1,2,3\n4,oops,6\n7,8,9\n10,11,12\n")
    r = h.run("run", cfg)
    assert r.code == 2, r
    assert f"worker 0 (pid " in r.stderr, r.stderr
    assert f"{csv}:3:3: column 'b': 'oops' is not a number" in r.stderr, r.stderr
    assert not (tmp / "run" / "model.json").exists(), "a stale model.json beside a failed summary"
    assert '"status": "failed"' in (tmp / "run" / "summary.json").read_text()
    csv.write_bytes(b"a,b,y\n1,2,caf\xe9\n4,5,tea\n7,8,tea\n10,11,milk\n")
    r = h.run("run", cfg, "--set", "model.type=softmax_regression")
    assert r.code == 2, r
    assert f"{csv}:2:5: label 'y': the class name is not valid UTF-8" in r.stderr, r.stderr
    csv.write_text("a,b,y\n1,2,0\n4,5,1\n7,8,2\n10,11,1\n")
    r = h.run("run", cfg, "--set", "model.type=logistic_regression")
    assert r.code == 2 and f"{csv}:4:5: label 'y': 2 is not 0 or 1" in r.stderr, r


def test_expect_not_met_exits_1(tmp):
    cfg = h.write_config(tmp, f"""
version: 1
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 500, features: 3}}}}
shards: {{count: 2}}
training: {{epochs: 2}}
output: {{dir: {tmp}/run}}
expect: {{final_loss: {{max: 1.0e-9}}}}
""")
    r = h.run("run", cfg, "--json")
    assert r.code == 1, r
    s = r.json()
    assert s["status"] == "ok" and s["expect"]["met"] is False
    assert "final_loss" in s["expect"]["failures"][0] and "above the maximum 1e-09" in s["expect"]["failures"][0]
    r = h.run("run", cfg, "--set", "expect.final_loss.max=1000")
    assert r.code == 0, r


if __name__ == "__main__":
    h.main([test_killed_worker_fails_the_run_fast, test_hung_worker_is_found_by_its_silence,
            test_coordinator_killed_leaves_no_worker, test_ctrl_c_stops_everything_with_130,
            test_bad_config_exits_2_with_location, test_bad_csv_exits_2_with_file_line_column,
            test_expect_not_met_exits_1])
