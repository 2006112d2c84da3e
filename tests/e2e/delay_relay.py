"""A TCP relay that delays what it carries, for the end-to-end tests: a slow network link
without the kernel's sch_netem (`tc qdisc ... netem delay` needs it, and not every kernel has
it; this needs nothing but loopback).

It listens on `listen_host` at each of the given ports and relays every connection to the same
port on `target_host`. Each chunk of bytes read, either way, is held for a delay drawn
uniformly from [low, high] ms before it is written on; a chunk is never written before the one
read before it on the same connection and direction, so the bytes keep their order (what TCP
promises) while the delay varies (jitter). `set_delay` changes the delay of what is read from
then on: a link that becomes slow mid-run. When one side closes, what is held for the other is
written first, then its connection is closed too.

Runs an asyncio loop on a thread of its own; use as `with DelayRelay(...) as relay:`. Every port
is bound before the constructor returns, so a process told the relay's address can connect at
once. `relay.chunks[port]` counts the chunks carried per port (both ways), so a test can show
that its traffic went through the relay."""

import asyncio
import random
import threading
import time


class DelayRelay:
    def __init__(self, listen_host, target_host, ports, delay_ms=(20, 50), seed=1):
        self.listen_host = listen_host
        self.target_host = target_host
        self.ports = list(ports)
        self.chunks = {port: 0 for port in self.ports}
        self.connections = {port: 0 for port in self.ports}
        self._delay = tuple(delay_ms)
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._servers = []
        self._ready = threading.Event()
        self._error = None
        self._thread = threading.Thread(target=self._run, name="delay-relay", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the delay relay did not start within 10 s")
        if self._error:
            raise self._error

    def set_delay(self, low_ms, high_ms=None):
        """The delay of every chunk read from now on, in ms (one way)."""
        with self._lock:
            self._delay = (low_ms, low_ms if high_ms is None else high_ms)

    def _draw(self):
        with self._lock:
            low, high = self._delay
            return self._random.uniform(low, high) / 1000.0

    def _run(self):
        asyncio.set_event_loop(self._loop)
        try:
            for port in self.ports:
                server = self._loop.run_until_complete(asyncio.start_server(
                    lambda r, w, port=port: self._accept(r, w, port), self.listen_host, port))
                self._servers.append(server)
        except OSError as e:
            self._error = RuntimeError(f"the delay relay cannot listen on "
                                       f"{self.listen_host}: {e}")
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()

    async def _accept(self, client_reader, client_writer, port):
        try:
            target_reader, target_writer = await asyncio.open_connection(self.target_host, port)
        except OSError:
            client_writer.close()
            return
        self.connections[port] += 1
        await asyncio.gather(self._carry(client_reader, target_writer, port),
                             self._carry(target_reader, client_writer, port))

    async def _carry(self, reader, writer, port):
        """One direction of one connection: a reader that stamps each chunk with the time it may
        leave, and a writer that sends it then, in order."""
        queue = asyncio.Queue()

        async def read():
            last = 0.0
            try:
                while True:
                    data = await reader.read(65536)
                    if not data:
                        break
                    last = max(last, time.monotonic() + self._draw())
                    await queue.put((last, data))
            except (OSError, asyncio.CancelledError):
                pass
            await queue.put((last, None))

        async def write():
            try:
                while True:
                    due, data = await queue.get()
                    wait = due - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    if data is None:
                        break
                    writer.write(data)
                    self.chunks[port] += 1
                    await writer.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                writer.close()

        await asyncio.gather(read(), write())

    def close(self):
        async def stop():
            for server in self._servers:
                server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
