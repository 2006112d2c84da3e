"""predict and eval stream: a CSV (a file, a pipe, gzip or zstd) is read a chunk of rows at a
time and predictions are written as they come, so memory does not grow with the data. Checked
without timing: predict runs under an address-space limit (RLIMIT_AS) smaller than the data it
reads through a pipe, which a command holding the data (or its index) in memory cannot do. Also:
the same output from a file, a pipe, gzip and zstd; a closed output pipe ends predict quietly;
a bad row after good ones is exit 2 naming its line (the rows before it are predicted); an .npy
through a pipe is read as the file is."""

import gzip
import resource
import signal
import subprocess
import threading

import numpy as np

import harness as h

CONFIG = """
version: 1
seed: 3
model: {{type: {model}}}
data: {{path: {path}}}
shards: {{count: 2}}
training: {{epochs: 2, batch_size: 64, optimizer: {{type: sgd, lr: 0.05}}}}
output: {{dir: {out}}}
"""

# The address space predict may use in the memory test: enough for the program, its libraries
# and its buffers; less than the data it is given (2x this). The rows are short ("0.5,<15
# letters>": 20 bytes, a feature and a column predict skips), so a command that held them would
# need more than the text itself: an index entry (16 bytes) and a value (8 bytes) a row.
LIMIT = 160 << 20


def train(tmp, kind, features=20, rows=2000, model="linear_regression"):
    r = h.run("gen", kind, "--rows", str(rows), "--features", str(features), "--seed", "4")
    assert r.code == 0, r
    data = tmp / f"{kind}.csv"
    data.write_text(r.stdout)
    out = tmp / f"run-{kind}"
    cfg = h.write_config(tmp, CONFIG.format(model=model, path=data, out=out), f"{kind}.yaml")
    r = h.run("run", cfg, "-q")
    assert r.code == 0, r
    return out / "model.json", data


def piped(args, data, **kw):
    return subprocess.run([h.binary(), *map(str, args)], input=data, capture_output=True,
                          timeout=120, **kw)


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_predict_in_less_memory_than_its_data(tmp):
    model, data = train(tmp, "linear", features=1)
    header = b"x0,note\n"
    rows = b"".join(b"%.1f,abcdefghijklmno\n" % (i / 10) for i in range(100))
    assert len(rows) == 100 * 20
    want = piped(["predict", model, "-"], header + rows).stdout
    assert want.count(b"\n") == 101, want
    # A small input under the limit works: the limit leaves room for the program itself.
    r = piped(["predict", model, "-"], header + rows, preexec_fn=limit_memory)
    assert r.returncode == 0 and r.stdout == want, r.stderr
    # 2x the limit through a pipe, written by a thread while predict reads and writes.
    block = rows * ((1 << 20) // len(rows))
    repeats = 2 * LIMIT // len(block) + 1
    p = subprocess.Popen([h.binary(), "predict", str(model), "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit_memory)

    def feed():
        try:
            p.stdin.write(header)
            for _ in range(repeats):
                p.stdin.write(block)
        except BrokenPipeError:
            pass  # predict failed; its exit status says why
        p.stdin.close()

    writer = threading.Thread(target=feed)
    writer.start()
    lines = 0
    head = b""
    while chunk := p.stdout.read(1 << 20):
        if len(head) < len(want):
            head += chunk[:len(want)]
        lines += chunk.count(b"\n")
    writer.join()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0, err
    assert repeats * len(block) > 2 * LIMIT
    assert lines == 1 + repeats * block.count(b"\n"), (lines, repeats)
    assert head[:len(want)] == want  # the header and the first 100 rows' predictions


def test_every_source_predicts_the_same(tmp):
    model, data = train(tmp, "blobs", features=4, rows=20000, model="softmax_regression")
    want = h.run("predict", model, data)
    assert want.code == 0 and want.stdout.count("\n") == 20001, want
    (tmp / "blobs.csv.gz").write_bytes(gzip.compress(data.read_bytes()))
    subprocess.run(["zstd", "-q", "-f", str(data), "-o", str(tmp / "blobs.csv.zst")], check=True)
    for path in (tmp / "blobs.csv.gz", tmp / "blobs.csv.zst"):
        r = h.run("predict", model, path)
        assert r.code == 0 and r.stdout == want.stdout, (path, r.stderr)
        r = piped(["predict", model, "-"], path.read_bytes())
        assert r.returncode == 0 and r.stdout.decode() == want.stdout, (path, r.stderr)
    # eval: the same numbers from every source.
    want = h.run("eval", model, data, "--json")
    assert want.code == 0 and want.json()["rows"] == 20000, want
    r = piped(["eval", model, "-", "--json"], (tmp / "blobs.csv.zst").read_bytes())
    assert r.returncode == 0 and r.stdout.decode() == want.stdout, r.stderr
    # A TSV, told by its first lines through a pipe.
    tsv = data.read_bytes().replace(b",", b"\t")
    r = piped(["predict", model, "-"], tsv)
    assert r.returncode == 0 and r.stdout.decode() == h.run("predict", model, data).stdout
    # An .npy through a pipe (written to a private folder first, then read as the file is).
    arr = np.loadtxt(data, delimiter=",", skiprows=1)
    np.save(tmp / "blobs.npy", arr)
    want = h.run("predict", model, tmp / "blobs.npy")
    assert want.code == 0, want
    r = piped(["predict", model, "-"], (tmp / "blobs.npy").read_bytes())
    assert r.returncode == 0 and r.stdout.decode() == want.stdout, r.stderr
    r = piped(["predict", model, "-"], gzip.compress((tmp / "blobs.npy").read_bytes()))
    assert r.returncode == 0 and r.stdout.decode() == want.stdout, r.stderr


def test_a_closed_pipe_ends_predict_quietly(tmp):
    model, data = train(tmp, "linear", rows=30000)
    # As `| head -1` does: SIGPIPE ends predict at once, as it ends cat or grep (the shell says
    # 141); where SIGPIPE is ignored, the failed write ends it with exit 0. Quiet either way.
    for ignored, status in ((False, -signal.SIGPIPE), (True, 0)):
        def setup():
            if ignored:
                signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        p = subprocess.Popen([h.binary(), "predict", str(model), str(data)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=setup)
        assert p.stdout.readline() == b"prediction\n"
        p.stdout.close()
        assert p.wait(timeout=60) == status, (ignored, p.returncode)
        assert p.stderr.read() == b""


def test_bad_rows_after_good_ones(tmp):
    model, data = train(tmp, "linear", features=3)
    text = data.read_text().splitlines()
    cases = [
        (text[:1000] + ["1,2,oops,4"], "stdin:1001:5: column 'x2': 'oops' is not a number"),
        (text[:20] + ["1,2,3"], "stdin:21:1: row has 3 fields, the header has 4"),
        (text[:20] + ["", "1,2,3,4"], "stdin:21:1: blank line in the middle of the data"),
        (text[:5] + ['1,"2,3,4'], "stdin:6:3: unterminated quoted field"),
        (text[:1], "stdin: no data rows after the header"),
        (["x0,x1,y", "1,2,3"], "stdin: no column 'x2', which the model was trained on"),
    ]
    for lines, says in cases:
        r = piped(["predict", model, "-"], ("\n".join(lines) + "\n").encode())
        assert r.returncode == 2 and says in r.stderr.decode(), (says, r.stderr)
    # The rows before a bad one were predicted and written (a chunk at a time): here all 999
    # of the chunk before it, after the header. (In one chunk with the bad row: none.)
    lines = text[:1] + text[1:1001] * 9 + ["1,2,oops,4"]  # 9000 rows: a chunk of 8192 before it
    r = piped(["predict", model, "-"], ("\n".join(lines) + "\n").encode())
    assert r.returncode == 2 and b"stdin:9002:5: column 'x2'" in r.stderr, r.stderr
    assert r.stdout.count(b"\n") == 1 + 8192, r.stdout.count(b"\n")
    # Blank lines at the end are fine, as in a run's data.
    r = piped(["predict", model, "-"], ("\n".join(text[:30]) + "\n\n\n").encode())
    assert r.returncode == 0 and r.stdout.count(b"\n") == 30, r.stderr
    # A pipe without line ends (/dev/zero's kind) is refused at a bound, not read into memory.
    r = piped(["predict", model, "-"], text[0].encode() + b"\n" + b"1" * (65 << 20))
    assert r.returncode == 2 and b"stdin:2: a row longer than 64 MiB" in r.stderr, r.stderr
    # Corrupt compressed input: exit 2 with the byte.
    r = piped(["eval", model, "-"], gzip.compress(data.read_bytes())[:-30])
    assert r.returncode == 2 and b"stdin: the gzip data ends early" in r.stderr, r.stderr


if __name__ == "__main__":
    h.main([test_predict_in_less_memory_than_its_data, test_every_source_predicts_the_same,
            test_a_closed_pipe_ends_predict_quietly, test_bad_rows_after_good_ones])
