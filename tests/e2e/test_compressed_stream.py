"""validate of a .csv.gz / .csv.zst checks the rows as they are decompressed, with no copy
written (issue 15, cli/commands/validate_stream.hpp): the same output as the plain file's
validate, field for field (row counts, labels per rank, the plan), and the same errors (the
first bad row the plain path reports, corrupt or truncated data), multi-frame zstd and
multi-member gzip included. Configs it cannot stream (data.missing: mean, data.categorical)
take the copy, and give the same output too."""

import gzip
import json
import random
import resource
import shutil
import signal
import subprocess

import harness as h

STREAMED = b"no copy written"  # the info line of a file checked as it was decompressed


def thirds(raw):
    """raw cut in three at line ends (three gzip members, three zstd frames)."""
    a = raw.index(b"\n", len(raw) // 3) + 1
    b = raw.index(b"\n", 2 * len(raw) // 3) + 1
    return [raw[:a], raw[a:b], raw[b:]]


def packed(tmp, name, raw):
    """name.gz and name.zst beside name, each of three members / frames; their names."""
    parts = thirds(raw)
    (tmp / name).write_bytes(raw)
    (tmp / f"{name}.gz").write_bytes(b"".join(gzip.compress(p, compresslevel=1) for p in parts))
    names = [f"{name}.gz"]
    if shutil.which("zstd"):  # scripts/setup --test installs it
        (tmp / f"{name}.zst").write_bytes(b"".join(
            subprocess.run(["zstd", "-q", "-1", "-c"], input=p, capture_output=True,
                           check=True).stdout for p in parts))
        names.append(f"{name}.zst")
    return names


def validate(tmp, env, config, path, *extra, limit=None):
    def limited():  # a file size limit: a write past it fails as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    cfg = h.write_config(tmp, config.format(path=path, out=tmp / "out"), f"{path.name}.yaml")
    return subprocess.run([h.binary(), "validate", str(cfg), *extra], capture_output=True,
                          env=env, timeout=120, preexec_fn=limited if limit else None)


def same_as_plain(tmp, env, config, name, raw, streamed=True):
    """validate (--json and text) of name's .gz and .zst equals the plain file's."""
    names = packed(tmp, name, raw)
    plain = validate(tmp, env, config, tmp / name, "--json")
    assert plain.returncode == 0, plain.stderr
    want = json.loads(plain.stdout)
    text = validate(tmp, env, config, tmp / name)
    assert text.returncode == 0, text.stderr
    (tmp / name).unlink()  # the packed files are read with no plain file beside them
    for packed_name in names:
        r = validate(tmp, env, config, tmp / packed_name, "--json", "-v")
        assert r.returncode == 0, (packed_name, r.stderr)
        assert (STREAMED in r.stderr) == streamed, (packed_name, r.stderr)
        got = json.loads(r.stdout)
        assert got.pop("data") == str(tmp / packed_name), got
        got["config"] = want["config"]
        assert got == {k: v for k, v in want.items() if k != "data"}, packed_name
        r = validate(tmp, env, config, tmp / packed_name)
        assert r.returncode == 0, (packed_name, r.stderr)
        # Past the first line (the config's name) and the data line's file name.
        a, b = text.stdout.split(b"\n", 2), r.stdout.split(b"\n", 2)
        assert a[2] == b[2] and a[1].split(b"(", 1)[1] == b[1].split(b"(", 1)[1], (a, b)
    return want


LABELS = """
version: 1
seed: 5
model: {{type: softmax_regression}}
data: {{path: {path}, validation: 0.15}}
shards: {{count: 3, strategy: random}}
training: {{epochs: 1, batch_size: 64, optimizer: {{type: sgd, lr: 0.05}}}}
output: {{dir: {out}}}
"""


def test_labels_per_rank_as_the_plain_file(tmp):
    """Text classes (one of them only in a few rows, "2" and "02" two classes) dealt at random: the
    labels of each rank and of the held-out rows, counted from the rows kept on the way."""
    _, env = h.private_tmpdir(tmp)
    rng = random.Random(7)
    rows = ["a,b,c,kind"]
    for i in range(30000):
        kind = rng.choice(["red", "green", "blue", "2", "02"]) if i % 997 else "rare"
        rows.append(f"{rng.random():.6f},{rng.random():.6f},{i % 13},{kind}")
    raw = ("\n".join(rows) + "\n").encode()
    want = same_as_plain(tmp, env, LABELS, "kinds.csv", raw)
    assert want["classes"] == ["02", "2", "blue", "green", "rare", "red"], want["classes"]
    assert sum(s["labels"]["rare"] for s in want["shards"]) + \
        want["validation_labels"]["rare"] == 31, want
    # Binary labels (logistic_regression: 0/1 counted per rank).
    logistic = LABELS.replace("softmax_regression", "logistic_regression")
    raw = "\n".join(["x0,x1,y"] + [f"{i % 7},{rng.random():.4f},{int(rng.random() < 0.3)}"
                                   for i in range(20000)]).encode() + b"\n"
    want = same_as_plain(tmp, env, logistic, "binary.csv", raw)
    assert want["classes"] == ["0", "1"] and want["validation_rows"] == 3000, want
    assert list((tmp / "tmpdir").iterdir()) == []


OPTIONS = """
version: 1
seed: 3
model: {{type: linear_regression}}
data:
  path: {path}
  label: target
  delimiter: tab
  exclude: [note]
  features: [id, "f1:f3"]
  missing: zero
  validation: 0.2
  normalize: minmax
shards: {{count: 4, strategy: round_robin}}
training: {{epochs: 2, batch_size: 100, optimizer: {{type: adam, lr: 0.01}}}}
output: {{dir: {out}}}
"""


def test_every_option_as_the_plain_file(tmp):
    """A TSV with a BOM, CRLF line ends, quoted cells (one with a newline and a tab in it, in an
    excluded column), missing cells read as 0, features by name and range, a forced separator,
    round-robin shards and held-out rows; then a config the stream leaves to the copy
    (data.missing: mean, a one_hot column), which gives the plain file's output as well."""
    _, env = h.private_tmpdir(tmp)
    rng = random.Random(3)
    lines = ["\ufeffid\tf1\tf2\tf3\tnote\ttarget"]
    for i in range(12000):
        f2 = "" if i % 50 == 0 else f"{rng.gauss(0, 1):.5f}"
        note = '"two\nlines\tand ""quotes"""' if i % 500 == 0 else f"n{i % 4}"
        lines.append(f'{i}\t"{rng.random():.4f}"\t{f2}\t{rng.random():.3f}\t{note}\t{i % 10}')
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode()
    want = same_as_plain(tmp, env, OPTIONS, "options.tsv", raw)
    assert want["rows"] == 12000 and want["features"] == 4, want
    assert [s["rows"] for s in want["shards"]] == [2400] * 4, want
    copied = OPTIONS.replace("missing: zero", "missing: mean\n  categorical: {{note: one_hot}}") \
                    .replace("  exclude: [note]\n", "").replace('[id, "f1:f3"]', '[id, "f1:note"]')
    want = same_as_plain(tmp, env, copied, "options.tsv", raw, streamed=False)
    assert want["features"] == 9, want  # id, f1..f3 and note's five values
    assert list((tmp / "tmpdir").iterdir()) == []


PLAN = """
version: 1
seed: 2
model: {{type: linear_regression}}
data: {{path: {path}, validation: 0.1}}
shards: {{count: 3, strategy: random}}
training: {{epochs: 1, batch_size: 100, optimizer: {{type: sgd, lr: 0.01}}}}
output: {{dir: {out}}}
"""


def linear_rows(tmp, rows=20000):
    subprocess.run([h.binary(), "gen", "linear", "--rows", str(rows), "--features", "6",
                    "--seed", "4"], stdout=open(tmp / "gen.csv", "wb"), check=True, timeout=60)
    return (tmp / "gen.csv").read_bytes()


def test_no_copy_is_written(tmp):
    """With writes limited to 64 KiB (as a disk nearly full) the streamed validate of a 1.3 MB
    file passes, while a run (which needs the copy) fails on the limit, as before."""
    _, env = h.private_tmpdir(tmp)
    raw = linear_rows(tmp)
    for name in packed(tmp, "lin.csv", raw):
        r = validate(tmp, env, PLAN, tmp / name, "-v", limit=64 << 10)
        assert r.returncode == 0 and STREAMED in r.stderr, (name, r.stderr)
        cfg = h.write_config(tmp, PLAN.format(path=tmp / name, out=tmp / "run"), "run.yaml")

        def limited():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))
        r = subprocess.run([h.binary(), "run", str(cfg), "-q"], capture_output=True, env=env,
                           timeout=120, preexec_fn=limited)
        assert r.returncode == 3 and b"cannot write the decompressed data to" in r.stderr, r
    assert list((tmp / "tmpdir").iterdir()) == []


def error_tail(stderr, name):
    """The message past the file's folder: '.../x.csv:LINE:COL: ...' -> 'x.csv:LINE:COL: ...'."""
    return stderr.split(f"/{name}:".encode(), 1)[1]


def test_the_errors_of_the_plain_file(tmp):
    """Two bad cells, the later one in a rank checked first (the plain path reports that one); a
    ragged row; a blank line in the middle: each .gz/.zst names the line the plain file's
    validate names. Corrupt and truncated data: the decompressor's messages."""
    _, env = h.private_tmpdir(tmp)
    raw = linear_rows(tmp)
    lines = raw.split(b"\n")
    first, later = 2003, 15001  # rank order (random shards) reaches line 15001 first
    bad = list(lines)
    for line in (first, later):
        bad[line - 1] = b"oops" + bad[line - 1][bad[line - 1].index(b","):]
    ragged = list(lines)
    ragged[9000] += b",7"
    blank = list(lines)
    blank[12000:12000] = [b""]
    cases = {"bad.csv": (bad, later), "ragged.csv": (ragged, 9001), "blank.csv": (blank, 12001)}
    for name, (rows, line) in cases.items():
        data = b"\n".join(rows)
        (tmp / name).write_bytes(data)
        plain = validate(tmp, env, PLAN, tmp / name)
        assert plain.returncode == 2, plain.stderr
        assert f"{name}:{line}:".encode() in plain.stderr, (name, plain.stderr)
        for packed_name in packed(tmp, name, data):
            r = validate(tmp, env, PLAN, tmp / packed_name)
            assert r.returncode == 2, (packed_name, r.stderr)
            assert error_tail(r.stderr, name) == error_tail(plain.stderr, name), \
                (packed_name, r.stderr, plain.stderr)
    # Corrupt and truncated compressed data, past the first frames / members.
    names = packed(tmp, "lin.csv", raw)
    broken = {"cut.csv.gz": ((tmp / "lin.csv.gz").read_bytes()[:-3000],
                             b"cut.csv.gz: the gzip data ends early")}
    if "lin.csv.zst" in names:
        zst = bytearray((tmp / "lin.csv.zst").read_bytes())
        zst[len(zst) // 2:len(zst) // 2 + 2048] = bytes(2048)
        broken["bad.csv.zst"] = (bytes(zst), b"bad.csv.zst: corrupt zstd data near byte")
    for name, (data, says) in broken.items():
        (tmp / name).write_bytes(data)
        r = validate(tmp, env, PLAN, tmp / name)
        assert r.returncode == 2 and says in r.stderr, (name, r.stderr)
        assert b"Traceback" not in r.stderr and b"terminate" not in r.stderr, r.stderr
    assert list((tmp / "tmpdir").iterdir()) == []


def test_run_indexes_while_decompressing(tmp):
    """run still decompresses into the private folder (its workers seek into it), and indexes the
    rows while it writes them: the same model bytes as the plain file's run; a ragged row past
    the first MiB stops it with the plain file's message (index_csv reads the copy again)."""
    _, env = h.private_tmpdir(tmp)
    raw = linear_rows(tmp)

    def run(name, *extra):
        cfg = h.write_config(tmp, PLAN.format(path=tmp / name, out=tmp / f"run-{name}"),
                             f"run-{name}.yaml")
        return subprocess.run([h.binary(), "run", str(cfg), *extra], capture_output=True,
                              env=env, timeout=120)
    names = packed(tmp, "lin.csv", raw)
    assert run("lin.csv", "-q").returncode == 0
    model = (tmp / "run-lin.csv" / "model.json").read_bytes()
    for name in names:
        r = run(name, "-v")
        assert r.returncode == 0, (name, r.stderr)
        assert b"while it was decompressed" in r.stderr, (name, r.stderr)
        assert (tmp / f"run-{name}" / "model.json").read_bytes() == model, name
    lines = raw.split(b"\n")
    lines[17000] += b",7"
    data = b"\n".join(lines)
    (tmp / "ragged.csv").write_bytes(data)
    plain = run("ragged.csv")
    assert plain.returncode == 2 and b"ragged.csv:17001:1: row has 8 fields" in plain.stderr, plain
    for name in packed(tmp, "ragged.csv", data):
        r = run(name)
        assert r.returncode == 2, (name, r.stderr)
        assert error_tail(r.stderr, "ragged.csv") == error_tail(plain.stderr, "ragged.csv"), r
    assert list((tmp / "tmpdir").iterdir()) == []


if __name__ == "__main__":
    h.main([test_labels_per_rank_as_the_plain_file, test_every_option_as_the_plain_file,
            test_no_copy_is_written, test_the_errors_of_the_plain_file,
            test_run_indexes_while_decompressing])
