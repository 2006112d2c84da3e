"""gzip and zstd data (data.compression): a .gz or .zst file, or a compressed pipe, trains the
bytes of the plain file's run, and predict/eval read them too; a name and content that
disagree, a truncated or corrupt file and a forced compression that does not match get exit 2
naming the file and what to do; nothing is left in TMPDIR."""

import gzip
import shutil
import subprocess

import harness as h

CONFIG = """
version: 1
name: packed
seed: 2
model: {{type: logistic_regression}}
data: {{path: {path}, validation: 0.1{extra}}}
shards: {{count: 2}}
training: {{epochs: 2, batch_size: 32, optimizer: {{type: sgd, lr: 0.1}}}}
output: {{dir: {out}}}
"""


def run(tmp, name, path, env, extra="", stdin=None):
    cfg = h.write_config(tmp, CONFIG.format(path=path, out=tmp / name, extra=extra), f"{name}.yaml")
    return subprocess.run([h.binary(), "run", str(cfg), "-q"], input=stdin, capture_output=True,
                          env=env, timeout=120)


def zstd_of(data):
    if not shutil.which("zstd"):
        return None
    return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout


def test_compressed_files_train_as_the_plain_file(tmp):
    _, env = h.private_tmpdir(tmp)
    plain = h.source("data", "logistic.csv")
    raw = plain.read_bytes()
    r = run(tmp, "plain", plain, env)
    assert r.returncode == 0, r.stderr
    expected = (tmp / "plain" / "model.json").read_bytes()
    # Two gzip members back to back (as `cat a.gz b.gz` makes): read as one stream, as zcat does.
    half = raw.index(b"\n", len(raw) // 2) + 1
    (tmp / "d.csv.gz").write_bytes(gzip.compress(raw[:half]) + gzip.compress(raw[half:]))
    files = {"d.csv.gz": None}
    packed = zstd_of(raw)
    if packed is not None:  # the zstd CLI writes the test file (scripts/setup --test installs it)
        (tmp / "d.csv.zst").write_bytes(packed)
        files["d.csv.zst"] = None
    for name in files:
        out = "run-" + name
        r = run(tmp, out, tmp / name, env)
        assert r.returncode == 0, (name, r.stderr)
        assert (tmp / out / "model.json").read_bytes() == expected, name
        # The resolved config names the compressed file: a rerun reads it again.
        assert name in (tmp / out / "config.resolved.yaml").read_text()
        for command in ("predict", "eval"):
            a = h.run(command, tmp / "plain" / "model.json", plain)
            b = h.run(command, tmp / "plain" / "model.json", tmp / name)
            assert a.code == 0 and b.code == 0 and a.stdout == b.stdout, (command, name, b)
    # A gzip pipe: told from its first bytes.
    r = run(tmp, "pipe", '"-"', env, stdin=gzip.compress(raw))
    assert r.returncode == 0, r.stderr
    assert (tmp / "pipe" / "model.json").read_bytes() == expected
    assert list((tmp / "tmpdir").iterdir()) == []


def test_bad_compressed_data(tmp):
    _, env = h.private_tmpdir(tmp)
    raw = h.source("data", "logistic.csv").read_bytes()
    packed = gzip.compress(raw)
    (tmp / "hidden.csv").write_bytes(packed)             # gzip under a plain name
    (tmp / "fake.csv.gz").write_bytes(raw)               # plain text under a .gz name
    (tmp / "cut.csv.gz").write_bytes(packed[: len(packed) // 2])  # truncated
    corrupt = bytearray(packed)
    corrupt[len(corrupt) // 2:len(corrupt) // 2 + 64] = b"\0" * 64
    (tmp / "bad.csv.gz").write_bytes(bytes(corrupt))
    cases = [
        ("hidden.csv", "", "starts like a gzip file, but its name says plain text: name it hidden.csv.gz"),
        ("fake.csv.gz", "", "is named like a gzip file, but does not start like one"),
        ("cut.csv.gz", "", "the file is truncated"),
        ("bad.csv.gz", "", "bad.csv.gz: corrupt gzip data near byte"),
        ("hidden.csv", ", compression: zstd", "data.compression is zstd, but the file does not start like zstd data (it starts like gzip)"),
    ]
    for i, (name, extra, says) in enumerate(cases):
        r = run(tmp, f"bad{i}", tmp / name, env, extra=extra)
        assert r.returncode == 2, (name, extra, r)
        assert says.encode() in r.stderr, (name, r.stderr)
        assert not (tmp / f"bad{i}" / "model.json").exists()
    # Forced: a gzip file under any name trains when data.compression says so.
    r = run(tmp, "forced", tmp / "hidden.csv", env, extra=", compression: gzip")
    assert r.returncode == 0, r.stderr
    assert list((tmp / "tmpdir").iterdir()) == []


if __name__ == "__main__":
    h.main([test_compressed_files_train_as_the_plain_file, test_bad_compressed_data])
