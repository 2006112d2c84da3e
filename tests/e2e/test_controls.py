"""Training controls (training.lr_schedule, training.clip_norm, optimizers adamw and rmsprop) with
real worker processes: the lr column and summary's final_lr at chosen steps are the schedule's
closed form; a full-batch run of adamw, rmsprop and sgd under a schedule and clip_norm gives the
weights of the same steps done here in Python (PyTorch's algorithms, and torch.optim itself when
torch is installed) to 1e-12; a tiny clip_norm gives the hand-computed first step; every mode
trains under a schedule and clip_norm (sparse rows too: the lazy steps, the norm over the
touched keys), synchronous reruns give the same bytes; a checkpoint and
--resume give the bytes of a run that never stopped. docs/optimizers.md."""

import csv
import json
import math

import harness as h

ROWS = [(1.0, 2.0, 3.0), (-1.0, 0.5, -0.5), (2.0, -1.0, 1.5), (0.5, 1.5, 2.5)]  # a, b, y

TINY = """
version: 1
name: tiny
model: {{type: linear_regression}}
data: {{path: {data}, label: y, normalize: none}}
shards: {{count: 1}}
training:
  epochs: {steps}
  batch_size: full
  shuffle: false
  optimizer: {optimizer}
{controls}
transport: {{type: inproc}}
output: {{dir: {out}, log_every: {{steps: 1}}}}
"""

SYNTHETIC = """
version: 1
name: controls
seed: 3
model: {{type: logistic_regression}}
data: {{synthetic: {{kind: logistic, rows: 1200, features: 6}}}}
shards: {{count: 3}}
aggregation: {aggregation}
training:
  epochs: {epochs}
  batch_size: 30
  optimizer: {optimizer}
{controls}
transport: {{type: {transport}}}
output: {{dir: {out}, log_every: {{steps: 1}}}}
{extra}
"""

MODES = {
    "star": "{mode: gradients}",
    "servers": "{mode: gradients, servers: 2}",
    "ring": "{mode: gradients, topology: ring}",
    "tensor": "{mode: gradients}\nparallelism: {tensor: 2}",
    "parameters": "{mode: parameters, parameters: {sync_every: {steps: 4}}}",
    "async": "{mode: async}",
}


def write_data(tmp):
    path = tmp / "tiny.csv"
    path.write_text("a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in ROWS))
    return path


def tiny_run(tmp, name, optimizer, steps, controls=""):
    out = tmp / name
    cfg = h.write_config(tmp, TINY.format(data=write_data(tmp), steps=steps, optimizer=optimizer,
                                          controls=controls, out=out), name=f"{name}.yaml")
    r = h.run("run", cfg, "--json", timeout=60)
    assert r.code == 0, r
    return out, r.json()


def weights(run_dir):
    model = json.loads((run_dir / "model.json").read_text())
    return [v for p in model["parameters"] for v in p["data"]]


def log_rows(run_dir):
    with open(run_dir / "loss.csv") as f:
        return list(csv.DictReader(f))


def gradient(params):
    """The mean of (x.w + b - y)^2's gradient over ROWS, for params [w_a, w_b, b]."""
    g = [0.0, 0.0, 0.0]
    for a, b, y in ROWS:
        e = 2.0 * (params[0] * a + params[1] * b + params[2] - y) / len(ROWS)
        g[0] += e * a
        g[1] += e * b
        g[2] += e
    return g


def clipped(g, clip):
    if not clip:
        return g
    coef = min(1.0, clip / (math.sqrt(sum(v * v for v in g)) + 1e-6))
    return [v * coef for v in g]


def cosine_lr(lr, t, total, warmup=0, start=0.0, min_lr=0.0):
    if t < warmup:
        return lr * (start + (1 - start) * t / warmup)
    span = max(1, total - warmup)
    return min_lr + (lr - min_lr) * (1 + math.cos(math.pi * min(t - warmup, span) / span)) / 2


def reference(rule, steps, lr_at, clip=0.0, **kw):
    """PyTorch's algorithms (torch.optim docs) on ROWS' full-batch gradient, from zeros."""
    p = [0.0, 0.0, 0.0]
    s1, s2, s3 = [0.0] * 3, [0.0] * 3, [0.0] * 3
    for t in range(steps):
        lr = lr_at(t)
        g = clipped(gradient(p), clip)
        for i in range(3):
            if rule == "sgd":
                p[i] = p[i] - lr * g[i]
            elif rule == "adamw":
                b1, b2, wd = 0.9, 0.999, kw["weight_decay"]
                p[i] *= 1 - lr * wd
                s1[i] = s1[i] * b1 + g[i] * (1 - b1)
                s2[i] = s2[i] * b2 + (1 - b2) * g[i] * g[i]
                denom = math.sqrt(s2[i]) / math.sqrt(1 - b2 ** (t + 1)) + 1e-8
                p[i] = p[i] - lr / (1 - b1 ** (t + 1)) * (s1[i] / denom)
            else:  # rmsprop, centered, with momentum
                alpha, momentum = kw["alpha"], kw["momentum"]
                s1[i] = s1[i] * alpha + (1 - alpha) * g[i] * g[i]
                s3[i] = s3[i] * alpha + g[i] * (1 - alpha)
                avg = math.sqrt(s1[i] - s3[i] * s3[i]) + 1e-8
                s2[i] = s2[i] * momentum + g[i] / avg
                p[i] = p[i] - lr * s2[i]
    return p


def torch_reference(rule, steps, lr, total, clip, **kw):
    """The same steps by torch.optim and its CosineAnnealingLR, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    x = torch.tensor([[a, b] for a, b, _ in ROWS], dtype=torch.float64)
    y = torch.tensor([y for _, _, y in ROWS], dtype=torch.float64)
    w = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    if rule == "adamw":
        opt = torch.optim.AdamW([w, b], lr=lr, weight_decay=kw["weight_decay"])
    else:
        opt = torch.optim.RMSprop([w, b], lr=lr, alpha=kw["alpha"], momentum=kw["momentum"],
                                  centered=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w + b - y) ** 2).mean().backward()
        torch.nn.utils.clip_grad_norm_([w, b], clip)
        opt.step()
        sched.step()
    return [*w.tolist(), *b.tolist()]


def close(a, b, tol=1e-12):
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


def test_schedule_lr_at_chosen_steps(tmp):
    # 12 full-batch steps: step (every 5 steps x 0.5) after 2 warmup steps from 0.25 x lr.
    controls = ("  lr_schedule: {type: step, step_size: 5, gamma: 0.5, warmup_steps: 2, "
                "warmup_start: 0.25}")
    out, summary = tiny_run(tmp, "step", "{type: sgd, lr: 0.1}", 12, controls)
    lrs = {int(row["step"]): float(row["lr"]) for row in log_rows(out)}
    # loss.csv's row of step k has the rate of step k (1-based), t = k - 1 steps before it.
    assert lrs[1] == 0.025 and lrs[2] == 0.1 * (0.25 + 0.75 * 0.5), lrs
    assert lrs[3] == 0.1 and lrs[7] == 0.1 and lrs[8] == 0.05 and lrs[12] == 0.05, lrs
    assert summary["final_lr"] == 0.05, summary
    expected = reference("sgd", 12, lambda t: [0.025, 0.0625][t] if t < 2
                         else 0.1 * 0.5 ** ((t - 2) // 5))
    assert close(weights(out), expected), (weights(out), expected)
    # The schedule acts: the constant rate gives other weights.
    plain, plain_summary = tiny_run(tmp, "plain", "{type: sgd, lr: 0.1}", 12)
    assert weights(plain) != weights(out)
    assert "final_lr" not in plain_summary and "lr" not in log_rows(plain)[0]
    # Exponential and cosine, read at their last step.
    _, summary = tiny_run(tmp, "exp", "{type: sgd, lr: 0.1}", 6,
                          "  lr_schedule: {type: exponential, gamma: 0.5}")
    assert summary["final_lr"] == 0.1 * 0.5 ** 5, summary
    out, summary = tiny_run(tmp, "cos", "{type: sgd, lr: 0.1}", 9,
                            "  lr_schedule: {type: cosine, min_lr: 0.01, warmup_steps: 1}")
    lrs = [float(row["lr"]) for row in log_rows(out)]
    want = [cosine_lr(0.1, t, 9, warmup=1, min_lr=0.01) for t in range(9)]
    assert close(lrs, want, 1e-15), (lrs, want)


def test_adamw_and_rmsprop_match_pytorch(tmp):
    # Five full-batch steps under a cosine schedule (over the run's 5 steps) and clip_norm 1.
    controls = "  lr_schedule: {type: cosine}\n  clip_norm: 1.0"
    for rule, optimizer, kw in [
        ("adamw", "{type: adamw, lr: 0.1, weight_decay: 0.3}", {"weight_decay": 0.3}),
        ("rmsprop", "{type: rmsprop, lr: 0.01, alpha: 0.9, momentum: 0.5, centered: true}",
         {"alpha": 0.9, "momentum": 0.5}),
    ]:
        lr = 0.1 if rule == "adamw" else 0.01
        out, _ = tiny_run(tmp, rule, optimizer, 5, controls)
        expected = reference(rule, 5, lambda t: cosine_lr(lr, t, 5), clip=1.0, **kw)
        assert close(weights(out), expected), (rule, weights(out), expected)
        torch_weights = torch_reference(rule, 5, lr, 5, 1.0, **kw)
        if torch_weights is not None:
            assert close(weights(out), torch_weights), (rule, weights(out), torch_weights)
        else:
            print(f"  ({rule}: torch is not installed; compared with the Python transcription)")


def test_tiny_clip_norm_first_step(tmp):
    # One sgd step of lr 1 with clip_norm 1e-3: -g * 1e-3 / (|g| + 1e-6), g at zero weights.
    out, _ = tiny_run(tmp, "clip", "{type: sgd, lr: 1.0}", 1, "  clip_norm: 0.001")
    g = gradient([0.0, 0.0, 0.0])
    norm = math.sqrt(sum(v * v for v in g))
    expected = [-v * 0.001 / (norm + 1e-6) for v in g]
    assert close(weights(out), expected, 1e-14), (weights(out), expected)
    assert math.sqrt(sum(v * v for v in weights(out))) < 0.001
    unclipped, _ = tiny_run(tmp, "noclip", "{type: sgd, lr: 1.0}", 1)
    assert close(weights(unclipped), [-v for v in g], 1e-14)


def synthetic(tmp, name, mode, optimizer, controls, epochs=2, transport="ipc", extra=""):
    out = tmp / name
    text = SYNTHETIC.format(aggregation=MODES[mode], optimizer=optimizer, controls=controls,
                            epochs=epochs, transport=transport, out=out, extra=extra)
    return out, h.write_config(tmp, text, name=f"{name}.yaml")


def run_ok(cfg, *args):
    r = h.run("run", cfg, "--json", *args, timeout=60)
    assert r.code == 0, r
    return r.json()


def test_every_mode(tmp):
    # Each mode trains under a cosine schedule with warmup and clip_norm (sync modes: a rerun
    # gives the same bytes); the lr column ends at the schedule's end, min_lr.
    controls = ("  lr_schedule: {type: cosine, min_lr: 0.02, warmup_steps: 5}\n"
                "  clip_norm: 0.5")
    for mode, optimizer in [("star", "{type: adamw, lr: 0.2}"),
                            ("servers", "{type: rmsprop, lr: 0.05}"),
                            ("ring", "{type: adamw, lr: 0.2}"),
                            ("tensor", "{type: rmsprop, lr: 0.05, momentum: 0.5}"),
                            ("parameters", "{type: adamw, lr: 0.2}"),
                            ("async", "{type: rmsprop, lr: 0.05}")]:
        out, cfg = synthetic(tmp, mode, mode, optimizer, controls)
        summary = run_ok(cfg)
        assert summary["final_metrics"]["accuracy"] > 0.8, (mode, summary)
        rows = log_rows(out)
        # The last step's rate (t = steps - 1 of the run's steps as the mode counts them:
        # parameters mode a worker's local steps, async the pushes applied).
        lr = 0.2 if "adamw" in optimizer else 0.05
        steps = summary["steps"]
        want = cosine_lr(lr, steps - 1, steps, warmup=5, min_lr=0.02)
        assert abs(summary["final_lr"] - want) < 1e-15, (mode, summary["final_lr"], want)
        assert float(rows[-1]["lr"]) == summary["final_lr"], (mode, rows[-1])
        assert int(rows[-1]["step"]) == steps, (mode, rows[-1])
        assert float(rows[0]["train_loss"]) > float(rows[-1]["train_loss"]), mode
        if mode != "async":
            again, cfg = synthetic(tmp, f"{mode}-again", mode, optimizer, controls)
            run_ok(cfg)
            assert (again / "model.json").read_bytes() == (out / "model.json").read_bytes(), mode
    # Across transports: tcp gives the star's bytes.
    tcp, cfg = synthetic(tmp, "star-tcp", "star", "{type: adamw, lr: 0.2}", controls,
                         transport="tcp")
    run_ok(cfg)
    assert (tcp / "model.json").read_bytes() == (tmp / "star" / "model.json").read_bytes()


def test_clip_norm_changes_the_model(tmp):
    a, cfg = synthetic(tmp, "clip", "ring", "{type: sgd, lr: 0.5}", "  clip_norm: 0.05")
    run_ok(cfg)
    b, cfg = synthetic(tmp, "noclip", "ring", "{type: sgd, lr: 0.5}", "")
    run_ok(cfg)
    assert weights(a) != weights(b)
    # Each step moves the weights by at most lr * clip_norm.
    assert max(abs(w) for w in weights(a)) < 0.5 * 0.05 * 80


def test_resume_is_exact(tmp):
    # Two epochs (80 steps, a checkpoint every 40 steps) resumed to four give the bytes of four
    # epochs in one run: the schedule reads the restored step count (t_max fixes the cosine's
    # span, which would otherwise follow the raised epochs).
    controls = "  lr_schedule: {type: cosine, t_max: 160, warmup_steps: 10}\n  clip_norm: 1.0"
    for mode, optimizer in [("star", "{type: adamw, lr: 0.2}"),
                            ("servers", "{type: adamw, lr: 0.2}"),  # clip_norm's exchange
                            ("ring", "{type: rmsprop, lr: 0.05, momentum: 0.5}"),
                            ("parameters", "{type: adamw, lr: 0.2}")]:
        # parameters mode: 28 local steps in 2 epochs, a checkpoint at each 4-step round.
        every = 4 if mode == "parameters" else 40
        ckpt = f"fault_tolerance: {{checkpoint_every: {{steps: {every}}}}}"
        ref, cfg = synthetic(tmp, f"{mode}-ref", mode, optimizer, controls, epochs=4, extra=ckpt)
        run_ok(cfg)
        cut, cfg = synthetic(tmp, f"{mode}-cut", mode, optimizer, controls, epochs=2, extra=ckpt)
        run_ok(cfg)
        assert (cut / "model.json").read_bytes() != (ref / "model.json").read_bytes()
        summary = run_ok(cfg, "--resume", "--set", "training.epochs=4")
        assert summary["checkpoint"]["resumed_from_step"] > 0, summary["checkpoint"]
        assert (cut / "model.json").read_bytes() == (ref / "model.json").read_bytes(), mode
    # The ring's rmsprop has a momentum slot: resuming without momentum is refused (exit 2); a
    # changed schedule resumes with a warning.
    _, cfg = synthetic(tmp, "ring-cut", "ring", "{type: rmsprop, lr: 0.05}", controls, epochs=2,
                       extra="fault_tolerance: {checkpoint_every: {steps: 40}}")
    r = h.run("run", cfg, "--resume", "--set", "training.epochs=6", timeout=60)
    assert r.code == 2, r
    assert "training.optimizer.type was rmsprop with momentum, is now rmsprop" in r.stderr, r
    _, cfg = synthetic(tmp, "star-cut", "star", "{type: adamw, lr: 0.2}", controls, epochs=2,
                       extra="fault_tolerance: {checkpoint_every: {steps: 40}}")
    summary = run_ok(cfg, "--resume", "--set", "training.epochs=6", "--set",
                     "training.lr_schedule.t_max=100")
    assert any("training.lr_schedule was cosine" in w for w in summary["warnings"]), summary


def test_sparse_rows(tmp):
    # Sparse rows (the lazy steps, clip_norm over the touched keys): bags of words over a star,
    # the keyed click log in async mode over one server.
    def sparse_run(name, config, *sets):
        out = tmp / name
        summary = run_ok(h.source("configs", config), "--set", f"output.dir={out}", *sets)
        return out, summary
    controls = ("--set", "training.optimizer.type=adamw", "--set", "training.clip_norm=0.01",
                "--set", "training.lr_schedule.type=cosine")
    a, summary = sparse_run("words", "sparse_libsvm.yaml", *controls)
    assert summary["final_metrics"]["accuracy"] > 0.9, summary
    b, _ = sparse_run("words-again", "sparse_libsvm.yaml", *controls)
    assert (a / "model.json").read_bytes() == (b / "model.json").read_bytes()
    c, _ = sparse_run("words-noclip", "sparse_libsvm.yaml", *controls[:2], *controls[4:])
    assert (a / "model.json").read_bytes() != (c / "model.json").read_bytes()
    _, summary = sparse_run("clicks", "clicks.yaml", "--set", "aggregation.mode=async", "--set",
                            "training.optimizer.type=rmsprop", "--set", "training.clip_norm=0.5")
    assert summary["final_metrics"]["auc"] > 0.9, summary


def test_bad_values_exit_2(tmp):
    for controls, expected in [
        ("  lr_schedule: {type: step}", "missing required key 'training.lr_schedule.step_size'"),
        ("  clip_norm: -1", "training.clip_norm: expected a number greater than 0, got -1"),
    ]:
        _, cfg = synthetic(tmp, "bad", "star", "{type: adamw}", controls)
        r = h.run("run", cfg, timeout=30)
        assert r.code == 2, (controls, r)
        assert expected in r.stderr, (controls, r.stderr)


if __name__ == "__main__":
    h.main([test_schedule_lr_at_chosen_steps, test_adamw_and_rmsprop_match_pytorch,
            test_tiny_clip_norm_first_step, test_every_mode, test_clip_norm_changes_the_model,
            test_resume_is_exact, test_sparse_rows, test_bad_values_exit_2])
