#!/usr/bin/python3
"""Issue 16's speed targets: sparse logistic regression on a hashed click log, beside its peers.

    /usr/bin/python3 bench/bench_sparse.py [--binary build/release/disttrain] [--rows 10000000]
        [--reps 3] [--cache-dir DIR] [--no-readme] [--no-peers] (all settings: --help)

One pass: makes the data once in --cache-dir (`disttrain gen clicks`, 39 fields; the last 10% of
the rows held out; the hashed keys of both parts as numpy arrays for the peers; a small LIBSVM
copy for the dense path), then per rep, interleaved: disttrain's FTRL logistic regression on the
hashed CSV (data.hash, 2^22 buckets, 2 workers) with 2 sharded servers, through the star with no
servers, and async with 2 servers; at 2^18 and 2^24 buckets; the dense path and the sparse path
on the LIBSVM copy; scikit-learn's SGDClassifier and XGBoost's gblinear on a scipy CSR matrix of
the same hashed rows. The models are scored on the held-out rows (log-loss, AUC). Each hashed
run is first probed on a few steps: one that moves the whole model every step (a dense exchange)
is measured on the probe's rows only, instead of taking hours. A disttrain run that fails shows
"not run: <reason>" in its rows, never a crash. Writes bench/results/sparse.json, sparse.md and
the table between the bench_sparse markers of bench/README.md (bench_all.py --only sparse puts
the same rows in its own table). What each row measures: bench/README.md.
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
DATA = str(Path(__file__).resolve().parent / "sparse_data.py")
BEGIN, END = "<!-- bench_sparse:begin -->", "<!-- bench_sparse:end -->"
FIELDS = 39
KEY_VALUE_BYTES = 12          # a 4-byte key and an 8-byte value: the "keys x 12 B"
# A probe whose workers move 1.5 model widths (8 B a weight) a step, on average, moves the model
# every step (2 widths: down and up); a keyed one moves its keys a step plus the model once or
# twice a run, under 0.5 widths a step over its 10 steps at 2^22.
DENSE_EXCHANGE = 1.5

# Every setting of a pass, with its default (the command line has a flag for each).
SETTINGS = {
    "rows": 10_000_000,       # the click log, the last 10% held out
    "seed": 1,
    "bits": 22,
    "batch": 2000,            # global: 1000 rows a worker a step
    # FTRL, chosen with a numpy copy of docs/optimizers.md's rule on 900k training rows, one
    # pass, global batches of 2000 (held-out AUC 0.80; alpha 0.05 gave 0.66, 20 overfitted):
    # the gradient is the batch's mean, so a rare key's is small and alpha must be large.
    "alpha": 5.0, "beta": 0.1, "l1": 0.0, "l2": 0.0,
    "dense_bits": 10,         # the LIBSVM copy's width, where the dense path fits
    "dense_rows": 250_000,    # its rows: 250k x 1024 x 8 B = 2 GB over the workers
    "dense_alpha": 0.5,       # 2^10 buckets collide a lot: alpha 5 diverges there (loss 5.9)
    "width_rows": 1_000_000,  # the 2^18 vs 2^24 runs: the first training rows
    "probe_rows": 20_000,     # a probe run: 10 steps
    "xgb_rounds": 5, "xgb_threads": 2,
    "xgb_lambda": 0.0,        # 0: 10 / training rows (see Sparse)
    "sgd_eta0": 0.01,
}

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
    """The pass's settings, data files and runs; `b` is bench_all's Bench (binary, tmp, reps)."""

    def __init__(self, b, settings):
        self.b = b
        self.s = dict(SETTINGS, **settings)
        rows = self.s["rows"]
        self.test_rows = max(1, round(rows * 0.1))
        self.train_rows = rows - self.test_rows
        # gblinear's L2 is summed over the rows: the best value found shrinks with them (1e-4
        # at 180k training rows, 1e-5 at 900k): 10 / rows is near both.
        self.xgb_lambda = self.s["xgb_lambda"] or 10 / self.train_rows
        self.dir = b.cache / f"clicks_{rows}_s{self.s['seed']}"
        self.keys = {}        # bits -> mean distinct keys of a worker's batch
        self.peers = {"sklearn": [], "xgboost": []}   # (result or None, Ran) a rep

    # -- data, made once ----------------------------------------------------------------------

    def prepare(self):
        """train.csv, test.csv, their keys (train/, test/), the heads and the LIBSVM copy;
        None, or why not."""
        self.dir.mkdir(parents=True, exist_ok=True)
        gen = f"'{self.b.binary}' gen clicks --rows {{}} --seed {self.s['seed']} --fields {FIELDS}"
        made = [
            ("train.csv", gen.format(self.train_rows)),
            # Row i is a function of the seed and i alone: the held-out rows are the last of a
            # longer log, after the training rows.
            ("test.csv", gen.format(self.s["rows"]) +
             f" | awk 'NR == 1 || NR > {self.train_rows + 1}'"),
        ] + [(self.head(rows).name, f"head -n {rows + 1} '{self.dir / 'train.csv'}'")
             for rows in (self.s["width_rows"], self.s["probe_rows"])
             if self.head(rows).name != "train.csv"]
        for name, shell in made:
            if ba.cached_file(self.b, f"{self.dir.name}/{name}", ["sh", "-c", shell]) is None:
                return f"making {name} failed"
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
                          str(self.s["dense_bits"]), "--rows", str(self.small_rows())],
                         timeout=3600)
            if ran.code != 0:
                return f"writing the LIBSVM copy failed ({ran.why()})"
        for bits in sorted({self.s["bits"], 18, 24}):
            got, _ = self.data_json("keys", self.dir / "train", "--bits", bits, "--batch",
                                    self.s["batch"] // 2, "--samples", 50)
            self.keys[bits] = got["keys_mean"] if got else None
        return None

    def head(self, rows):
        """The first `rows` training rows (the whole train.csv when there are no more)."""
        rows = min(rows, self.train_rows)
        return self.dir / ("train.csv" if rows == self.train_rows else f"train_{rows}.csv")

    def head_rows(self, path):
        return self.train_rows if path.name == "train.csv" else int(path.stem.split("_")[1])

    def small_rows(self):
        return min(self.s["dense_rows"], self.train_rows)

    def libsvm_path(self):
        return self.dir / f"train_{self.small_rows()}_b{self.s['dense_bits']}.svm"

    def bound(self, key):
        """The issue's bound on a worker's bytes per step: 2 x keys touched x 12 B."""
        keys = self.keys.get(self.width(key))
        return 2 * keys * KEY_VALUE_BYTES if keys else None

    def data_json(self, *args, timeout=7200):
        ran = ba.run([ba.PY, DATA, *map(str, args)], env=ba.blas_env(), timeout=timeout)
        lines = ba.json_lines(ran.stdout)
        return (lines[-1] if ran.code == 0 and lines else None), ran

    # -- disttrain ------------------------------------------------------------------------

    def width(self, key):
        m = MODES[key]
        return m.bits or (self.s["bits"] if m.kind == "hashed" else self.s["dense_bits"])

    def path(self, key, probe=False):
        m = MODES[key]
        if m.kind != "hashed":
            return self.libsvm_path()
        return self.head(self.s["probe_rows"] if probe else
                         self.s["width_rows"] if m.head else self.train_rows)

    def config(self, key, probe=False):
        m = MODES[key]
        if m.kind == "hashed":
            data = HASHED.format(path=self.path(key, probe), bits=self.width(key),
                                 columns=", ".join(f"C{i + 1}" for i in range(FIELDS)))
        else:
            data = LIBSVM.format(path=self.libsvm_path(), sparse=str(m.kind == "libsvm").lower())
        ftrl = {k: self.s[k] for k in ("alpha", "beta", "l1", "l2")}
        if m.kind != "hashed":
            ftrl["alpha"] = self.s["dense_alpha"]
        # async's batch_size is each worker's; the gradients modes' is the global batch.
        batch = self.s["batch"] // 2 if m.per_worker else self.s["batch"]
        return RUN.format(data=data, aggregation=m.aggregation, batch=batch, **ftrl)

    def disttrain(self, key, probe=False, score=False):
        """One run: (summary or None, Ran). With score, its model.json is scored on the
        held-out rows (summary["heldout"])."""
        def scored(run_dir, summary):
            got, ran = self.data_json("score", run_dir / "model.json", self.dir / "test",
                                      "--bits", self.width(key))
            summary["heldout"] = got or {"error": ran.why()}
        # A probe reads 20k rows: 5 minutes is far more than it needs, unless it hangs.
        summary, ran = self.b.disttrain(f"sparse-{key}", self.config(key, probe),
                                        timeout=300 if probe else 7200,
                                        inspect=scored if score else None)
        if summary:
            summary["rows_file"] = self.path(key, probe).name
        return summary, ran

    def measure(self):
        """Every disttrain run of the pass: {key: [(summary, Ran) a rep]}, {key: probe}, and
        the keys measured on their probe alone (a dense exchange)."""
        runs = {k: [] for k in MODES}
        probes, probe_only = {}, set()
        refused = None     # run's refusal of sparse rows: the sparse runs are not repeated
        for rep in range(self.b.reps):
            for key, m in MODES.items():
                if refused and m.kind != "dense":
                    runs[key].append((None, refused))
                    continue
                if m.kind == "hashed" and key not in probes:
                    probes[key] = self.disttrain(key, probe=True)
                    summary, ran = probes[key]
                    if summary is None:
                        runs[key].append(probes[key])
                        refused = ran if ran.code == 2 else None
                        continue
                    if per_worker(summary)[2] >= DENSE_EXCHANGE * 8 * 2 ** self.width(key):
                        probe_only.add(key)
                if key in probe_only:
                    runs[key].append(probes[key] if rep == 0 else self.disttrain(key, True))
                else:
                    # Scored once (sync runs repeat to the bit): the runs on all the rows.
                    runs[key].append(self.disttrain(
                        key, score=rep == 0 and m.kind == "hashed" and not m.head))
                if runs[key][-1][0] is None and runs[key][-1][1].code == 2 and m.kind != "dense":
                    refused = runs[key][-1][1]
            self.run_peers()  # interleaved: the peers of this rep beside its runs
        return runs, probes, probe_only

    def run_peers(self):
        if not self.s.get("peers", True):
            return
        bits, train, test = self.s["bits"], self.dir / "train", self.dir / "test"
        self.peers["sklearn"].append(self.data_json("sklearn", train, test, "--bits", bits,
                                                    "--eta0", self.s["sgd_eta0"]))
        self.peers["xgboost"].append(self.data_json(
            "xgboost", train, test, "--bits", bits, "--rounds", self.s["xgb_rounds"],
            "--threads", self.s["xgb_threads"], "--lambda", self.xgb_lambda))


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
    """Rows/s per worker (its rows ÷ train_seconds; the slowest worker), the same over its
    compute_seconds, and the busiest worker's bytes per step (sent + received ÷ its steps)."""
    train = summary["train_seconds"]
    stats = summary["worker_stats"]
    epochs = summary.get("epochs", 1)
    rate = min(w["rows"] * epochs / train for w in stats) if train else None
    compute = min((w["rows"] * epochs / w["compute_seconds"] for w in stats
                   if w.get("compute_seconds")), default=None)
    moved = max(worker_bytes(w) / w["steps"] for w in stats if w["steps"])
    return rate, compute, moved


def worker_bytes(w):
    return w["bytes_sent"] + w["bytes_received"]


def marginal_bytes(full, probe):
    """Each worker's (sent, received) bytes per step over the steps a full run has beyond its
    probe: what a step costs without the run's fixed traffic (setup, the model sent once, the
    final report), which the average over a run's steps also holds. Same ranks in both runs."""
    pairs = zip(full["worker_stats"], probe["worker_stats"])
    return [((f["bytes_sent"] - p["bytes_sent"]) / (f["steps"] - p["steps"]),
             (f["bytes_received"] - p["bytes_received"]) / (f["steps"] - p["steps"]))
            for f, p in pairs if f["steps"] > p["steps"]]


def row_sparse(b, rows=None, **settings):
    """The sparse section of a pass: adds its rows with bench_all's add()."""
    s = Sparse(b, dict(settings, rows=rows or SETTINGS["rows"]))
    print(f"sparse: click log {s.s['rows']:,} rows ({s.test_rows:,} held out), {FIELDS} "
          f"fields, 2^{s.s['bits']} buckets", flush=True)
    why = s.prepare()
    if why:
        ba.add("sparse", "click log", "n/a", "", "", "", None, why)
        return
    runs, probes, probe_only = s.measure()
    peers = s.peers
    b.raw["sparse"] = {"settings": s.s, "train_rows": s.train_rows, "test_rows": s.test_rows,
                       "keys_per_worker_batch": s.keys, "xgb_lambda": s.xgb_lambda,
                       "probe_only": sorted(probe_only),
                       "probes": {k: v[0] for k, v in probes.items()},
                       "runs": {k: [r[0] for r in v] for k, v in runs.items()},
                       **{k: [p for p, _ in v] for k, v in peers.items()}}
    add_peer_rows(s, peers)
    add_mode_rows(s, runs, probes, probe_only)
    add_width_rows(s, runs, probe_only)
    add_dense_row(s, runs)


def add_peer_rows(s, peers):
    names = {"sklearn": "scikit-learn SGDClassifier (log loss), 1 pass",
             "xgboost": f"XGBoost gblinear, {s.s['xgb_rounds']} rounds, {s.s['xgb_threads']} "
                        f"threads, lambda {s.xgb_lambda:.2g}"}
    for name, results in peers.items():
        ok = [p for p, _ in results if p]
        if not ok:
            ba.add("sparse", f"peer: {names[name]}", "", "n/a", "", "", None,
                   ba.failure_note(name, [r for _, r in results]) or "not run")
            continue
        fit = ba.median(p["fit_s"] for p in ok)
        rate = ok[0]["rows"] * ok[0]["passes"] / fit
        prepare = ba.median(p["prepare_s"] for p in ok)
        ba.add("sparse", f"peer: {names[name]}", "", f"{ba.fmt(fit, 's')}, "
               f"{ba.fmt(rate, 'rows/s')}", "", "—", None,
               f"held out: log-loss {ok[0]['log_loss']:.4f}, AUC {ok[0]['auc']:.4f}; building "
               f"the matrix {ba.fmt(prepare, 's')} (not counted)", fit_s=fit, rows_per_s=rate,
               log_loss=ok[0]["log_loss"], auc=ok[0]["auc"])


def quality_note(results):
    held = next((x["heldout"] for x, _ in results if x and "heldout" in x), None)
    if not held:
        return ""
    if "error" in held:
        return f"scoring failed ({held['error']})"
    return f"held out: log-loss {held['log_loss']:.4f}, AUC {held['auc']:.4f}"


def probe_note(s, key, ok):
    """What a row measured on its probe alone says: the rows, and how long all would take."""
    steps = ba.median(x["steps"] for x in ok)
    ms = ba.median(x["train_seconds"] / x["steps"] for x in ok)
    full = s.head_rows(s.path(key)) / (s.s["batch"] // (2 if MODES[key].per_worker else 1))
    return (f"dense exchange: measured on the first {s.s['probe_rows']:,} rows ({steps:.0f} "
            f"steps), the whole model moves each step; all {s.head_rows(s.path(key)):,} rows "
            f"would take about {ba.fmt(ms * full, 's')}")


def add_mode_rows(s, runs, probes, probe_only):
    for key in ("servers", "star", "async"):
        what = MODES[key].what
        ok = [x for x, _ in runs[key] if x]
        if not ok:
            ba.add("sparse", f"disttrain FTRL, {what}: rows/s per worker", "n/a", "", "",
                   "≥ 1M", None, not_run([r for _, r in runs[key]]))
            continue
        figures = [per_worker(x) for x in ok]
        rate, compute = ba.median(f[0] for f in figures), ba.median(f[1] for f in figures)
        train = ba.median(x["train_seconds"] for x in ok)
        probed = probe_note(s, key, ok) if key in probe_only else ""
        ba.add("sparse", f"disttrain FTRL, {what}: rows/s per worker", ba.fmt(rate, "rows/s"),
               f"train {ba.fmt(train, 's')}", "", "≥ 1M", ba.check(rate, ">=", 1e6),
               ba.notes(f"compute alone {ba.fmt(compute, 'rows/s')}", quality_note(runs[key]),
                        probed), rate=rate, train_s=train, compute_rate=compute)
        average = ba.median(f[2] for f in figures)
        step = [] if key in probe_only else marginal_bytes(ok[0], probes[key][0])
        moved = max((a + b for a, b in step), default=None) or average
        bound = s.bound(key)
        r = ba.ratio_of(moved, bound)
        each = ", ".join(f"worker {rank}: {ba.fmt(a, 'B')} sent + {ba.fmt(b, 'B')} received"
                         for rank, (a, b) in enumerate(step))
        how = (f"bytes of the steps beyond the probe's ÷ their number (fixed traffic left out): "
               f"{each}; {ba.fmt(average, 'B')} averaged over the whole run" if step else
               "sent + received ÷ steps (fixed traffic included)")
        ba.add("sparse", f"disttrain FTRL, {what}: bytes per step, busiest worker",
               ba.fmt(moved, "B"), f"2 × {ba.fmt(s.keys.get(s.s['bits']), 'keys')} × 12 B = "
               f"{ba.fmt(bound, 'B')}", ba.fmt(r, "× bound"), "≤ 1.0", ba.check(r, "<=", 1.0),
               ba.notes(how, probed), bytes_per_step=moved, average=average, bound=bound)


def add_width_rows(s, runs, probe_only):
    for name, small, large in (("star", "star18", "star24"),
                               ("2 servers", "servers18", "servers24")):
        ms, probed = {}, []
        for key in (small, large):
            ok = [x for x, _ in runs[key] if x]
            ms[key] = ba.median(1e3 * x["train_seconds"] / x["steps"] for x in ok) if ok else None
            if key in probe_only:
                probed.append(f"2^{s.width(key)}: {probe_note(s, key, ok)}")
        r = ba.ratio_of(ms[large], ms[small])
        rows = s.head_rows(s.path(small))
        ba.add("sparse", f"step cost, 2^24 vs 2^18 buckets ({name}; first {rows:,} rows)",
               ba.fmt(ms[large], "ms"), f"2^18 {ba.fmt(ms[small], 'ms')}", ba.fmt(r, "×"),
               "≤ 1.2×", ba.check(r, "<=", 1.2),
               ba.notes(*probed, "" if r else not_run([r for _, r in runs[large] + runs[small]])),
               ms_18=ms[small], ms_24=ms[large])


def add_dense_row(s, runs):
    dense = [x for x, _ in runs["dense"] if x]
    sparse = [x for x, _ in runs["sparse_small"] if x]
    rates = {k: ba.median(per_worker(x)[0] for x in v) if v else None
             for k, v in (("dense", dense), ("sparse", sparse))}
    r = ba.ratio_of(rates["sparse"], rates["dense"])
    same = ""
    if dense and sparse:
        a, b = sparse[0]["final_loss"], dense[0]["final_loss"]
        same = (f"final loss {a:.10g} both (bit for bit)" if a == b else
                f"final loss sparse {a:.10g}, dense {b:.10g}")
    ba.add("sparse", f"sparse path vs dense path, LIBSVM copy at 2^{s.s['dense_bits']} "
           f"({s.small_rows():,} rows, 2 servers): rows/s per worker",
           ba.fmt(rates["sparse"], "rows/s"), f"dense {ba.fmt(rates['dense'], 'rows/s')}",
           ba.fmt(r, "×"), "—", None,
           ba.notes(same, "" if dense else not_run([r for _, r in runs["dense"]]),
                    "" if sparse else not_run([r for _, r in runs["sparse_small"]])),
           dense=rates["dense"], sparse=rates["sparse"])


def markdown(meta, rows):
    lines = [f"Pass of {meta['date']} on `{meta['machine']}` ({meta['cpus']} CPUs, load average "
             f"{meta['loadavg_start']} at the start, {meta['loadavg_end']} at the end), "
             f"{meta['rows']:,} rows, {meta['reps']} rep(s), medians; binary `{meta['binary']}` "
             f"at {meta['commit']}; {meta['seconds']:.0f} s.", "",
             "| job | disttrain | peer / limit | ratio | target | met? | note |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "—"}[r.met]
        cells = [r.job, r.ours, r.peer, r.ratio, r.target, met, r.note]
        lines.append("| " + " | ".join(c.replace("|", "\\|") or " " for c in cells) + " |")
    met = [r.met for r in rows if r.met is not None]
    return "\n".join(lines + ["", f"{sum(met)} of {len(met)} targets met."]) + "\n"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    p.add_argument("--reps", type=int, default=3)
    for name, value in SETTINGS.items():
        p.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value,
                       help=f"default {value}")
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
        row_sparse(b, peers=not a.no_peers, **{k: getattr(a, k) for k in SETTINGS})
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
