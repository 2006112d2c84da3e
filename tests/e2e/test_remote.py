"""Workers started by someone else: `disttrain run --listen ... --expect-workers N` and
`disttrain worker --connect tcp://...` as separate processes over real tcp on 127.0.0.1, and
the launcher environments (torchrun's RANK/WORLD_SIZE, Open MPI's, PMI's, Slurm's) that make one
command line start a whole run; mpirun itself when it is installed. Each result is compared
with the all-local run of the same config, bit for bit."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time

import harness as h

CONFIG = """
version: 1
name: remote
seed: 11
model: {{type: logistic_regression}}
data: {{synthetic: {{kind: logistic, rows: 3000, features: 6}}}}
{shards}
training: {{epochs: 4, batch_size: 64, optimizer: {{type: sgd, lr: 0.1}}}}
transport: {{type: tcp, join_timeout_ms: {join}{security}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1500}}
output: {{dir: {out}}}
"""


def config(tmp, out, shards="shards: {count: 4}", join=20000, name="config.yaml", security=""):
    return h.write_config(tmp, CONFIG.format(shards=shards, out=tmp / out, join=join,
                                             security=security), name)


def job_keys(tmp):
    """One key pair for the whole job (`disttrain keygen job`), as the config's transport keys:
    listening beyond loopback needs curve."""
    r = h.run("keygen", tmp / "job")
    assert r.code == 0, r
    key, pub = tmp / "job.key", tmp / "job.pub"
    return (f", security: curve, keys: {{secret: {key}, authorized: {pub}, server: {pub}}}",
            ["--key", str(key), "--server-key", str(pub)])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def coordinator(cfg, *args, env=None, listen="127.0.0.1:0"):
    """`run cfg --listen 127.0.0.1:0 ...` in the background; returns it and the endpoint it
    printed (a port picked by the system: no race for a free port). proc.head: the lines it
    printed up to there."""
    proc = subprocess.Popen([h.binary(), "run", str(cfg), "--listen", listen, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    lines = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"worker --connect (tcp://\S+)", line)
        if m:
            proc.head = "".join(lines)
            return proc, m.group(1)
    proc.kill()
    raise AssertionError("the coordinator printed no endpoint:\n" + "".join(lines))


def worker(endpoint, rank, *args):
    return subprocess.Popen([h.binary(), "worker", "--connect", endpoint, "--rank", str(rank),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def local_model(tmp, shards="shards: {count: 4}"):
    r = h.run("run", config(tmp, "local", shards, name="local.yaml"))
    assert r.code == 0, r
    return (tmp / "local" / "model.json").read_bytes()


def test_all_workers_join_from_outside(tmp):
    expected = local_model(tmp, "shards: {count: 2}")
    cfg = config(tmp, "joined", "shards: {count: 2}")
    proc, endpoint = coordinator(cfg, "--expect-workers", "2")
    workers = [worker(endpoint, r) for r in (1, 0)]
    out, err = h.finish(proc, 60)
    assert proc.returncode == 0, err
    for w in workers:
        wout, werr = h.finish(w, 20, "a worker")
        assert w.returncode == 0, werr
    assert (tmp / "joined" / "model.json").read_bytes() == expected


def test_some_workers_local_some_joined(tmp):
    # The ring topology too: joined workers open peer listeners that the others reach.
    for shards in ("shards: {count: 4}",
                   "shards: {count: 4}\naggregation: {topology: ring}"):
        expected = local_model(tmp, shards)
        cfg = config(tmp, "mixed", shards)
        proc, endpoint = coordinator(cfg, "--expect-workers", "2", "--json")
        workers = [worker(endpoint, r) for r in (2, 3)]
        out, err = h.finish(proc, 60)
        assert proc.returncode == 0, err
        for w in workers:
            h.finish(w, 20, "a worker")
            assert w.returncode == 0
        assert (tmp / "mixed" / "model.json").read_bytes() == expected, shards


def test_missing_rank_is_named(tmp):
    cfg = config(tmp, "missing", join=2000)
    proc, endpoint = coordinator(cfg, "--expect-workers", "2")
    w = worker(endpoint, 2)
    out, err = h.finish(proc, 30)
    assert proc.returncode == 3, err
    assert "worker 3 did not join" in err and "--rank R" in err, err
    h.finish(w, 20, "the worker that joined")
    assert w.returncode != 0


def test_duplicate_rank_and_other_config_are_refused_by_name(tmp):
    cfg = config(tmp, "dup")
    other = config(tmp, "dup", name="other.yaml")
    proc, endpoint = coordinator(cfg, "--expect-workers", "2")
    first = worker(endpoint, 2)
    time.sleep(0.5)
    second = worker(endpoint, 2)
    _, err2 = h.finish(second, 30, "the duplicate worker")
    assert second.returncode == 2, err2
    assert "rank 2 has already joined" in err2, err2
    wrong = worker(endpoint, 3, "--config", str(other), "--set", "training.epochs=5")
    _, err3 = h.finish(wrong, 30, "the worker with another config")
    assert wrong.returncode == 2, err3
    assert "config differs" in err3, err3
    # The same file: where the coordinator listens (--listen, --expect-workers) is not part of
    # the hash, so the worker needs no --set for it.
    right = worker(endpoint, 3, "--config", str(cfg))
    out, err = h.finish(proc, 60)
    assert proc.returncode == 0, err
    for w in (first, right):
        h.finish(w, 20, "a worker")
        assert w.returncode == 0


def test_worker_says_which_address_failed(tmp):
    r = h.run("worker", "--connect", f"tcp://127.0.0.1:{free_port()}", "--rank", "0",
              "--join-timeout-ms", "1000", timeout=30)
    assert r.code == 3 and "no setup from the coordinator at tcp://127.0.0.1:" in r.stderr, r
    # A name that does not resolve is said at once, and tried again until the join timeout
    # (a pod's DNS name may appear after its workers start).
    r = h.run("worker", "--connect", "tcp://no-such-host.invalid:5555", "--rank", "0",
              "--join-timeout-ms", "1500", timeout=30)
    assert r.code == 2, r
    assert r.stderr.count("cannot resolve host 'no-such-host.invalid'") == 2, r
    assert "trying again for 1500 ms" in r.stderr and "tried for 1500 ms" in r.stderr, r


CSV_CONFIG = """
version: 1
name: own-data
seed: 5
model: {{type: logistic_regression}}
data: {{path: {path}}}
shards: {{count: 3}}
training: {{epochs: 3, batch_size: 50, optimizer: {{type: sgd, lr: 0.1}}}}
transport: {{type: tcp, join_timeout_ms: 20000}}
output: {{dir: {out}}}
"""


def own_copy_run(cfg, copy):
    """A coordinator of cfg and worker 2 joined with `--data copy`: (coordinator's exit status,
    its stderr, the worker's, its stderr)."""
    proc, endpoint = coordinator(cfg, "--expect-workers", "1")
    w = worker(endpoint, 2, "--data", str(copy))
    _, err = h.finish(proc, 60)
    _, werr = h.finish(w, 20, "the worker")
    return proc.returncode, err, w.returncode, werr


def test_worker_reads_its_own_copy_of_the_data(tmp):
    r = h.run("gen", "logistic", "--rows", "900", "--features", "5", "--seed", "5")
    assert r.code == 0, r
    (tmp / "data.csv").write_text(r.stdout)
    # The same rows saved another way (CRLF line ends): other byte offsets, same data.
    (tmp / "copy.csv").write_bytes(r.stdout.replace("\n", "\r\n").encode())
    lines = r.stdout.splitlines()
    (tmp / "renamed.csv").write_text("\n".join([lines[0].replace("x2", "z2")] + lines[1:]) + "\n")
    (tmp / "short.csv").write_text("\n".join(lines[:-5]) + "\n")
    local = h.write_config(tmp, CSV_CONFIG.format(path=tmp / "data.csv", out=tmp / "local"), "l.yaml")
    assert h.run("run", local).code == 0
    cfg = h.write_config(tmp, CSV_CONFIG.format(path=tmp / "data.csv", out=tmp / "own"))
    code, err, wcode, _ = own_copy_run(cfg, tmp / "copy.csv")
    assert code == 0 and wcode == 0, err
    assert (tmp / "own" / "model.json").read_bytes() == (tmp / "local" / "model.json").read_bytes()

    for bad, words in (("renamed.csv", "column 3 is 'z2' here and 'x2'"),
                       ("short.csv", "it has 895 data rows, the coordinator's data has 900")):
        code, err, wcode, werr = own_copy_run(cfg, tmp / bad)
        assert code == 2 and words in err and "worker 2" in err, err
        assert wcode == 2 and words in werr, werr


LONG = """
version: 1
name: joined-restart
seed: 7
model: {{type: linear_regression}}
data: {{synthetic: {{kind: linear, rows: 8000, features: 10, noise: 0.1}}}}
shards: {{count: 4}}
training: {{epochs: 12, batch_size: 32, optimizer: {{type: sgd, lr: 0.01, momentum: 0.9}}}}
transport: {{type: tcp, join_timeout_ms: 20000}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 1000, on_worker_failure: {policy}}}
output: {{dir: {out}, log_every: {{steps: 500}}}}
"""


def test_lost_joined_worker_restart_and_continue(tmp):
    """A joined worker is SIGKILLed mid-run. restart: `run` cannot respawn it, so it waits for a
    new `disttrain worker --rank 3` (a launcher's restart), which takes the rank over: the model
    is the unfailed run's, bit for bit. continue: the run finishes without it. abort: the run
    ends, and the other joined worker is told why at once (not by its heartbeat timeout)."""
    ref = h.write_config(tmp, LONG.format(policy="abort", out=tmp / "ref"), "ref.yaml")
    assert h.run("run", ref).code == 0
    expected = (tmp / "ref" / "model.json").read_bytes()
    for policy in ("restart", "continue", "abort"):
        out = tmp / policy
        cfg = h.write_config(tmp, LONG.format(policy=policy, out=out), f"{policy}.yaml")
        proc, endpoint = coordinator(cfg, "--expect-workers", "2")
        joined = {r: worker(endpoint, r) for r in (2, 3)}
        folder = out / "checkpoint"
        h.wait_for(lambda: folder.exists() and any(p.name.startswith("step-") for p in folder.iterdir()),
                   60, "the first checkpoint")
        os.kill(joined[3].pid, signal.SIGKILL)
        joined[3].communicate()
        if policy == "restart":
            joined[3] = worker(endpoint, 3)
        out_text, err = h.finish(proc, 90)
        if policy == "abort":
            assert proc.returncode == 3, err
            _, err2 = h.finish(joined[2], 20, "worker 2")
            assert joined[2].returncode == 3, err2
            assert "the coordinator ended the run: worker 3 (pid" in err2, err2
            continue
        assert proc.returncode == 0, err
        # Not this process's child: found by its silence, or by its closed connection.
        assert "worker 3 (pid" in err and ("sent no heartbeat" in err or
                                           "cannot be reached" in err), err
        for r, w in joined.items():
            h.finish(w, 20, f"worker {r}")
        if policy == "restart":
            assert joined[3].returncode == 0
            assert (out / "model.json").read_bytes() == expected
        else:
            assert b'"action": "continue"' in (out / "summary.json").read_bytes() or \
                '"continue"' in (out / "summary.json").read_text()


def test_joined_worker_given_up_is_told_to_stop(tmp):
    """A joined worker that hangs (SIGSTOP) is given up under continue; `run` cannot kill it,
    so it tells it: once it wakes it reads that and stops, instead of training on."""
    out = tmp / "given-up"
    cfg = h.write_config(tmp, LONG.format(policy="continue", out=out), "given-up.yaml")
    proc, endpoint = coordinator(cfg, "--expect-workers", "1")
    w = worker(endpoint, 3)
    folder = out / "checkpoint"
    h.wait_for(lambda: folder.exists() and any(p.name.startswith("step-") for p in folder.iterdir()),
               60, "the first checkpoint")
    os.kill(w.pid, signal.SIGSTOP)
    seen = []
    while True:  # the run goes on without it; wake it while the coordinator still runs
        line = proc.stderr.readline()
        seen.append(line)
        assert line, "".join(seen)
        if "continuing with 3 workers" in line:
            break
    os.kill(w.pid, signal.SIGCONT)
    _, werr = h.finish(w, 20, "the worker given up")
    _, err = h.finish(proc, 90)
    assert proc.returncode == 0, "".join(seen) + err
    assert w.returncode == 3 and "gave this worker up" in werr, (w.returncode, werr)


def test_every_interface_advertised(tmp):
    """--listen 0.0.0.0:PORT binds every interface; the coordinator's other listeners and a
    joined worker's ring links are announced by the names given with --advertise."""
    shards = "shards: {count: 3}\naggregation: {topology: ring}"
    expected = local_model(tmp, shards)
    security, keys = job_keys(tmp)
    cfg = config(tmp, "advertised", shards, security=security)
    # Loopback addresses other than 127.0.0.1 reach this host too, and are nobody's default:
    # seen in the endpoints, they were advertised.
    proc, endpoint = coordinator(cfg, "--expect-workers", "2", "--advertise", "127.0.0.3",
                                 listen="0.0.0.0:0")
    port = endpoint.rsplit(":", 1)[1]
    assert endpoint.startswith("tcp://127.0.0.3:"), endpoint
    assert (f"bound to 0.0.0.0:{port}; other processes are told tcp://127.0.0.3:{port}"
            in proc.head), proc.head
    assert f"--rank R --key WORKER.key --server-key {tmp / 'job.pub'}" in proc.head, proc.head
    workers = [worker(endpoint, r, *keys, "--advertise", "127.0.0.2", "--log-level", "3")
               for r in (1, 2)]
    out, err = h.finish(proc, 60)
    assert proc.returncode == 0, err
    for w in workers:
        _, werr = h.finish(w, 20, "a worker")
        assert w.returncode == 0, werr
        assert "peer links listen on tcp://127.0.0.2:" in werr, werr
    assert (tmp / "advertised" / "model.json").read_bytes() == expected

    # A worker without keys may not open its peer links to the network.
    r = h.run("worker", "--connect", endpoint, "--rank", "1", "--advertise", "127.0.0.2")
    assert r.code == 2 and "needs transport.security curve" in r.stderr, r

    # Without --advertise: this host's address on its default route, or, on a host without one,
    # an error that says what to give.
    r = h.run("run", config(tmp, "auto", "shards: {count: 2}", security=security), "--listen",
              "0.0.0.0:0", timeout=60)
    if r.code == 0:
        told = re.search(r"other processes are told tcp://(\S+):\d+ \(this host's address on its "
                         r"default route", r.stderr)
        assert told and told.group(1) not in ("0.0.0.0", "*"), r.stderr
    else:
        assert r.code == 2 and "no default route" in r.stderr and "--advertise" in r.stderr, r


def launch(tmp, cfg, variables, size, extra=None, master="127.0.0.1"):
    """Starts `disttrain run cfg` once per rank with a launcher's variables set."""
    port = free_port()
    procs = []
    for rank in range(size):
        env = dict(os.environ, MASTER_ADDR=master, MASTER_PORT=str(port))
        env[variables[0]] = str(rank)
        env[variables[1]] = str(size)
        env.update(extra or {})
        procs.append(subprocess.Popen([h.binary(), "run", str(cfg)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True))
    results = []
    for p in procs:
        out, err = h.finish(p, 60, "a launched rank")
        results.append((p.returncode, out, err))
    return results


def test_launcher_environments(tmp):
    expected = local_model(tmp, "shards: {count: 2}")
    for variables in (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                      ("PMI_RANK", "PMI_SIZE"), ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS")):
        out = f"launched-{variables[0]}"
        cfg = config(tmp, out, shards="", name=f"{out}.yaml")  # shards.count from the launcher
        results = launch(tmp, cfg, variables, 3)
        for code, _, err in results:
            assert code == 0, f"{variables}: {err}"
        assert "trained" in results[0][1], results[0]
        assert results[1][1] == "" and results[2][1] == "", "workers print nothing on stdout"
        assert (tmp / out / "model.json").read_bytes() == expected, variables


def test_launcher_with_another_worker_count_exits_2(tmp):
    cfg = config(tmp, "wrong-count")  # shards.count: 4, but 3 processes
    for code, _, err in launch(tmp, cfg, ("RANK", "WORLD_SIZE"), 3):
        assert code == 2, err
        assert "the launcher started 3 processes" in err and "start 5 processes" in err, err


def test_launcher_master_addr_by_name(tmp):
    """MASTER_ADDR a host name, as in sbatch scripts: rank 0 listens on every interface and
    announces that name (binding the name itself is the 127.0.1.1 trap); that needs curve."""
    name = socket.gethostname()
    try:
        socket.getaddrinfo(name, None)
    except OSError:
        print(f"skip test_launcher_master_addr_by_name: this host's name {name} does not resolve")
        return
    if name == "localhost":
        print("skip test_launcher_master_addr_by_name: this host is named localhost")
        return
    expected = local_model(tmp, "shards: {count: 2}")
    security, _ = job_keys(tmp)
    cfg = config(tmp, "by-name", shards="", security=security, name="by-name.yaml")
    results = launch(tmp, cfg, ("RANK", "WORLD_SIZE"), 3, master=name)
    for code, _, err in results:
        assert code == 0, err
    assert re.search(rf"bound to 0\.0\.0\.0:\d+; other processes are told tcp://{re.escape(name)}:",
                     results[0][2]), results[0][2]
    assert (tmp / "by-name" / "model.json").read_bytes() == expected
    for code, _, err in launch(tmp, config(tmp, "open", shards="", name="open.yaml"),
                               ("RANK", "WORLD_SIZE"), 3, master=name):
        assert code == 2 and f"coordinator address {name}" in err and "curve" in err, err


def test_mpirun(tmp):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        print("skip test_mpirun: mpirun is not installed (Debian: apt-get install openmpi-bin)")
        return
    expected = local_model(tmp)
    cfg = config(tmp, "mpi", shards="")
    env = dict(os.environ, MASTER_PORT=str(free_port()), OMPI_MCA_plm="isolated",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.Popen([mpirun, "--oversubscribe", "-np", "5", "-x", "MASTER_PORT",
                             h.binary(), "run", str(cfg)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, err = h.finish(proc, 120, "mpirun")
    assert proc.returncode == 0, err
    assert (tmp / "mpi" / "model.json").read_bytes() == expected


if __name__ == "__main__":
    h.main([test_all_workers_join_from_outside, test_some_workers_local_some_joined,
            test_missing_rank_is_named, test_duplicate_rank_and_other_config_are_refused_by_name,
            test_worker_says_which_address_failed, test_worker_reads_its_own_copy_of_the_data,
            test_lost_joined_worker_restart_and_continue,
            test_joined_worker_given_up_is_told_to_stop, test_launcher_environments,
            test_launcher_with_another_worker_count_exits_2, test_every_interface_advertised,
            test_launcher_master_addr_by_name, test_mpirun])
