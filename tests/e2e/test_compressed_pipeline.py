"""A compressed file of many blocks (core/data/compressed.cpp decompresses on a thread of its own
and writes 1 MiB blocks to the private folder as they come): validate and run see the plain
file's bytes (the same plan, the same model and loss), multi-frame zstd and multi-member gzip
included; corrupt or truncated data and a write that fails end with the old clear errors,
after blocks were already written, and leave nothing in TMPDIR."""

import gzip
import json
import resource
import shutil
import signal
import subprocess

import harness as h

CONFIG = """
version: 1
name: blocks
seed: 4
model: {{type: linear_regression}}
data: {{path: {path}, validation: 0.1}}
shards: {{count: 2}}
training: {{epochs: 1, batch_size: 2000, optimizer: {{type: sgd, lr: 0.05}}}}
output: {{dir: {out}}}
"""


def plain_csv(tmp):
    """About 16 MB of CSV: sixteen blocks of the decompressing thread, four times its ring."""
    path = tmp / "d.csv"
    with open(path, "wb") as out:
        subprocess.run([h.binary(), "gen", "linear", "--rows", "40000", "--features", "20",
                        "--seed", "3"], stdout=out, check=True, timeout=60)
    return path


def thirds(raw):
    """raw cut in three at line ends."""
    a = raw.index(b"\n", len(raw) // 3) + 1
    b = raw.index(b"\n", 2 * len(raw) // 3) + 1
    return [raw[:a], raw[a:b], raw[b:]]


def zstd_frames(parts):
    if not shutil.which("zstd"):
        return None
    return b"".join(subprocess.run(["zstd", "-q", "-1", "-c"], input=p, capture_output=True,
                                   check=True).stdout for p in parts)


def config(tmp, name, path):
    return h.write_config(tmp, CONFIG.format(path=path, out=tmp / name), f"{name}.yaml")


def command(tmp, env, verb, name, path, *extra, limit=None):
    def limited():  # a file size limit: a write past it fails as on a full disk (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([h.binary(), verb, str(config(tmp, name, path)), *extra],
                          capture_output=True, env=env, timeout=120,
                          preexec_fn=limited if limit else None)


def losses(folder):
    """loss.csv without its clock column (seconds)."""
    rows = [line.split(",") for line in (folder / "loss.csv").read_text().splitlines()]
    assert rows[0][2] == "seconds" and len(rows) > 2, rows
    return [row[:2] + row[3:] for row in rows]


def make_files(tmp):
    raw = plain_csv(tmp).read_bytes()
    parts = thirds(raw)
    files = {"d.csv.gz": b"".join(gzip.compress(p, compresslevel=1) for p in parts)}
    packed = zstd_frames(parts)
    if packed is not None:  # the zstd CLI writes the test file (scripts/setup --test installs it)
        files["d.csv.zst"] = packed
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    return raw, files


def test_many_blocks_read_as_the_plain_file(tmp):
    _, env = h.private_tmpdir(tmp)
    _, files = make_files(tmp)
    r = command(tmp, env, "validate", "plain", tmp / "d.csv", "--json")
    assert r.returncode == 0, r.stderr
    expected = json.loads(r.stdout)
    assert expected["rows"] == 40000, expected
    r = command(tmp, env, "run", "plain", tmp / "d.csv", "-q")
    assert r.returncode == 0, r.stderr
    model = (tmp / "plain" / "model.json").read_bytes()
    loss = losses(tmp / "plain")
    for i, name in enumerate(files):
        r = command(tmp, env, "validate", f"v{i}", tmp / name, "--json")
        assert r.returncode == 0, (name, r.stderr)
        got = json.loads(r.stdout)
        assert got.pop("data") == str(tmp / name)
        for key in ("config", "output_dir"):  # the config's own name and folder
            got[key] = expected[key]
        assert got == {k: v for k, v in expected.items() if k != "data"}, name
        r = command(tmp, env, "run", f"run{i}", tmp / name, "-q")
        assert r.returncode == 0, (name, r.stderr)
        assert (tmp / f"run{i}" / "model.json").read_bytes() == model, name
        assert losses(tmp / f"run{i}") == loss, name
    assert list((tmp / "tmpdir").iterdir()) == []


def test_bad_data_past_the_first_blocks(tmp):
    _, env = h.private_tmpdir(tmp)
    raw, files = make_files(tmp)
    bad = {}
    # The last gzip member cut short: the first two members (two thirds) decompress and are
    # written before the end is found missing.
    gz = files["d.csv.gz"]
    bad["cut.csv.gz"] = (gz[:len(gz) - 5000], "cut.csv.gz: the gzip data ends early")
    if "d.csv.zst" in files:
        zst = files["d.csv.zst"]
        # The middle frame's bytes overwritten: the first frame (5 MB) is written by then.
        corrupt = bytearray(zst)
        middle = len(zst) // 2
        corrupt[middle:middle + 4096] = bytes(4096)
        bad["bad.csv.zst"] = (bytes(corrupt), "bad.csv.zst: corrupt zstd data near byte")
        bad["cut.csv.zst"] = (zst[:len(zst) - 5000], "cut.csv.zst: the zstd data ends early")
    for name, (data, says) in bad.items():
        (tmp / name).write_bytes(data)
        for verb in ("validate", "run"):
            out = f"{verb}-{name}"
            r = command(tmp, env, verb, out, tmp / name)
            assert r.returncode == 2, (verb, name, r.returncode, r.stderr)
            assert says.encode() in r.stderr, (verb, name, r.stderr)
            assert b"Traceback" not in r.stderr and b"terminate" not in r.stderr, r.stderr
            assert not (tmp / out / "model.json").exists()
            assert list((tmp / "tmpdir").iterdir()) == [], (verb, name)
    # A write that fails (a file size limit of 6 MiB, as a full disk): exit 3, the folder to
    # change named, after the six blocks that fit were written in order; the decompressing thread
    # stops with it. (A run's copy: validate of such a file writes none, test_compressed_stream.)
    for name in files:
        r = command(tmp, env, "run", f"full-{name}", tmp / name, limit=6 << 20)
        assert r.returncode == 3, (name, r.returncode, r.stderr)
        assert b"cannot write the decompressed data to" in r.stderr, r.stderr
        assert b"(after 6291456 bytes; set TMPDIR to a folder with room)" in r.stderr, r.stderr
        assert list((tmp / "tmpdir").iterdir()) == [], name
    assert len(raw) > 12 << 20


def test_validate_reports_the_first_bad_row(tmp):
    """validate checks a decompressed file's shards on two threads: the error it reports is the
    one the plain file's validate (one thread, in order) reports, whichever thread finds which."""
    _, env = h.private_tmpdir(tmp)
    lines = plain_csv(tmp).read_bytes().split(b"\n")
    cases = {"both": [5001, 30001], "second": [30001]}  # lines of rank 0's and rank 1's rows
    for name, bad in cases.items():
        broken = list(lines)
        for line in bad:
            broken[line - 1] = b"oops" + broken[line - 1][broken[line - 1].index(b","):]
        data = b"\n".join(broken)
        (tmp / f"{name}.csv").write_bytes(data)
        (tmp / f"{name}.csv.gz").write_bytes(gzip.compress(data, compresslevel=1))
        plain = command(tmp, env, "validate", f"p-{name}", tmp / f"{name}.csv")
        packed = command(tmp, env, "validate", f"z-{name}", tmp / f"{name}.csv.gz")
        assert plain.returncode == 2 and packed.returncode == 2, (plain, packed)
        says = f"{name}.csv:{bad[0]}:1: column 'x0': 'oops' is not a number".encode()
        assert says in plain.stderr, plain.stderr
        assert packed.stderr.endswith(plain.stderr.split(f"/{name}.csv:".encode(), 1)[1]), \
            (plain.stderr, packed.stderr)
        assert f"/{name}.csv:{bad[0]}:1:".encode() in packed.stderr, packed.stderr
    assert list((tmp / "tmpdir").iterdir()) == []


if __name__ == "__main__":
    h.main([test_many_blocks_read_as_the_plain_file, test_bad_data_past_the_first_blocks,
            test_validate_reports_the_first_bad_row])
