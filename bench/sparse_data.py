#!/usr/bin/python3
"""The hashed click log of bench_sparse.py as numpy arrays and scipy matrices, and its peers.

    sparse_data.py hash CSV DIR                 keys of a `disttrain gen clicks` CSV -> DIR
    sparse_data.py libsvm DIR OUT --bits B [--rows N]
    sparse_data.py keys DIR --bits B --batch N [--samples S]
    sparse_data.py sklearn TRAIN TEST --bits B [--epochs E] [--alpha A]
    sparse_data.py xgboost TRAIN TEST --bits B [--rounds R] [--threads T] [--eta E]
    sparse_data.py score MODEL.json TEST --bits B

Each command prints one JSON line. DIR holds `keys.npy`, uint32 [rows, fields]: the top 32 bits
of each cell's 64-bit FNV-1a hash of "column=value" (docs/sparse-data.md), so the key of a cell
at `bits` buckets is keys >> (32 - bits), disttrain's `fnv1a64(...) >> (64 - bits)`; and
`labels.npy`, int8 [rows]. A row's keys that collide add up (value 2, ...), as disttrain's do.
The peers are single processes over a scipy CSR matrix of the training rows; they report the
fit time alone (the matrix is built before the clock starts) and log-loss and AUC on TEST.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
CHUNK = 1 << 19  # rows hashed at a time (176 MB of a 39-field log)


def fnv1a64(data: bytes, h: int = FNV_OFFSET) -> int:
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) % 2**64
    return h


def key(column: str, value: str, bits: int) -> int:
    return fnv1a64(f"{column}={value}".encode()) >> (64 - bits)


# The values docs/sparse-data.md and disttrain's unit tests pin.
assert key("C1", "68fd1e64", 22) == 4066997 and key("color", "red", 22) == 402311


def fixed_layout(path: Path, header: bytes):
    """(rows, row_bytes) when every row of `path` has the same length, as `gen clicks` writes
    them (a 0/1 label, then fields of 8 hex digits); None otherwise."""
    columns = header.decode().strip().split(",")
    fields = len(columns) - 1
    row_bytes = 1 + 9 * fields + 1
    body = path.stat().st_size - len(header)
    if columns[0] != "click" or body % row_bytes:
        return None
    rows = body // row_bytes
    data = np.memmap(path, np.uint8, "r", offset=len(header), shape=(rows, row_bytes))
    sample = data[:: max(1, rows // 1000)]
    if not (sample[:, -1] == ord("\n")).all() or not (sample[:, 1:-1:9] == ord(",")).all():
        return None
    return rows, row_bytes


def hash_csv(csv: Path, out: Path):
    """keys.npy and labels.npy of a `gen clicks` CSV: numpy over fixed-width rows (every byte
    checked), else the csv module row by row (slow, for other files)."""
    with open(csv, "rb") as f:
        header = f.readline()
    columns = header.decode().strip().split(",")
    out.mkdir(parents=True, exist_ok=True)
    layout = fixed_layout(csv, header)
    if layout is None:
        return hash_csv_slow(csv, columns, out)
    rows, row_bytes = layout
    fields = len(columns) - 1
    data = np.memmap(csv, np.uint8, "r", offset=len(header), shape=(rows, row_bytes))
    keys = np.lib.format.open_memmap(out / "keys.part.npy", "w+", np.uint32, (rows, fields))
    labels = np.empty(rows, np.int8)
    prefix = [fnv1a64(f"{c}=".encode()) for c in columns[1:]]
    prime = np.uint64(FNV_PRIME)
    for start in range(0, rows, CHUNK):
        block = np.asarray(data[start:start + CHUNK])
        if not ((block[:, 0] == ord("0")) | (block[:, 0] == ord("1"))).all() or \
                not (block[:, -1] == ord("\n")).all() or not (block[:, 1:-1:9] == ord(",")).all():
            raise SystemExit(f"{csv}: rows {start}..{start + len(block)} are not all of the "
                             "fixed layout of `gen clicks` (label, then 8-hex-digit fields)")
        labels[start:start + len(block)] = block[:, 0] - ord("0")
        for j in range(fields):
            h = np.full(len(block), prefix[j], np.uint64)
            for b in range(8):
                h ^= block[:, 2 + 9 * j + b]
                h *= prime
            keys[start:start + len(block), j] = h >> np.uint64(32)
    keys.flush()
    del keys
    os.replace(out / "keys.part.npy", out / "keys.npy")
    np.save(out / "labels.npy", labels)
    return rows, fields


def hash_csv_slow(csv: Path, columns, out: Path):
    import csv as csvmod
    keys, labels = [], []
    prefix = [fnv1a64(f"{c}=".encode()) for c in columns[1:]]
    with open(csv, newline="") as f:
        reader = csvmod.reader(f)
        next(reader)
        for row in reader:
            labels.append(int(row[0]))
            keys.append([fnv1a64(v.encode(), p) >> 32 for p, v in zip(prefix, row[1:])])
    np.save(out / "keys.npy", np.array(keys, np.uint32).reshape(len(labels), len(columns) - 1))
    np.save(out / "labels.npy", np.array(labels, np.int8))
    return len(labels), len(columns) - 1


def load(folder, rows=None):
    keys = np.load(Path(folder) / "keys.npy", mmap_mode="r")
    labels = np.load(Path(folder) / "labels.npy")
    if rows is not None:
        keys, labels = keys[:rows], labels[:rows]
    return keys, labels


def csr_parts(keys, bits, dtype=np.float64):
    """(indptr, indices, values) of the rows at 2^bits buckets: each row's keys sorted, the
    colliding ones merged into one key whose value is their count."""
    rows, fields = keys.shape
    indptr = np.zeros(rows + 1, np.int64)
    indices = np.empty(rows * fields, np.int32)
    values = np.empty(rows * fields, dtype)
    nnz = 0
    shift = np.uint32(32 - bits)
    for start in range(0, rows, CHUNK):
        k = np.sort(np.asarray(keys[start:start + CHUNK]) >> shift, axis=1)
        first = np.ones(k.shape, bool)
        first[:, 1:] = k[:, 1:] != k[:, :-1]
        at = np.flatnonzero(first)                       # row-major: runs never cross rows
        count = np.diff(np.append(at, k.size))
        n = len(at)
        indices[nnz:nnz + n] = k.ravel()[at]
        values[nnz:nnz + n] = count
        indptr[start + 1:start + 1 + len(k)] = nnz + np.cumsum(first.sum(axis=1))
        nnz += n
    return indptr, indices[:nnz], values[:nnz]


def csr(keys, bits, dtype=np.float64):
    import scipy.sparse
    indptr, indices, values = csr_parts(keys, bits, dtype)
    return scipy.sparse.csr_matrix((values, indices, indptr), shape=(len(keys), 1 << bits))


def quality(labels, p):
    from sklearn.metrics import log_loss, roc_auc_score
    return {"test_rows": len(labels), "log_loss": float(log_loss(labels, p, labels=[0, 1])),
            "auc": float(roc_auc_score(labels, p))}


def write_libsvm(folder, out: Path, bits, rows):
    """A LIBSVM copy of the first `rows` rows at 2^bits buckets, 1-based indices (key k is
    feature k + 1), written to a temp name then renamed."""
    keys, labels = load(folder, rows)
    indptr, indices, values = csr_parts(keys, bits)
    part = out.with_suffix(".part")
    with open(part, "w") as f:
        for r in range(len(labels)):
            a, b = indptr[r], indptr[r + 1]
            f.write(f"{labels[r]} " + " ".join(f"{k + 1}:{v:g}" for k, v in
                                                zip(indices[a:b], values[a:b])) + "\n")
    os.replace(part, out)
    return {"rows": int(len(labels)), "nonzeros": int(indptr[-1]), "bytes": out.stat().st_size}


def batch_keys(folder, bits, batch, samples, seed=1):
    """Distinct keys of a batch of `batch` rows drawn at random (a shuffled epoch's batch),
    mean over `samples` batches; and of `batch` consecutive rows (an unshuffled one)."""
    keys, _ = load(folder)
    rng = np.random.default_rng(seed)
    shift = np.uint32(32 - bits)
    rand, cons = [], []
    for _ in range(samples):
        pick = np.sort(rng.choice(len(keys), size=min(batch, len(keys)), replace=False))
        rand.append(len(np.unique(np.asarray(keys[pick]) >> shift)))
        start = int(rng.integers(0, max(1, len(keys) - batch)))
        cons.append(len(np.unique(np.asarray(keys[start:start + batch]) >> shift)))
    return {"bits": bits, "batch": batch, "samples": samples,
            "keys_mean": float(np.mean(rand)), "keys_consecutive_mean": float(np.mean(cons)),
            "nonzeros_per_row": float(keys.shape[1])}


def peer_sklearn(train, test, bits, epochs, alpha, eta0):
    from sklearn.linear_model import SGDClassifier
    import warnings
    t = time.perf_counter()
    keys, y = load(train)
    rows = len(y)
    x = csr(keys, bits)
    prepare = time.perf_counter() - t
    model = SGDClassifier(loss="log_loss", penalty="l2", alpha=alpha, max_iter=epochs, tol=None,
                          learning_rate="constant", eta0=eta0, shuffle=True, random_state=1)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached: the pass count is the point
        model.fit(x, y)
    fit = time.perf_counter() - t
    del x
    keys, y = load(test)
    p = model.predict_proba(csr(keys, bits))[:, 1]
    return {"peer": "sklearn", "rows": rows,
            "passes": epochs, "prepare_s": prepare, "fit_s": fit,
            "params": {"alpha": alpha, "learning_rate": "constant", "eta0": eta0},
            **quality(y, p)}


def peer_xgboost(train, test, bits, rounds, threads, eta, reg_lambda):
    import xgboost as xgb
    t = time.perf_counter()
    keys, y = load(train)
    rows = len(y)
    x = csr(keys, bits, np.float32)
    dtrain = xgb.DMatrix(x, label=y, nthread=threads)
    del x
    prepare = time.perf_counter() - t
    params = {"booster": "gblinear", "objective": "binary:logistic", "eta": eta,
              "lambda": reg_lambda, "alpha": 0.0, "nthread": threads, "eval_metric": "logloss"}
    t = time.perf_counter()
    booster = xgb.train(params, dtrain, num_boost_round=rounds)
    fit = time.perf_counter() - t
    del dtrain
    keys, y = load(test)
    p = booster.predict(xgb.DMatrix(csr(keys, bits, np.float32), nthread=threads))
    return {"peer": "xgboost", "version": xgb.__version__, "rows": rows, "passes": rounds,
            "prepare_s": prepare, "fit_s": fit, "params": params, **quality(y, p)}


def model_weights(model_json: Path, width):
    """(weights [width], bias) of a disttrain logistic model.json, its weights dense or in the
    sparse encoding (docs/sparse.md: `index` and `data`)."""
    model = json.loads(model_json.read_text())
    blocks = {b["name"]: b for b in model["parameters"]}
    w = blocks["weights"]
    if w.get("encoding") == "sparse":
        weights = np.zeros(width)
        weights[np.asarray(w["index"], np.int64)] = w["data"]
    else:
        weights = np.asarray(w["data"], float)
    if len(weights) != width:
        raise SystemExit(f"{model_json}: {len(weights)} weights, expected {width}")
    return weights, float(blocks["bias"]["data"][0])


def score(model_json, test, bits):
    weights, bias = model_weights(Path(model_json), 1 << bits)
    keys, y = load(test)
    z = csr(keys, bits) @ weights + bias
    p = 1.0 / (1.0 + np.exp(-z))
    return {"nonzero_weights": int(np.count_nonzero(weights)), **quality(y, p)}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    bits = ("--bits", int, None)
    for name, positionals, options in (
            ("hash", ["csv", "dir"], []),
            ("libsvm", ["dir", "out"], [bits, ("--rows", int, None)]),
            ("keys", ["dir"], [bits, ("--batch", int, None), ("--samples", int, 50)]),
            ("sklearn", ["train", "test"], [bits, ("--epochs", int, 1), ("--alpha", float, 1e-6),
                                            ("--eta0", float, 0.01)]),
            ("xgboost", ["train", "test"], [bits, ("--rounds", int, 5), ("--threads", int, 2),
                                            ("--eta", float, 0.5), ("--lambda", float, 0.0)]),
            ("score", ["model", "test"], [bits])):
        c = sub.add_parser(name)
        for positional in positionals:
            c.add_argument(positional, type=Path)
        for flag, kind, default in options:
            c.add_argument(flag, dest=flag[2:].replace("lambda", "reg_lambda"), type=kind,
                           default=default, required=default is None and flag != "--rows")
    a = p.parse_args()
    t = time.perf_counter()
    if a.command == "hash":
        rows, fields = hash_csv(a.csv, a.dir)
        out = {"rows": int(rows), "fields": int(fields)}
    elif a.command == "libsvm":
        out = write_libsvm(a.dir, a.out, a.bits, a.rows)
    elif a.command == "keys":
        out = batch_keys(a.dir, a.bits, a.batch, a.samples)
    elif a.command == "sklearn":
        out = peer_sklearn(a.train, a.test, a.bits, a.epochs, a.alpha, a.eta0)
    elif a.command == "xgboost":
        out = peer_xgboost(a.train, a.test, a.bits, a.rounds, a.threads, a.eta, a.reg_lambda)
    else:
        out = score(a.model, a.test, a.bits)
    out["seconds"] = time.perf_counter() - t
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
