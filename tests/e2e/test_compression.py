"""aggregation.compression (fp16, bf16) with real worker processes over the gradients star: the
final loss on the sample configs within 1% of the uncompressed run's (while the model's bytes do
differ: the gradients really travelled in 16 bits), summary.json's tally of the frames is the
closed form (2 bytes a value plus an 8-byte frame header, against 8 bytes a value: about 4x on
the MLP), the workers' bytes sent fall accordingly, reruns and ipc against tcp give the same
bytes, and the setups it is not available with are refused with exit 2. docs/compression.md."""


import harness as h

SAMPLES = ["linear_regression.yaml", "logistic_regression.yaml", "softmax_regression.yaml",
           "mlp.yaml"]


run_ok = h.run_json


def compressed(codec, *sets):
    return ("--set", f"aggregation.compression={codec}", *sets)


parameter_count = h.parameter_count


def test_final_loss_within_one_percent(tmp):
    for sample in SAMPLES:
        config = h.source("configs", sample)
        plain = run_ok(config, tmp / f"{sample}-none")
        assert "compression" not in plain.get("aggregation", {}), plain
        for codec in ("fp16", "bf16"):
            out = tmp / f"{sample}-{codec}"
            summary = run_ok(config, out, *compressed(codec))
            base, got = plain["final_loss"], summary["final_loss"]
            assert abs(got - base) <= 0.01 * abs(base), (sample, codec, got, base)
            # The gradients did travel rounded: the model is not the uncompressed one's.
            assert ((out / "model.json").read_bytes() !=
                    (tmp / f"{sample}-none" / "model.json").read_bytes()), (sample, codec)
            assert summary["aggregation"]["compression"]["codec"] == codec, summary


def test_bytes_in_summary(tmp):
    config = h.source("configs", "mlp.yaml")
    plain = run_ok(config, tmp / "none")
    summary = run_ok(config, tmp / "fp16", *compressed("fp16"))
    p = parameter_count(tmp / "fp16")
    c = summary["aggregation"]["compression"]
    frames = summary["steps"] * summary["workers"]  # one gradient frame a worker a step
    assert c["values"] == frames * p, (c, frames, p)
    assert c["bytes"] == frames * (8 + 2 * p), c
    assert c["float64_bytes"] == 8 * c["values"], c
    assert c["saved_bytes"] == c["float64_bytes"] - c["bytes"], c
    assert 3.9 < c["ratio"] <= 4.0, c  # 8p / (2p + 8) with p = 675
    # What the workers' transports counted falls with it (messages' headers and fields stay).
    sent = sum(w["bytes_sent"] for w in summary["worker_stats"])
    plain_sent = sum(w["bytes_sent"] for w in plain["worker_stats"])
    assert plain_sent > 3 * sent, (plain_sent, sent)


def test_reruns_and_transports_identical(tmp):
    config = h.source("configs", "logistic_regression.yaml")
    runs = [("ipc", "a"), ("ipc", "b"), ("tcp", "c")]
    for transport, name in runs:
        run_ok(config, tmp / name, *compressed("fp16"), "--set", f"transport.type={transport}")
    models = {(tmp / name / "model.json").read_bytes() for _, name in runs}
    assert len(models) == 1


def test_servers_and_ring(tmp):
    # Sharded servers decode each push into float64 (the same rank-order sum as the star); the
    # ring sends its partial sums compressed and adds in float64 at each hop. Both: the loss
    # within 1% of the uncompressed topology's, fp16 reruns and tcp give the same bytes (the
    # ring's replicas agree, or the run fails: summary's replicas_agree), and the tally.
    config = h.source("configs", "mlp.yaml")
    short = ("--set", "training.epochs=6")  # 114 steps: the CI's time
    for name, sets in [("servers", ("--set", "aggregation.servers=2", *short)),
                       ("ring", ("--set", "aggregation.topology=ring", *short))]:
        plain = run_ok(config, tmp / f"{name}-none", *sets)
        runs = {}
        for codec in ("fp16", "bf16"):
            for transport in ("ipc", "ipc-again", "tcp") if codec == "fp16" else ("ipc",):
                out = tmp / f"{name}-{codec}-{transport}"
                summary = run_ok(config, out, *sets, *compressed(codec),
                                 "--set", f"transport.type={transport.split('-')[0]}")
                runs.setdefault(codec, set()).add((out / "model.json").read_bytes())
            base, got = plain["final_loss"], summary["final_loss"]
            assert abs(got - base) <= 0.01 * abs(base), (name, codec, got, base)
            c = summary["aggregation"]["compression"]
            assert c["codec"] == codec and c["values"] > 0, c
            assert 3.9 < c["ratio"] <= 4.0, (name, c)
            assert len(runs[codec]) == 1, (name, codec)
        assert runs["fp16"] != runs["bf16"], name
        assert (tmp / f"{name}-none" / "model.json").read_bytes() not in runs["fp16"], name
        if name == "ring":
            # Each worker sends 2(N-1) segments a step, each of the N segments once a phase:
            # the N workers together 2(N-1) x P values a step.
            p = parameter_count(tmp / "ring-none")
            n = summary["workers"]
            assert c["values"] == summary["steps"] * 2 * (n - 1) * p, (c, p, n)


def test_not_available_exit_2(tmp):
    config = h.source("configs", "logistic_regression.yaml")
    for sets, expected in [
        (("--set", "aggregation.compression=fp8"),
         "aggregation.compression: unknown value 'fp8' (expected none, fp16 or bf16)"),
        (("--set", "parallelism.tensor=2"),
         "aggregation.compression: fp16 is not available with parallelism.tensor > 1"),
        (("--set", "aggregation.mode=async"),
         "aggregation.compression: fp16 is not available with aggregation.mode async yet"),
    ]:
        r = h.run("run", config, "--set", "aggregation.compression=fp16", *sets,
                  "--set", f"output.dir={tmp / 'refused'}", timeout=30)
        assert r.code == 2, (sets, r)
        assert expected in r.stderr, (sets, r.stderr)
        assert not (tmp / "refused" / "model.json").exists()
    # A LIBSVM file found sparse only when it is read (data.sparse: auto, its dense matrix over
    # data.max_dense_gib): refused when training starts, by the star and by sharded servers.
    softmax = h.source("configs", "softmax_regression.yaml")
    for servers in (1, 2):
        r = h.run("run", softmax, "--set", "aggregation.compression=fp16",
                  "--set", f"data.path={h.source('data', 'topics.svm')}",
                  "--set", "data.max_dense_gib=0.0001", "--set", f"aggregation.servers={servers}",
                  "--set", f"output.dir={tmp / 'sparse'}", timeout=60)
        assert r.code == 2, (servers, r)
        assert "topics.svm is read as sparse rows (exchanged as keyed gradients, not compressed " \
               "yet); use compression none with this data" in r.stderr, (servers, r.stderr)
        assert not (tmp / "sparse" / "model.json").exists()


if __name__ == "__main__":
    h.main([test_final_loss_within_one_percent, test_bytes_in_summary,
            test_reruns_and_transports_identical, test_servers_and_ring, test_not_available_exit_2])
