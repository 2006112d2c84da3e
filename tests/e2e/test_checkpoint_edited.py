"""A checkpoint edited by hand, its checksum made valid again: `run --resume` refuses it with
exit 2 naming the file and what is wrong, never "internal error" or a cast of garbage. The
checksum catches damage, not edits, so what lies behind it is checked too. The checkpoint layout
is core/coordinator/checkpoint.hpp's; this file reads and writes it on its own."""

import json
import math
import struct
import zlib

import harness as h

CONFIG = """
version: 1
name: edited
seed: 5
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 200, features: 3}}}}
shards: {{count: 2}}
training: {{epochs: 2, batch_size: 50, optimizer: {{type: sgd, lr: 0.1}}}}
fault_tolerance: {{checkpoint_every: {{steps: 1}}}}
output: {{dir: {out}}}
"""

MAGIC, END = b"DTCKPT\r\n", b"DTCKEND\n"


def fnv1a(data):
    h64 = 0xcbf29ce484222325
    for b in data:
        h64 = ((h64 ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h64


def decode(raw):
    assert raw.startswith(MAGIC) and raw.endswith(END), "not a checkpoint"
    pos = len(MAGIC) + 8
    (n,) = struct.unpack_from("<Q", raw, pos)
    manifest = json.loads(raw[pos + 8:pos + 8 + n])
    pos += 8 + n
    (count,) = struct.unpack_from("<Q", raw, pos)
    pos += 8
    arrays = {}
    for _ in range(count):
        (length,) = struct.unpack_from("<Q", raw, pos)
        name = raw[pos + 8:pos + 8 + length].decode()
        pos += 8 + length
        (values,) = struct.unpack_from("<Q", raw, pos)
        arrays[name] = list(struct.unpack_from(f"<{values}d", raw, pos + 8))
        pos += 8 + 8 * values
    return raw[:len(MAGIC) + 8], manifest, arrays


def encode(head, manifest, arrays):
    text = json.dumps(manifest).encode()
    body = head + struct.pack("<Q", len(text)) + text + struct.pack("<Q", len(arrays))
    for name in sorted(arrays):
        body += struct.pack("<Q", len(name)) + name.encode()
        body += struct.pack("<Q", len(arrays[name])) + struct.pack(f"<{len(arrays[name])}d", *arrays[name])
    (version,) = struct.unpack_from("<I", head, len(MAGIC))
    # Format version 2 and 3's checksum is CRC-32 (zlib's); version 1's was FNV-1a 64.
    check = zlib.crc32(body) if version >= 2 else fnv1a(body)
    return body + struct.pack("<Q", check) + END


def finished_run(tmp):
    cfg = h.write_config(tmp, CONFIG.format(out=tmp / "run"))
    r = h.run("run", cfg, timeout=60)
    assert r.code == 0, r
    newest = sorted((tmp / "run" / "checkpoint").glob("step-*.ckpt"))[-1]
    return cfg, newest


def resume_with(cfg, path, edit):
    head, manifest, arrays = decode(path.read_bytes())
    edit(manifest, arrays)
    path.write_bytes(encode(head, manifest, arrays))
    return h.run("run", cfg, "--resume", timeout=60)


def test_unedited_checkpoint_resumes(tmp):
    # The reader and writer above are the format: a round trip through them still resumes.
    cfg, path = finished_run(tmp)
    r = resume_with(cfg, path, lambda manifest, arrays: None)
    assert r.code == 0, r


def test_manifest_without_a_key_is_refused(tmp):
    cfg, path = finished_run(tmp)
    r = resume_with(cfg, path, lambda manifest, arrays: manifest.pop("samples"))
    assert r.code == 2, r
    assert f"data error: {path}: the checkpoint's manifest is incomplete (" in r.stderr, r.stderr
    assert "samples" in r.stderr and "internal error" not in r.stderr, r.stderr


def test_log_step_that_is_not_a_whole_number_is_refused(tmp):
    cfg, path = finished_run(tmp)

    def edit(manifest, arrays):
        arrays["log.step"][0] = math.nan

    r = resume_with(cfg, path, edit)
    assert r.code == 2, r
    assert f"{path}: the log column log.step holds nan, not a whole number" in r.stderr, r.stderr


def test_counts_that_are_not_whole_numbers_are_refused(tmp):
    """A count of the manifest that is a fraction, negative or past 2^64 (read before as a
    double cast to an integer: undefined behaviour, or a silent wrap or cut): exit 2 naming the
    key, for the run's counts, the loss window and an optimizer state (found by fuzz_resume)."""
    cfg, path = finished_run(tmp)
    original = path.read_bytes()
    edits = {
        "samples": lambda m: m.__setitem__("samples", 1e300),
        "rows": lambda m: m["window"].__setitem__("rows", -1),
        "steps": lambda m: m["optimizers"]["optimizer"].__setitem__("steps", 2.5),
    }
    for key, edit in edits.items():
        path.write_bytes(original)
        r = resume_with(cfg, path, lambda manifest, arrays: edit(manifest))
        assert r.code == 2, (key, r)
        assert (f"data error: {path}: the checkpoint's manifest is incomplete ({key} is not a "
                "non-negative integer)") in r.stderr, (key, r.stderr)


if __name__ == "__main__":
    h.main([test_unedited_checkpoint_resumes, test_manifest_without_a_key_is_refused,
            test_log_step_that_is_not_a_whole_number_is_refused,
            test_counts_that_are_not_whole_numbers_are_refused])
