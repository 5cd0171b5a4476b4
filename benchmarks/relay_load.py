"""The load of ``bench_relay.py --streams``, on the core not measured: the upstream (a
raw-asyncio OpenAI-style SSE server, 50 tokens/s per stream, each token's text carrying its
write time) and the N raw-asyncio WebSocket clients (see ``relay_scale.py``)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import random
import time
from multiprocessing.connection import Connection

_CORES = sorted(os.sched_getaffinity(0))
MEASURED_CORE = {_CORES[0]}
OTHER_CORE = {_CORES[-1]}
WORDS = 100
"""Tokens per answer (then finish, usage, [DONE]): 2 s at 50 tokens/s."""


def pin(cores: set[int]) -> None:
    """Run this process on ``cores`` (and at ``STREAMCITE_BENCH_NICE``, when set: ``--nice``)."""
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, cores)
    nice = os.environ.get("STREAMCITE_BENCH_NICE")
    if nice:
        # With autogroup scheduling (Linux's default for sessions) a nice value weighs
        # only within the process's session: a session of its own, at that nice.
        with contextlib.suppress(OSError):
            os.setsid()
        with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as f:
            f.write(nice)
        with contextlib.suppress(OSError):  # lowering it needs the privilege
            os.setpriority(os.PRIO_PROCESS, 0, int(nice))


def schedstat(pid: int) -> tuple[float, float]:
    """``(on-CPU seconds, seconds runnable but waiting for a CPU)`` of ``pid``'s main thread
    (``/proc/<pid>/schedstat``): the wait is the time the scheduler gave to others — other
    jobs on the machine, or the other process on the same core."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            run_ns, wait_ns, _ = f.read().split()
    except (OSError, ValueError):
        return (0.0, 0.0)
    return (int(run_ns) / 1e9, int(wait_ns) / 1e9)


class LagProbe:
    """How late this process's event loop runs a timer (every ``PERIOD`` s): the delay any
    socket read or write in it waits on top of its own work. Kept for a window only."""

    PERIOD = 0.005

    def __init__(self) -> None:
        self.start = float("inf")
        self.end = float("inf")
        self.lags: list[float] = []
        self.loop = asyncio.get_running_loop()
        self.due = self.loop.time() + self.PERIOD
        self.loop.call_at(self.due, self._tick)

    def _tick(self) -> None:
        now = self.loop.time()
        t = time.perf_counter()
        if self.start <= t < self.end:
            self.lags.append(now - self.due)
        self.due = now + self.PERIOD
        self.loop.call_at(self.due, self._tick)

    def summary(self) -> dict[str, float]:
        lags = sorted(1000 * x for x in self.lags)
        if not lags:
            return {"loop_lag_p50_ms": float("nan"), "loop_lag_p99_ms": float("nan")}
        return {
            "loop_lag_p50_ms": round(lags[len(lags) // 2], 2),
            "loop_lag_p99_ms": round(lags[min(len(lags) - 1, round(0.99 * len(lags)))], 2),
        }


# -- the upstream (core 1) ------------------------------------------------------------------

_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


_PREFIX = b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","model":"bench","choices":[{"index":0,'
_ROLE = _chunk(_PREFIX + b'"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n')
_FINISH = _chunk(_PREFIX + b'"delta":{},"finish_reason":"stop"}]}\n\n')
_USAGE = _chunk(
    b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","model":"bench","choices":[],'
    b'"usage":{"prompt_tokens":12,"completion_tokens":100,"total_tokens":112}}\n\n'
)
_DONE = _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"


class _Upstream(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: each POST gets a chunked SSE answer of
    ``WORDS`` tokens, one every ``delay`` seconds, each text ``" @<perf_counter>@"``."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.buf = b""
        self.transport: asyncio.Transport | None = None
        self.handle: asyncio.TimerHandle | None = None
        self.left = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buf[:end].lower()
        length = 0
        i = head.find(b"content-length:")
        if i >= 0:
            length = int(head[i + 15 :].split(b"\r\n", 1)[0])
        if len(self.buf) < end + 4 + length:
            return
        self.buf = self.buf[end + 4 + length :]
        assert self.transport is not None
        self.transport.write(_HEAD + _ROLE)
        self.left = WORDS
        loop = asyncio.get_running_loop()
        self.handle = loop.call_at(loop.time() + self.delay, self.tick)

    def tick(self) -> None:
        t = self.transport
        if t is None or t.is_closing():
            return
        loop = asyncio.get_running_loop()
        self.left -= 1
        text = b" @%.6f@" % time.perf_counter()
        t.write(_chunk(_PREFIX + b'"delta":{"content":"%s"},"finish_reason":null}]}\n\n' % text))
        if self.left > 0:
            self.handle = loop.call_at(loop.time() + self.delay, self.tick)
        else:
            t.write(_FINISH + _USAGE + _DONE)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.transport = None


def upstream_main(conn: Connection, delay: float) -> None:
    pin(OTHER_CORE)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Upstream(delay), "127.0.0.1", 0, backlog=4096)
        conn.send(server.sockets[0].getsockname()[1])
        probe = LagProbe()
        while True:  # ("window", start, end): measure its loop lag then; ("lag",): report it
            try:
                msg = await loop.run_in_executor(None, conn.recv)
            except (EOFError, OSError):
                break
            if msg[0] == "window":
                probe.start, probe.end, probe.lags = msg[1], msg[2], []
            else:
                conn.send(probe.summary())
        server.close()

    asyncio.run(run())


# -- the clients (core 1) -------------------------------------------------------------------

_ASK = json.dumps({"type": "ask", "question": "What is a relay?"}).encode()


def _masked(payload: bytes) -> bytes:
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x81, 0x80 | n]) if n < 126 else bytes([0x81, 0xFE]) + n.to_bytes(2, "big")
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + body


_ASK_FRAME = _masked(_ASK)


class _WsClient(asyncio.Protocol):
    """A raw WebSocket client: handshake, then frames parsed by hand (server frames are
    unmasked), each timestamped once per ``data_received``."""

    def __init__(self, stats: _Stats, floor: bool) -> None:
        self.stats = stats
        self.floor = floor
        self.buf = b""
        self.upgraded = False
        self.transport: asyncio.Transport | None = None
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        key = base64.b64encode(os.urandom(16))
        # The relay serves only its own Host (name and port: its DNS-rebinding guard).
        port = int(transport.get_extra_info("peername")[1])
        transport.write(
            b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
            % (port, key)
        )

    def ask(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(_ASK_FRAME)

    def data_received(self, data: bytes) -> None:
        t = time.perf_counter()
        buf = self.buf + data
        if not self.upgraded:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self.buf = buf
                return
            if not buf.startswith(b"HTTP/1.1 101"):
                self.ready.set_exception(ConnectionError(buf[:80].decode(errors="replace")))
                return
            self.upgraded = True
            buf = buf[end + 4 :]
            if self.floor:  # the floor sends no hello
                self.ready.set_result(None)
        i, n = 0, len(buf)
        stats = self.stats
        while n - i >= 2:
            length = buf[i + 1] & 0x7F
            head = 2
            if length == 126:
                if n - i < 4:
                    break
                length = int.from_bytes(buf[i + 2 : i + 4], "big")
                head = 4
            elif length == 127:
                if n - i < 10:
                    break
                length = int.from_bytes(buf[i + 2 : i + 10], "big")
                head = 10
            if n - i < head + length:
                break
            self.frame(buf[i + head : i + head + length], t, stats)
            i += head + length
        self.buf = buf[i:]

    def frame(self, payload: bytes, t: float, stats: _Stats) -> None:
        if self.floor:
            if payload == b'{"end":1}':
                self.ask()
                return
            event = True
        else:
            if not self.ready.done() and payload.startswith(b'{"type":"hello"'):
                self.ready.set_result(None)
                return
            event = payload.startswith(b'{"stream_id"')
            if event and payload.find(b'"type":"done"', 0, 80) > 0:
                stats.count(t)
                self.ask()
                return
        if not event:
            return
        j = payload.find(b"@")
        if j >= 0 and (self.floor or payload.find(b'"type":"token"', 0, 80) > 0):
            stats.token(t, t - float(payload[j + 1 : payload.index(b"@", j + 1)]))
        else:
            stats.count(t)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if not self.ready.done():
            self.ready.set_exception(ConnectionError("closed before the handshake"))


class _Stats:
    __slots__ = ("end", "events", "latencies", "start")

    def __init__(self) -> None:
        self.start = float("inf")
        self.end = float("inf")
        self.events = 0
        self.latencies: list[float] = []

    def count(self, t: float) -> None:
        if self.start <= t < self.end:
            self.events += 1

    def token(self, t: float, latency: float) -> None:
        if self.start <= t < self.end:
            self.events += 1
            self.latencies.append(latency)


def clients_main(conn: Connection, url: str, n: int, floor: bool) -> None:
    pin(OTHER_CORE)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        stats = _Stats()
        probe = LagProbe()
        port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
        clients: list[_WsClient] = []
        for _ in range(n):
            _, proto = await loop.create_connection(
                lambda: _WsClient(stats, floor), "127.0.0.1", port
            )
            clients.append(proto)
        await asyncio.wait_for(asyncio.gather(*(c.ready for c in clients)), 60)
        for c in clients:  # asks spread over one token interval ×50 (1 s)
            loop.call_later(random.uniform(0, 1.0), c.ask)
        conn.send("asking")
        start, end = conn.recv()
        stats.start, stats.end = start, end
        probe.start, probe.end = start, end
        await asyncio.sleep(max(0.0, end - time.perf_counter()) + 0.3)
        conn.send((stats.events, stats.latencies, probe.summary()))
        for c in clients:
            if c.transport is not None:
                c.transport.abort()

    asyncio.run(run())
