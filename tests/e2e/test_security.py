"""Security: transport.security curve encrypts and authenticates every link (coordinator,
heartbeats, parameter servers, ring and tensor peers) and trains the same model as a plain run;
workers joining over tcp with keys from `disttrain keygen` get in, a worker with an unknown key
does not; strangers on the coordinator's port (random bytes, a truncated header, huge size
fields, a wrong protocol version, a wrong job id, a plain client against CURVE) leave the run
intact: exit 0 and a model.json byte-identical to a clean run."""

import os
import random
import re
import socket
import stat
import struct
import subprocess
import threading
import time

import harness as h

CONFIG = """
version: 1
name: sec
seed: 5
model: {{type: {model}}}
data: {{synthetic: {{kind: {kind}, rows: {rows}, features: 6}}}}
shards: {{count: {shards}}}
aggregation: {aggregation}
parallelism: {{tensor: {tensor}}}
training: {{epochs: {epochs}, batch_size: 32, optimizer: {{type: sgd, lr: 0.1}}}}
transport: {{type: {transport}, security: {security}{keys}, join_timeout_ms: {join}}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 3000}}
output: {{dir: {out}}}
"""


def config(tmp, out, security="none", keys="", transport="ipc", aggregation="{mode: gradients}",
           tensor=1, shards=3, model="logistic_regression", kind="logistic", rows=1500, epochs=3,
           join=20000, name=None):
    text = CONFIG.format(model=model, kind=kind, rows=rows, shards=shards, aggregation=aggregation,
                         tensor=tensor, epochs=epochs, transport=transport, security=security,
                         keys=keys, join=join, out=tmp / out)
    return h.write_config(tmp, text, name or f"{out}.yaml")


def model_of(tmp, out):
    return (tmp / out / "model.json").read_bytes()


class Coordinator:
    """`disttrain -v run ...` in the background; a thread drains stderr (so a chatty run never
    blocks on a full pipe) and finds the endpoint it listens on."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([h.binary(), "-v", "run", *map(str, args)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.lines = []
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()
        found = h.wait_for(lambda: self._endpoint() or self.proc.poll() is not None, 20,
                           "the coordinator's endpoint")
        if found is True:
            raise AssertionError("the coordinator exited early:\n" + self.stderr())
        self.endpoint = found

    def _drain(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def _endpoint(self):
        for line in list(self.lines):
            m = re.search(r"listening on (tcp://[0-9.]+:\d+)", line)
            if m:
                return m.group(1)
        return None

    def stderr(self):
        return "".join(self.lines)

    def finish(self, timeout=60):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
            raise AssertionError("the coordinator did not stop in time:\n" + self.stderr())
        self.thread.join(5)
        return self.proc.returncode


def worker(endpoint, rank, *args, env=None):
    return subprocess.Popen([h.binary(), "worker", "--connect", endpoint, "--rank", str(rank),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)


def keygen(tmp, name):
    r = h.run("keygen", tmp / name)
    assert r.code == 0, r
    public = r.stdout.strip()
    assert len(public) == 40 and public in (tmp / f"{name}.pub").read_text(), r
    assert stat.S_IMODE((tmp / f"{name}.key").stat().st_mode) == 0o600
    return tmp / f"{name}.key", tmp / f"{name}.pub"


def test_curve_trains_the_same_model_in_every_mode(tmp):
    modes = {
        "star": {},
        "ring": {"aggregation": "{mode: gradients, topology: ring}"},
        "servers": {"aggregation": "{mode: gradients, servers: 2}", "transport": "tcp"},
        "tensor": {"tensor": 2, "shards": 2, "model": "linear_regression", "kind": "linear"},
        "parameters": {"aggregation": "{mode: parameters, parameters: {sync_every: {steps: 5}}}"},
    }
    for mode, extra in modes.items():
        models = []
        for security in ("none", "curve"):
            out = f"{mode}-{security}"
            r = h.run("run", config(tmp, out, security=security, **extra), timeout=60)
            assert r.code == 0, f"{mode} {security}: {r}"
            models.append(model_of(tmp, out))
        assert models[0] == models[1], f"{mode}: curve trained another model"
    # async is not reproducible run to run: it trains, encrypted, to a sane loss.
    r = h.run("run", config(tmp, "async-curve", security="curve",
                            aggregation="{mode: async, servers: 2}"), "--json", timeout=60)
    assert r.code == 0, r
    assert r.json()["final_metrics"]["accuracy"] >= 0.9, r


def test_workers_join_with_keys_from_keygen(tmp):
    coordinator_key, coordinator_pub = keygen(tmp, "coordinator")
    key_a, pub_a = keygen(tmp, "worker-a")
    key_b, pub_b = keygen(tmp, "worker-b")
    r = h.run("keygen", tmp / "worker-a")
    assert r.code == 2 and "exists" in r.stderr and "--force" in r.stderr, r
    (tmp / "workers.pub").write_text(pub_a.read_text() + pub_b.read_text())
    (tmp / "workers.pub").chmod(0o644)

    h.run("run", config(tmp, "plain", transport="tcp", shards=4))
    expected = model_of(tmp, "plain")
    keys = f", keys: {{secret: {coordinator_key}, authorized: {tmp / 'workers.pub'}}}"
    cfg = config(tmp, "joined", security="curve", keys=keys, transport="tcp", shards=4)
    c = Coordinator(cfg, "--listen", "127.0.0.1:0", "--expect-workers", "2")
    # One worker with key files, one with its keys in the environment.
    by_files = worker(c.endpoint, 2, "--key", key_a, "--server-key", coordinator_pub)
    secret_b = re.search(r"secret-key: (\S+)", key_b.read_text()).group(1)
    server = coordinator_pub.read_text().split("\n")[1].split()[0]
    by_env = worker(c.endpoint, 3, env=dict(os.environ, DISTTRAIN_SECRET_KEY=secret_b,
                                            DISTTRAIN_SERVER_KEY=server))
    assert c.finish() == 0, c.stderr()
    for w in (by_files, by_env):
        _, err = h.finish(w, 20, "a worker")
        assert w.returncode == 0, err
    assert model_of(tmp, "joined") == expected


def test_unknown_key_cannot_join(tmp):
    coordinator_key, coordinator_pub = keygen(tmp, "coordinator")
    _, pub_a = keygen(tmp, "worker-a")
    stranger_key, stranger_pub = keygen(tmp, "stranger")
    keys = f", keys: {{secret: {coordinator_key}, authorized: {pub_a}}}"
    cfg = config(tmp, "refused", security="curve", keys=keys, transport="tcp", join=3000)
    c = Coordinator(cfg, "--listen", "127.0.0.1:0", "--expect-workers", "1")
    # Refused workers learn it from the failed handshake, long before their join timeout.
    w = worker(c.endpoint, 2, "--key", stranger_key, "--server-key", coordinator_pub,
               "--join-timeout-ms", "60000")
    # A plain worker (no keys) knocks too, and one that was given another coordinator's key.
    plain = worker(c.endpoint, 2, "--join-timeout-ms", "60000")
    wrong_server = worker(c.endpoint, 2, "--key", stranger_key, "--server-key", stranger_pub,
                          "--join-timeout-ms", "60000")
    _, werr = h.finish(w, 20, "the refused worker")
    assert w.returncode == 2, werr
    assert "refused this worker's connection: its CURVE key was refused" in werr, werr
    # Without keys, or with another server key, the handshake is cut off: the worker sees the
    # mismatch itself, or the coordinator hanging up on it again and again.
    _, perr = h.finish(plain, 20, "the plain worker")
    assert plain.returncode == 2 and ("the two ends use different security" in perr or
                                      "closed the connection during the handshake" in perr), perr
    assert "give this worker --key and --server-key" in perr, perr
    _, serr = h.finish(wrong_server, 20, "the worker with a wrong server key")
    assert wrong_server.returncode == 2, serr
    assert "closed the connection during the handshake 3 times" in serr, serr
    assert "Check that --server-key" in serr, serr
    assert c.finish() == 3, c.stderr()
    err = c.stderr()
    assert "worker 2 did not join" in err, err
    stranger = stranger_pub.read_text().split("\n")[1].split()[0]
    assert err.count(f"its CURVE key {stranger} is not authorized") == 1, err
    # The coordinator logs each kind of failed handshake once, however often it came. A plain
    # libzmq client hangs up as soon as it reads the CURVE greeting, so the coordinator sees
    # either the mismatch or the hang-up, depending on who reads first.
    mismatch = err.count("the two ends use different security")
    hung_up = err.count("the other end closed the connection during the handshake")
    assert mismatch <= 1 and hung_up <= 1 and mismatch + hung_up >= 1, err
    assert err.count("its CURVE handshake could not be decrypted") == 1, err


def test_launcher_ranks_share_one_job_key(tmp):
    """Under a launcher every rank reads the same config: one key pair for the job, given as the
    coordinator's secret, the admitted key and the server key at once."""
    job_key, job_pub = keygen(tmp, "job")
    keys = f", keys: {{secret: {job_key}, authorized: {job_pub}, server: {job_pub}}}"
    h.run("run", config(tmp, "solo", transport="tcp"))
    cfg = config(tmp, "launched", security="curve", keys=keys, transport="tcp")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([h.binary(), "run", str(cfg)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True,
                              env=dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                                       RANK=str(rank), WORLD_SIZE="4"))
             for rank in range(4)]
    for p in procs:
        _, err = h.finish(p, 60, "a launched rank")
        assert p.returncode == 0, err
    assert model_of(tmp, "launched") == model_of(tmp, "solo")


def test_refusals_say_how(tmp):
    r = h.run("run", config(tmp, "open", transport="tcp"), "--listen", "0.0.0.0:0")
    assert r.code == 2 and "transport.security: curve" in r.stderr, r
    assert "disttrain keygen" in r.stderr, r
    key, _ = keygen(tmp, "c")
    key.chmod(0o644)
    r = h.run("run", config(tmp, "leaky", security="curve", keys=f", keys: {{secret: {key}}}",
                            transport="tcp"))
    assert r.code == 2 and "can be read by others (mode 644)" in r.stderr, r
    assert not (tmp / "leaky").exists(), "a refused run leaves no run folder"
    r = h.run("run", config(tmp, "lonely", security="curve", transport="tcp"),
              "--listen", "127.0.0.1:0", "--expect-workers", "1")
    assert r.code == 2 and "transport.keys.secret" in r.stderr, r


# ---- strangers on the port: a hand-made ZMTP 3.0 client (NULL mechanism, as a DEALER)

def header(version=3, type_=7, job=0x1234, rank=0, step=0, size=0):
    """The 40-byte disttrain header (transports/wire.hpp), little-endian."""
    return struct.pack("<4sHHQIIQQ", b"DTRN", version, type_, job, rank, 0, step, size)


def zmtp_frame(body, more=False):
    flags = 1 if more else 0
    if len(body) > 255:
        return bytes([flags | 2]) + struct.pack(">Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def greeting():
    return b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + bytes(32)


def ready(identity):
    def prop(name, value):
        return bytes([len(name)]) + name + struct.pack(">I", len(value)) + value
    body = b"\x05READY" + prop(b"Socket-Type", b"DEALER") + prop(b"Identity", identity)
    return bytes([4, len(body)]) + body


def read_some(sock, n, timeout=2.0):
    """Up to n bytes, or fewer once the peer closes or `timeout` passes."""
    sock.settimeout(timeout)
    data = b""
    try:
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionError):
        pass
    return data


def zmtp_client(endpoint, identity):
    """Connects and completes the NULL handshake; returns the socket, or None when the server
    hangs up without its READY (it speaks CURVE)."""
    host, port = endpoint[len("tcp://"):].rsplit(":", 1)
    try:
        sock = socket.create_connection((host, int(port)), timeout=5)
    except ConnectionError:
        return None  # the run is over
    try:
        sock.sendall(greeting())
        read_some(sock, 64)
        sock.sendall(ready(identity))  # whatever mechanism the server named: insist on NULL
        answer = read_some(sock, 2)
        if len(answer) == 2 and answer[0] == 4 and read_some(sock, answer[1]).startswith(b"\x05READY"):
            return sock
    except ConnectionError:
        pass
    sock.close()
    return None


def raw_send(endpoint, data):
    host, port = endpoint[len("tcp://"):].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(data)
            read_some(sock, 1, 0.2)
    except ConnectionError:
        pass  # the coordinator hung up on us (or is gone: the run is over)


def strangers(endpoint, rounds, done):
    """Every kind of garbage, `rounds` times (or until `done`), each on a connection of its own."""
    noise = random.Random(7)
    for _ in range(rounds):
        if done():
            return
        raw_send(endpoint, b"\xff" + noise.randbytes(4095))
        raw_send(endpoint, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        for identity, frames in (
                (b"evil-trunc", [zmtp_frame(header()[:12])]),
                (b"evil-size", [zmtp_frame(header(size=1 << 62))]),
                (b"evil-version", [zmtp_frame(header(version=7))]),
                (b"evil-job", [zmtp_frame(header(size=16), more=True), zmtp_frame(bytes(16))]),
                (b"evil-hello", [zmtp_frame(header(type_=1, job=0, size=5), more=True),
                                 zmtp_frame(b"junk!")]),
                # A ZMTP frame whose size field claims 2^62 bytes: cut off before allocation.
                (b"evil-frame", [b"\x02" + struct.pack(">Q", 1 << 62) + bytes(64)])):
            sock = zmtp_client(endpoint, identity)
            if sock is None:
                continue
            try:
                for f in frames:
                    sock.sendall(f)
                read_some(sock, 1, 0.05)
            except ConnectionError:
                pass
            sock.close()
        time.sleep(0.2)


def attacked(tmp, out, security="none", keys=""):
    """A run over tcp attacked by strangers (and, with curve, a plain client): they strike while
    the coordinator waits for its last worker, which joins only after a first full round, and
    go on while it trains. Returns the coordinator's log; the model must equal a clean run's."""
    cfg = config(tmp, out, security=security, keys=keys, transport="tcp", epochs=4, rows=3000)
    clean = h.run("run", cfg, "--set", f"output.dir={tmp / (out + '-clean')}")
    assert clean.code == 0, clean
    c = Coordinator(cfg, "--listen", "127.0.0.1:0", "--expect-workers", "1")
    if security == "curve":
        # The handshake itself fails: no READY, so no gradient can follow.
        assert zmtp_client(c.endpoint, b"w0") is None
    strangers(c.endpoint, 1, lambda: False)
    args = ["--key", tmp / "worker.key", "--server-key", tmp / "coordinator.pub"] if keys else []
    w = worker(c.endpoint, 2, *args)
    strangers(c.endpoint, 20, lambda: c.proc.poll() is not None)
    assert c.finish() == 0, c.stderr()
    _, werr = h.finish(w, 20, "the joined worker")
    assert w.returncode == 0, werr
    assert model_of(tmp, out) == model_of(tmp, out + "-clean"), f"{out}: another model"
    return c.stderr()


def test_strangers_leave_the_run_intact(tmp):
    err = attacked(tmp, "attacked")
    # Each misbehaving peer is logged once, however often it misbehaved: by the transport for
    # malformed frames; by the join wait and then by the training session for a wrong job id.
    for identity in ("evil-trunc", "evil-size", "evil-version"):
        assert err.count(f"'{identity}'") == 1, f"{identity}:\n{err}"
    assert 1 <= err.count("'evil-job'") <= 2, err
    assert "header frame is 12 bytes" in err and "protocol version 7" in err, err
    assert "exceeds" in err and "belongs to job 0000000000001234" in err, err


def test_other_protocol_version_is_told(tmp):
    """A worker of another disttrain release (another protocol version) is dropped, and told the
    coordinator's version once, so that its build can name both."""
    cfg = config(tmp, "versions", transport="tcp", join=4000)
    c = Coordinator(cfg, "--listen", "127.0.0.1:0", "--expect-workers", "1")
    sock = zmtp_client(c.endpoint, b"w-old")
    assert sock is not None
    try:
        sock.sendall(zmtp_frame(header(version=4, type_=1, job=0)))
        head = read_some(sock, 2, 5.0)
        assert len(head) == 2 and head[1] == 40, head
        notice = read_some(sock, 40, 5.0)
        assert notice[:4] == b"DTRN" and struct.unpack("<H", notice[4:6])[0] == 3, notice
        sock.sendall(zmtp_frame(header(version=4, type_=1, job=0)))
        assert read_some(sock, 1, 0.5) == b"", "a second notice"
    finally:
        sock.close()
    assert c.finish() == 3, c.stderr()
    assert c.stderr().count("protocol version 4, this build speaks 3") == 1, c.stderr()


def test_plain_client_cannot_reach_a_curve_coordinator(tmp):
    coordinator_key, _ = keygen(tmp, "coordinator")
    _, worker_pub = keygen(tmp, "worker")
    err = attacked(tmp, "curve-attacked", "curve",
                   f", keys: {{secret: {coordinator_key}, authorized: {worker_pub}}}")
    assert "evil" not in err, "nothing of the strangers reached the coordinator"
    assert err.count("failed its handshake and was dropped: the two ends use different "
                     "security") == 1, err


if __name__ == "__main__":
    h.main([test_curve_trains_the_same_model_in_every_mode, test_workers_join_with_keys_from_keygen,
            test_unknown_key_cannot_join, test_launcher_ranks_share_one_job_key,
            test_refusals_say_how, test_other_protocol_version_is_told,
            test_strangers_leave_the_run_intact, test_plain_client_cannot_reach_a_curve_coordinator])
