"""Time to first token on loopback: streamcite versus raw aiohttp + orjson (and peers).

A local aiohttp server answers each POST with an SSE stream whose first content
chunk is written immediately. Each client measures request start → first token
text in hand, with a reused connection pool (as a chat backend would), in
interleaved rounds:

  raw aiohttp + orjson         the floor: read, split on blank lines, orjson.loads
  streamcite (aiohttp)         stream_chat(transport="aiohttp", session=...)
  streamcite (httpx)           stream_chat(transport="httpx", session=...)
  httpx-sse + orjson           aconnect_sse + aiter_sse
  openai SDK                   AsyncOpenAI(...).chat.completions.create(stream=True)

Prints median / p90 in ms and the median added over raw aiohttp.
Run: ``.venv/bin/python benchmarks/bench_ttft.py [--requests 300]``; ``--telemetry`` adds
streamcite with OpenTelemetry on (and on with ``traceparent`` sent), interleaved with the
others: the TTFT cost of tracing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

import aiohttp
import httpx
import orjson
from aiohttp import web

REQ = {"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": True}


def _chunk(content: str | None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    body = {
        "id": "chatcmpl-ttft",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


FIRST = _chunk("Hello")
REST = (
    b"".join(_chunk(w) for w in [" world", " [1]", "."])
    + _chunk(None, "stop")
    + b"data: [DONE]\n\n"
)


async def handler(request: web.Request) -> web.StreamResponse:
    await request.read()
    resp = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
    )
    await resp.prepare(request)
    await resp.write(FIRST)
    await resp.write(REST)
    return resp


def _telemetry(propagate: bool) -> object:
    """streamcite's OpenTelemetry implementation over SDK providers (spans batched to
    memory, metrics to an in-memory reader), as an application that traces would run it."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from streamcite.telemetry.otel import OtelTelemetry

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return OtelTelemetry(
        tracer_provider=tracer_provider, meter_provider=meter_provider, propagate=propagate
    )


async def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument(
        "--telemetry",
        action="store_true",
        help="add streamcite with OpenTelemetry on (SDK providers, batch export to memory)",
    )
    ap.add_argument(
        "--only-streamcite", action="store_true", help="skip httpx-sse and the openai SDK"
    )
    args = ap.parse_args()

    import openai

    from streamcite import stream_chat
    from streamcite.events import TokenEvent
    from streamcite.logs import configure_logging

    configure_logging("WARNING")  # as a production app would: info lines filtered out

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    base = f"http://127.0.0.1:{port}/v1"
    url = base + "/chat/completions"
    body = orjson.dumps(REQ)

    session = aiohttp.ClientSession()
    client = httpx.AsyncClient()
    oai = openai.AsyncOpenAI(api_key="x", base_url=base, http_client=httpx.AsyncClient())

    async def raw_aiohttp() -> str:
        async with session.post(
            url, data=body, headers={"Content-Type": "application/json"}
        ) as resp:
            buf = b""
            async for data in resp.content.iter_any():
                buf += data
                while (i := buf.find(b"\n\n")) != -1:
                    block, buf = buf[:i], buf[i + 2 :]
                    obj = orjson.loads(block[6:])
                    text: str = obj["choices"][0]["delta"].get("content")
                    if text:
                        return text
        raise AssertionError("no token")

    in_hand: list[float] = []
    """When streamcite's first token was in hand (before the stream is closed)."""

    def streamcite_with(transport: str, sess: object) -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            async with stream_chat(REQ, base_url=base, transport=transport, session=sess) as s:
                async for ev in s:
                    if type(ev) is TokenEvent:
                        in_hand.append(time.perf_counter())
                        return ev.text
            raise AssertionError("no token")

        return run

    async def httpx_sse_orjson() -> str:
        import httpx_sse

        async with httpx_sse.aconnect_sse(client, "POST", url, content=body) as es:
            async for sse in es.aiter_sse():
                text: str = orjson.loads(sse.data)["choices"][0]["delta"].get("content")
                if text:
                    return text
        raise AssertionError("no token")

    async def openai_sdk() -> str:
        stream = await oai.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "q"}], stream=True
        )
        try:
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    return chunk.choices[0].delta.content
        finally:
            await stream.close()
        raise AssertionError("no token")

    def with_telemetry(
        run: Callable[[], Awaitable[str]], tel: object
    ) -> Callable[[], Awaitable[str]]:
        async def traced() -> str:
            from streamcite.telemetry import switch

            switch.install(tel)  # type: ignore[arg-type]
            try:
                return await run()
            finally:
                switch.install(None)

        return traced

    clients: dict[str, Callable[[], Awaitable[str]]] = {
        "raw aiohttp + orjson": raw_aiohttp,
        "streamcite (aiohttp transport)": streamcite_with("aiohttp", session),
        "streamcite (httpx transport)": streamcite_with("httpx", client),
        "httpx-sse + orjson": httpx_sse_orjson,
        "openai SDK": openai_sdk,
    }
    if args.telemetry:
        tracing, propagating = _telemetry(propagate=False), _telemetry(propagate=True)
        aio = streamcite_with("aiohttp", session)
        clients["streamcite (aiohttp), otel on"] = with_telemetry(aio, tracing)
        clients["streamcite (aiohttp), otel + traceparent"] = with_telemetry(aio, propagating)
    if args.only_streamcite:
        clients = {k: v for k, v in clients.items() if k.startswith(("raw", "streamcite (aio"))}
    samples: dict[str, list[float]] = {k: [] for k in clients}
    for _ in range(20):  # warm-up: connections, imports
        for fn in clients.values():
            assert await fn() == "Hello"
    hand: dict[str, list[float]] = {k: [] for k in clients if k.startswith("streamcite")}
    for _ in range(args.requests):
        for k, fn in clients.items():
            in_hand.clear()
            t0 = time.perf_counter()
            await fn()
            samples[k].append((time.perf_counter() - t0) * 1000)
            if in_hand:
                hand[k].append((in_hand[0] - t0) * 1000)
    floor = statistics.median(samples["raw aiohttp + orjson"])
    print(
        f"\nTime to first token on loopback, {args.requests} interleaved requests each, pooled connections"
    )
    print(f"{'client':32} {'median ms':>10} {'p90 ms':>8} {'added vs raw':>13}")
    for k, v in samples.items():
        med = statistics.median(v)
        p90 = statistics.quantiles(v, n=10)[-1]
        print(f"{k:32} {med:10.3f} {p90:8.3f} {med - floor:+12.3f}")

    print("\nstreamcite, token in hand (the time above also closes the stream)")
    base = statistics.median(hand["streamcite (aiohttp transport)"])
    for k, v in hand.items():
        med = statistics.median(v)
        p90 = statistics.quantiles(v, n=10)[-1]
        print(f"{k:42} {med:10.3f} {p90:8.3f} {med - base:+12.3f}")

    await session.close()
    await client.aclose()
    await oai.close()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
