"""What a run shows of itself on stderr: the plain line per log step (stderr not a terminal, as in
CI logs), the live line on a terminal (under a pty), and -q / -v (core/coordinator/progress.hpp).
Nothing here is timed: the rate limits are checked by counting lines against the steps and
against the run's own duration (a slower machine only allows more lines)."""

import csv
import os
import pty
import re
import struct
import subprocess
import threading
import time

import fcntl
import termios

import harness as h

PLAIN = re.compile(r"^\[step (\d+)/(\d+) epoch ([0-9.]+)\] loss=(\S+)(?: val_loss=(\S+))?"
                   r"(?: val_(acc|mse)=(\S+))?(?: val_auc=(\S+))? (\S+) steps/s$")
ERASE = "\r\x1b[2K"
SLOW = "faults: [{rank: 0, action: slow, at_step: 0, ms: 5}]"


def config(tmp, log_every=5, epochs=4, extra=""):
    # Logistic regression on data/logistic.csv, 20% held out: a binary model, so the lines carry
    # val_acc and val_auc; 2 workers, 1600 training rows in batches of 32 (50 steps an epoch).
    return h.write_config(tmp, f"""
version: 1
name: progress
seed: 5
model: {{type: logistic_regression}}
data: {{path: {h.source('data', 'logistic.csv')}, label: y, validation: 0.2}}
shards: {{count: 2}}
training: {{epochs: {epochs}, batch_size: 32, optimizer: {{type: sgd, lr: 0.3}}}}
output: {{dir: {tmp}/run, log_every: {{steps: {log_every}}}}}
{extra}
""")


def loss_rows(run_dir):
    with open(run_dir / "loss.csv") as f:
        return {int(r["step"]): r for r in csv.DictReader(f)}


def close(a, b):
    return abs(float(a) - float(b)) <= 1e-3 * max(abs(float(b)), 1e-12)


def plain_lines(stderr):
    return [m for m in map(PLAIN.match, stderr.splitlines()) if m]


def test_plain_lines_match_loss_csv(tmp):
    cfg = config(tmp)
    r = h.run("run", cfg, "--json")
    assert r.code == 0, r
    summary = r.json()  # stdout is the JSON object alone
    total = summary["steps"]
    rows = loss_rows(tmp / "run")
    lines = plain_lines(r.stderr)
    assert lines, r.stderr
    assert "[step " not in r.stdout
    steps = [int(m.group(1)) for m in lines]
    assert steps == sorted(set(steps)), steps
    assert steps[-1] == total, (steps, total)  # the last row is always printed
    for m in lines:
        step = int(m.group(1))
        assert int(m.group(2)) == total
        assert step % 5 == 0 or step == total, step
        row = rows[step]  # every line is a row of loss.csv, with its figures
        assert close(m.group(3), row["epoch"]) or abs(float(m.group(3)) - float(row["epoch"])) <= 0.005
        assert close(m.group(4), row["train_loss"]), (m.group(0), row)
        assert close(m.group(5), row["validation_loss"]), (m.group(0), row)
        assert m.group(6) == "acc" and close(m.group(7), row["validation_metric"]), m.group(0)
        assert close(m.group(8), row["validation_auc"]), (m.group(0), row)
        assert float(m.group(9)) > 0
    # At most 2 lines a second: bounded by the run's own duration (plus the always-printed last).
    assert len(lines) <= 2 * r.seconds + 2, (len(lines), r.seconds)


def test_plain_lines_are_throttled(tmp):
    # A row every step, 200 rows, and each step made to take 5 ms or more (an injected slow
    # worker): a second or more, so that several lines are due, and far fewer than the rows.
    cfg = config(tmp, log_every=1, extra=SLOW)
    r = h.run("run", cfg)
    assert r.code == 0, r
    rows = loss_rows(tmp / "run")
    lines = plain_lines(r.stderr)
    assert len(rows) == 200, len(rows)
    assert 2 <= len(lines) <= 2 * r.seconds + 2, (len(lines), r.seconds)
    assert len(lines) < len(rows), len(lines)
    assert int(lines[-1].group(1)) == 200


def test_quiet_and_verbose(tmp):
    cfg = config(tmp)
    for flag in ("-q", "--quiet"):
        r = h.run(flag, "run", cfg)
        assert r.code == 0, r
        assert r.stderr == "", r.stderr
    off = h.run("run", cfg, env=dict(os.environ, DISTTRAIN_PROGRESS="off"))
    assert off.code == 0 and off.stderr == "", off
    # -v keeps the info lines ("step 5/200 epoch 0.10 loss ...") instead of the plain ones.
    r = h.run("-v", "run", cfg)
    assert r.code == 0, r
    assert not plain_lines(r.stderr), r.stderr
    assert re.search(r"\] step 5/200 epoch 0\.10 loss ", r.stderr), r.stderr
    bad = h.run("run", cfg, env=dict(os.environ, DISTTRAIN_PROGRESS="fancy"))
    assert bad.code == 2 and "DISTTRAIN_PROGRESS is 'fancy'; expected terminal, plain or off" in bad.stderr, bad


def run_in_pty(args, columns=200):
    """Runs disttrain with stderr on a pseudo-terminal (stdout a pipe); returns (exit code,
    stdout, what the terminal received, seconds)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    start = time.monotonic()
    proc = subprocess.Popen([h.binary(), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL, start_new_session=True)
    os.close(slave)
    chunks = []

    def drain():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        raise AssertionError("the run under a pty did not finish within 120 s")
    seconds = time.monotonic() - start
    reader.join(10)
    os.close(master)
    return proc.returncode, out.decode(), b"".join(chunks).decode(errors="replace"), seconds


def test_terminal_line_under_a_pty(tmp):
    cfg = config(tmp, log_every=1, extra=SLOW)  # a second or more: several redraws are due
    code, out, term, seconds = run_in_pty(["run", cfg])
    assert code == 0, term
    assert "ok" in out or "loss" in out, out  # the human summary line, on stdout only
    assert ERASE not in out and "steps/s" not in out
    assert "[step " not in term, term  # no plain lines on a terminal
    draws = [d for d in term.replace("\r\n", "\n").split(ERASE)[1:]]
    phases = [d for d in draws if d.endswith(" ...")]
    bars = [d for d in draws if re.match(r"^\[[=> ]{20}\] +\d+% \d+/200 ", d)]
    assert any(p.startswith("reading ") for p in phases), phases
    assert "starting 2 workers ..." in phases, phases
    assert bars, term
    assert any(re.search(r" steps/s \d+:\d\d ETA \d+:\d\d loss=\S+ val_loss=\S+ val_acc=\S+", b)
               for b in bars), bars
    # At most 4 redraws a second, while 200 rows were logged; the last draw erases the line.
    assert len(bars) < 200 and len(bars) <= 4 * seconds + 2, (len(bars), seconds)
    assert draws[-1] == "" or draws[-1].startswith("\n") or not draws[-1].strip(), draws[-3:]


def test_terminal_line_fits_the_terminal(tmp):
    cfg = config(tmp, log_every=1, extra=SLOW)
    code, _, term, _ = run_in_pty(["run", cfg], columns=50)
    assert code == 0, term
    # The progress line's draws; a log line (a straggler warning on a loaded machine) erases the
    # line too, but it is not the progress line and may wrap.
    draws = [d for d in term.split(ERASE)[1:] if not re.match(r"^\[[^\]]+\] (warning|error): ", d)]
    assert draws and all(len(d.split("\n")[0]) < 50 for d in draws), draws


if __name__ == "__main__":
    h.main([test_plain_lines_match_loss_csv, test_plain_lines_are_throttled, test_quiet_and_verbose,
            test_terminal_line_under_a_pty, test_terminal_line_fits_the_terminal])
