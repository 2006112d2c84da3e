"""aggregation.compression fp16 / bf16 in mode parameters (model averaging), with real worker
processes: the models travel as half-float deltas both ways (core/modes/parameters_half.hpp).
The final loss on configs/'s parameters-mode samples within 1% of the uncompressed run's (the
model's bytes differ: the deltas really travelled in 16 bits); summary.json's tally in closed
form (a model sent whole the first round, a delta frame after); reruns, ipc and tcp, a
replacement worker and a --resume all give the same bytes. And three gaps of compression in
general: a failed run's summary.json counts what travelled, a replaced server's frames are
counted, and a resume that drops top-k residuals says so. docs/compression.md."""

import json
import os
import signal

import harness as h

# Every sample of mode parameters that trains on files of the repository (not elastic: its
# leave is a test of its own).
SAMPLES = ["parameters_average.yaml", "fedavg.yaml", "parameters_best.yaml",
           "parameters_median.yaml", "parameters_trimmed_mean.yaml",
           "parameters_validation_weighted.yaml", "federated_files.yaml"]

run_ok = h.run_json


def fp(codec, *sets):
    return ("--set", f"aggregation.compression={codec}", *sets)


model_bytes = h.model_bytes


def summary_of(run_dir):
    return json.loads((run_dir / "summary.json").read_text())


def test_final_loss_within_one_percent(tmp):
    for sample in SAMPLES:
        config = h.source("configs", sample)
        plain = run_ok(config, tmp / f"{sample}-none")
        assert "compression" not in plain["aggregation"], plain["aggregation"]
        for codec in ("fp16", "bf16"):
            out = tmp / f"{sample}-{codec}"
            summary = run_ok(config, out, *fp(codec))
            base, got = plain["final_loss"], summary["final_loss"]
            assert abs(got - base) <= 0.01 * abs(base), (sample, codec, got, base)
            assert model_bytes(out) != model_bytes(tmp / f"{sample}-none"), (sample, codec)
            assert summary["aggregation"]["compression"]["codec"] == codec, summary


def test_bytes_in_summary(tmp):
    # 4 workers, every one in each of the 20 rounds: down, the first round's models whole
    # (8p bytes), then a delta frame (8 + 2p); up, a delta frame every round.
    config = h.source("configs", "parameters_average.yaml")
    plain = run_ok(config, tmp / "none")
    summary = run_ok(config, tmp / "fp16", *fp("fp16"))
    p = h.parameter_count(tmp / "fp16")
    rounds, workers = summary["aggregation"]["rounds"], summary["workers"]
    assert (rounds, workers) == (20, 4), summary["aggregation"]
    c = summary["aggregation"]["compression"]
    assert c["whole_models"] == workers, c
    assert c["values"] == 2 * rounds * workers * p, (c, p)
    frames = 2 * rounds * workers - workers
    assert c["bytes"] == frames * (8 + 2 * p) + workers * 8 * p, (c, p)
    assert c["float64_bytes"] == 8 * c["values"], c
    assert c["saved_bytes"] == c["float64_bytes"] - c["bytes"], c
    sent = sum(w["bytes_sent"] for w in summary["worker_stats"])
    plain_sent = sum(w["bytes_sent"] for w in plain["worker_stats"])
    assert sent < plain_sent, (sent, plain_sent)
    # FedAvg draws half the workers a round: a client that missed the last merge holds an older
    # model and is sent the new one whole.
    fedavg = run_ok(h.source("configs", "fedavg.yaml"), tmp / "fedavg", *fp("bf16"))
    c = fedavg["aggregation"]["compression"]
    assert fedavg["workers"] < c["whole_models"] < len(fedavg["aggregation"]["selected"]) * 2, c


def test_reruns_and_transports_identical(tmp):
    config = h.source("configs", "fedavg.yaml")
    for transport, name in [("ipc", "a"), ("ipc", "b"), ("tcp", "c")]:
        run_ok(config, tmp / name, *fp("fp16"), "--set", f"transport.type={transport}")
    assert len({model_bytes(tmp / name) for name in "abc"}) == 1


def test_replacement_gets_the_model_whole(tmp):
    # Worker 1 is killed at its local step 30 (round 4 of 20) and replaced: the replacement
    # holds no model to add a delta to, so the round's model goes to it whole, and the run ends
    # with the bytes of the unfailed one.
    config = h.source("configs", "parameters_average.yaml")
    ref = run_ok(config, tmp / "ref", *fp("fp16"))
    r = h.run("run", config, "--json", "--set", f"output.dir={tmp / 'restart'}", *fp("fp16"),
              "--set", "fault_tolerance.on_worker_failure=restart",
              "--fault", "rank=1,at_step=30,action=kill", timeout=60)
    assert r.code == 0, r
    summary = r.json()
    assert [f["action"] for f in summary["failures"]] == ["restart"], summary["failures"]
    c = summary["aggregation"]["compression"]
    assert c["whole_models"] == ref["aggregation"]["compression"]["whole_models"] + 1, c
    assert model_bytes(tmp / "restart") == model_bytes(tmp / "ref")


def test_leave_mid_run(tmp):
    # configs/elastic_parameters.yaml: worker 2 leaves after its round 2; the later rounds go to
    # the three others (deltas on the model they hold), with the same membership events and
    # the loss within 1% of the uncompressed run's.
    config = h.source("configs", "elastic_parameters.yaml")
    plain = run_ok(config, tmp / "none")
    summary = run_ok(config, tmp / "fp16", *fp("fp16"))
    def events(s):
        return [{k: v for k, v in e.items() if k != "pid"} for e in s["membership"]["events"]]
    assert events(summary) == events(plain), summary["membership"]
    assert [(e["event"], e["rank"], e["step"]) for e in events(summary)] == [("leave", 2, 64)]
    assert abs(summary["final_loss"] - plain["final_loss"]) <= 0.01 * plain["final_loss"]
    c = summary["aggregation"]["compression"]
    assert c["whole_models"] == 4 and c["bytes"] < c["float64_bytes"], c


PARAMETERS = ("{mode: parameters, compression: fp16, "
              "parameters: {sync_every: {steps: 5}, optimizer_state: keep}}")


def test_resume_is_the_unbroken_run(tmp):
    # 10 epochs of 29 local steps: 58 rounds; the last checkpoint is at step 250. The resumed
    # run sends every worker its first model whole; the unbroken one sent deltas that rebuild
    # the same bits.
    cfg = h.write_config(tmp, h.checkpointed_mlp(tmp / "run", PARAMETERS, epochs=10, every=125,
                                                 seed=3))
    ref = run_ok(cfg, tmp / "ref")
    assert ref["steps"] == 290, ref["steps"]
    run_ok(cfg, tmp / "run")
    r = h.run("run", cfg, "--resume", "--json", timeout=60)
    assert r.code == 0, r
    summary = r.json()
    assert summary["checkpoint"]["resumed_from_step"] == 250, summary["checkpoint"]
    assert summary["aggregation"]["compression"]["whole_models"] == 3
    assert model_bytes(tmp / "run") == model_bytes(tmp / "ref")


def test_failed_run_counts_what_travelled(tmp):
    # A run that fails (a worker killed, on_worker_failure abort: exit 3) still reports the
    # frames sent before the failure: the gradients star and mode parameters.
    star = h.source("configs", "linear_regression.yaml")
    params = h.source("configs", "parameters_average.yaml")
    for name, config, fault in [("star", star, "rank=1,at_step=40,action=kill"),
                                ("parameters", params, "rank=1,at_step=30,action=kill")]:
        out = tmp / name
        r = h.run("run", config, *fp("bf16"), "--set", f"output.dir={out}", "--fault", fault,
                  timeout=60)
        assert r.code == 3, r
        summary = summary_of(out)
        assert summary["status"] == "failed", summary
        c = summary["aggregation"]["compression"]
        assert c["codec"] == "bf16" and c["values"] > 0 and c["bytes"] < c["float64_bytes"], c
        if name == "star":  # 40 full-batch steps of 4 workers sent, the 41st of 3 at most
            p = 9  # data/linear.csv: 8 features and the bias
            assert 40 * 4 * p <= c["values"] <= 41 * 4 * p, c


SERVERS = """
version: 1
name: compressed-server-restart
seed: 7
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 8000, features: 10, noise: 0.1}}}}
shards: {{count: 4}}
aggregation: {{mode: gradients, servers: 2, compression: fp16}}
training: {{epochs: 3, batch_size: 32, optimizer: {{type: adam, lr: 0.01}}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1000, on_worker_failure: restart,
                  max_restarts: 2}}
output: {{dir: {out}, log_every: {{steps: 100}}}}
"""


def test_replaced_server_frames_counted(tmp):
    # Server 1 is killed at step 400 of 750 and replaced: its frames until then travelled too.
    # Each step every worker sends each server its key range's frame: steps x workers x p values
    # at least (the round in progress is pushed again to the replacement: up to p x workers
    # more).
    ref = run_ok(h.write_config(tmp, SERVERS.format(out=tmp / "ref"), "ref.yaml"), tmp / "ref")
    cfg = h.write_config(tmp, SERVERS.format(out=tmp / "killed"), "killed.yaml")
    r = h.run("run", cfg, "--json", "--fault", "server=1,at_step=400,action=kill", timeout=60)
    assert r.code == 0, r
    summary = r.json()
    assert summary["aggregation"]["servers"][1]["replacements"] == 1, summary["aggregation"]
    p, steps, workers = 11, summary["steps"], summary["workers"]
    c, c_ref = summary["aggregation"]["compression"], ref["aggregation"]["compression"]
    assert c_ref["values"] == steps * workers * p, c_ref
    assert steps * workers * p <= c["values"] <= (steps + 1) * workers * p, (c, steps)
    assert model_bytes(tmp / "killed") == model_bytes(tmp / "ref")


def test_resume_dropping_topk_residuals_warns(tmp):
    # The checkpoint of step 750 holds the three workers' residuals; resumed with compression
    # none (or fp16), that unsent gradient mass is dropped: a warning says so. Resumed with
    # top-k at another ratio, the residuals carry over: no warning.
    topk = "{mode: gradients, compression: {topk: {ratio: 0.1}}}"
    cfg = h.write_config(tmp, h.checkpointed_mlp(tmp / "run", topk, epochs=10, every=150))
    first = run_ok(cfg, tmp / "run", "--set", "training.epochs=9")
    assert first["steps"] < 950, first["steps"]
    for codec, dropped in [("none", True), ("fp16", True), ("{topk: {ratio: 0.2}}", False)]:
        r = h.run("run", cfg, "--resume", *fp(codec), timeout=60)
        assert r.code == 0, r
        warning = "the checkpoint of step 750 holds the top-k residuals of 3 workers, and " \
                  f"aggregation.compression is now {codec}: their unsent gradient mass is dropped"
        assert (warning in r.stderr) == dropped, (codec, r.stderr)

if __name__ == "__main__":
    h.main([test_final_loss_within_one_percent, test_bytes_in_summary,
            test_reruns_and_transports_identical, test_replacement_gets_the_model_whole,
            test_leave_mid_run,
            test_resume_is_the_unbroken_run, test_failed_run_counts_what_travelled,
            test_replaced_server_frames_counted, test_resume_dropping_topk_residuals_warns])
