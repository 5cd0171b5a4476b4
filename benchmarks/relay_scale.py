"""``bench_relay.py --streams N``: the relay's CPU per event against a bare forwarder's.

Four processes, two cores:

  core 0    the process measured: the relay (``RelayServer``, memory or Redis log), or — in
            the same run, one after the other — the *floor*: a bare forwarder on the same
            stack (aiohttp client reading the upstream, each SSE event's bytes sent as one
            WebSocket text frame, no parsing, no log)
  core 1    the upstream (a raw-asyncio OpenAI-style SSE server, 50 tokens/s per stream,
            each token's text carries its write time) and the N clients (raw-asyncio
            WebSocket clients that re-ask as soon as an answer is done), kept cheap so that
            core 1 is not the bottleneck

``time.perf_counter`` is CLOCK_MONOTONIC, one clock for every process: latency per token
= client receive − upstream write, for the relay and for the floor alike. CPU comes from
``/proc/<pid>/stat`` of the measured process over the measurement window, divided by the
event frames the clients received in that window.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import multiprocessing as mp
import os
import random
import time
from multiprocessing.connection import Connection
from typing import Any

_MP = mp.get_context("spawn")
_CORES = sorted(os.sched_getaffinity(0))
MEASURED_CORE = {_CORES[0]}
OTHER_CORE = {_CORES[-1]}
_WORDS = 100
"""Tokens per answer (then finish, usage, [DONE]): 2 s at 50 tokens/s."""


def _pin(cores: set[int]) -> None:
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, cores)


def _quiet() -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run_on(coro: Any, loop_kind: str, profile: str = "") -> None:
    """Run ``coro`` on ``loop_kind``; with ``profile``, under yappi's CPU clock (every
    thread's, so the loop's callbacks count too), stats saved to ``profile`` (pstat)."""
    from streamcite.relay.eventloop import run

    if not profile:
        run(coro, loop_kind)  # type: ignore[arg-type]
        return
    import yappi

    yappi.set_clock_type("cpu")
    yappi.start(builtins=True)
    try:
        run(coro, loop_kind)  # type: ignore[arg-type]
    finally:
        yappi.stop()
        yappi.get_func_stats().save(profile, type="pstat")


def available_loops() -> list[str]:
    from streamcite.relay.eventloop import resolve

    return ["asyncio"] + (["uvloop"] if resolve("auto") == "uvloop" else [])


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


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
    ``_WORDS`` tokens, one every ``delay`` seconds, each text ``" @<perf_counter>@"``."""

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
        self.left = _WORDS
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
    _pin(OTHER_CORE)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Upstream(delay), "127.0.0.1", 0, backlog=4096)
        conn.send(server.sockets[0].getsockname()[1])
        with contextlib.suppress(EOFError, OSError):
            await loop.run_in_executor(None, conn.recv)
        server.close()

    asyncio.run(run())


# -- the floor: a bare forwarder (core 0) ---------------------------------------------------


def floor_main(
    conn: Connection, upstream: str, loop_kind: str = "asyncio", profile: str = ""
) -> None:
    """aiohttp WebSocket server; each ask → one upstream POST whose SSE events are sent, as
    read (split at the blank line, not parsed), one text frame each; then ``{"end":1}``."""
    _pin(MEASURED_CORE)
    import aiohttp
    from aiohttp import WSMsgType, web

    body = b'{"model":"bench","stream":true,"messages":[{"role":"user","content":"q"}]}'

    async def forward(session: aiohttp.ClientSession, ws: web.WebSocketResponse) -> None:
        try:
            async with session.post(
                upstream, data=body, headers={"Content-Type": "application/json"}
            ) as resp:
                rest = b""
                async for data in resp.content.iter_any():
                    rest += data
                    *events, rest = rest.split(b"\n\n")
                    for event in events:
                        await ws.send_frame(event, WSMsgType.TEXT)
            await ws.send_frame(b'{"end":1}', WSMsgType.TEXT)
        except (ConnectionResetError, aiohttp.ClientError, RuntimeError):
            # The window ended: the client left, or the backend stopped mid-body (aiohttp's
            # reader raises RuntimeError("Connection closed.")). Nothing left to forward.
            return

    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(compress=False, heartbeat=None)
        await ws.prepare(request)
        session: aiohttp.ClientSession = request.app["session"]
        tasks: set[asyncio.Task[None]] = set()
        async for msg in ws:
            if msg.type is WSMsgType.TEXT:
                task = asyncio.create_task(forward(session, ws))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        for task in tasks:
            task.cancel()
        return ws

    async def run() -> None:
        app = web.Application()
        connector = aiohttp.TCPConnector(limit=0)
        app["session"] = aiohttp.ClientSession(connector=connector)
        app.router.add_get("/ws", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
        await site.start()
        conn.send(f"ws://127.0.0.1:{runner.addresses[0][1]}/ws")
        loop = asyncio.get_running_loop()
        with contextlib.suppress(EOFError, OSError):
            await loop.run_in_executor(None, conn.recv)
        await app["session"].close()
        await runner.cleanup()

    _run_on(run(), loop_kind, profile)


# -- the relay (core 0) ---------------------------------------------------------------------


def relay_main(
    conn: Connection,
    upstream_base: str,
    n: int,
    log_kind: str,
    redis: str,
    loop_kind: str,
    profile: str = "",
) -> None:
    _pin(MEASURED_CORE)
    _quiet()

    async def run() -> None:
        from streamcite.relay.server import RelayConfig, RelayServer

        config = RelayConfig(
            base_url=upstream_base,
            model="bench",
            retries=0,
            max_streams_total=n + 16,
            max_streams_per_client=n + 16,  # every bench client is one client (127.0.0.1)
            max_connections=n + 16,
            shutdown_grace=0.0,
            heartbeat_interval=30.0,
        )
        log: Any = None
        if log_kind == "redis":
            from streamcite.relay.redis import RedisLogSettings, RedisStreamLog

            log = RedisStreamLog(RedisLogSettings(redis, instance_id=config.instance_id))
            await log.connect()
        async with RelayServer(config, log=log) as server:
            if os.environ.get("STREAMCITE_BENCH_GC") == "freeze":
                import gc

                gc.freeze()
            conn.send(server.ws_url)
            loop = asyncio.get_running_loop()
            with contextlib.suppress(EOFError, OSError):
                await loop.run_in_executor(None, conn.recv)
        if log is not None:
            await log.aclose()

    _run_on(run(), loop_kind, profile)


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
    _pin(OTHER_CORE)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        stats = _Stats()
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
        await asyncio.sleep(max(0.0, end - time.perf_counter()) + 0.3)
        conn.send((stats.events, stats.latencies))
        for c in clients:
            if c.transport is not None:
                c.transport.abort()

    asyncio.run(run())


# -- one measured phase ---------------------------------------------------------------------


def run_phase(
    kind: str,
    n: int,
    duration: float,
    upstream_port: int,
    log_kind: str,
    redis: str,
    upstream_pid: int = 0,
    loop_kind: str = "asyncio",
    profile: str = "",
) -> dict[str, Any]:
    """Start the measured process (``relay`` or ``floor``) and N clients; measure.
    ``profile``: a path, to profile the measured process with yappi (CPU clock)."""
    parent, child = _MP.Pipe()
    if kind == "floor":
        target: Any = floor_main
        up = f"http://127.0.0.1:{upstream_port}/v1/chat/completions"
        args: tuple[Any, ...] = (child, up, loop_kind, profile)
    else:
        target = relay_main
        base = f"http://127.0.0.1:{upstream_port}/v1"
        args = (child, base, n, log_kind, redis, loop_kind, profile)
    proc = _MP.Process(target=target, args=args, daemon=True)
    proc.start()
    url = parent.recv()
    cparent, cchild = _MP.Pipe()
    clients = _MP.Process(target=clients_main, args=(cchild, url, n, kind == "floor"), daemon=True)
    clients.start()
    try:
        if not cparent.poll(120):
            raise RuntimeError(f"{kind}: clients did not start")
        assert cparent.recv() == "asking"
        warm = 3.0  # the asks are spread over 1 s; the first answers settle
        start = time.perf_counter() + warm
        end = start + duration
        cparent.send((start, end))
        time.sleep(warm)
        cpu0 = _cpu_seconds(proc.pid or 0)
        spy = _py_spy(proc.pid or 0, duration) if os.environ.get("STREAMCITE_BENCH_PYSPY") else None
        others0 = _cpu_seconds(clients.pid or 0) + _cpu_seconds(upstream_pid or os.getpid())
        time.sleep(max(0.0, end - time.perf_counter()))
        cpu = _cpu_seconds(proc.pid or 0) - cpu0
        others = (
            _cpu_seconds(clients.pid or 0) + _cpu_seconds(upstream_pid or os.getpid()) - others0
        )
        if spy is not None:
            spy.wait(30)
        if not cparent.poll(60):
            raise RuntimeError(f"{kind}: no result from the clients")
        events, latencies = cparent.recv()
    finally:
        parent.close()
        clients.join(10)
        proc.join(15)
        for p in (clients, proc):
            if p.is_alive():
                p.kill()
    if not events:
        print(f"{kind} on {loop_kind}: no event delivered in the window", flush=True)
    lat = sorted(x * 1000 for x in latencies)
    return {
        "events": events,
        "events_per_s": round(events / duration),
        "cpu_s": round(cpu, 3),
        "cpu_pct": round(100 * cpu / duration, 1),
        "other_core_pct": round(100 * others / duration, 1),
        "cpu_us_per_event": round(1e6 * cpu / max(1, events), 2),
        "cpu_us_per_token": round(1e6 * cpu / max(1, len(latencies)), 2),
        "p50_ms": round(_pct(lat, 0.5), 3),
        "p99_ms": round(_pct(lat, 0.99), 3),
        "max_ms": round(lat[-1], 3) if lat else None,
        "tokens": len(lat),
    }


def _py_spy(pid: int, duration: float) -> Any:
    """``STREAMCITE_BENCH_PYSPY=PREFIX``: a py-spy sampling profile (native frames too) of
    the measured process over the window, as collapsed stacks in ``PREFIX.<pid>.txt``."""
    import subprocess

    out = f"{os.environ['STREAMCITE_BENCH_PYSPY']}.{pid}.txt"
    cmd = ["py-spy", "record", "--native", "-r", "200", "-f", "raw"]
    cmd += ["-d", str(max(1, int(duration))), "-p", str(pid), "-o", out]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def scale_main(args: Any) -> None:
    """``--streams N[,N...] --duration S [--loops asyncio,uvloop]``: per loop and N, the floor
    then the relay, same run; the JSON gets ``floor_cpu_us_per_event`` beside
    ``relay_cpu_us_per_event``, the relay's CPU per delivered token, the streams of
    ``1 / token_delay`` tokens/s one core carries at that cost, and the p99 token latency."""
    import resource

    counts = [int(x) for x in str(args.streams).split(",") if x.strip()]
    loops = [
        x for x in (getattr(args, "loops", None) or ",".join(available_loops())).split(",") if x
    ]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 4 * max(counts) + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    parent, child = _MP.Pipe()
    up = _MP.Process(target=upstream_main, args=(child, args.token_delay), daemon=True)
    up.start()
    port = parent.recv()
    results: list[dict[str, Any]] = []
    rate = 1 / args.token_delay
    print(
        f"relay scale benchmark · {rate:.0f} tokens/s per stream · log={args.log} · loops "
        f"{', '.join(loops)} · measured on core {min(MEASURED_CORE)}, upstream + clients on "
        f"core {min(OTHER_CORE)} · load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    try:
        for loop_kind in loops:
            for n in counts:
                prof = str(args.profile or "")
                phase = {
                    kind: run_phase(kind, n, args.duration, port, args.log,
                                    args.redis_url or "", up.pid or 0, loop_kind,
                                    f"{prof}.{kind}.{loop_kind}.{n}" if prof else "")
                    for kind in ("floor", "relay")
                }  # fmt: skip
                relay, floor = phase["relay"], phase["floor"]
                r = {
                    "loop": loop_kind,
                    "streams": n,
                    "log": args.log,
                    "duration_s": args.duration,
                    "relay_cpu_us_per_event": relay["cpu_us_per_event"],
                    "floor_cpu_us_per_event": floor["cpu_us_per_event"],
                    "cpu_ratio": round(relay["cpu_us_per_event"] / floor["cpu_us_per_event"], 2),
                    "relay_cpu_us_per_token": relay["cpu_us_per_token"],
                    "streams_per_core": round(1e6 / max(relay["cpu_us_per_token"], 1e-9) / rate),
                    "relay_p50_ms": relay["p50_ms"],
                    "relay_p99_ms": relay["p99_ms"],
                    "floor_p50_ms": floor["p50_ms"],
                    "floor_p99_ms": floor["p99_ms"],
                    "relay": relay,
                    "floor": floor,
                    "load_avg": round(os.getloadavg()[0], 2),
                }
                results.append(r)
                print(json.dumps(r), flush=True)
    finally:
        parent.close()
        up.join(5)
        if up.is_alive():
            up.kill()
    print("\n| loop | streams | relay µs/event | floor µs/event | ratio | relay µs/token "
          "| streams/core | relay p50 / p99 ms | floor p50 / p99 ms | relay CPU |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['loop']} | {r['streams']} | {r['relay_cpu_us_per_event']} "
            f"| {r['floor_cpu_us_per_event']} | {r['cpu_ratio']}× | {r['relay_cpu_us_per_token']} "
            f"| {r['streams_per_core']} | {r['relay_p50_ms']} / {r['relay_p99_ms']} "
            f"| {r['floor_p50_ms']} / {r['floor_p99_ms']} | {r['relay']['cpu_pct']} % |"
        )
    print(f"\nstreams/core: streams of {rate:.0f} tokens/s one core carries at the relay's CPU "
          "per delivered token (measured at that N)")  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps({"results": results}, indent=2))
