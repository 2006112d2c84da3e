"""A flood of strangers on a run's tcp ports (issue 14, fault 5). Every connection is a new peer
(ZeroMQ makes up an identity for each), so a log "once per peer" wrote one line per connection,
and with stderr a pipe that nobody read the coordinator blocked on its 64 KiB: it stopped
answering, and the run hung or its workers 'lost the coordinator'. A flood is now logged in
bounded space (the first few peers named, then counts at most once per 10 s per socket) and no
thread waits on stderr (base/log.hpp): the run finishes with exit 0 and the model of a run
without the flood."""

import os
import re
import socket
import subprocess
import threading
from pathlib import Path

import harness as h
from test_remote import coordinator
from test_security import greeting, header, raw_send, read_some, ready, zmtp_frame

CONFIG = """
version: 1
name: flood
seed: 3
model: {{type: logistic_regression}}
data: {{synthetic: {{kind: logistic, rows: 3000, features: 6}}}}
shards: {{count: 3}}
training: {{epochs: {epochs}, batch_size: 32, optimizer: {{type: sgd, lr: 0.1}}}}
transport: {{type: tcp, join_timeout_ms: 60000}}
fault_tolerance: {{heartbeat_ms: 100, worker_timeout_ms: 3000}}
output: {{dir: {out}}}
"""

NAMED = 8  # peers named one by one per socket (base/drop_log.hpp: kNamedPeers)
SUMMARY = re.compile(r"dropped (\d+) more malformed messages? from (\d+) peers? on (\S+) in the "
                     r"last (\d+) s")


def stranger(host, port):
    """One connection under a fresh identity (an empty one: ZeroMQ makes one up), the NULL
    handshake, one malformed message (a header cut to 12 bytes), gone. True once it was sent."""
    try:
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(greeting())
            read_some(sock, 64)
            sock.sendall(ready(b""))
            answer = read_some(sock, 2)
            if len(answer) != 2 or answer[0] != 4:
                return False
            read_some(sock, answer[1])
            sock.sendall(zmtp_frame(header()[:12]))
            return True
    except OSError:
        return False


def flood(ports, count, stop=lambda: False, threads=6):
    """`count` strangers spread over `ports` from a few threads (or fewer, once `stop`); how
    many sent their message."""
    sent = [0]
    lock = threading.Lock()

    def one(k):
        for i in range(k, count, threads):
            if stop():
                return
            if i % 10 == 9:  # plain garbage too: a handshake that fails (logged once per kind)
                raw_send(f"tcp://127.0.0.1:{ports[i % len(ports)]}", b"\xff" + bytes(range(200)))
            if stranger("127.0.0.1", ports[i % len(ports)]):
                with lock:
                    sent[0] += 1
    pool = [threading.Thread(target=one, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sent[0]


def listening_ports(pid):
    """The tcp ports `pid` listens on (its sockets' inodes looked up in /proc/PID/net/tcp)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().name
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = []
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
            ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def test_a_flood_of_strangers_is_counted_not_listed(tmp):
    """1500 strangers while the coordinator waits for its last worker (it reads and drops every
    one of them before that worker joins), then up to 1500 more on every port it listens on
    (its own, the heartbeats', the parameter server's) while the run trains. Nobody reads the
    run's stderr until it has exited: at one line per stranger, 64 KiB of pipe is full after a
    few hundred."""
    cfg = h.write_config(tmp, CONFIG.format(epochs=30, out=tmp / "flooded"))
    clean = h.run("run", cfg, "--set", f"output.dir={tmp / 'clean'}")
    assert clean.code == 0, clean
    proc, endpoint = coordinator(cfg, "--expect-workers", "1")  # stops reading its stderr here
    host, port = endpoint[len("tcp://"):].rsplit(":", 1)
    assert host == "127.0.0.1", endpoint
    before = flood([int(port)], 1500)
    assert before > 1000, f"only {before} strangers got their message through"
    log = tmp / "worker2.log"
    with open(log, "w") as werr:
        w = subprocess.Popen([h.binary(), "worker", "--connect", endpoint, "--rank", "2"],
                             stdout=subprocess.DEVNULL, stderr=werr, start_new_session=True)
    ports = listening_ports(proc.pid)
    assert len(ports) >= 2, ports  # the coordinator's and the heartbeats' at least
    during = flood(ports, 1500, stop=lambda: proc.poll() is not None)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        raise AssertionError("the flooded run did not finish (blocked on its stderr?):\n"
                             + proc.stderr.read()[-3000:])
    err = proc.head + proc.stderr.read()
    h.finish(w, 30, "the joined worker")
    assert proc.returncode == 0, err
    assert w.returncode == 0, log.read_text()
    assert (tmp / "flooded" / "model.json").read_bytes() == \
        (tmp / "clean" / "model.json").read_bytes(), "the flood changed the model"

    named = [l for l in err.splitlines() if "dropped a malformed message from" in l]
    summaries = [SUMMARY.search(l) for l in err.splitlines() if "more malformed message" in l]
    assert all(summaries), err
    # Per socket: at most NAMED peers named, then at most one summary per 10 s (and the last).
    assert len(named) <= NAMED * len(ports), err
    for where in {m.group(3) for m in summaries}:
        seconds = sum(int(m.group(4)) for m in summaries if m.group(3) == where)
        lines = sum(1 for m in summaries if m.group(3) == where)
        assert lines <= seconds // 10 + 1, (where, err)
    assert len(err) < 32 * 1024, f"{len(err)} bytes of log"
    # Every stranger of the first wave was read and dropped while the coordinator waited; some
    # of the second wave may still have been on their way when the run ended.
    reported = len(named) + sum(int(m.group(1)) for m in summaries)
    assert before <= reported <= before + during, (before, during, reported, err)
    peers = len(named) + sum(int(m.group(2)) for m in summaries)
    assert before <= peers <= reported, (peers, err)


if __name__ == "__main__":
    h.main([test_a_flood_of_strangers_is_counted_not_listed])
