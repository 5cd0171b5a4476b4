"""Relay benchmark: many concurrent WebSocket clients on loopback, embedded backend upstream.

Three processes, so that no side steals the relay's event loop:

  backend   the embedded local backend, streaming at 1 / token_delay tokens per second
  relay     this process: RelayServer with a hook that timestamps each event the
            pipeline yields (upstream receive), before it is logged
  clients   N aiohttp WebSocket clients; each timestamps every frame it receives

``time.perf_counter`` is CLOCK_MONOTONIC on Linux, one clock for every process, so
relay-added latency per token = client receive − relay upstream receive.

For each N (default 100 and 1,000):

  latency     all N ask at once (staggered over --stagger seconds so token phases are
              not in lock-step) and read to ``done``: latency p50/p99/max, relay CPU,
              memory per stream (relay RSS growth / streams live at the sample)
  disconnect  N ask again; once every stream has tokens flowing, the client process
              dies (sockets cut mid-stream); after the resume grace the relay must be
              back to its baseline: leaked asyncio tasks, upstream connections still in
              use, TCP connections to the backend still established

Run: ``.venv/bin/python benchmarks/bench_relay.py [--clients 100,1000] [--log memory|redis]``
(``--log redis`` needs ``streamcite.relay.redis`` and ``--redis-url``).

``--streams 300,1000 --duration 10 [--loops asyncio,uvloop] [--json out.json]`` runs the
scale mode instead (``benchmarks/relay_scale.py``): the relay pinned to one core, the
upstream and the clients on the other, a bare forwarder on the same event loop measured in
the same run as the floor; per loop (asyncio, and uvloop when installed) and N: CPU per
event against the floor's, CPU per delivered token, the streams one core carries at that
cost, and the p99 token latency (upstream write → client receive).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import multiprocessing as mp
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

QUESTION = "What does the handbook say about streaming relays and slow clients?"

# One document whose sentences all match the question: the local backend answers with
# its four best sentences, about 200 tokens, i.e. about 4 s at 50 tokens/s.
_SENTENCE = (
    "The handbook says that streaming relays {0} keep every client on its own buffer, so "
    "that slow clients never hold back the upstream read or the other streams, and that a "
    "relay which falls behind closes the slow client with a clear code and lets it resume "
    "from the last event it saw without losing or repeating a token."
)
CORPUS_DOC = (
    "---\ntitle: Relay handbook\nauthor: Benchmark team\nyear: 2026\nreference: BENCH-1\n---\n"
    "# Streaming relays and slow clients\n\n"
    + " ".join(
        _SENTENCE.format(w)
        for w in ("written in Python", "on small machines", "behind a proxy", "in production")
    )
    + "\n"
)


def _rss_bytes(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _established_to(port: int) -> int:
    """TCP connections (any process) to 127.0.0.1:port that are ESTABLISHED."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table) as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                remote, state = parts[2], parts[3]
                if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


_MP = mp.get_context("spawn")


def _run(coro: Any, loop: str = "asyncio") -> Any:
    """``asyncio.run`` on the chosen event loop implementation."""
    factory = None
    if loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            raise SystemExit(
                "--loop uvloop: uvloop is not installed (pip install uvloop)"
            ) from None
        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coro)  # no fork of a process with a running event loop


def _quiet_logs() -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))


# -- the backend process -------------------------------------------------------------


def _backend_main(conn: Connection, corpus_dir: str, token_delay: float) -> None:
    _quiet_logs()
    from streamcite.local.server import BackendConfig, LocalBackend

    async def run() -> None:
        config = BackendConfig(corpus_dir=Path(corpus_dir), token_delay=token_delay)
        async with LocalBackend(config, port=0) as backend:
            conn.send((backend.base_url, backend.port))
            loop = asyncio.get_running_loop()
            with contextlib.suppress(EOFError, OSError):
                await loop.run_in_executor(None, conn.recv)  # until the parent hangs up

    asyncio.run(run())


# -- the client process --------------------------------------------------------------


def _clients_main(conn: Connection, opts: dict[str, Any]) -> None:
    _quiet_logs()
    import aiohttp
    import orjson

    async def run() -> None:
        n = opts["clients"]
        stagger = opts["stagger"]
        mode = opts["mode"]
        recv: dict[str, list[tuple[int, float]]] = {}
        flowing: set[str] = set()
        all_flowing = asyncio.Event()
        errors: list[str] = []
        perf = time.perf_counter
        loads = orjson.loads
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def one(i: int, ws: aiohttp.ClientWebSocketResponse) -> None:
                await asyncio.sleep(random.uniform(0, stagger))
                await ws.send_str(orjson.dumps({"type": "ask", "question": QUESTION}).decode())
                times: list[tuple[int, float]] = []
                sid = ""
                async for msg in ws:
                    t = perf()
                    obj = loads(msg.data)
                    seq = obj.get("seq")
                    if seq is None:
                        if obj["type"] == "accepted":
                            sid = obj["stream_id"]
                            recv[sid] = times
                        elif obj["type"] == "error":
                            errors.append(obj["code"])
                            return
                        continue
                    if obj["type"] == "token":
                        times.append((seq, t))
                        if mode == "disconnect" and len(times) == 5:
                            flowing.add(sid)
                            if len(flowing) == n:
                                all_flowing.set()
                    elif obj["type"] == "done":
                        return

            sockets = []
            for _ in range(n):  # connect first: the N clients are there before anyone asks
                sockets.append(await session.ws_connect(opts["url"], max_msg_size=0))
                await sockets[-1].receive()  # hello
            conn.send(("connected", n))
            tasks = [asyncio.create_task(one(i, ws)) for i, ws in enumerate(sockets)]
            if mode == "disconnect":
                async with asyncio.timeout(120):
                    await all_flowing.wait()
                conn.send(("flowing", len(flowing)))
                os._exit(0)  # every socket is cut mid-stream, as a crashed browser would
            async with asyncio.timeout(600):
                await asyncio.gather(*tasks)
            for ws in sockets:
                await ws.close()
        conn.send(("done", recv, errors))

    _run(run(), opts["loop"])


# -- the relay (this process) ---------------------------------------------------------------


def _make_log(kind: str, redis_url: str | None, instance_id: str) -> Any:
    if kind == "memory":
        from streamcite.relay.memlog import MemoryStreamLog

        return MemoryStreamLog()
    try:
        from streamcite.relay.redis import RedisLogSettings, RedisStreamLog
    except ImportError as exc:
        raise SystemExit(f"--log redis is not available: streamcite.relay.redis ({exc})") from None
    if not redis_url:
        raise SystemExit("--log redis needs --redis-url (or STREAMCITE_REDIS_URL)")
    return RedisStreamLog(RedisLogSettings(redis_url, instance_id=instance_id))


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[i]


async def _relay_run(
    n: int, mode: str, args: argparse.Namespace, base_url: str, backend_port: int, backend_pid: int
) -> dict[str, Any]:
    from streamcite.relay.routes import LogWithStats
    from streamcite.relay.server import RelayConfig, RelayServer

    # The disconnect phase slows the backend down (fault header) so that every stream is
    # surely mid-answer when its client dies, however long the N clients take to start.
    headers = {"X-Streamcite-Fault": "token_delay=0.1"} if mode == "disconnect" else {}
    config = RelayConfig(
        base_url=base_url,
        upstream_headers=headers,
        retries=0,
        max_streams_total=n + 10,
        max_streams_per_client=n + 10,  # every bench client is one client (127.0.0.1)
        max_connections=n + 10,
        resume_grace=args.grace,
        shutdown_grace=0.0,
        heartbeat_interval=30.0,
    )
    log = _make_log(args.log, args.redis_url, config.instance_id)
    if hasattr(log, "connect"):
        await log.connect()
    stamps: dict[tuple[str, int], float] = {}
    async with RelayServer(config, log=log) as server:
        relay = server.relay
        sent: dict[tuple[str, int], float] = {}
        if mode == "latency":
            relay.on_event = lambda sid, seq, t: stamps.__setitem__((sid, seq), t)
            relay.on_sent = lambda sid, seq, t: sent.__setitem__((sid, seq), t)
        gc.collect()
        await asyncio.sleep(0.2)
        base_tasks = len(asyncio.all_tasks())
        base_rss = _rss_bytes()
        parent, child = _MP.Pipe()
        proc = _MP.Process(
            target=_clients_main,
            args=(
                child,
                {
                    "url": server.ws_url,
                    "clients": n,
                    "stagger": args.stagger,
                    "mode": mode,
                    "loop": args.loop,
                },
            ),
            daemon=True,
        )
        proc.start()
        loop = asyncio.get_running_loop()

        async def recv_msg(limit: float) -> Any:
            for _ in range(int(limit / 0.05) + 1):  # a Pipe has no asyncio API: poll it
                if parent.poll():
                    return parent.recv()
                await asyncio.sleep(0.05)
            raise TimeoutError

        assert (await recv_msg(120))[0] == "connected"
        cpu0, wall0 = _self_cpu(), time.perf_counter()
        backend_cpu0, clients_cpu0 = _cpu_seconds(backend_pid), _cpu_seconds(proc.pid or 0)
        peak_rss, peak_live = base_rss, 0
        result: dict[str, Any] = {"clients": n, "mode": mode}
        msg: Any = None
        while msg is None:
            with contextlib.suppress(TimeoutError):
                msg = await recv_msg(0.25)
            live = relay.active_streams
            if live >= peak_live:
                peak_live, peak_rss = live, max(peak_rss, _rss_bytes())
        wall = time.perf_counter() - wall0
        result["relay_cpu_s"] = round(_self_cpu() - cpu0, 2)
        result["wall_s"] = round(wall, 2)
        result["relay_cpu_pct"] = round(100 * result["relay_cpu_s"] / wall, 1)
        if proc.pid is not None and proc.is_alive():
            result["clients_cpu_s"] = round(_cpu_seconds(proc.pid) - clients_cpu0, 2)
        result["backend_cpu_s"] = round(_cpu_seconds(backend_pid) - backend_cpu0, 2)
        result["peak_live_streams"] = peak_live
        result["rss_growth_per_stream_kib"] = (
            round((peak_rss - base_rss) / peak_live / 1024, 1) if peak_live else None
        )
        if mode == "latency":
            kind, recv, errors = msg
            assert kind == "done", kind
            lat = sorted(
                (t - stamps[(sid, seq)]) * 1000
                for sid, pairs in recv.items()
                for seq, t in pairs
                if (sid, seq) in stamps
            )
            # The relay's own part: upstream receive → frame handed to the client socket.
            own = sorted(
                (sent[(sid, seq)] - stamps[(sid, seq)]) * 1000
                for sid, pairs in recv.items()
                for seq, _ in pairs
                if (sid, seq) in stamps and (sid, seq) in sent
            )
            result["socket_p50_ms"] = round(_percentile(own, 0.50), 3)
            result["socket_p99_ms"] = round(_percentile(own, 0.99), 3)
            if isinstance(relay.log, LogWithStats):
                stats = relay.log.stats()
                result["log_kib_per_stream"] = round(
                    stats["bytes"] / max(1, stats["streams"]) / 1024, 1
                )
            result["relay_us_per_event"] = round(
                1e6 * result["relay_cpu_s"] / max(1, len(stamps)), 1
            )
            result.update(
                streams=len(recv),
                tokens=len(lat),
                errors=errors,
                p50_ms=round(_percentile(lat, 0.50), 3),
                p99_ms=round(_percentile(lat, 0.99), 3),
                max_ms=round(lat[-1], 3) if lat else None,
                mean_ms=round(statistics.fmean(lat), 3) if lat else None,
            )
        else:
            assert msg[0] == "flowing", msg
            result["cut_streams"] = msg[1]
            result["grace_s"] = args.grace
            t_cut = time.perf_counter()
            for _ in range(int((args.grace + 30) / 0.05)):
                if not (relay.client_count or relay.active_streams):
                    break
                await asyncio.sleep(0.05)
            result["cancelled_within_s"] = round(time.perf_counter() - t_cut, 2)
            await asyncio.sleep(0.5)  # let closing handshakes finish
            gc.collect()
            connector = relay._session.connector if relay._session else None
            result["leaked_tasks"] = len(asyncio.all_tasks()) - base_tasks
            result["upstream_in_use"] = len(getattr(connector, "_acquired", ()))
            result["upstream_established"] = _established_to(backend_port)
            result["outcomes"] = dict(relay.metrics.streams_finished)
        await loop.run_in_executor(None, proc.join, 10)
        if proc.is_alive():
            proc.kill()
    if hasattr(log, "aclose") and args.log != "memory":
        await log.aclose()
    return result


def _table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| clients | tokens | to client p50 / p99 / max ms | to socket p50 / p99 ms "
        "| relay CPU | relay CPU/event | log/stream |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r["mode"] != "latency":
            continue
        lines.append(
            f"| {r['clients']} | {r['tokens']} | {r['p50_ms']} / {r['p99_ms']} / {r['max_ms']} "
            f"| {r['socket_p50_ms']} / {r['socket_p99_ms']} "
            f"| {r['relay_cpu_pct']}% of a core | {r['relay_us_per_event']} µs "
            f"| {r.get('log_kib_per_stream', '–')} KiB |"
        )
    lines += [
        "",
        "| clients cut mid-stream | RSS per live stream | all cancelled after | leaked tasks "
        "| upstream conns in use | TCP conns to backend |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r["mode"] != "disconnect":
            continue
        lines.append(
            f"| {r['cut_streams']} | {r['rss_growth_per_stream_kib']} KiB "
            f"| {r['cancelled_within_s']} s (grace {r['grace_s']} s) | {r['leaked_tasks']} "
            f"| {r['upstream_in_use']} | {r['upstream_established']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="100,1000", help="comma-separated client counts")
    parser.add_argument("--token-delay", type=float, default=0.02, help="backend s/token")
    parser.add_argument("--stagger", type=float, default=1.0, help="asks spread over S seconds")
    parser.add_argument("--grace", type=float, default=1.0, help="relay resume grace (s)")
    parser.add_argument("--log", choices=("memory", "redis"), default="memory")
    parser.add_argument("--redis-url", default=os.environ.get("STREAMCITE_REDIS_URL"))
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    parser.add_argument(
        "--loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="event loop of the relay and client processes (uvloop must be installed)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="cProfile the relay's latency phases to PATH; with --streams: yappi (CPU "
        "clock) profiles of the relay and the floor to PATH.<relay|floor>.<loop>.<N>",
    )
    parser.add_argument(
        "--streams",
        default=None,
        help="scale mode (comma-separated N): relay pinned to one core, a bare forwarder "
        "as the floor in the same run, clients re-asking for --duration seconds",
    )
    parser.add_argument("--duration", type=float, default=10.0, help="scale mode: seconds")
    parser.add_argument(
        "--loops",
        default=None,
        help="scale mode: comma-separated event loops of the relay and the floor "
        "(default: asyncio, and uvloop when installed)",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=None,
        help="scale mode: the nice value of the measured process and the load (e.g. -10, "
        "as root: on a machine shared with other jobs, so that the run-queue wait the "
        "load table shows does not decide the latency)",
    )
    args = parser.parse_args()
    _quiet_logs()
    if args.nice is not None:
        os.environ["STREAMCITE_BENCH_NICE"] = str(args.nice)
    if args.streams is not None:
        from relay_scale import scale_main

        scale_main(args)
        return
    counts = [int(x) for x in args.clients.split(",") if x.strip()]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 4 * max(counts) + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    if args.log == "redis":
        _make_log("redis", args.redis_url, "probe")  # fail early with a clear message
    ctx_dir = tempfile.TemporaryDirectory(prefix="bench-relay-corpus-")
    Path(ctx_dir.name, "relay-handbook.md").write_text(CORPUS_DOC, encoding="utf-8")
    parent, child = _MP.Pipe()
    backend = _MP.Process(
        target=_backend_main, args=(child, ctx_dir.name, args.token_delay), daemon=True
    )
    backend.start()
    base_url, port = parent.recv()
    results: list[dict[str, Any]] = []
    print(
        f"relay benchmark · backend {1 / args.token_delay:.0f} tokens/s · log={args.log} · "
        f"{os.cpu_count()} CPUs · load average {os.getloadavg()[0]:.2f} · "
        f"loop {args.loop} · python {sys.version.split()[0]}",
        flush=True,
    )
    try:
        # Warm-up (not reported): imports, pools and allocator arenas, so the first
        # measured run does not pay for them.
        _run(
            _relay_run(min(50, max(counts)), "latency", args, base_url, port, backend.pid or 0),
            args.loop,
        )
        for n in counts:
            for mode in ("latency", "disconnect"):
                run = _relay_run(n, mode, args, base_url, port, backend.pid or 0)
                if args.profile is not None and mode == "latency":
                    import cProfile

                    with cProfile.Profile() as prof:
                        r = _run(run, args.loop)
                    prof.dump_stats(f"{args.profile}.{n}")
                else:
                    r = _run(run, args.loop)
                results.append(r)
                print(json.dumps(r), flush=True)
    finally:
        parent.close()
        backend.join(5)
        if backend.is_alive():
            backend.kill()
        ctx_dir.cleanup()
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}\n")
    print(_table(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
