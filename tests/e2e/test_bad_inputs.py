"""Inputs a careless user (or an attacker) gives: every reader takes regular files only and
refuses the rest at once with exit 2 and the reason (issue 14's faults 1 and 2); an output folder
that cannot be made is bad usage, and a full disk still leaves a failed summary (fault 7)."""

import json
import os
import subprocess

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


def test_an_output_folder_that_cannot_be_made_is_bad_usage(tmp):
    """Found before any worker starts: exit 2 (it was 3, a failed run)."""
    (tmp / "a_file").write_text("x")
    r = h.run("run", config_for(tmp, h.source("data", "linear.csv")), "--set",
              f"output.dir={tmp / 'a_file' / 'run'}")
    refused(r, f"output.dir: cannot create the output folder {tmp / 'a_file' / 'run'}: "
               "Not a directory; set output.dir to a folder you can write")
    # A folder where the run writes model.json would fail the run at its very end.
    (tmp / "run" / "model.json" / "inside").mkdir(parents=True)
    r = h.run("run", config_for(tmp, h.source("data", "linear.csv")))
    refused(r, f"output.dir: {tmp / 'run' / 'model.json'} is a folder, where the run writes its "
               "model.json; move it away or set another output.dir")
    assert not (tmp / "run" / "summary.json").exists()


FULL_DISK = """
version: 1
name: full
seed: 1
model: {{type: softmax_regression}}
data: {{synthetic: {{kind: blobs, rows: 200, features: 20000, classes: 5}}}}
shards: {{count: 2}}
training: {{epochs: 1, batch_size: 50}}
output: {{dir: {out}}}
"""


def test_a_full_disk_still_leaves_a_failed_summary(tmp):
    """model.json (2 MB) does not fit a 512 KiB tmpfs: exit 3, and summary.json says why (there
    was none). Needs a private mount namespace (root, or CAP_SYS_ADMIN); skipped without."""
    disk = tmp / "disk"
    disk.mkdir()
    cfg = h.write_config(tmp, FULL_DISK.format(out=disk / "run"))
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=512k tmpfs {disk}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"skip test_a_full_disk_still_leaves_a_failed_summary: {probe.stderr.strip()}")
        return
    script = (f"mount -t tmpfs -o size=512k tmpfs {disk} && {h.binary()} run {cfg}; "
              f"echo \"exit $?\"; cat {disk / 'run' / 'summary.json'}")
    ran = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert ran.stdout.startswith("exit 3\n"), (ran.stdout, ran.stderr)
    summary = json.loads(ran.stdout.split("\n", 1)[1])
    assert summary["status"] == "failed", summary
    assert summary["error"] == (f"cannot write {disk / 'run' / 'model.json'}: No space left on "
                                "device"), summary["error"]
    assert f"i/o error: cannot write {disk / 'run' / 'model.json'}: No space left" in ran.stderr


if __name__ == "__main__":
    h.main([test_endless_and_special_files_are_refused,
            test_a_fifo_is_refused_without_waiting_for_a_writer,
            test_an_output_folder_that_cannot_be_made_is_bad_usage,
            test_a_full_disk_still_leaves_a_failed_summary])
