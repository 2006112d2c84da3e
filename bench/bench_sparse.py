#!/usr/bin/python3
"""Issue 16's speed targets: sparse logistic regression on a hashed click log, beside its peers.

    /usr/bin/python3 bench/bench_sparse.py [--binary build/release/disttrain] [--rows 10000000]
        [--reps 3] [--seed 1] [--cache-dir DIR] [--no-readme]

One pass: makes the data once in --cache-dir (`disttrain gen clicks`, 39 fields; the last 10% of
the rows held out; the hashed keys of both parts as numpy arrays for the peers; a small LIBSVM
copy for the dense path), then per rep, interleaved: disttrain's FTRL logistic regression on the
hashed CSV (data.hash, 2^22 buckets, 2 workers) with 2 sharded servers, through the star with no
servers, and async with 2 servers; at 2^18 and 2^24 buckets; the dense path and the sparse path
on the LIBSVM copy; scikit-learn's SGDClassifier and XGBoost's gblinear on a scipy CSR matrix of
the same hashed rows. Every model is scored on the held-out rows (log-loss, AUC). A disttrain
run that fails shows "not run: <reason>" in its rows, never a crash. Writes
bench/results/sparse.json, sparse.md and the table between the bench_sparse markers of
bench/README.md (bench_all.py --only sparse puts the same rows in its own table).
What each row measures: bench/README.md.
"""

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_all as ba  # noqa: E402  (the runner, the rows and the formatting)

ROOT = ba.ROOT
HERE = Path(__file__).resolve().parent
DATA = str(HERE / "sparse_data.py")
BEGIN, END = "<!-- bench_sparse:begin -->", "<!-- bench_sparse:end -->"
FIELDS = 39
KEY_VALUE_BYTES = 12          # a 4-byte key and an 8-byte value: the "keys x 12 B"
# FTRL's settings, chosen with a numpy copy of docs/optimizers.md's rule on 900k training rows,
# one pass, global batches of 2000 (held-out AUC 0.80; alpha 0.05 gave 0.66, 20 overfitted):
# the gradient is the batch's mean, so a rare key's is small and alpha must be large.
FTRL = {"alpha": 5.0, "beta": 0.1, "l1": 0.0, "l2": 0.0}

RUN = """
seed: 1
model: {{type: logistic_regression}}
data:
{data}
shards: {{count: 2}}
aggregation: {aggregation}
training:
  epochs: 1
  batch_size: {batch}
  optimizer: {{type: ftrl, alpha: {alpha}, beta: {beta}, l1: {l1}, l2: {l2}}}
transport: {{type: ipc}}
"""

HASHED = """  path: {path}
  label: click
  hash: {{bits: {bits}, columns: [{columns}]}}"""

LIBSVM = """  path: {path}
  sparse: {sparse}
  normalize: none"""

GRADIENTS, SERVERS = "{mode: gradients}", "{mode: gradients, servers: 2}"


@dataclass
class Mode:
    """One disttrain run of a rep."""
    what: str
    kind: str = "hashed"     # hashed: train.csv with data.hash; libsvm, dense: the LIBSVM copy
    aggregation: str = SERVERS
    bits: int | None = None  # None: --bits (hashed) or --dense-bits (LIBSVM)
    head: bool = False       # the first --width-rows training rows only
    per_worker: bool = False  # async: batch_size is each worker's


MODES = {
    "servers": Mode("gradients, 2 servers"),
    "star": Mode("gradients, star (no servers)", aggregation=GRADIENTS),
    "async": Mode("async, 2 servers", aggregation="{mode: async, servers: 2}", per_worker=True),
    "star18": Mode("star, 2^18", aggregation=GRADIENTS, bits=18, head=True),
    "star24": Mode("star, 2^24", aggregation=GRADIENTS, bits=24, head=True),
    "servers18": Mode("2 servers, 2^18", bits=18, head=True),
    "servers24": Mode("2 servers, 2^24", bits=24, head=True),
    "dense": Mode("dense path", kind="dense"),
    "sparse_small": Mode("sparse path", kind="libsvm"),
}

class Sparse:
    """The pass's settings and data files; `b` is bench_all's Bench (binary, tmp, reps, raw)."""

    def __init__(self, b, rows, seed, bits, batch, ftrl, dense_bits, dense_rows, width_rows,
                 xgb_rounds, xgb_threads, xgb_lambda, sgd_eta0, peers=True):
        self.b, self.rows, self.seed, self.bits, self.batch = b, rows, seed, bits, batch
        self.ftrl = ftrl
        self.dense_bits, self.dense_rows = dense_bits, dense_rows
        self.width_rows_wanted = width_rows
        self.xgb_rounds, self.xgb_threads, self.xgb_lambda = xgb_rounds, xgb_threads, xgb_lambda
        self.sgd_eta0, self.peers = sgd_eta0, peers
        self.test_rows = max(1, round(rows * 0.1))
        self.train_rows = rows - self.test_rows
        # gblinear's L2 is summed over the rows: the best value found shrinks with them (1e-4
        # at 180k training rows, 1e-5 at 900k): 10 / rows is near both.
        self.xgb_lambda = xgb_lambda or 10 / self.train_rows
        self.dir = b.cache / f"clicks_{rows}_s{seed}"

    # -- data, made once ----------------------------------------------------------------------

    def prepare(self):
        """train.csv, test.csv, their keys (train/, test/) and the LIBSVM copy; None or why not."""
        self.dir.mkdir(parents=True, exist_ok=True)
        gen = f"'{self.b.binary}' gen clicks --rows {{}} --seed {self.seed} --fields {FIELDS}"
        steps = [
            ("train.csv", gen.format(self.train_rows)),
            # Row i is a function of the seed and i alone: the held-out rows are the last of a
            # longer log, after the training rows.
            ("test.csv", gen.format(self.rows) + f" | awk 'NR == 1 || NR > {self.train_rows + 1}'"),
        ]
        for name, shell in steps:
            if ba.cached_file(self.b, f"{self.dir.name}/{name}", ["sh", "-c", shell]) is None:
                return f"making {name} failed"
        head = self.head_path()
        if head != self.dir / "train.csv" and ba.cached_file(
                self.b, f"{self.dir.name}/{head.name}",
                ["head", "-n", str(self.width_rows() + 1), str(self.dir / "train.csv")]) is None:
            return f"making {head.name} failed"
        for part in ("train", "test"):
            if not (self.dir / part / "labels.npy").exists():
                print(f"  hashing {part}.csv for the peers (once)", flush=True)
                ran = ba.run([ba.PY, DATA, "hash", str(self.dir / f"{part}.csv"),
                              str(self.dir / part)], timeout=3600)
                if ran.code != 0:
                    return f"hashing {part}.csv failed ({ran.why()})"
        svm = self.libsvm_path()
        if not svm.exists():
            print(f"  writing {svm.name}, a LIBSVM copy for the dense path (once)", flush=True)
            ran = ba.run([ba.PY, DATA, "libsvm", str(self.dir / "train"), str(svm), "--bits",
                          str(self.dense_bits), "--rows", str(self.small_rows())], timeout=3600)
            if ran.code != 0:
                return f"writing the LIBSVM copy failed ({ran.why()})"
        return None

    def width_rows(self):
        return min(self.width_rows_wanted, self.train_rows)

    def head_path(self):
        rows = self.width_rows()
        return self.dir / ("train.csv" if rows == self.train_rows else f"train_{rows}.csv")

    def small_rows(self):
        return min(self.dense_rows, self.train_rows)

    def libsvm_path(self):
        return self.dir / f"train_{self.small_rows()}_b{self.dense_bits}.svm"

    def keys_per_batch(self, bits, batch):
        """Mean distinct keys of a worker's batch (random rows, as a shuffled epoch takes)."""
        got, ran = self.data_json("keys", str(self.dir / "train"), "--bits", bits, "--batch",
                                  batch, "--samples", 50)
        return got["keys_mean"] if got else None

    def data_json(self, *args, timeout=7200):
        ran = ba.run([ba.PY, DATA, *map(str, args)], env=ba.blas_env(), timeout=timeout)
        lines = ba.json_lines(ran.stdout)
        return (lines[-1] if ran.code == 0 and lines else None), ran

    # -- disttrain ------------------------------------------------------------------------

    def config(self, key):
        m = MODES[key]
        if m.kind == "hashed":
            path = self.head_path() if m.head else self.dir / "train.csv"
            data = HASHED.format(path=path, bits=self.width(key),
                                 columns=", ".join(f"C{i + 1}" for i in range(FIELDS)))
        else:
            data = LIBSVM.format(path=self.libsvm_path(), sparse=str(m.kind == "libsvm").lower())
        # async's batch_size is each worker's; the gradients modes' is the global batch.
        batch = self.batch // 2 if m.per_worker else self.batch
        return RUN.format(data=data, aggregation=m.aggregation, batch=batch, **self.ftrl)

    def width(self, key):
        m = MODES[key]
        return m.bits or (self.bits if m.kind == "hashed" else self.dense_bits)

    def disttrain(self, key, score_bits=None):
        """One run: (summary or None, Ran). With score_bits, its model.json is scored on the
        held-out rows (summary["heldout"])."""
        def score(run_dir, summary):
            got, ran = self.data_json("score", run_dir / "model.json", self.dir / "test",
                                      "--bits", score_bits)
            summary["heldout"] = got or {"error": ran.why()}
        return self.b.disttrain(f"sparse-{key}", self.config(key), timeout=3600,
                                inspect=score if score_bits else None)


def not_run(rans):
    """"not run: <reason>" from the last failed run (run's refusal of sparse data, say)."""
    bad = [r for r in rans if r is not None and r.code != 0]
    if not bad:
        return "not run"
    lines = [l.strip() for l in bad[-1].stderr.splitlines() if l.strip()]
    text = next((l for l in lines if "sparse" in l), lines[-1] if lines else "no message")
    text = re.sub(r"\S*config\.yaml: ", "", text)  # the temp config's path says nothing
    return f"not run: exit {bad[-1].code}: {text[:240]}"


def per_worker(summary):
    """Rows/s per worker (its rows ÷ train_seconds; the slowest worker), and the busiest
    worker's bytes per step (sent + received ÷ its own steps)."""
    train = summary["train_seconds"]
    stats = summary["worker_stats"]
    epochs = summary.get("epochs", 1)
    rate = min(w["rows"] * epochs / train for w in stats) if train else None
    compute = min(w["rows"] * epochs / w["compute_seconds"] for w in stats
                  if w.get("compute_seconds"))
    moved = max((w["bytes_sent"] + w["bytes_received"]) / w["steps"] for w in stats if w["steps"])
    return rate, compute, moved


def row_sparse(b, rows=None, seed=1, bits=22, batch=2000, ftrl=None, dense_bits=10,
               dense_rows=250000, width_rows=1_000_000, xgb_rounds=5, xgb_threads=2, xgb_lambda=None, sgd_eta0=0.01,
               peers=True):
    """The sparse section of a pass: adds its rows with bench_all's add()."""
    rows = rows or 10_000_000
    ftrl = ftrl or FTRL
    s = Sparse(b, rows, seed, bits, batch, ftrl, dense_bits, dense_rows, width_rows, xgb_rounds,
               xgb_threads, xgb_lambda, sgd_eta0, peers)
    print(f"sparse: click log {rows:,} rows ({s.test_rows:,} held out), {FIELDS} fields, "
          f"2^{bits} buckets", flush=True)
    why = s.prepare()
    if why:
        ba.add("sparse", "click log", "n/a", "", "", "", None, why)
        return
    keys = {k: s.keys_per_batch(k, batch // 2) for k in sorted({bits, 18, 24})}
    runs = {k: [] for k in MODES}
    refused = None     # run's refusal of sparse rows: the sparse runs are not repeated then
    sk, xg = [], []
    for rep in range(b.reps):
        for key, m in MODES.items():
            if refused and m.kind != "dense":
                continue
            # Scored once (sync runs repeat to the bit), the runs on the whole training set.
            scored = rep == 0 and m.kind == "hashed" and not m.head
            summary, ran = s.disttrain(key, s.width(key) if scored else None)
            runs[key].append((summary, ran))
            if summary is None and ran.code == 2 and m.kind != "dense":
                refused = ran
        if refused:
            for key, m in MODES.items():
                if m.kind != "dense" and not runs[key]:
                    runs[key].append((None, refused))
        if peers:
            sk.append(s.data_json("sklearn", s.dir / "train", s.dir / "test", "--bits", bits,
                                  "--eta0", sgd_eta0))
            xg.append(s.data_json("xgboost", s.dir / "train", s.dir / "test", "--bits", bits,
                                  "--rounds", xgb_rounds, "--threads", xgb_threads, "--lambda",
                                  s.xgb_lambda))
    b.raw["sparse"] = {"rows": rows, "train_rows": s.train_rows, "test_rows": s.test_rows,
                       "bits": bits, "batch": batch, "keys_per_worker_batch": keys,
                       "ftrl": ftrl, "xgb_lambda": s.xgb_lambda,
                       "runs": {k: [r[0] for r in v] for k, v in runs.items()},
                       "sklearn": [p for p, _ in sk], "xgboost": [p for p, _ in xg]}
    add_peer_rows(s, sk, xg)
    add_disttrain_rows(s, runs, keys)


def add_peer_rows(s, sk, xg):
    for name, results, what in (("sklearn", sk, "scikit-learn SGDClassifier (log loss), 1 pass"),
                                ("xgboost", xg, f"XGBoost gblinear, {s.xgb_rounds} rounds, "
                                                f"{s.xgb_threads} threads, lambda "
                                                f"{s.xgb_lambda:.2g}")):
        if not s.peers:
            continue
        ok = [p for p, _ in results if p]
        if not ok:
            ba.add("sparse", what, "", "n/a", "", "", None,
                   ba.failure_note(name, [r for _, r in results]) or "not run")
            continue
        fit = ba.median(p["fit_s"] for p in ok)
        rate = ok[0]["rows"] * ok[0]["passes"] / fit
        ba.add("sparse", f"peer: {what}", "", f"{ba.fmt(fit, 's')}, {ba.fmt(rate, 'rows/s')}",
               "", "—", None, f"held out: log-loss {ok[0]['log_loss']:.4f}, AUC "
               f"{ok[0]['auc']:.4f}; building the matrix {ba.fmt(ba.median(p['prepare_s'] for p in ok), 's')} "
               "(not counted)", fit_s=fit, rows_per_s=rate, log_loss=ok[0]["log_loss"],
               auc=ok[0]["auc"])


def quality_note(results):
    held = next((s["heldout"] for s, _ in results if s and "heldout" in s), None)
    if not held:
        return ""
    if "error" in held:
        return f"scoring failed ({held['error']})"
    return f"held out: log-loss {held['log_loss']:.4f}, AUC {held['auc']:.4f}"


def add_disttrain_rows(s, runs, keys):
    for key in ("servers", "star", "async"):
        results = runs[key]
        ok = [x for x, _ in results if x]
        what = MODES[key].what
        if not ok:
            ba.add("sparse", f"disttrain FTRL, {what}: rows/s per worker", "n/a", "", "",
                   "≥ 1M", None, not_run([r for _, r in results]))
            continue
        figures = [per_worker(x) for x in ok]
        rate = ba.median(f[0] for f in figures)
        compute = ba.median(f[1] for f in figures)
        moved = ba.median(f[2] for f in figures)
        train = ba.median(x["train_seconds"] for x in ok)
        ba.add("sparse", f"disttrain FTRL, {what}: rows/s per worker", ba.fmt(rate, "rows/s"),
               f"train {ba.fmt(train, 's')}", "", "≥ 1M", ba.check(rate, ">=", 1e6),
               ba.notes(f"compute alone {ba.fmt(compute, 'rows/s')}", quality_note(results)),
               rate=rate, train_s=train, compute_rate=compute)
        bound = 2 * keys[s.bits] * KEY_VALUE_BYTES if keys.get(s.bits) else None
        r = ba.ratio_of(moved, bound)
        ba.add("sparse", f"disttrain FTRL, {what}: bytes per step per worker",
               ba.fmt(moved, "B"), f"2 × {ba.fmt(keys.get(s.bits), 'keys')} × 12 B = "
               f"{ba.fmt(bound, 'B')}", ba.fmt(r, "× bound"), "≤ 1.0", ba.check(r, "<=", 1.0),
               "the busiest worker; sent + received ÷ its steps", bytes_per_step=moved,
               bound=bound)
    for name, small, large in (("star", "star18", "star24"), ("2 servers", "servers18",
                                                              "servers24")):
        ms = {}
        for key in (small, large):
            ok = [x for x, _ in runs[key] if x]
            ms[key] = ba.median(1e3 * x["train_seconds"] / x["steps"] for x in ok) if ok else None
        r = ba.ratio_of(ms[large], ms[small])
        ba.add("sparse", f"step cost, 2^24 vs 2^18 buckets ({name}; {s.width_rows():,} rows)",
               ba.fmt(ms[large], "ms"), f"2^18 {ba.fmt(ms[small], 'ms')}", ba.fmt(r, "×"),
               "≤ 1.2×", ba.check(r, "<=", 1.2),
               "" if r else not_run([r for _, r in runs[large] + runs[small]]),
               ms_18=ms[small], ms_24=ms[large])
    dense = [x for x, _ in runs["dense"] if x]
    sparse = [x for x, _ in runs["sparse_small"] if x]
    rates = {k: ba.median(per_worker(x)[0] for x in v) if v else None
             for k, v in (("dense", dense), ("sparse", sparse))}
    r = ba.ratio_of(rates["sparse"], rates["dense"])
    same = (f"final loss sparse {sparse[0]['final_loss']:.10g} vs dense "
            f"{dense[0]['final_loss']:.10g}" if dense and sparse else "")
    ba.add("sparse", f"dense path vs sparse path, LIBSVM copy at 2^{s.dense_bits} "
           f"({s.small_rows():,} rows): rows/s per worker", ba.fmt(rates["sparse"], "rows/s"),
           f"dense {ba.fmt(rates['dense'], 'rows/s')}", ba.fmt(r, "×"), "—", None,
           ba.notes(same, "" if dense else not_run([r for _, r in runs["dense"]]),
                    "" if sparse else not_run([r for _, r in runs["sparse_small"]])),
           dense=rates["dense"], sparse=rates["sparse"])


def markdown(meta, rows):
    lines = [f"Pass of {meta['date']} on `{meta['machine']}` ({meta['cpus']} CPUs, load average "
             f"{meta['loadavg_start']} at the start, {meta['loadavg_end']} at the end), "
             f"{meta['reps']} rep(s), medians; binary `{meta['binary']}` at {meta['commit']}; "
             f"{meta['seconds']:.0f} s.", "",
             "| job | disttrain | peer / limit | ratio | target | met? | note |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "—"}[r.met]
        cells = [r.job, r.ours, r.peer, r.ratio, r.target, met, r.note]
        lines.append("| " + " | ".join(c.replace("|", "\\|") or " " for c in cells) + " |")
    return "\n".join(lines) + "\n"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    p.add_argument("--rows", type=int, default=10_000_000,
                   help="rows of the click log, the last 10%% held out (default 10M)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bits", type=int, default=22)
    p.add_argument("--batch", type=int, default=2000, help="global batch (each worker half)")
    for name, value in FTRL.items():
        p.add_argument(f"--{name}", type=float, default=value, help=f"FTRL's {name}")
    p.add_argument("--dense-bits", type=int, default=10)
    p.add_argument("--dense-rows", type=int, default=250_000)
    p.add_argument("--width-rows", type=int, default=1_000_000,
                   help="training rows of the 2^18 vs 2^24 runs (the first ones)")
    p.add_argument("--xgb-rounds", type=int, default=5)
    p.add_argument("--xgb-threads", type=int, default=2)
    p.add_argument("--xgb-lambda", type=float, help="gblinear's lambda (default 10 / rows)")
    p.add_argument("--sgd-eta0", type=float, default=0.01)
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(),
                                                       "disttrain-bench-cache"))
    p.add_argument("--out", default=str(ROOT / "bench/results"))
    p.add_argument("--readme", default=str(ROOT / "bench/README.md"))
    p.add_argument("--no-readme", action="store_true", help="leave bench/README.md as it is")
    args = p.parse_args()
    if not os.access(args.binary, os.X_OK):
        p.error(f"--binary {args.binary}: not an executable file")
    if args.rows < 20 or args.reps < 1 or not 1 <= args.bits <= 30:
        p.error("--rows must be at least 20, --reps at least 1, --bits 1 to 30")
    return args


class Args:  # what bench_all's Bench reads
    def __init__(self, a):
        self.binary, self.peers, self.cache_dir = a.binary, "", a.cache_dir
        self.quick, self.reps = False, a.reps


def main():
    a = parse_args()
    start = time.monotonic()
    loadavg = lambda: " ".join(open("/proc/loadavg").read().split()[:3])  # noqa: E731
    commit = ba.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(),
            "cpus": os.cpu_count(), "loadavg_start": loadavg(), "commit": commit or "?",
            "binary": os.path.relpath(a.binary, ROOT) if a.binary.startswith(str(ROOT))
            else a.binary, "reps": a.reps, "rows": a.rows}
    with tempfile.TemporaryDirectory(prefix="dt-bench-sparse-") as tmp:
        b = ba.Bench(Args(a), tmp)
        ftrl = {name: getattr(a, name) for name in FTRL}
        row_sparse(b, a.rows, a.seed, a.bits, a.batch, ftrl, a.dense_bits, a.dense_rows,
                   a.width_rows, a.xgb_rounds, a.xgb_threads, a.xgb_lambda, a.sgd_eta0, not a.no_peers)
    meta.update(loadavg_end=loadavg(), seconds=time.monotonic() - start)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sparse.json").write_text(json.dumps(
        {"meta": meta, "rows": [ba.asdict(r) for r in ba.ROWS], "raw": b.raw}, indent=2,
        ensure_ascii=False) + "\n")
    table = markdown(meta, ba.ROWS)
    (out / "sparse.md").write_text("# bench_sparse\n\n" + table)
    if not a.no_readme:
        ba.put_between_markers(Path(a.readme), BEGIN, END, table)
    print(f"wrote {out / 'sparse.json'}, {out / 'sparse.md'}"
          + ("" if a.no_readme else f" and the table in {a.readme}"))


if __name__ == "__main__":
    sys.exit(main())
