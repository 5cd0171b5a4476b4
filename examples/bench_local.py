"""``streamcite bench`` on the embedded local backend, and what the tool itself adds.

1. **Overhead against a known delay.** The backend (in a child process) waits exactly
   ``first_token_delay = 100 ms`` before the first token and ``token_delay = 10 ms``
   between tokens; whatever the tool measures above that is the cost of the server's
   timer, loopback TCP and the client (transport, SSE decoding, chunk interpretation,
   the pipeline, the bench's own bookkeeping).
2. **Delivery latency per token.** A stamping server (child process) puts
   ``time.perf_counter()`` — CLOCK_MONOTONIC, one clock for every process on Linux —
   into each token just before writing it; the client takes ``perf_counter()`` when
   the pipeline hands it the token, exactly as the bench runner does. The difference
   is the whole path from the server's ``write()`` to the measuring code.
3. **The client's CPU per token**: the bench's bookkeeping (one ``perf_counter`` and
   one ``append``) and the core's parsing of one chunk (what ``benchmarks/bench_parse.py``
   measures on bigger streams).
4. **A demo sweep** (concurrency 1, 4, 16, with Wikit sources and the local grounding
   check) whose plots are the ones in the README (``--docs`` copies them to docs/).

Run: ``.venv/bin/python examples/bench_local.py [--out bench-local] [--docs]``
(about a minute on a 2-core machine).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import multiprocessing
import shutil
import statistics
import time
import timeit
from pathlib import Path
from typing import Any

from streamcite import stream_chat
from streamcite.bench import (
    BenchTarget,
    LoadSpec,
    LocalUpstream,
    build_results,
    run_sweep,
    summarize,
    write_results,
)
from streamcite.core.api import ChatStreamParser
from streamcite.events import TokenEvent
from streamcite.logs import configure_logging

QUESTION = "How many days of remote work are allowed per week?"
ROOT = Path(__file__).resolve().parent.parent


# -- 1. overhead against a known delay ------------------------------------------------


async def fixed_delay_overhead() -> list[dict[str, Any]]:
    """TTFT and inter-token latency measured against 100 ms / 10 ms injected delays."""
    config = {"first_token_delay": 0.1, "token_delay": 0.01}
    rows = []
    async with LocalUpstream(config) as upstream:
        target = BenchTarget(upstream.base_url, extra_body={"max_tokens": 20})
        loads = [LoadSpec(40, 1, warmup=3), LoadSpec(64, 16, warmup=16)]
        for run in await run_sweep(target, [QUESTION], loads):
            s = summarize(run)
            rows.append(
                {
                    "concurrency": run.load.concurrency,
                    "ttft_p50": s["ttft_ms"]["p50"],
                    "ttft_p99": s["ttft_ms"]["p99"],
                    "itl_p50": s["itl_ms"]["p50"],
                    "itl_p99": s["itl_ms"]["p99"],
                    "lag_p99": s["client"]["loop_lag_ms"]["p99"],
                    "ok": s["ok"],
                    "requests": s["requests"],
                }
            )
    return rows


# -- 2. delivery latency per token, with a stamping server ----------------------------


def _stamping_server(conn: Any, token_delay: float, tokens: int) -> None:
    asyncio.run(_serve_stamps(conn, token_delay, tokens))


async def _serve_stamps(conn: Any, token_delay: float, tokens: int) -> None:
    from aiohttp import web

    head = b'data: {"id":"c1","object":"chat.completion.chunk","model":"stamp","choices":'

    async def chat(request: web.Request) -> web.StreamResponse:
        arrival = time.perf_counter()
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(tokens):
            if i:
                await asyncio.sleep(token_delay)
                stamp = b"%.9f" % time.perf_counter()
            else:  # the first token also tells when the request arrived
                stamp = b"%.9f/%.9f" % (arrival, time.perf_counter())
            await resp.write(
                head
                + b'[{"index":0,"delta":{"content":"'
                + stamp
                + b'"},"finish_reason":null}]}\n\n'
            )
        await resp.write(
            head + b'[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
        )
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    conn.send(f"http://127.0.0.1:{port}/v1")
    with contextlib.suppress(EOFError):
        await asyncio.to_thread(conn.recv)
    await runner.cleanup()


async def delivery_latency(
    concurrency: int, requests: int = 48, tokens: int = 50
) -> dict[str, Any]:
    """Where the time goes, in µs (p50, p99): server write() → the measuring code sees
    the token (every token), and for the first token the request leg (client send →
    server handler), the server's handler and the response leg."""
    import aiohttp

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_stamping_server, args=(child, 0.005, tokens), daemon=True)
    proc.start()
    child.close()  # so that a crashed child reads as EOF at once
    try:
        if not await asyncio.to_thread(parent.poll, 30):
            raise RuntimeError("stamping server did not start")
        base_url = parent.recv()
        lags: list[float] = []
        # send, aiohttp starts, request written, server handler, first write, seen
        firsts: list[tuple[float, ...]] = []
        perf = time.perf_counter
        # aiohttp's trace hooks run in the task that sent the request: a context variable
        # ties them to that request, whatever the concurrency.
        hooks: contextvars.ContextVar[list[float]] = contextvars.ContextVar("hooks")

        async def stamp_hook(*_: Any) -> None:
            hooks.get().append(perf())

        trace = aiohttp.TraceConfig()
        trace.on_request_start.append(stamp_hook)
        trace.on_request_chunk_sent.append(stamp_hook)

        async def one(session: aiohttp.ClientSession) -> None:
            seen: list[tuple[float, str]] = []
            add = seen.append
            client_stamps: list[float] = []
            hooks.set(client_stamps)
            async with stream_chat(
                {"model": "stamp", "messages": [{"role": "user", "content": "x"}], "stream": True},
                base_url=base_url,
                transport="aiohttp",
                session=session,
            ) as stream:
                sent = perf()  # where the bench runner takes its t0
                async for ev in stream:
                    if type(ev) is TokenEvent:
                        add((perf(), ev.text))  # same bookkeeping as the bench runner
            arrival, _, first_write = seen[0][1].partition("/")
            started, written = client_stamps[0], client_stamps[-1]
            firsts.append((sent, started, written, float(arrival), float(first_write), seen[0][0]))
            seen[0] = (seen[0][0], first_write)
            lags.extend((t - float(text)) * 1e6 for t, text in seen)

        async with aiohttp.ClientSession(trace_configs=[trace]) as session:
            # Warm-up: one connection per worker, first-call costs.
            await asyncio.gather(*(one(session) for _ in range(concurrency)))
            lags.clear()
            firsts.clear()
            queue = iter(range(requests))

            async def worker() -> None:
                for _ in queue:
                    await one(session)

            await asyncio.gather(*(worker() for _ in range(concurrency)))

        def p50_p99(values: list[float]) -> tuple[float, float]:
            qs = statistics.quantiles(values, n=100, method="inclusive")
            return qs[49], qs[98]

        return {
            "concurrency": concurrency,
            "n": len(lags),
            "delivery": p50_p99(lags),
            "pipeline_prep": p50_p99([(f[1] - f[0]) * 1e6 for f in firsts]),
            "aiohttp_send": p50_p99([(f[2] - f[1]) * 1e6 for f in firsts]),
            "to_handler": p50_p99([(f[3] - f[2]) * 1e6 for f in firsts]),
            "server": p50_p99([(f[4] - f[3]) * 1e6 for f in firsts]),
            "first_delivery": p50_p99([(f[5] - f[4]) * 1e6 for f in firsts]),
            "ttft": p50_p99([(f[5] - f[0]) * 1e6 for f in firsts]),
        }
    finally:
        parent.send("stop")
        await asyncio.to_thread(proc.join, 5)
        if proc.is_alive():
            proc.terminate()


# -- 3. CPU per token ------------------------------------------------------------------


def bookkeeping_ns() -> float:
    """The runner's per-token work: one perf_counter() and one list.append()."""
    perf = time.perf_counter
    stamps: list[float] = []
    add = stamps.append
    n = 1_000_000
    best = min(timeit.repeat(lambda: add(perf()), number=n, repeat=5))
    return best / n * 1e9


def parse_us_per_chunk() -> float:
    """streamcite's core on one content chunk shaped like the local backend's."""
    chunk = (
        b'data: {"id":"chatcmpl-0123456789abcdef01234567","object":"chat.completion.chunk",'
        b'"created":1764672000,"model":"streamcite-local","choices":[{"index":0,"delta":'
        b'{"content":" remote"},"logprobs":null,"finish_reason":null}]}\n\n'
    )
    n = 20_000
    times = []
    for _ in range(5):
        parser = ChatStreamParser()
        feed = parser.feed
        t0 = time.perf_counter()
        for _ in range(n):
            feed(chunk)
        times.append(time.perf_counter() - t0)
    return min(times) / n * 1e6


# -- 4. the demo sweep (README plots) --------------------------------------------------


async def demo_sweep(out: Path) -> dict[str, Any]:
    from streamcite.enrich import LocalGrounding, WikitSources

    config = {"first_token_delay": 0.15, "token_delay": 0.01, "faults": "sources_delay=0.05"}
    async with (
        LocalUpstream(config) as upstream,
        WikitSources("demo-app", "demo-org", base_url=upstream.root_url) as wikit,
    ):
        target = BenchTarget(upstream.base_url, extra_body={"max_tokens": 30})
        loads = [LoadSpec(24, 1, warmup=2), LoadSpec(32, 4, warmup=4), LoadSpec(48, 16, warmup=16)]
        questions = [
            QUESTION,
            "What does the travel and expenses policy reimburse?",
            "Quelles sont les règles du télétravail ?",
            "Quante ferie spettano ai dipendenti?",
        ]
        runs = await run_sweep(
            target,
            questions,
            loads,
            enrichers=[wikit, LocalGrounding(facts_from="both")],
        )
    doc = build_results(
        runs,
        {
            "upstream": "local",
            "local_mode": "process",
            "backend": config,
            "max_tokens": 30,
            "sources": "wikit (local)",
            "grounding": "local",
            "grounding_facts": "both",
        },
    )
    write_results(doc, out)
    from streamcite.bench.plots import write_plots

    write_plots(doc, out)
    return doc


async def main_async(out: Path, docs: bool) -> None:
    configure_logging("WARNING")
    print("1. overhead against injected delays (first token 100 ms, then 10 ms per token)")
    for row in await fixed_delay_overhead():
        print(
            f"   concurrency {row['concurrency']:>2}: TTFT p50 {row['ttft_p50']:.2f} ms "
            f"(+{row['ttft_p50'] - 100:.2f}), p99 {row['ttft_p99']:.2f} ms; "
            f"inter-token p50 {row['itl_p50']:.3f} ms (+{row['itl_p50'] - 10:.3f}), "
            f"p99 {row['itl_p99']:.2f} ms; loop lag p99 {row['lag_p99']:.2f} ms; "
            f"ok {row['ok']}/{row['requests']}"
        )
    print("2. stamping server: where the time goes (µs, p50 / p99)")
    for c in (1, 16):
        d = await delivery_latency(c)
        print(f"   concurrency {c:>2} ({d['n']} tokens):")
        for key, label in (
            ("delivery", "server write() → token seen, every token"),
            ("ttft", "TTFT (no delay at all), of which:"),
            ("pipeline_prep", "  client: stream_chat → aiohttp starts"),
            ("aiohttp_send", "  client: aiohttp starts → request written"),
            ("to_handler", "  loopback + server HTTP parsing"),
            ("server", "  server handler → first write()"),
            ("first_delivery", "  first write() → token seen by the client"),
        ):
            p50, p99 = d[key]
            print(f"     {label:<42} {p50:7.0f} / {p99:7.0f}")
    print("3. client CPU per token")
    print(f"   bench bookkeeping (perf_counter + append): {bookkeeping_ns():.0f} ns")
    print(f"   core parse of one chunk (ChatStreamParser.feed): {parse_us_per_chunk():.2f} µs")
    print(f"4. demo sweep → {out}")
    doc = await demo_sweep(out)
    for run in doc["runs"]:
        s = run["summary"]
        print(
            f"   concurrency {run['load']['concurrency']:>2}: {s['throughput_rps']:.2f} req/s, "
            f"TTFT p50 {s['ttft_ms']['p50']:.1f} ms, citations p50 {s['citations_ms']['p50']:.1f} ms, "
            f"sources p50 {s['sources_ms']['p50']:.1f} ms, grounding p50 "
            f"{s['grounding_ms']['p50']:.1f} ms, total p99 {s['total_ms']['p99']:.1f} ms, "
            f"errors {_counts(s['errors_by_code'])}"
        )
    if docs:
        shutil.copyfile(out / "ttft_cdf.png", ROOT / "docs" / "bench-ttft-cdf.png")
        shutil.copyfile(out / "timeline-3.png", ROOT / "docs" / "bench-timeline.png")
        print("   copied docs/bench-ttft-cdf.png and docs/bench-timeline.png")
    print(f"   machine: {_machine(doc['machine'])}")


def _counts(by_code: dict[str, int]) -> str:
    """``{"timeout": 2}`` → ``timeout ×2`` (``none`` when empty)."""
    return ", ".join(f"{code} ×{n}" for code, n in sorted(by_code.items())) or "none"


def _memory(total: str | None) -> str:
    """``"24683584 kB"`` (as /proc/meminfo says) → ``"23.5 GiB"``."""
    number, _, unit = (total or "").partition(" ")
    if not number.isdigit() or unit.lower() != "kb":
        return total or "unknown"
    return f"{int(number) / 1024**2:.1f} GiB"


def _machine(m: dict[str, Any]) -> str:
    """One line a person reads: OS, CPU, cores, memory, load."""
    load = m.get("loadavg")
    parts = [
        f"{m.get('system')} {m.get('release')} {m.get('machine')}",
        str(m.get("cpu_model") or "unknown CPU"),
        f"{m.get('cpu_usable')}/{m.get('cpu_count')} cores usable",
        f"memory {_memory(m.get('memory_total'))}",
        f"load {' '.join(f'{x:.2f}' for x in load)}" if load else "load unknown",
    ]
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench-local"))
    parser.add_argument("--docs", action="store_true", help="copy two plots into docs/")
    args = parser.parse_args()
    asyncio.run(main_async(args.out, args.docs))


if __name__ == "__main__":
    main()
