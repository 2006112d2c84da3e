"""data.path '-' and predict/eval '-': the rows come from a pipe. The run spools stdin once into
a private folder and trains exactly as from the same bytes in a file; the folder is gone after
the run, and one left by a run killed with SIGKILL is removed by the next; an empty stdin, a
terminal and bad rows get exit 2; Ctrl-C while the pipe is still open exits 130."""

import os
import pty
import signal
import subprocess
import time

import harness as h

CONFIG = """
version: 1
name: piped
seed: 2
model: {{type: softmax_regression}}
data: {{path: {path}, validation: 0.1}}
shards: {{count: 2}}
training: {{epochs: 2, batch_size: 32, optimizer: {{type: sgd, lr: 0.1}}}}
output: {{dir: {out}}}
"""


def spools(tmp):
    return sorted(p.name for p in (tmp / "tmpdir").glob("disttrain-data-*"))


def owned_spools(tmp):
    """Spool folders whose owner file is written: a run killed before that (between mkdtemp and
    the write, which a loaded machine can stretch) leaves a folder the sweep cannot tell from a
    run still starting, so it is kept until it is old."""
    def owned(name):
        try:
            return (tmp / "tmpdir" / name / ".owner").read_text().endswith("\n")
        except OSError:
            return False
    return [name for name in spools(tmp) if owned(name)]


def piped(args, data, env, timeout=60):
    return subprocess.run([h.binary(), *map(str, args)], input=data, capture_output=True,
                          env=env, timeout=timeout)


def test_run_from_a_pipe_is_the_run_from_the_file(tmp):
    data = h.source("data", "blobs.csv")
    _, env = h.private_tmpdir(tmp)
    from_file = h.write_config(tmp, CONFIG.format(path=data, out=tmp / "file"), "file.yaml")
    r = h.run("run", from_file, "-q")
    assert r.code == 0, r
    piped_cfg = h.write_config(tmp, CONFIG.format(path='"-"', out=tmp / "pipe"), "pipe.yaml")
    r = piped(["run", piped_cfg, "-q"], data.read_bytes(), env)
    assert r.returncode == 0, r.stderr
    assert (tmp / "pipe" / "model.json").read_bytes() == (tmp / "file" / "model.json").read_bytes()
    # The resolved config says where the rows came from: stdin, not the spool's temp path.
    assert 'path: "-"' in (tmp / "pipe" / "config.resolved.yaml").read_text()
    assert spools(tmp) == []
    # --set data.path=- on the file's config, as in a pipeline: the same model.
    r = piped(["run", from_file, "-q", "--set", "data.path=-", "--set", f"output.dir={tmp / 'set'}"],
              data.read_bytes(), env)
    assert r.returncode == 0, r.stderr
    assert (tmp / "set" / "model.json").read_bytes() == (tmp / "file" / "model.json").read_bytes()
    # validate reads the pipe too, and says so.
    r = piped(["validate", from_file, "--set", "data.path=-"], data.read_bytes(), env)
    assert r.returncode == 0 and b"data:       stdin (1500 rows" in r.stdout, r
    assert spools(tmp) == []


def test_predict_and_eval_from_a_pipe(tmp):
    data = h.source("data", "blobs.csv")
    _, env = h.private_tmpdir(tmp)
    cfg = h.write_config(tmp, CONFIG.format(path=data, out=tmp / "run"))
    assert h.run("run", cfg, "-q").code == 0
    model = tmp / "run" / "model.json"
    for command in ("predict", "eval"):
        from_file = h.run(command, model, data)
        assert from_file.code == 0, from_file
        from_pipe = piped([command, model, "-"], data.read_bytes(), env)
        assert from_pipe.returncode == 0, from_pipe.stderr
        assert from_pipe.stdout.decode() == from_file.stdout, command
    assert spools(tmp) == []


def test_bad_pipes(tmp):
    _, env = h.private_tmpdir(tmp)
    cfg = h.write_config(tmp, CONFIG.format(path='"-"', out=tmp / "run"))
    r = piped(["run", cfg], b"", env)
    assert r.returncode == 2 and b"stdin was empty" in r.stderr, r
    r = piped(["run", cfg], b"x0,x1,y\n1,2,0\n1,oops,1\n", env)
    assert r.returncode == 2 and b"stdin.csv:3" in r.stderr and b"oops" in r.stderr, r
    r = piped(["predict", h.source("configs", "quickstart.yaml"), "-"], b"", env)
    assert r.returncode == 2, r
    # A terminal on stdin: refused, with what to pipe.
    leader, follower = pty.openpty()
    try:
        p = subprocess.run([h.binary(), "run", str(cfg)], stdin=follower, capture_output=True,
                           env=env, timeout=30)
    finally:
        os.close(leader)
        os.close(follower)
    assert p.returncode == 2 and b"stdin is a terminal" in p.stderr, p
    assert not (tmp / "run" / "model.json").exists()
    assert spools(tmp) == []


def test_a_killed_spool_is_swept_and_ctrl_c_exits_130(tmp):
    _, env = h.private_tmpdir(tmp)
    cfg = h.write_config(tmp, CONFIG.format(path='"-"', out=tmp / "run"))
    rows = h.source("data", "blobs.csv").read_bytes()
    for sig, code, command in ((signal.SIGKILL, -signal.SIGKILL, "run"), (signal.SIGINT, 130, "run"),
                               (signal.SIGINT, 130, "validate"), (signal.SIGTERM, 130, "validate")):
        # The pipe stays open: the command waits for the rest of its data.
        before = set(spools(tmp))
        p = subprocess.Popen([h.binary(), command, str(cfg)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        p.stdin.write(rows[:1000])
        p.stdin.flush()
        h.wait_for(lambda: set(owned_spools(tmp)) - before, 20, "the spool folder")
        time.sleep(0.2)  # the first bytes are in: the command is in its read loop
        p.send_signal(sig)
        p.wait(timeout=30)  # not communicate(): it would close stdin, an end of the data
        err = p.stderr.read()
        p.stdin.close()
        assert p.returncode == code, (command, sig, p.returncode, err)
        if sig == signal.SIGKILL:
            assert len(spools(tmp)) == 1  # a process killed outright cannot clean up
        else:
            assert b"interrupted while reading the data from stdin" in err, err
            assert spools(tmp) == []  # the SIGKILLed run's folder was swept, this one's removed
    # A run killed outright again, then a complete one: that removes what the killed one left,
    # and its own after it.
    p = subprocess.Popen([h.binary(), "run", str(cfg)], stdin=subprocess.PIPE, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    h.wait_for(lambda: owned_spools(tmp), 20, "the spool folder")
    p.kill()
    p.wait(timeout=30)
    assert len(spools(tmp)) == 1
    r = piped(["run", cfg, "-q"], rows, env)
    assert r.returncode == 0, r.stderr
    assert spools(tmp) == []


if __name__ == "__main__":
    h.main([test_run_from_a_pipe_is_the_run_from_the_file, test_predict_and_eval_from_a_pipe,
            test_bad_pipes, test_a_killed_spool_is_swept_and_ctrl_c_exits_130])
