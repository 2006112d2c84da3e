#!/usr/bin/python3
"""Peak memory of `disttrain predict` on two sizes of CSV (issue 15: "predict streams: peak memory
independent of the input size"). Not a timed test: the figures go to bench/README.md.

    /usr/bin/python3 bench/bench_predict_memory.py [--binary build/release/disttrain]
                                                   [--sizes 100,300,1000,2000] [--cache-dir DIR]

Trains a small linear model (20 features) on generated data, writes a CSV of each size in MB
(one generated block of rows repeated, under one header: made in seconds), and runs predict on
it from the file and from a pipe (`cat FILE | disttrain predict model.json -`), output to
/dev/null. The peak resident set size is the child's own (wait4's ru_maxrss), so the reading is
the kernel's, not a sampler's. Writes bench/results/predict_memory.json and the table between
the bench_predict markers of bench/README.md; bench_all.py adds the same figures as rows.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- bench_predict:begin -->", "<!-- bench_predict:end -->"
MB = 1000 * 1000

CONFIG = """version: 1
seed: 1
model: {{type: linear_regression}}
data: {{path: {path}}}
shards: {{count: 1}}
training: {{epochs: 1, batch_size: 256, optimizer: {{type: sgd, lr: 0.01}}}}
output: {{dir: {out}}}
"""


def model(binary, folder):
    data = folder / "train.csv"
    with open(data, "w") as out:
        subprocess.run([binary, "gen", "linear", "--rows", "20000", "--features", "20",
                        "--seed", "2"], stdout=out, check=True)
    (folder / "c.yaml").write_text(CONFIG.format(path=data, out=folder / "run"))
    subprocess.run([binary, "-q", "run", str(folder / "c.yaml")], check=True)
    return folder / "run" / "model.json", data


def csv_of(size_mb, cache, sample):
    """header + the sample's rows repeated until the file holds size_mb MB."""
    path = cache / f"predict_{size_mb}MB.csv"
    if path.exists():
        return path
    header, rows = sample.read_bytes().split(b"\n", 1)
    cache.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(f".part{os.getpid()}")
    with open(part, "wb") as out:
        out.write(header + b"\n")
        written = len(header) + 1
        while written < size_mb * MB:
            out.write(rows)
            written += len(rows)
    part.rename(path)
    return path


def measure(binary, model_path, data, piped):
    """(peak RSS in MiB, seconds) of one predict, its output thrown away."""
    start = time.monotonic()
    with open(os.devnull, "wb") as null:
        if piped:
            cat = subprocess.Popen(["cat", str(data)], stdout=subprocess.PIPE)
            p = subprocess.Popen([binary, "predict", str(model_path), "-"], stdin=cat.stdout,
                                 stdout=null)
            cat.stdout.close()
        else:
            p = subprocess.Popen([binary, "predict", str(model_path), str(data)], stdout=null)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if piped:
            cat.wait()
    if p.returncode != 0:
        raise RuntimeError(f"predict exited {p.returncode} on {data}")
    return usage.ru_maxrss / 1024, time.monotonic() - start


def run_all(binary, sizes, cache):
    """[{size_mb, bytes, source, rss_mib, seconds, MBps}] for every size, file and pipe."""
    results = []
    with tempfile.TemporaryDirectory(prefix="dt-bench-predict-") as tmp:
        model_path, sample = model(binary, Path(tmp))
        for size in sizes:
            data = csv_of(size, cache, sample)
            subprocess.run(["cat", str(data)], stdout=subprocess.DEVNULL, check=True)  # warm
            for piped in (False, True):
                rss, seconds = measure(binary, model_path, data, piped)
                nbytes = data.stat().st_size
                results.append({"size_mb": size, "bytes": nbytes,
                                "source": "pipe" if piped else "file", "rss_mib": round(rss, 1),
                                "seconds": round(seconds, 2),
                                "MBps": round(nbytes / seconds / MB, 1)})
                print(f"  {nbytes / MB:.0f} MB from a {results[-1]['source']}: peak RSS "
                      f"{rss:.1f} MiB, {seconds:.1f} s", flush=True)
    return results


def table(results, meta):
    lines = [f"Pass of {meta['date']} on `{meta['machine']}`, binary at {meta['commit']}: "
             "`disttrain predict` of a linear model (20 features) over a CSV, output to "
             "/dev/null; peak RSS is the child's ru_maxrss (wait4).", "",
             "| input | source | peak RSS | time | rate |", "| --- | --- | --- | --- | --- |"]
    for r in results:
        lines.append(f"| {r['bytes'] / MB:.0f} MB | {r['source']} | {r['rss_mib']:.1f} MiB | "
                     f"{r['seconds']:.1f} s | {r['MBps']:.0f} MB/s |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    p.add_argument("--sizes", default="100,300,1000,2000",
                   help="CSV sizes in MB (default 100,300,1000,2000)")
    p.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(),
                                                       "disttrain-bench-cache"))
    p.add_argument("--readme", default=str(ROOT / "bench/README.md"))
    p.add_argument("--out", default=str(ROOT / "bench/results"))
    args = p.parse_args()
    if not os.access(args.binary, os.X_OK):
        p.error(f"--binary {args.binary}: not an executable file (build it first)")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    cache = Path(args.cache_dir)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": os.uname().nodename,
            "commit": commit or "?"}
    results = run_all(args.binary, sizes, cache)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "predict_memory.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    readme = Path(args.readme)
    from bench_all import put_between_markers  # bench/ is this script's folder, on sys.path
    put_between_markers(readme, BEGIN, END, table(results, meta))
    print(f"wrote {Path(args.out) / 'predict_memory.json'} and the table in {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
