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
import contextlib
import json
import multiprocessing as mp
import os
import time
from multiprocessing.connection import Connection
from typing import Any

from relay_load import MEASURED_CORE, OTHER_CORE, clients_main, pin, schedstat, upstream_main

_MP = mp.get_context("spawn")


def _quiet() -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))


def _cpu_split(pid: int) -> tuple[float, float]:
    """The process's CPU seconds so far: in user space, in the kernel (its syscalls)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _cpu_seconds(pid: int) -> float:
    return sum(_cpu_split(pid))


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


def _gc_pauses(kind: str) -> Any:
    """``STREAMCITE_BENCH_GCSTATS=1``: the cyclic collector's pauses in this process, per
    generation (count, total and longest ms), printed when the process ends: a full
    collection stops the loop, and every token waiting in it, for its whole length."""
    if not os.environ.get("STREAMCITE_BENCH_GCSTATS"):
        return contextlib.nullcontext()
    import gc

    stats: dict[int, list[float]] = {0: [], 1: [], 2: []}
    started = [0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            stats[info["generation"]].append(1000 * (time.perf_counter() - started[0]))

    gc.callbacks.append(callback)

    @contextlib.contextmanager
    def report() -> Any:
        try:
            yield
        finally:
            gc.callbacks.remove(callback)
            summary = {
                f"gen{g}": [len(v), round(sum(v), 1), round(max(v, default=0.0), 2)]
                for g, v in stats.items()
            }
            print(f"gc pauses ({kind}: count, total ms, longest ms): {summary}", flush=True)

    return report()


def _gc_mode() -> str:
    """``STREAMCITE_BENCH_GC``: ``tuned`` (the default: the collector as ``streamcite relay``
    sets it, for the relay and the floor alike), ``default`` (Python's), ``freeze`` (only
    ``gc.freeze()`` after start-up, the relay only), ``off`` (the relay only)."""
    return os.environ.get("STREAMCITE_BENCH_GC") or "tuned"


def available_loops() -> list[str]:
    from streamcite.relay.eventloop import resolve

    return ["asyncio"] + (["uvloop"] if resolve("auto") == "uvloop" else [])


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


# -- the floor: a bare forwarder (core 0) ---------------------------------------------------


def floor_main(
    conn: Connection, upstream: str, loop_kind: str = "asyncio", profile: str = ""
) -> None:
    """aiohttp WebSocket server; each ask → one upstream POST whose SSE events are sent, as
    read (split at the blank line, not parsed), one text frame each; then ``{"end":1}``.
    ``STREAMCITE_BENCH_FLOOR=push``: the upstream read by the push transport instead of
    aiohttp's client (the floor of the relay's push set-up)."""
    pin(MEASURED_CORE)
    import aiohttp
    from aiohttp import WSMsgType, web

    body = b'{"model":"bench","stream":true,"messages":[{"role":"user","content":"q"}]}'

    push_pool: Any = None
    if os.environ.get("STREAMCITE_BENCH_FLOOR") == "push":
        from streamcite.transports.push import ConnectionPool

        push_pool = ConnectionPool()

    async def forward_pushed(request: web.Request, ws: web.WebSocketResponse) -> None:
        """The push transport's floor: each event's frame written to the client's socket
        in the upstream connection's callback (as the relay's live taps do, without the
        per-turn coalescing), no parse, no log."""
        from streamcite.relay.protocol import ws_text_header

        sock = request.transport
        resp = await push_pool.transport().open(
            upstream, {"Content-Type": "application/json"}, body, None
        )
        ended = asyncio.get_running_loop().create_future()

        class Sink:
            rest = b""

            def body(self, data: bytes) -> None:
                *events, self.rest = (self.rest + data).split(b"\n\n")
                if sock is not None and not sock.is_closing():
                    sock.write(b"".join(ws_text_header(len(e)) + e for e in events))

            def end(self, failure: object) -> None:
                if not ended.done():
                    ended.set_result(None)

        try:
            resp.push(Sink())
            await ended
            await ws.send_frame(b'{"end":1}', WSMsgType.TEXT)
        except (ConnectionResetError, RuntimeError):
            return
        finally:
            await resp.aclose()

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
                if push_pool is not None:
                    task = asyncio.create_task(forward_pushed(request, ws))
                else:
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
        if _gc_mode() == "tuned":  # the same process set-up as the relay's
            from streamcite.relay.eventloop import tune_gc

            tune_gc()
        conn.send(f"ws://127.0.0.1:{runner.addresses[0][1]}/ws")
        loop = asyncio.get_running_loop()
        with contextlib.suppress(EOFError, OSError):
            await loop.run_in_executor(None, conn.recv)
        await app["session"].close()
        await runner.cleanup()

    with _gc_pauses("floor"):
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
    pin(MEASURED_CORE)
    _quiet()
    gc_mode = _gc_mode()

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
            # STREAMCITE_BENCH_UPSTREAM=aiohttp: the relay's upstream requests on aiohttp
            # (default: push when httptools is installed, as the relay chooses)
            upstream_transport=os.environ.get("STREAMCITE_BENCH_UPSTREAM", "auto"),
            **({"tune_gc": True} if gc_mode == "tuned" else {}),  # as `streamcite relay` runs
        )
        log: Any = None
        if log_kind == "redis":
            from streamcite.relay.redis import RedisLogSettings, RedisStreamLog

            log = RedisStreamLog(RedisLogSettings(redis, instance_id=config.instance_id))
            await log.connect()
        async with RelayServer(config, log=log) as server:
            if gc_mode in ("freeze", "off"):
                import gc

                gc.freeze() if gc_mode == "freeze" else gc.disable()
            conn.send(server.ws_url)
            loop = asyncio.get_running_loop()
            with contextlib.suppress(EOFError, OSError):
                await loop.run_in_executor(None, conn.recv)
        if log is not None:
            await log.aclose()

    with _gc_pauses("relay"):
        _run_on(run(), loop_kind, profile)


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
    upstream_conn: Connection | None = None,
) -> dict[str, Any]:
    """Start the measured process (``relay`` or ``floor``) and N clients; measure.
    ``profile``: a path, to profile the measured process with yappi (CPU clock).
    ``upstream_conn``: the upstream's pipe, to measure its loop lag over the window."""
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
        if upstream_conn is not None:
            upstream_conn.send(("window", start, end))
        time.sleep(warm)
        split0 = _cpu_split(proc.pid or 0)
        cpu0 = sum(split0)
        spy = _py_spy(proc.pid or 0, duration) if os.environ.get("STREAMCITE_BENCH_PYSPY") else None
        pids = {"measured": proc.pid or 0, "clients": clients.pid or 0, "upstream": upstream_pid}
        sched0 = {k: schedstat(pid) for k, pid in pids.items() if pid}
        others0 = _cpu_seconds(clients.pid or 0) + _cpu_seconds(upstream_pid or os.getpid())
        time.sleep(max(0.0, end - time.perf_counter()))
        split1 = _cpu_split(proc.pid or 0)
        cpu = sum(split1) - cpu0
        user, kernel = split1[0] - split0[0], split1[1] - split0[1]
        others = (
            _cpu_seconds(clients.pid or 0) + _cpu_seconds(upstream_pid or os.getpid()) - others0
        )
        sched: dict[str, float] = {}
        for k, (run0, wait0) in sched0.items():
            run1, wait1 = schedstat(pids[k])
            sched[f"{k}_cpu_pct"] = round(100 * (run1 - run0) / duration, 1)
            sched[f"{k}_runq_wait_pct"] = round(100 * (wait1 - wait0) / duration, 1)
        if spy is not None:
            spy.wait(30)
        if not cparent.poll(60):
            raise RuntimeError(f"{kind}: no result from the clients")
        events, latencies, client_lag = cparent.recv()
        upstream_lag: dict[str, float] = {}
        if upstream_conn is not None:
            upstream_conn.send(("lag",))
            if upstream_conn.poll(10):
                upstream_lag = upstream_conn.recv()
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
        # The kernel's share is the sockets' syscalls (on loopback a write also runs the
        # receiving side's TCP): what no Python above the loop can make cheaper.
        "user_us_per_token": round(1e6 * user / max(1, len(latencies)), 2),
        "kernel_us_per_token": round(1e6 * kernel / max(1, len(latencies)), 2),
        "p50_ms": round(_pct(lat, 0.5), 3),
        "p99_ms": round(_pct(lat, 0.99), 3),
        "max_ms": round(lat[-1], 3) if lat else None,
        "tokens": len(lat),
        # The load on the other core: its CPU and run-queue wait, and how late its event
        # loops ran (a late loop delays every token it writes or reads by that much).
        **sched,
        **{f"clients_{k}": v for k, v in client_lag.items()},
        **{f"upstream_{k}": v for k, v in upstream_lag.items()},
    }


def _py_spy(pid: int, duration: float) -> Any:
    """``STREAMCITE_BENCH_PYSPY=PREFIX``: a py-spy sampling profile (native frames too) of
    the measured process over the window, as collapsed stacks in ``PREFIX.<pid>.txt``."""
    import subprocess

    out = f"{os.environ['STREAMCITE_BENCH_PYSPY']}.{pid}.txt"
    rate = os.environ.get("STREAMCITE_BENCH_PYSPY_RATE", "200")
    cmd = ["py-spy", "record", "--native", "-r", rate, "-f", "raw"]
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
        f"core {min(OTHER_CORE)} · nice {os.environ.get('STREAMCITE_BENCH_NICE', '0')} · gc {_gc_mode()} · "
        f"relay upstream {os.environ.get('STREAMCITE_BENCH_UPSTREAM', 'auto')} · floor upstream "
        f"{os.environ.get('STREAMCITE_BENCH_FLOOR', 'aiohttp')} · load "
        f"average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    try:
        for loop_kind in loops:
            for n in counts:
                prof = str(args.profile or "")
                phase = {
                    kind: run_phase(kind, n, args.duration, port, args.log,
                                    args.redis_url or "", up.pid or 0, loop_kind,
                                    f"{prof}.{kind}.{loop_kind}.{n}" if prof else "",
                                    parent)
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
    print("\nThe load, per phase: CPU and run-queue wait (runnable, no CPU given) of each "
          "process, and how late the load's event loops ran (p99)")  # fmt: skip
    print("\n| loop | streams | measured | measured CPU / wait | upstream CPU / wait "
          "| clients CPU / wait | upstream loop lag p99 | clients loop lag p99 |")  # fmt: skip
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for r in results:
        for kind in ("floor", "relay"):
            m = r[kind]
            print(
                f"| {r['loop']} | {r['streams']} | {kind} "
                f"| {m.get('measured_cpu_pct')} % / {m.get('measured_runq_wait_pct')} % "
                f"| {m.get('upstream_cpu_pct')} % / {m.get('upstream_runq_wait_pct')} % "
                f"| {m.get('clients_cpu_pct')} % / {m.get('clients_runq_wait_pct')} % "
                f"| {m.get('upstream_loop_lag_p99_ms')} ms | {m.get('clients_loop_lag_p99_ms')} ms |"
            )
    print("\nWhere the measured process's CPU per delivered token goes: user space (Python, "
          "the loop, aiohttp) and the kernel (socket syscalls)")  # fmt: skip
    print("\n| loop | streams | relay user / kernel µs | floor user / kernel µs |")
    print("|---|---:|---:|---:|")
    for r in results:
        rl, fl = r["relay"], r["floor"]
        print(
            f"| {r['loop']} | {r['streams']} | {rl['user_us_per_token']} / "
            f"{rl['kernel_us_per_token']} | {fl['user_us_per_token']} / {fl['kernel_us_per_token']} |"
        )
    print(f"\nstreams/core: streams of {rate:.0f} tokens/s one core carries at the relay's CPU "
          "per delivered token (measured at that N)")  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps({"results": results}, indent=2))
