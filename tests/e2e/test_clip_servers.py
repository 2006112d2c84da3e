"""training.clip_norm with several parameter servers (aggregation.servers: K > 1), with real
worker processes. Synchronous rounds: the servers exchange their slices' partial sums of squares
and all scale by the one global factor (core/servers/norm_exchange.hpp), so a run over 2 or 3
servers, dense and sparse (keyed), gives the one-server run's model to rounding (the norm is
summed per server, then across servers in server order), where a small clip_norm bites (the
unclipped run differs); reruns and ipc/tcp give the same bytes. A tiny full-batch run over 3
servers of one key each gives the closed-form global clip, which a server clipping its own slice
by its own norm would miss by far. Async: each worker sends its whole push's factor, which with
one worker over 2 or 3 servers gives the one-server run's model. docs/optimizers.md."""

import json
import math

import harness as h
from test_controls import ROWS, clipped, gradient, write_data

DENSE = """
version: 1
name: clip-servers
seed: 5
model: {{type: logistic_regression, l2: 0.01}}
data: {{synthetic: {{kind: logistic, rows: 900, features: 9}}}}
shards: {{count: {shards}}}
aggregation: {{mode: {mode}, servers: {servers}}}
training:
  epochs: 2
  batch_size: 30
  optimizer: {{type: sgd, lr: 0.5, momentum: 0.5}}
{clip}
transport: {{type: {transport}}}
output: {{dir: {out}}}
"""

TINY = """
version: 1
name: clip-tiny
model: {{type: linear_regression}}
data: {{path: {data}, label: y, normalize: none}}
shards: {{count: 2}}
aggregation: {{mode: gradients, servers: {servers}}}
training:
  epochs: {steps}
  batch_size: full
  shuffle: false
  optimizer: {{type: sgd, lr: 1.0}}
  clip_norm: {clip}
transport: {{type: ipc}}
output: {{dir: {out}}}
"""


def run_ok(cfg, *args):
    r = h.run("run", cfg, "--json", *args, timeout=60)
    assert r.code == 0, r
    return r.json()


def weights(run_dir):
    model = json.loads((run_dir / "model.json").read_text())
    return [v for p in model["parameters"] for v in p["data"]]


def model_bytes(run_dir):
    return (run_dir / "model.json").read_bytes()


def relative_gap(a, b):
    """max |a - b| over the weights, relative to max |b| (the model's scale: a weight near zero
    of a sparse model, untouched but for a step or two, would make a per-weight ratio noise)."""
    assert len(a) == len(b) and a, (len(a), len(b))
    return max(abs(x - y) for x, y in zip(a, b)) / max(abs(y) for y in b)


def dense(tmp, name, servers, clip="  clip_norm: 0.05", transport="ipc", mode="gradients",
          shards=3):
    out = tmp / name
    cfg = h.write_config(tmp, DENSE.format(servers=servers, clip=clip, transport=transport,
                                           out=out, mode=mode, shards=shards),
                         name=f"{name}.yaml")
    run_ok(cfg)
    return out


def test_dense_matches_one_server(tmp):
    one = dense(tmp, "one", 1)
    unclipped = dense(tmp, "unclipped", 1, clip="")
    assert relative_gap(weights(unclipped), weights(one)) > 1e-3, "the clip did not bite"
    for servers in (2, 3):
        out = dense(tmp, f"k{servers}", servers)
        gap = relative_gap(weights(out), weights(one))
        assert gap <= 1e-12, (servers, gap)
    # Byte-identical across reruns and across transports.
    again = dense(tmp, "k3-again", 3)
    assert model_bytes(again) == model_bytes(out)
    tcp = dense(tmp, "k3-tcp", 3, transport="tcp")
    assert model_bytes(tcp) == model_bytes(out)
    # And without clip_norm the servers still step exactly as the one server does.
    plain = dense(tmp, "k2-unclipped", 2, clip="")
    assert model_bytes(plain) == model_bytes(unclipped)


def test_global_norm_not_per_slice(tmp):
    # 3 full-batch sgd steps (lr 1, clip 1e-3) of a 3-parameter linear regression over 3
    # servers of one key each: every step is -g * 1e-3 / (|g| + 1e-6) with g the whole gradient.
    # A server clipping its own key by its own norm would step each key by about 1e-3.
    clip, steps = 0.001, 3
    expected = [0.0, 0.0, 0.0]
    per_slice = [0.0, 0.0, 0.0]
    for _ in range(steps):
        g = clipped(gradient(expected), clip)
        expected = [p - v for p, v in zip(expected, g)]
        s = gradient(per_slice)
        per_slice = [p - clipped([v], clip)[0] for p, v in zip(per_slice, s)]
    for servers in (1, 3):
        out = tmp / f"tiny-{servers}"
        cfg = h.write_config(tmp, TINY.format(data=write_data(tmp), servers=servers, steps=steps,
                                              clip=clip, out=out), name=f"tiny-{servers}.yaml")
        run_ok(cfg)
        got = weights(out)
        assert relative_gap(got, expected) <= 1e-12, (servers, got, expected)
        assert relative_gap(got, per_slice) > 0.1, (servers, got, per_slice)
    assert math.sqrt(sum(v * v for v in expected)) <= steps * clip * (1 + 1e-9)
    assert len(ROWS) == 4


def sparse(tmp, name, servers, *sets):
    out = tmp / name
    run_ok(h.source("configs", "sparse_libsvm.yaml"), "--set", f"output.dir={out}", "--set",
           f"aggregation.servers={servers}", *sets)
    return out


def test_sparse_keyed_matches_one_server(tmp):
    # Bags of words over the keyed exchange: the norm is over the keys a round touched, each
    # server's part of them summed there.
    clip = ("--set", "training.clip_norm=0.05")
    one = sparse(tmp, "sparse-one", 1, *clip)
    unclipped = sparse(tmp, "sparse-unclipped", 1)
    assert relative_gap(weights(unclipped), weights(one)) > 1e-3, "the clip did not bite"
    for servers in (2, 3):
        out = sparse(tmp, f"sparse-k{servers}", servers, *clip)
        gap = relative_gap(weights(out), weights(one))
        assert gap <= 1e-12, (servers, gap)
    again = sparse(tmp, "sparse-k3-again", 3, *clip)
    assert model_bytes(again) == model_bytes(out)
    tcp = sparse(tmp, "sparse-k3-tcp", 3, *clip, "--set", "transport.type=tcp")
    assert model_bytes(tcp) == model_bytes(out)


def test_async_worker_factor_matches_one_server(tmp):
    # Async over several servers: the worker computes its whole push's factor (with the L2 term
    # at the parameters it pulled) and every server scales its part by it. With one worker the
    # pulled parameters are the servers' current ones: the one-server run's model. Dense and
    # keyed (the click log's sparse rows); a server clipping its own part would miss it.
    one = dense(tmp, "async-one", 1, mode="async", shards=1)
    unclipped = dense(tmp, "async-unclipped", 1, mode="async", shards=1, clip="")
    assert relative_gap(weights(unclipped), weights(one)) > 1e-3, "the clip did not bite"
    for servers in (2, 3):
        out = dense(tmp, f"async-k{servers}", servers, mode="async", shards=1)
        gap = relative_gap(weights(out), weights(one))
        assert gap <= 1e-12, (servers, gap)
    # Several workers (the order of the pushes varies run to run): the run trains and ends.
    many = dense(tmp, "async-k2-many", 2, mode="async")
    assert len(weights(many)) == len(weights(one))

    def clicks(name, servers, *sets):
        out = tmp / name
        run_ok(h.source("configs", "clicks.yaml"), "--set", f"output.dir={out}", "--set",
               "aggregation.mode=async", "--set", "shards.count=1", "--set",
               f"aggregation.servers={servers}", "--set", "expect.auc.min=0.5", "--set",
               "data.hash.bits=16", *sets)  # a small model.json: 2^16 keys, not 2^22
        return out
    clip = ("--set", "training.clip_norm=0.05")
    one = clicks("clicks-one", 1, *clip)
    assert relative_gap(weights(clicks("clicks-unclipped", 1)), weights(one)) > 1e-3
    gap = relative_gap(weights(clicks("clicks-k2", 2, *clip)), weights(one))
    assert gap <= 1e-12, gap


if __name__ == "__main__":
    h.main([test_dense_matches_one_server, test_global_norm_not_per_slice,
            test_sparse_keyed_matches_one_server, test_async_worker_factor_matches_one_server])
