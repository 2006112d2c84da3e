"""Adagrad and FTRL-Proximal (training.optimizer.type adagrad, ftrl) with real worker processes:
logistic regression trains (the loss falls) in gradients mode over a star, over two sharded
servers and over a ring, with tensor parallelism, in parameters mode and in async mode; synchronous reruns give the same model.json bytes;
FTRL's L1 reaches the optimizer (a huge l1 keeps every weight exactly 0); a checkpoint and
--resume give the bytes of a run that never stopped. docs/optimizers.md."""

import csv
import json
import math

import harness as h

CONFIG = """
version: 1
name: optim
seed: 3
model: {{type: logistic_regression}}
data: {{synthetic: {{kind: logistic, rows: 1200, features: 6}}}}
shards: {{count: 3}}
aggregation: {aggregation}
training:
  epochs: {epochs}
  batch_size: 30
  optimizer: {optimizer}
transport: {{type: ipc}}
output: {{dir: {out}, log_every: {{steps: 1}}}}
{extra}
"""

OPTIMIZERS = {
    "adagrad": "{type: adagrad, lr: 0.5, initial_accumulator_value: 0.1}",
    "ftrl": "{type: ftrl, alpha: 0.5, beta: 1.0, l1: 0.001, l2: 0.001}",
}

MODES = {
    "star": "{mode: gradients}",
    "servers": "{mode: gradients, servers: 2}",
    "parameters": "{mode: parameters, parameters: {sync_every: {steps: 4}}}",
    "async": "{mode: async, servers: 2}",
    "ring": "{mode: gradients, topology: ring}",
    "tensor": "{mode: gradients}\nparallelism: {tensor: 2}",
}


def write(tmp, optimizer, mode, out, epochs=3, extra="", name="config.yaml"):
    text = CONFIG.format(aggregation=MODES[mode], optimizer=optimizer, epochs=epochs, out=out,
                         extra=extra)
    return h.write_config(tmp, text, name=name)


def losses(run_dir):
    with open(run_dir / "loss.csv") as f:
        return [float(row["train_loss"]) for row in csv.DictReader(f)]


def weights(run_dir):
    model = json.loads((run_dir / "model.json").read_text())
    return [v for p in model["parameters"] for v in p["data"]]


def train(tmp, opt_name, mode, out_name, **kw):
    out = tmp / out_name
    cfg = write(tmp, OPTIMIZERS[opt_name], mode, out, name=f"{out_name}.yaml", **kw)
    r = h.run("run", cfg, "--json", timeout=60)
    assert r.code == 0, r
    return out, r.json()


def check_mode(tmp, mode):
    for opt_name in OPTIMIZERS:
        out, summary = train(tmp, opt_name, mode, f"{opt_name}-{mode}")
        loss = losses(out)
        # log(2) = 0.693 at the all-zero start; the first row is one step (parameters mode: one
        # round) in. After three epochs the last rows (a mean of five, to smooth one batch's
        # noise) are far below both.
        end = sum(loss[-5:]) / 5
        assert end < 0.35 * math.log(2) and end < 0.5 * loss[0], (opt_name, mode, loss)
        assert summary["final_metrics"]["accuracy"] > 0.8, (opt_name, mode, summary)
        if mode != "async":  # async applies pushes in the order they arrive
            again, _ = train(tmp, opt_name, mode, f"{opt_name}-{mode}-again")
            assert (again / "model.json").read_bytes() == (out / "model.json").read_bytes(), \
                (opt_name, mode, "a rerun gave other model bytes")


def test_star(tmp):
    check_mode(tmp, "star")


def test_sharded_servers(tmp):
    check_mode(tmp, "servers")


def test_parameters(tmp):
    check_mode(tmp, "parameters")


def test_async(tmp):
    check_mode(tmp, "async")


def test_ring_and_tensor(tmp):
    check_mode(tmp, "ring")
    check_mode(tmp, "tensor")


def test_ftrl_l1_zeroes_weights(tmp):
    # |z| never exceeds l1 = 1e6 (a gradient of a logistic loss is at most 1 per step): every
    # weight, bias included, stays exactly 0, and the loss stays at log(2).
    out = tmp / "l1"
    cfg = write(tmp, "{type: ftrl, alpha: 0.5, l1: 1e6}", "servers", out)
    r = h.run("run", cfg, timeout=60)
    assert r.code == 0, r
    assert weights(out) == [0.0] * 7, weights(out)
    assert min(losses(out)) > 0.69


def test_resume_is_exact(tmp):
    # Two epochs (80 steps, a checkpoint every 40 steps, so one at the end), resumed to four,
    # give the bytes of four epochs in one run: the FTRL state (z, n) is restored exactly.
    for opt_name in OPTIMIZERS:
        ckpt = "fault_tolerance: {checkpoint_every: {steps: 40}}"
        ref = tmp / f"{opt_name}-ref"
        r = h.run("run", write(tmp, OPTIMIZERS[opt_name], "servers", ref, epochs=4, extra=ckpt,
                               name=f"{opt_name}-ref.yaml"), timeout=60)
        assert r.code == 0, r
        out = tmp / f"{opt_name}-cut"
        cfg = write(tmp, OPTIMIZERS[opt_name], "servers", out, epochs=2, extra=ckpt,
                    name=f"{opt_name}-cut.yaml")
        r = h.run("run", cfg, timeout=60)
        assert r.code == 0, r
        assert (out / "model.json").read_bytes() != (ref / "model.json").read_bytes()
        r = h.run("run", cfg, "--resume", "--json", "--set", "training.epochs=4", timeout=60)
        assert r.code == 0, r
        summary = r.json()
        assert summary["checkpoint"]["resumed_from_step"] == 80, summary["checkpoint"]
        assert (out / "model.json").read_bytes() == (ref / "model.json").read_bytes(), opt_name


def test_bad_values_exit_2(tmp):
    for optimizer, expected in [
        ("{type: ftrl, l1: -1}", "training.optimizer.l1: expected a non-negative number, got -1"),
        ("{type: ftrl, lr: 0.1, alpha: 0.1}", "keep only one of them"),
        ("{type: adam, initial_accumulator_value: 0.1}", "applies to adagrad only"),
    ]:
        cfg = write(tmp, optimizer, "star", tmp / "bad")
        r = h.run("run", cfg, timeout=30)
        assert r.code == 2, (optimizer, r)
        assert expected in r.stderr, (optimizer, r.stderr)


if __name__ == "__main__":
    h.main([test_star, test_sharded_servers, test_parameters, test_async, test_ring_and_tensor,
            test_ftrl_l1_zeroes_weights, test_resume_is_exact, test_bad_values_exit_2])
