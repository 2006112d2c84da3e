#!/usr/bin/python3
"""Compressed communication (aggregation.compression, issue 18): bytes per step and time per step
without compression, with fp16, bf16 and top-k (ratios 0.1 and 0.01, error feedback), in each
topology that has it (gradients star, 2 sharded servers, ring; top-k: not the ring), and mode
parameters (fp16 / bf16 model deltas, 10 local steps a round: its lines are per round). One job: an MLP (32 inputs, hidden [256, 256], 3 classes: 75,011
parameters, 600 KB a float64 gradient) on synthetic blobs, 4 workers over ipc, global batch 64,
so that a step is mostly communication. The three codecs run interleaved (none, fp16, bf16,
none, ...), REPS times each, and each line compares the medians of the same pass:

  bytes/step    every worker's bytes sent (summary.json worker_stats, whole messages: the ring's
                peer traffic included), divided by the steps
  frames/step   the compressed gradient frames alone (summary.json aggregation.compression)
  ms/step       train_seconds / steps (median and fastest run)
  final loss    and its difference from the uncompressed run's

Prints a table and writes bench/results/compression.json.

    /usr/bin/python3 bench/bench_compression.py [--binary build/release/disttrain] [--reps 3]
        [--codecs none,topk0.1]   # a subset (none is always run: the pairing)
        [--modes parameters]      # a subset of the modes
        [--samples]               # instead: configs/'s parameters-mode samples, once each with
                                  # none, fp16, bf16: bytes per round and the final loss
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODES = {
    "star": "{mode: gradients, compression: CODEC}",
    "servers: 2": "{mode: gradients, servers: 2, compression: CODEC}",
    "ring": "{mode: gradients, topology: ring, compression: CODEC}",
    "parameters": "{mode: parameters, compression: CODEC, parameters: {sync_every: {steps: 10}}}",
}
# Mode parameters' samples in configs/ (trained on the repository's files).
SAMPLES = ["parameters_average.yaml", "fedavg.yaml", "parameters_best.yaml",
           "parameters_median.yaml", "parameters_trimmed_mean.yaml",
           "parameters_validation_weighted.yaml", "federated_files.yaml"]
CODECS = ["none", "fp16", "bf16", "topk0.1", "topk0.01"]


def codec_yaml(codec):
    """The value of aggregation.compression for a codec's name ("topk0.1": {topk: {ratio: 0.1}})."""
    return f"{{topk: {{ratio: {codec[4:]}}}}}" if codec.startswith("topk") else codec


def codecs_of(mode, wanted):
    """Top-k does not compose with the ring nor with mode parameters (refused at config time):
    not run there."""
    return [c for c in wanted if not (mode in ("ring", "parameters") and c.startswith("topk"))]


def config_text(out, aggregation, args):
    return f"""
version: 1
name: bench-compression
seed: 5
model: {{type: mlp, hidden: [256, 256], task: multiclass}}
data: {{synthetic: {{kind: blobs, rows: {args.rows}, features: 32, classes: 3}}}}
shards: {{count: 4}}
aggregation: {aggregation}
training: {{epochs: {args.epochs}, batch_size: 64, optimizer: {{type: adam, lr: 0.001}}}}
transport: {{type: ipc}}
fault_tolerance: {{checkpoint_every: {{steps: 0}}}}
output: {{dir: {out}, log_every: {{steps: 100000}}}}
"""


def run_once(binary, folder, mode, codec, args, i):
    out = folder / f"{mode.replace(': ', '')}-{codec}-{i}"
    cfg = folder / f"{out.name}.yaml"
    cfg.write_text(config_text(out, MODES[mode].replace("CODEC", codec_yaml(codec)), args))
    r = subprocess.run([binary, "run", str(cfg), "--json"], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"{mode} {codec}: exit {r.returncode}\n{r.stderr}")
    s = json.loads(r.stdout)
    steps = max(1, s["aggregation"]["rounds"] if mode == "parameters" else s["steps"])
    frames = s.get("aggregation", {}).get("compression", {}).get("bytes")
    return {"ms_per_step": 1000 * s["train_seconds"] / steps,
            "bytes_per_step": sum(w["bytes_sent"] for w in s["worker_stats"]) / steps,
            "frame_bytes_per_step": None if frames is None else frames / steps,
            "final_loss": s["final_loss"]}


def run_samples(binary):
    """Each parameters-mode sample with none, fp16 and bf16 (deterministic: once each)."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="dt-bench-compression-") as tmp:
        for sample in SAMPLES:
            results[sample] = {}
            for codec in ("none", "fp16", "bf16"):
                out = Path(tmp) / f"{sample}-{codec}"
                r = subprocess.run([binary, "run", str(ROOT / "configs" / sample), "--json",
                                    "--set", f"output.dir={out}",
                                    "--set", f"aggregation.compression={codec}"],
                                   capture_output=True, text=True, timeout=600)
                if r.returncode != 0:
                    raise SystemExit(f"{sample} {codec}: exit {r.returncode}\n{r.stderr}")
                s = json.loads(r.stdout)
                rounds = s["aggregation"]["rounds"]
                c = s["aggregation"].get("compression", {})
                results[sample][codec] = {
                    "rounds": rounds,
                    "bytes_per_round": sum(w["bytes_sent"] for w in s["worker_stats"]) / rounds,
                    "frame_bytes_per_round": c["bytes"] / rounds if c else None,
                    "float64_bytes_per_round": c["float64_bytes"] / rounds if c else None,
                    "whole_models": c.get("whole_models"),
                    "final_loss": s["final_loss"]}
    print(f"{'sample':<38} {'codec':<5} {'rounds':>6} {'worker B/round':>14} {'models B/round':>14} "
          f"{'float64':>8} {'whole':>5} {'final loss':>11} {'vs none':>8}")
    for sample, by_codec in results.items():
        base = by_codec["none"]
        for codec, r in by_codec.items():
            frames, raw = r["frame_bytes_per_round"], r["float64_bytes_per_round"]
            whole = r["whole_models"]
            print(f"{sample:<38} {codec:<5} {r['rounds']:>6} {r['bytes_per_round']:>14.0f} "
                  f"{'-' if frames is None else f'{frames:.0f}':>14} "
                  f"{'-' if raw is None else f'{raw:.0f}':>8} "
                  f"{'-' if whole is None else whole:>5} "
                  f"{r['final_loss']:>11.6f} "
                  f"{100 * (r['final_loss'] / base['final_loss'] - 1):>+7.3f}%")
    out = ROOT / "bench/results/compression-parameters-samples.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"samples": results}, indent=2) + "\n")
    print(f"wrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "build/release/disttrain"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rows", type=int, default=6400)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--codecs", default=",".join(CODECS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--samples", action="store_true")
    args = parser.parse_args()
    if args.samples:
        run_samples(args.binary)
        return
    wanted = ["none"] + [c for c in args.codecs.split(",") if c in CODECS and c != "none"]
    results = {}
    with tempfile.TemporaryDirectory(prefix="dt-bench-compression-") as tmp:
        folder = Path(tmp)
        for mode in [m for m in MODES if m in args.modes.split(",")]:
            codecs = codecs_of(mode, wanted)
            if len(codecs) == 1 and len(wanted) > 1:
                continue  # nothing to pair with none here (top-k alone on the ring)
            runs = {c: [] for c in codecs}
            for i in range(args.reps):
                for codec in codecs:  # interleaved: a disturbance hits every codec alike
                    runs[codec].append(run_once(args.binary, folder, mode, codec, args, i))
            results[mode] = {}
            for codec in codecs:
                r = runs[codec]
                results[mode][codec] = {
                    "ms_per_step_median": statistics.median(x["ms_per_step"] for x in r),
                    "ms_per_step_fastest": min(x["ms_per_step"] for x in r),
                    "bytes_per_step": statistics.median(x["bytes_per_step"] for x in r),
                    "frame_bytes_per_step": r[0]["frame_bytes_per_step"],
                    "final_loss": r[0]["final_loss"],
                }
    print(f"{'mode':<11} {'codec':<8} {'bytes/step':>11} {'x less':>6} {'frames/step':>11} "
          f"{'ms/step':>8} {'fastest':>8} {'x time':>6} {'final loss':>11} {'vs none':>8}")
    for mode, by_codec in results.items():
        base = by_codec["none"]
        for codec, r in by_codec.items():
            frames = r["frame_bytes_per_step"]
            print(f"{mode:<11} {codec:<8} {r['bytes_per_step']:>11.0f} "
                  f"{base['bytes_per_step'] / r['bytes_per_step']:>6.2f} "
                  f"{'-' if frames is None else f'{frames:.0f}':>11} "
                  f"{r['ms_per_step_median']:>8.2f} {r['ms_per_step_fastest']:>8.2f} "
                  f"{r['ms_per_step_median'] / base['ms_per_step_median']:>6.2f} "
                  f"{r['final_loss']:>11.6f} "
                  f"{100 * (r['final_loss'] / base['final_loss'] - 1):>+7.2f}%")
    # A subset of the codecs gets a file of its own (the full pass's stays as it was).
    name = "compression" if wanted == CODECS else "compression-" + "-".join(wanted[1:])
    if args.modes != ",".join(MODES):
        name += "-" + args.modes.replace(",", "-").replace(": ", "")
    out = ROOT / f"bench/results/{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": platform.node(), "cpus": os.cpu_count(),
                               "reps": args.reps, "codecs": wanted, "rows": args.rows, "epochs": args.epochs,
                               "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
