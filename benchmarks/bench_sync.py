"""Time to first token: ``stream_chat_sync`` (from a plain thread) versus ``stream_chat``.

One loopback aiohttp upstream on its own thread answers each POST with an SSE stream
whose first content chunk is written at once. In interleaved rounds, each client
measures call → first token event in hand, then reads the rest:

  async   stream_chat(...) on an event loop in the main thread
  sync    stream_chat_sync(...) from the main thread (the pipeline runs on its
          private loop thread; events cross through a bounded queue)

Both make a fresh connection per stream (as each does by default). Prints median and
p90 in ms and the median the sync twin adds. Run:
``.venv/bin/python benchmarks/bench_sync.py [--requests 300]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time

from aiohttp import web

from streamcite import stream_chat, stream_chat_sync

CHUNKS = [
    b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hello"}}]}\n\n',
    b'data: {"id":"c","choices":[{"index":0,"delta":{"content":" world [1]."}}]}\n\n',
    b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
    b'"citations":[{"cited_text":"Hello world.","document_index":0}]}\n\n',
    b"data: [DONE]\n\n",
]
REQUEST = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def start_upstream() -> str:
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    url: list[str] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for c in CHUNKS:
            await resp.write(c)
        await resp.write_eof()
        return resp

    def run() -> None:
        asyncio.set_event_loop(loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        url.append(f"http://127.0.0.1:{runner.addresses[0][1]}/v1")
        ready.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    if not ready.wait(10):
        raise SystemExit("upstream did not start")
    return url[0]


async def async_ttft(base_url: str) -> float:
    t0 = time.perf_counter()
    first = 0.0
    async with stream_chat(REQUEST, base_url=base_url) as s:
        async for ev in s:
            if ev.type == "token" and not first:
                first = time.perf_counter() - t0
    return first * 1000


def sync_ttft(base_url: str) -> float:
    t0 = time.perf_counter()
    first = 0.0
    with stream_chat_sync(REQUEST, base_url=base_url) as s:
        for ev in s:
            if ev.type == "token" and not first:
                first = time.perf_counter() - t0
    return first * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=300)
    args = ap.parse_args()
    base_url = start_upstream()
    loop = asyncio.new_event_loop()
    for _ in range(20):  # warm both paths (imports, the sync loop thread)
        loop.run_until_complete(async_ttft(base_url))
        sync_ttft(base_url)
    a: list[float] = []
    s: list[float] = []
    for _ in range(args.requests):  # interleaved: the machine's noise hits both
        a.append(loop.run_until_complete(async_ttft(base_url)))
        s.append(sync_ttft(base_url))

    def p90(xs: list[float]) -> float:
        return sorted(xs)[int(len(xs) * 0.9) - 1]

    print(f"time to first token over loopback, {args.requests} streams each, interleaved")
    print(f"{'client':<22}{'median ms':>10}{'p90 ms':>10}")
    print(f"{'stream_chat (async)':<22}{statistics.median(a):>10.3f}{p90(a):>10.3f}")
    print(f"{'stream_chat_sync':<22}{statistics.median(s):>10.3f}{p90(s):>10.3f}")
    added = statistics.median(s) - statistics.median(a)
    print(
        f"sync adds {added:+.3f} ms at the median ({statistics.median(s) / statistics.median(a):.2f}x)"
    )


if __name__ == "__main__":
    main()
