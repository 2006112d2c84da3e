"""Every example in configs/ validates, runs and meets its own `expect:` (exit 0)."""

import json

import harness as h

def test_every_example_config_runs(tmp):
    configs = sorted(h.source("configs").glob("*.yaml"))
    assert len(configs) >= 5, configs
    for cfg in configs:
        r = h.run("validate", cfg)
        assert r.code == 0, (cfg.name, r)
        out = tmp / cfg.stem
        r = h.run("run", cfg, "--json", "--set", f"output.dir={out}")
        assert r.code == 0, (cfg.name, r)
        summary = r.json()
        assert summary["status"] == "ok" and summary["expect"]["met"], (cfg.name, summary)
        assert summary["expect"]["failures"] == []
        # No constant column in the examples, and no worker that ended badly after its work
        # (under the debug-asan preset that is where a sanitizer report would show).
        assert summary["warnings"] == [], (cfg.name, summary["warnings"])
        for name in ("model.json", "loss.csv", "summary.json", "loss.svg", "config.resolved.yaml"):
            assert (out / name).stat().st_size > 0, (cfg.name, name)
        assert json.loads((out / "summary.json").read_text())["final_loss"] == summary["final_loss"]
        # The resolved config is a complete config: running it reproduces the model (bit for
        # bit, except in async mode, where the order pushes arrive in is the network's).
        again = tmp / (cfg.stem + "-again")
        r = h.run("run", out / "config.resolved.yaml", "--set", f"output.dir={again}")
        assert r.code == 0, (cfg.name, r)
        if summary["mode"] != "async":
            assert (again / "model.json").read_bytes() == (out / "model.json").read_bytes(), cfg.name


if __name__ == "__main__":
    h.main([test_every_example_config_runs])
