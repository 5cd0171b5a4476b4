"""After-the-stream latency: finish chunk → ``done`` with Wikit sources and a Google check.

Two server processes (each its own event loop, like real remote services) on
127.0.0.1: a sources server (the chat stream, sent at once with citations on the
finish chunk, and Wikit quoted sources answering in 50 ms) and a grounding server
(Google's check answering in 80 ms).
The client runs ``stream_chat(after=[WikitSources, GoogleGrounding])`` and measures,
as a consumer sees it, the time from the ``finish`` event to the ``done`` event.

If the two enrichers run concurrently, finish → done is the slowest (80 ms) plus a
little; run one after the other it would be 130 ms. Target: ≤ 80 ms + 2 ms.

Scenarios (interleaved, one warm-up run each):
  both        sources ∥ grounding (facts from the citations)           target ≈ 80 ms
  chained     grounding from the Wikit sources (waits by design)       ≈ 50 + 80 ms
  floor       a bare aiohttp POST to the 80 ms endpoint (no streamcite)
  floor_pair  a bare GET and a bare POST at once (asyncio.gather): what the server, the
              loopback and the event loop cost on their own for the concurrent case, so
              streamcite's own cost can be told from the timers' and the machine's

Run: ``.venv/bin/python benchmarks/bench_enrich.py [--runs 50] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing as mp
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SOURCES_MS = 50
GROUNDING_MS = 80
TARGET_OVERHEAD_MS = 2.0
APP = "bench-app"
ORG = "bench-org"
CONFIG = "projects/bench/locations/global/groundingConfigs/default_grounding_config"

CITATIONS = [
    {
        "cited_text": f"Passage {i}: le télétravail est autorisé {i + 1} jours par semaine.",
        "document_title": f"Charte {i}",
        "document_index": i,
        "document_author": "DRH",
        "source_url": f"https://example.org/doc/{i}",
    }
    for i in range(5)
]
SOURCES = [
    {
        "quoted_as": str(i + 1),
        "document": {"id": f"d{i}", "name": f"charte_{i}.pdf", "title": None, "url": None},
        "chunk": {
            "id": f"c{i}",
            "data": c["cited_text"],
            "position": i,
            "page_start": i,
            "page_end": i,
        },
        "data_source": {"id": "ds", "name": "Ressources Humaines"},
        "score": 0.8,
        "retriever_type": "SEMANTIC_SEARCH",
    }
    for i, c in enumerate(CITATIONS)
]
WORDS = ["Le", " télétravail", " est", " autorisé", " deux", " jours", " [1]", "."]


def chat_stream() -> bytes:
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = []
    for i in range(60):
        word = WORDS[i % len(WORDS)]
        if word == " [1]":
            word = f" [{(i // len(WORDS)) % 5 + 1}]"
        choice = {"index": 0, "delta": {"content": word}, "finish_reason": None}
        out.append(b"data: " + orjson.dumps({**base, "choices": [choice]}) + b"\n\n")
    fin = {
        **base,
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "citations": CITATIONS,
    }
    out.append(b"data: " + orjson.dumps(fin) + b"\n\ndata: [DONE]\n\n")
    return b"".join(out)


def check_reply(body: dict[str, Any]) -> bytes:
    answer = body["answerCandidate"]
    n = len(answer.encode())
    chunks = [
        {"chunkText": f["factText"], "source": str(i)} for i, f in enumerate(body["facts"][:2])
    ]
    claims = [{"claimText": answer, "endPos": n, "citationIndices": list(range(len(chunks)))}]
    return orjson.dumps({"citedChunks": chunks, "claims": claims, "supportScore": 0.9})


# -- the server process ---------------------------------------------------------------


async def precise_sleep(seconds: float) -> None:
    """Sleep ``seconds`` to ~0.1 ms: asyncio's timers wake up to 1 ms late (epoll's
    millisecond timeout is rounded up), once per timer, so a server with two pending
    replies would answer its "80 ms" at ~81-82 ms. A thread's sleep is precise and
    wakes the loop at once; the emulated service then takes the time it claims."""
    await asyncio.get_running_loop().run_in_executor(None, time.sleep, seconds)


def serve(port_out: Any, role: str) -> None:
    """One server process: ``sources`` (chat stream + Wikit) or ``grounding`` (Google)."""
    from aiohttp import web

    stream = chat_stream()
    sources = orjson.dumps(SOURCES)

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(stream)
        await resp.write_eof()
        return resp

    async def quoted_sources(request: web.Request) -> web.Response:
        await precise_sleep(SOURCES_MS / 1000)
        return web.Response(body=sources, content_type="application/json")

    async def check(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        await precise_sleep(GROUNDING_MS / 1000)
        return web.Response(body=check_reply(body), content_type="application/json")

    async def main() -> None:
        app = web.Application()
        if role == "sources":
            app.router.add_post("/v1/chat/completions", chat)
            app.router.add_get(
                "/semantics/apps/{app}/query-execution-sources/{q}/get-quoted-sources",
                quoted_sources,
            )
        else:
            app.router.add_post(f"/v1/{CONFIG}:check", check)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_out.send(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


# -- the client -----------------------------------------------------------------------


async def one_run(base: str, session: Any, after: list[Any]) -> float:
    from streamcite import stream_chat
    from streamcite.events import DoneEvent, FinishEvent

    request = {"model": "m", "messages": [{"role": "user", "content": "?"}], "stream": True}
    t_finish = t_done = 0.0
    async with stream_chat(
        request, base_url=base + "/v1", transport="aiohttp", session=session, after=after
    ) as stream:
        async for ev in stream:
            if isinstance(ev, FinishEvent):
                t_finish = time.perf_counter()
            elif isinstance(ev, DoneEvent):
                t_done = time.perf_counter()
                answer = ev.answer
    if answer.errors or not answer.sources or answer.grounding is None:
        raise RuntimeError(f"bad run: errors={answer.errors}")
    return (t_done - t_finish) * 1000


async def floor_run(base: str, session: Any) -> float:
    """A bare aiohttp POST to the grounding server."""
    body = orjson.dumps({"answerCandidate": "x.", "facts": [{"factText": "x"}]})
    t0 = time.perf_counter()
    async with session.post(f"{base}/v1/{CONFIG}:check", data=body) as resp:
        await resp.read()
    return (time.perf_counter() - t0) * 1000


async def floor_pair_run(base: str, sources_base: str, session: Any) -> float:
    """Both bare requests at once (asyncio.gather): the floor for the concurrent case."""
    body = orjson.dumps({"answerCandidate": "x.", "facts": [{"factText": "x"}]})

    async def post() -> None:
        async with session.post(f"{base}/v1/{CONFIG}:check", data=body) as resp:
            await resp.read()

    async def get() -> None:
        url = f"{sources_base}/semantics/apps/{APP}/query-execution-sources/q/get-quoted-sources"
        async with session.get(url) as resp:
            await resp.read()

    t0 = time.perf_counter()
    await asyncio.gather(get(), post())
    return (time.perf_counter() - t0) * 1000


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


async def bench(base: str, google_base: str, runs: int) -> dict[str, list[float]]:
    import aiohttp

    from streamcite.enrich.google import GoogleGrounding
    from streamcite.enrich.wikit import WikitSources

    results: dict[str, list[float]] = {
        "both": [],
        "chained": [],
        "floor": [],
        "floor_pair": [],
    }
    async with (
        aiohttp.ClientSession() as session,
        WikitSources(APP, ORG, base_url=base) as wikit,
        GoogleGrounding(CONFIG, token="bench", endpoint=google_base) as google,
        GoogleGrounding(
            CONFIG, token="bench", endpoint=google_base, facts_from="sources"
        ) as chained,
    ):
        scenarios: dict[str, Callable[[], Awaitable[float]]] = {
            "both": lambda: one_run(base, session, [wikit, google]),
            "chained": lambda: one_run(base, session, [wikit, chained]),
            "floor": lambda: floor_run(google_base, session),
            "floor_pair": lambda: floor_pair_run(google_base, base, session),
        }
        for run in scenarios.values():
            await run()  # warm-up: connections, imports, caches
        for _ in range(runs):
            for name, run in scenarios.items():
                results[name].append(await run())
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    # Library logs go nowhere above WARNING: printing them would be measured too.
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    ctx = mp.get_context("spawn")
    servers, bases = [], []
    try:
        for role in ("sources", "grounding"):
            parent, child = ctx.Pipe()
            server = ctx.Process(target=serve, args=(child, role), daemon=True)
            server.start()
            servers.append(server)
            if not parent.poll(30):
                raise SystemExit(f"the {role} server did not start")
            bases.append(f"http://127.0.0.1:{parent.recv()}")
        results = asyncio.run(bench(bases[0], bases[1], args.runs))
    finally:
        for server in servers:
            server.terminate()
            server.join(5)

    figures = {
        name: {
            "p50_ms": round(pct(v, 0.5), 2),
            "p90_ms": round(pct(v, 0.9), 2),
            "mean_ms": round(statistics.fmean(v), 2),
            "min_ms": round(min(v), 2),
        }
        for name, v in results.items()
    }
    both, pair = figures["both"], figures["floor_pair"]
    if args.json:
        print(orjson.dumps({"runs": args.runs, "figures": figures}).decode())
        return
    print(f"finish → done, {args.runs} runs (sources {SOURCES_MS} ms, grounding {GROUNDING_MS} ms)")
    labels = {
        "both": "streamcite: sources ∥ grounding",
        "chained": "streamcite: grounding from sources",
        "floor": "floor: bare POST (80 ms endpoint)",
        "floor_pair": "floor: bare GET ∥ POST (gather)",
    }
    for name, f in figures.items():
        print(
            f"  {labels[name]:<36} p50 {f['p50_ms']:7.2f} ms   p90 {f['p90_ms']:7.2f} ms"
            f"   min {f['min_ms']:7.2f} ms"
        )
    over = both["p50_ms"] - GROUNDING_MS
    verdict = "met" if over <= TARGET_OVERHEAD_MS else "NOT met"
    print(
        f"over {GROUNDING_MS} ms: p50 {over:+.2f} ms, p90 {both['p90_ms'] - GROUNDING_MS:+.2f} ms"
        f" (target +{TARGET_OVERHEAD_MS:.0f} ms: {verdict})"
    )
    print(
        f"streamcite's own cost over the same two bare requests: "
        f"p50 {both['p50_ms'] - pair['p50_ms']:+.2f} ms, min {both['min_ms'] - pair['min_ms']:+.2f} ms"
    )


if __name__ == "__main__":
    main()
