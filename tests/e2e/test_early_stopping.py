"""training.early_stopping on a run made to overfit: the stop step and the best step follow from
loss.csv's validation column, the written model is the best check's (its validation loss is
that row's), in every mode that has it; a resumed run keeps the best-so-far state; the config
errors (no validation split, a metric the model lacks) exit 2. Async mode:
test_async_early_stopping.py."""

import csv
import json
import random

import harness as h


def overfit_data(tmp):
    # 40 features, only x0 matters and a fifth of the labels are flipped; half of the 80 rows
    # are held out. 40 training rows in 40 dimensions are separable: full-batch gradient descent
    # with no regularization drives the training loss to 0 while the validation loss turns up
    # (at lr 0.02: down to step 60, then up; one step an epoch).
    rng = random.Random(7)
    lines = [",".join([f"x{i}" for i in range(40)] + ["y"])]
    for _ in range(80):
        x = [rng.gauss(0, 1) for _ in range(40)]
        y = int(x[0] > 0) ^ int(rng.random() < 0.2)
        lines.append(",".join([f"{v:.6f}" for v in x] + [str(y)]))
    path = tmp / "overfit.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def config(tmp, data, out="run", aggregation="{mode: gradients}", shards=2, epochs=300,
           patience=4, metric="val_loss", extra=""):
    return h.write_config(tmp, f"""
version: 1
name: es
seed: 1
model: {{type: logistic_regression}}
data: {{path: {data}, label: y, validation: 0.5}}
shards: {{count: {shards}}}
aggregation: {aggregation}
training:
  epochs: {epochs}
  batch_size: full
  shuffle: false
  optimizer: {{type: sgd, lr: 0.02}}
  early_stopping: {{metric: {metric}, patience: {patience}}}
output: {{dir: {tmp}/{out}, log_every: {{steps: 5}}}}
{extra}
""", name=f"{out}.yaml")


def expected_stop(run_dir, patience, column="validation_loss", lower=True):
    """(stopped_at, best_step, best) as Keras counts them, from loss.csv."""
    with open(run_dir / "loss.csv") as f:
        rows = list(csv.DictReader(f))
    best, best_step, wait = None, None, 0
    for row in rows:
        v = float(row[column])
        if best is None or (v < best if lower else v > best):
            best, best_step, wait = v, int(row["step"]), 0
            continue
        wait += 1
        if wait >= patience:
            return int(row["step"]), best_step, best, rows
    return None, best_step, best, rows


def check_stopped(tmp, out, summary, patience=4):
    stopped_at, best_step, best, rows = expected_stop(tmp / out, patience)
    es = summary["early_stopping"]
    assert stopped_at is not None and stopped_at < 300, (stopped_at, es)  # it did stop early
    assert 5 < best_step < stopped_at, (best_step, stopped_at)  # not the first check
    assert es["stopped_at"] == stopped_at and es["best_step"] == best_step, (es, stopped_at, best_step)
    assert es["best_metric"] == best and es["metric"] == "val_loss", (es, best)
    assert int(rows[-1]["step"]) == stopped_at == summary["steps"], (rows[-1], summary["steps"])
    # The written model is the best check's: its validation loss is that row's (the same
    # parameters on the same held-out rows), not the last row's.
    assert summary["validation"]["loss"] == best, (summary["validation"], best)
    last = float(rows[-1]["validation_loss"])
    assert last > best, (last, best)
    return es


def test_stops_at_the_step_loss_csv_says(tmp):
    data = overfit_data(tmp)
    r = h.run("run", config(tmp, data), "--json")
    assert r.code == 0, r
    es = check_stopped(tmp, "run", r.json())
    saved = json.loads((tmp / "run" / "summary.json").read_text())
    assert saved["early_stopping"] == es
    # A rerun gives the same bytes.
    again = h.run("run", config(tmp, data, out="again"))
    assert again.code == 0, again
    assert (tmp / "again" / "model.json").read_bytes() == (tmp / "run" / "model.json").read_bytes()
    # Without early stopping the same run trains every step (the stop above was early stopping's).
    full = h.write_config(tmp, (tmp / "run.yaml").read_text().replace(
        "  early_stopping: {metric: val_loss, patience: 4}\n", "").replace(f"{tmp}/run", f"{tmp}/full"),
        name="full.yaml")
    r = h.run("run", full, "--json")
    assert r.code == 0 and r.json()["steps"] == 300 and "early_stopping" not in r.json(), r


def test_every_mode(tmp):
    data = overfit_data(tmp)
    modes = {
        "ring": "{mode: gradients, topology: ring}",
        "servers": "{mode: gradients, servers: 2}",
        "parameters": "{mode: parameters, parameters: {sync_every: {steps: 1}}}",
        "tensor": "{mode: gradients}\nparallelism: {tensor: 2}",
    }
    for name, aggregation in modes.items():
        r = h.run("run", config(tmp, data, out=name, aggregation=aggregation), "--json")
        assert r.code == 0, (name, r)
        check_stopped(tmp, name, r.json())


def test_higher_is_better_metric(tmp):
    # val_auc: an improvement is a rise; equal values (ties of the AUC) are not one.
    data = overfit_data(tmp)
    r = h.run("run", config(tmp, data, metric="val_auc"), "--json")
    assert r.code == 0, r
    stopped_at, best_step, best, _ = expected_stop(tmp / "run", 4, "validation_auc", lower=False)
    es = r.json()["early_stopping"]
    assert stopped_at is not None and best_step > 5, (stopped_at, best_step)
    assert (es["stopped_at"], es["best_step"], es["best_metric"]) == (stopped_at, best_step, best), es
    assert r.json()["validation"]["auc"] == best


def test_resume_keeps_the_best_so_far(tmp):
    data = overfit_data(tmp)
    whole = h.run("run", config(tmp, data, out="whole"), "--json")
    assert whole.code == 0, whole
    es = whole.json()["early_stopping"]
    # The same run in two parts: the first ends (all its epochs done) after the best check but
    # before the stop, with a checkpoint at its last step; the second resumes it with the epochs
    # of the whole run and must stop where the whole run did, writing the same best model.
    first_epochs = es["best_step"] + 5
    assert first_epochs < es["stopped_at"], es
    cfg = config(tmp, data, out="parts", epochs=first_epochs,
                 extra="fault_tolerance: {checkpoint_every: {steps: 5}}")
    r = h.run("run", cfg)
    assert r.code == 0, r
    r = h.run("run", cfg, "--resume", "--set", "training.epochs=300", "--json")
    assert r.code == 0, r
    assert r.json()["checkpoint"]["resumed_from_step"] == first_epochs, r.json()["checkpoint"]
    assert r.json()["early_stopping"] == es, (r.json()["early_stopping"], es)
    assert (tmp / "parts" / "model.json").read_bytes() == (tmp / "whole" / "model.json").read_bytes()


def test_config_errors(tmp):
    data = overfit_data(tmp)
    cases = [
        ("{mode: gradients}", "validation: 0.5", "validation: 0",
         "training.early_stopping: watches a metric on the validation split, but data.validation is 0"),
        ("{mode: gradients}", "metric: val_loss", "metric: val_mse",
         "training.early_stopping.metric: val_mse is not measured for a logistic_regression model "
         "(task binary); use one of val_loss, val_acc, val_auc, val_log_loss"),
        ("{mode: gradients}", "metric: val_loss", "metric: accuracy",
         "expected one of val_loss, val_acc, val_auc, val_log_loss, val_mse, got 'accuracy'"),
    ]
    for aggregation, old, new, message in cases:
        text = config(tmp, data, aggregation=aggregation).read_text().replace(old, new, 1)
        cfg = h.write_config(tmp, text, name="bad.yaml")
        for command in (["validate", cfg], ["run", cfg]):
            r = h.run(*command)
            assert r.code == 2 and message in r.stderr, (command, message, r)
    assert not (tmp / "run").exists()


if __name__ == "__main__":
    h.main([test_stops_at_the_step_loss_csv_says, test_every_mode, test_higher_is_better_metric,
            test_resume_keeps_the_best_so_far, test_config_errors])
