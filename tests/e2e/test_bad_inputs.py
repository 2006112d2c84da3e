"""Inputs a careless user (or an attacker) gives: every reader takes regular files only and
refuses the rest at once with exit 2 and the reason (issue 14's faults 1 and 2)."""

import os

import harness as h

NOT_A_FILE = "not a regular file (give the path of a file)"


def config_for(tmp, data_path):
    return h.write_config(tmp, f"""
version: 1
model: {{type: linear_regression}}
data: {{path: {data_path}}}
shards: {{count: 2}}
training: {{epochs: 1}}
output: {{dir: {tmp}/run}}
""")


def refused(r, message):
    assert r.code == 2, r
    assert message in r.stderr, r
    assert r.seconds < 10, f"took {r.seconds:.1f} s to refuse"


def test_endless_and_special_files_are_refused(tmp):
    """/dev/zero as the config, the data or a model: once read until memory ran out (exit 3 with
    std::bad_alloc); a directory as the data."""
    refused(h.run("validate", "/dev/zero", timeout=20),
            f"cannot read config '/dev/zero': it is a character device, {NOT_A_FILE}")
    refused(h.run("run", config_for(tmp, "/dev/zero"), timeout=20),
            f"/dev/zero: cannot open: it is a character device, {NOT_A_FILE}")
    refused(h.run("run", config_for(tmp, tmp), timeout=20),
            f"{tmp}: cannot open: it is a directory, {NOT_A_FILE}")
    data = h.source("data", "linear.csv")
    refused(h.run("predict", "/dev/zero", data, timeout=20),
            f"cannot read model '/dev/zero': it is a character device, {NOT_A_FILE}")
    refused(h.run("eval", tmp / "missing.json", data, timeout=20),
            f"cannot read model '{tmp / 'missing.json'}': No such file or directory")
    assert not (tmp / "run").exists(), "nothing may be written for a refused input"


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp):
    """A FIFO nobody writes to: open() once blocked forever, and SIGTERM then said 'Interrupted
    system call' with exit 2 (143 for predict)."""
    fifo = tmp / "rows.csv"
    os.mkfifo(fifo)
    refused(h.run("run", config_for(tmp, fifo), timeout=20),
            f"{fifo}: cannot open: it is a FIFO (named pipe), {NOT_A_FILE}")
    refused(h.run("validate", fifo, timeout=20),
            f"cannot read config '{fifo}': it is a FIFO (named pipe), {NOT_A_FILE}")
    cfg = h.write_config(tmp, f"""
version: 1
model: {{type: linear_regression}}
data: {{path: {h.source('data', 'linear.csv')}}}
shards: {{count: 2}}
training: {{epochs: 1}}
output: {{dir: {tmp}/trained}}
""", name="train.yaml")
    r = h.run("run", cfg)
    assert r.code == 0, r
    model = tmp / "trained" / "model.json"
    refused(h.run("predict", model, fifo, timeout=20),
            f"{fifo}: cannot open: it is a FIFO (named pipe), {NOT_A_FILE}")
    refused(h.run("predict", fifo, h.source("data", "linear.csv"), timeout=20),
            f"cannot read model '{fifo}': it is a FIFO (named pipe), {NOT_A_FILE}")


if __name__ == "__main__":
    h.main([test_endless_and_special_files_are_refused,
            test_a_fifo_is_refused_without_waiting_for_a_writer])
