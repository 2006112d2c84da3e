"""Several hosts on one machine, for the end-to-end tests: network namespaces made by the test
(one for the coordinator's host, one per worker host) joined by veth links to a bridge in the
coordinator's namespace, on a 10.231.N.0/24 subnet of their own. Needs root (CAP_NET_ADMIN and
CAP_SYS_ADMIN) and iproute2; `unavailable()` says why not when they are missing.

Every link lives inside the test's namespaces (the veth pairs are made in them, never in the
host's own namespace), so deleting the namespaces deletes everything, and two test runs sharing
a kernel cannot see each other's addresses. Namespace names carry the test's pid and a random
tag. Teardown runs on any exit of the `with` block (a failed assertion, Ctrl-C, SIGTERM) and
checks that nothing is left; namespaces of ours left by a run killed outright (SIGKILL: no
teardown) are removed by the next run once they are an hour old."""

import os
import random
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import harness as h

PREFIX = "dthosts-"
NETNS_DIR = Path("/run/netns")
STALE_SECONDS = 3600


def ip(*args, ns=None, check=True):
    """`ip [-n ns] args`; a failure raises with iproute2's own message."""
    cmd = ["ip"] + (["-n", ns] if ns else []) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}): {r.stderr.strip()}")
    return r


def unavailable():
    """Why this machine cannot make network namespaces, or None when it can."""
    if os.geteuid() != 0:
        return "not root (network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    if shutil.which("ip") is None:
        return "no `ip` command (Debian: apt-get install iproute2)"
    probe = f"{PREFIX}probe-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    r = ip("netns", "add", probe, check=False)
    try:
        if r.returncode != 0:
            return f"`ip netns add` failed (a container without CAP_NET_ADMIN?): {r.stderr.strip()}"
        # What the hosts need inside a namespace; entering one remounts / (not in a chroot).
        r = ip("-n", probe, "link", "set", "lo", "up", check=False)
        if r.returncode != 0:
            return f"cannot enter a network namespace (a chroot?): {r.stderr.strip()}"
        r = subprocess.run(["ip", "netns", "exec", probe, "unshare", "--uts", "true"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return f"cannot run a process in a network namespace: {r.stderr.strip()}"
    finally:
        ip("netns", "del", probe, check=False)
    return None


def ours():
    """The namespaces of this module that exist now, by name."""
    r = ip("netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines()
            if line.strip() and line.split()[0].startswith(PREFIX)]


def pids_in(ns):
    r = ip("netns", "pids", ns, check=False)
    return [int(p) for p in r.stdout.split()]


def remove(ns, within=10.0):
    """Kills whatever runs in `ns` and deletes it (a namespace outlives its name while a
    process is still in it, so the processes go first)."""
    deadline = time.monotonic() + within
    killed = set()
    while True:
        pids = pids_in(ns)
        if not pids or time.monotonic() > deadline:
            break
        killed.update(pids)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    ip("netns", "del", ns, check=False)
    return killed


def remove_stale():
    """Namespaces of ours over an hour old are from a run that was killed outright (a test
    run takes a minute): removed, so that they do not pile up."""
    for ns in ours():
        try:
            age = time.time() - (NETNS_DIR / ns).stat().st_mtime
        except OSError:
            continue
        if age > STALE_SECONDS:
            print(f"removing the stale namespace {ns} ({age / 3600:.1f} h old)", flush=True)
            remove(ns)


def _free_subnet():
    """A 10.231.N.0/24 that no interface of this host's namespace uses (the test's own
    namespaces are isolated anyway; this keeps its addresses apart from the host's too)."""
    used = ip("-o", "-4", "addr", "show", check=False).stdout
    octets = list(range(1, 255))
    random.SystemRandom().shuffle(octets)
    for n in octets:
        if f" 10.231.{n}." not in used:
            return f"10.231.{n}"
    raise RuntimeError("no free 10.231.N.0/24 subnet on this host")


class Hosts:
    """A coordinator host and `workers` worker hosts (plus `spares`, hosts that take no part
    until used), each a network namespace with an `eth0` into a bridge on the coordinator's.
    Use as `with Hosts(2, logs) as net:`; `net.addr[ns]` is a host's address."""

    def __init__(self, workers, logs, spares=0):
        tag = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.coord = f"{PREFIX}{tag}-c"
        self.workers = [f"{PREFIX}{tag}-w{i}" for i in range(workers + spares)]
        self.spares = self.workers[workers:]
        self.workers = self.workers[:workers]
        self.logs = Path(logs)
        self.procs = []
        self.links = {}
        self.made = []
        self.killed = set()  # what teardown found still running in the namespaces
        self.hostname = {self.coord: "head"}
        self.hostname.update({ns: f"node{i}" for i, ns in enumerate(self.workers + self.spares)})

    def all(self):
        return [self.coord, *self.workers, *self.spares]

    def __enter__(self):
        remove_stale()
        # SIGTERM (a CI runner stopping the job) tears down like Ctrl-C does.
        self._term = signal.signal(signal.SIGTERM, _interrupt)
        try:
            self._build()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _build(self):
        net = _free_subnet()
        self.addr = {self.coord: f"{net}.1"}
        for ns in self.all():
            ip("netns", "add", ns)
            self.made.append(ns)
            ip("link", "set", "lo", "up", ns=ns)
        ip("link", "add", "br0", "type", "bridge", ns=self.coord)
        ip("addr", "add", f"{net}.1/24", "dev", "br0", ns=self.coord)
        ip("link", "set", "br0", "up", ns=self.coord)
        for i, ns in enumerate(self.all()[1:]):
            # Made inside the coordinator's namespace with its peer put straight into the
            # worker's: no interface ever appears in the host's namespace.
            port = f"veth{i}"
            ip("link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns,
               ns=self.coord)
            ip("link", "set", port, "master", "br0", ns=self.coord)
            ip("link", "set", port, "up", ns=self.coord)
            self.addr[ns] = f"{net}.{i + 2}"
            ip("addr", "add", f"{self.addr[ns]}/24", "dev", "eth0", ns=ns)
            ip("link", "set", "eth0", "up", ns=ns)
            self.links[ns] = port

    def cut(self, ns):
        """Pulls the host's cable: its bridge port goes down, so its eth0 loses carrier too.
        Packets either way go nowhere and nothing is closed: the two sides only find out by
        silence, as when a switch port or a host's network fails."""
        ip("link", "set", self.links[ns], "down", ns=self.coord)

    def heal(self, ns):
        """Plugs the cable back in (after cut): what TCP had in flight is retransmitted."""
        ip("link", "set", self.links[ns], "up", ns=self.coord)

    def run(self, ns, name, *args):
        """`disttrain args` on host `ns`, its stdout and stderr in logs/name.out|.err."""
        out = open(self.logs / f"{name}.out", "w")
        err = open(self.logs / f"{name}.err", "w")
        # Each host has its own name too (a UTS namespace), so logs say which host is which.
        # `ip netns exec`, `unshare` and the shell exec one another: the pid is disttrain's.
        proc = subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                                 'hostname "$0" && exec "$@"', self.hostname[ns], h.binary(),
                                 *map(str, args)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
        out.close()
        err.close()
        proc.name = name
        self.procs.append(proc)
        return proc

    def stderr(self, proc):
        return (self.logs / f"{proc.name}.err").read_text(errors="replace")

    def wait(self, proc, timeout, what=None):
        """The exit code of `proc`; fails (with its log) if it does not end within `timeout`."""
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{what or proc.name} did not stop within {timeout} s:\n"
                                 + self.stderr(proc)[-3000:]) from None

    def __exit__(self, *exc):
        # A second Ctrl-C or SIGTERM does not stop the teardown half-way (it is bounded).
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            for proc in self.procs:
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
            for proc in self.procs:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass  # its namespace stays: reported below
            for ns in self.made:
                self.killed.update(remove(ns))
        finally:
            signal.signal(signal.SIGINT, interrupt)
            signal.signal(signal.SIGTERM, self._term)
        left = [ns for ns in ours() if ns in self.made]
        assert not left, f"namespaces left behind: {left} (ip netns pids NAME: what still runs there)"


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")
