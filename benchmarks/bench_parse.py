"""Parse throughput: µs per chunk of a Magisterium-style stream, side by side.

One process, interleaved rounds, the stream fed from memory in 4 KiB pieces:

  (a) floor      split on blank lines + orjson.loads + read delta.content
  (b) httpx-sse  httpx-sse's EventSource over an httpx MockTransport + orjson
  (c) openai     the openai SDK's AsyncStream over an httpx MockTransport
  (d) streamcite streamcite.aiter_events (SSE decode, chunk interpretation,
                 live footnotes, answer accumulation), one async step per event
  (e) streamcite the same core fed per read (ChatStreamParser.feed → list of
                 events), as the pipeline uses it

Prints the best (minimum) µs/chunk of the rounds — on a shared machine the
minimum is the run least disturbed by other processes — and the median beside
it, the ratio of the minima to the floor, the speed-up over the openai SDK and
``round ×``: the median over rounds of each run's ratio to that round's floor run
(steadier when the machine's speed drifts), then the peak memory (tracemalloc)
per implementation.

Run: ``.venv/bin/python benchmarks/bench_parse.py [--rounds 7] [--sizes 2000 20000]``
(``--impls a d e`` runs only those implementations; ``--no-memory`` skips the
tracemalloc pass.) (f) and (g) run the whole pipeline (``stream_chat`` over an
in-memory transport) with OpenTelemetry off and on: the per-event cost of tracing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import tracemalloc
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import orjson

READ = 4096

CITATIONS = [
    {
        "cited_text": f"{i}. Passage {i} of the cited document, long enough to look like a real quote.",
        "cited_text_heading": f"Chapter {i}",
        "document_title": f"Document {i}",
        "document_index": i,
        "document_author": "Conferenza dei Vescovi",
        "document_year": "2004",
        "document_reference": str(30 + i),
        "source_url": f"https://example.org/doc/{i}",
    }
    for i in range(5)
]


VARIED = [
    "L'insegnamento",
    ' "della"',
    " Chiesa",
    " è",
    " שלום",
    " naïve",
    " 🙏",
    " [1]",
    " São",
    " \\path",
    " ‘quoted’",
    " 日本",
    ".",
]
"""Words with quotes, backslashes, accents, Hebrew, CJK and emoji: escapes and
non-ASCII UTF-8 in the JSON, wide characters in the answer."""


def make_stream(n: int, footnotes: bool | str = True, words: list[str] | None = None) -> bytes:
    base = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1630000000,
        "model": "magisterium-1",
    }
    words = words or [
        "L'insegnamento",
        " della",
        " Chiesa",
        " è",
        " radicato",
        " nella",
        " Scrittura",
        " [1]",
        ".",
    ]
    out = []
    for i in range(n):
        word = words[i % len(words)]
        if word == " [1]":
            word = f" [{(i // len(words)) % 5 + 1}]" if footnotes else " sempre"
        elif footnotes == "dense" and i % 3 == 0:
            word += f" [{i % 5 + 1}]"
        choice = {"index": 0, "delta": {"content": word}, "finish_reason": None}
        out.append(b"data: " + orjson.dumps({**base, "choices": [choice]}) + b"\n\n")
    fin = {
        **base,
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "citations": CITATIONS,
    }
    out.append(b"data: " + orjson.dumps(fin) + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def pieces(data: bytes) -> list[bytes]:
    return [data[i : i + READ] for i in range(0, len(data), READ)]


async def agen(parts: list[bytes]) -> AsyncIterator[bytes]:
    for p in parts:
        yield p


# -- the four implementations --------------------------------------------------------


async def floor(parts: list[bytes]) -> int:
    buf = b""
    n = 0
    loads = orjson.loads
    async for piece in agen(parts):
        buf += piece
        blocks = buf.split(b"\n\n")
        buf = blocks.pop()
        for block in blocks:
            payload = block[6:]
            if payload == b"[DONE]":
                continue
            obj = loads(payload)
            for ch in obj["choices"]:
                if ch["delta"].get("content"):
                    n += 1
    return n


def _mock_client(parts: list[bytes]) -> httpx.AsyncClient:
    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for p in parts:
                yield p

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Body())

    return httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://bench")


async def httpx_sse_orjson(parts: list[bytes]) -> int:
    import httpx_sse

    n = 0
    async with (
        _mock_client(parts) as client,
        httpx_sse.aconnect_sse(client, "POST", "/v1/chat/completions") as es,
    ):
        async for sse in es.aiter_sse():
            if sse.data == "[DONE]":
                continue
            obj = orjson.loads(sse.data)
            for ch in obj["choices"]:
                if ch["delta"].get("content"):
                    n += 1
    return n


async def openai_sdk(parts: list[bytes]) -> int:
    import openai

    n = 0
    async with _mock_client(parts) as http:
        client = openai.AsyncOpenAI(api_key="x", base_url="http://bench/v1", http_client=http)
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "q"}], stream=True
        )
        async for chunk in stream:
            for ch in chunk.choices:
                if ch.delta.content:
                    n += 1
    return n


async def streamcite_events(parts: list[bytes]) -> int:
    from streamcite import aiter_events
    from streamcite.events import TokenEvent

    n = 0
    async for ev in aiter_events(agen(parts)):
        if type(ev) is TokenEvent:
            n += 1
    return n


async def streamcite_parser(parts: list[bytes]) -> int:
    """The same core work without one async-generator step per event: the parser
    is fed each 4 KiB read and returns that read's events as a list."""
    from streamcite.core.api import ChatStreamParser
    from streamcite.events import TokenEvent

    parser = ChatStreamParser()
    n = 0
    async for piece in agen(parts):
        for ev in parser.feed(piece):
            if type(ev) is TokenEvent:
                n += 1
    parser.close()
    return n


class _MemoryResponse:
    """An upstream response served from memory (the pipeline without a socket)."""

    status = 200
    headers: dict[str, str] = {"Content-Type": "text/event-stream"}  # noqa: RUF012
    content_type = "text/event-stream"

    def __init__(self, parts: list[bytes]) -> None:
        self._parts = parts

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        return agen(self._parts)

    async def read(self, limit: int = 1 << 20) -> bytes:
        return b"".join(self._parts)[:limit]

    async def aclose(self) -> None:
        return None


class _MemoryTransport:
    name = "memory"

    def __init__(self, parts: list[bytes]) -> None:
        self._parts = parts

    async def open(self, url: str, headers: Any, body: bytes, connect_timeout: Any) -> Any:
        return _MemoryResponse(self._parts)

    async def aclose(self) -> None:
        return None


_TELEMETRY: Any = None
"""The OpenTelemetry implementation (SDK providers, spans kept in memory), made once."""


def _telemetry() -> Any:
    global _TELEMETRY
    if _TELEMETRY is None:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from streamcite.telemetry.otel import OtelTelemetry

        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        _TELEMETRY = OtelTelemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    return _TELEMETRY


async def _pipeline(parts: list[bytes]) -> int:
    from streamcite import TokenEvent, stream_chat

    n = 0
    req = {"model": "m", "messages": [], "stream": True}
    async with stream_chat(
        req, base_url="http://127.0.0.1:9/v1", transport=_MemoryTransport(parts)
    ) as s:
        async for ev in s:
            if type(ev) is TokenEvent:
                n += 1
    return n


async def streamcite_pipeline(parts: list[bytes]) -> int:
    """(f) the whole pipeline (stream_chat over an in-memory transport), telemetry off."""
    return await _pipeline(parts)


async def streamcite_pipeline_otel(parts: list[bytes]) -> int:
    """(g) the same with OpenTelemetry tracing and metrics on (SDK, in-memory export)."""
    from streamcite.telemetry import switch

    switch.install(_telemetry())
    try:
        return await _pipeline(parts)
    finally:
        switch.install(None)


IMPLS: dict[str, Callable[[list[bytes]], Awaitable[int]]] = {
    "(a) floor: split + orjson": floor,
    "(b) httpx-sse + orjson": httpx_sse_orjson,
    "(c) openai SDK AsyncStream": openai_sdk,
    "(d) streamcite.aiter_events": streamcite_events,
    "(e) streamcite ChatStreamParser": streamcite_parser,
    "(f) stream_chat, telemetry off": streamcite_pipeline,
    "(g) stream_chat, telemetry on": streamcite_pipeline_otel,
}


async def timed(
    fn: Callable[[list[bytes]], Awaitable[int]], parts: list[bytes], expect: int
) -> float:
    gc.collect()
    t0 = time.perf_counter()
    got = await fn(parts)
    dt = time.perf_counter() - t0
    assert got == expect, f"{fn.__name__} saw {got} tokens, expected {expect}"
    return dt


async def peak_memory(fn: Callable[[list[bytes]], Awaitable[int]], parts: list[bytes]) -> int:
    gc.collect()
    tracemalloc.start()
    await fn(parts)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def floor_peak(parts: list[bytes]) -> int:
    """Peak traced memory of the floor's work, fed the same reads synchronously: its
    read buffer and each chunk's parse (orjson's buffer for the finish chunk is most
    of it: about 17 times the payload, 28 KiB for the 1.7 KB finish chunk here)."""
    gc.collect()
    tracemalloc.start()
    buf = b""
    loads = orjson.loads
    for piece in parts:
        buf += piece
        blocks = buf.split(b"\n\n")
        buf = blocks.pop()
        for block in blocks:
            payload = block[6:]
            if payload != b"[DONE]":
                loads(payload)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


async def bytes_per_char(parts: list[bytes]) -> tuple[int, int, int, int]:
    """Peak traced memory of ChatStreamParser, to its final answer (the input bytes are
    allocated before tracing); the answer text's own size and length; and the answer's
    number of citation refs (stored compactly: their ``CitationRef`` objects are made
    when ``citation_refs`` is first read, here after tracing)."""
    import sys

    from streamcite.core.api import ChatStreamParser

    gc.collect()
    tracemalloc.start()
    parser = ChatStreamParser()
    for piece in parts:
        parser.feed(piece)
    parser.close()
    answer = parser.builder.snapshot()
    text = answer.text
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, sys.getsizeof(text), len(text), len(answer.citation_refs)


async def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sizes", type=int, nargs="*", default=[2000, 20000])
    ap.add_argument(
        "--skip-openai-above", type=int, default=10**9, help="skip (c) for bigger streams"
    )
    ap.add_argument(
        "--without-footnotes",
        type=int,
        nargs="*",
        default=[20000],
        help="sizes also run with no footnote in the text (to show their cost)",
    )
    ap.add_argument(
        "--varied",
        type=int,
        nargs="*",
        default=[2000, 20000, 200000],
        help="sizes run on varied words (quotes, accents, Hebrew, emoji), plain and with "
        "dense footnotes (a marker every 3 tokens)",
    )
    ap.add_argument(
        "--impls",
        nargs="*",
        default=None,
        help="letters of the implementations to run (the floor, a, always runs)",
    )
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    args = ap.parse_args()
    wanted = set(args.impls or "abcde") | {"a"}

    runs: list[tuple[int, bool | str, list[str] | None]] = [(n, True, None) for n in args.sizes]
    runs += [(n, False, None) for n in args.without_footnotes]
    runs += [(n, f, VARIED) for n in args.varied for f in (False, "dense")]
    memory: dict[tuple[bool | str, bool], list[tuple[int, int]]] = defaultdict(list)
    speed_by_size: dict[tuple[tuple[bool | str, bool], str], list[tuple[int, float, float]]]
    speed_by_size = defaultdict(list)
    for n, footnotes, words in runs:
        parts = pieces(make_stream(n, footnotes, words))
        impls = {
            k: v
            for k, v in IMPLS.items()
            if k[1] in wanted and not (k.startswith("(c)") and n > args.skip_openai_above)
        }
        samples: dict[str, list[float]] = {k: [] for k in impls}
        for fn in impls.values():  # warm-up (imports, caches)
            await timed(fn, parts, n)
        for _ in range(args.rounds):  # interleaved: each round runs every implementation once
            for k, fn in impls.items():
                samples[k].append(await timed(fn, parts, n))
        best = {k: min(v) / n * 1e6 for k, v in samples.items()}
        med = {k: statistics.median(v) / n * 1e6 for k, v in samples.items()}
        floor_s = samples["(a) floor: split + orjson"]
        # The median of each round's ratio to the floor run just before it: on a shared
        # machine a slow spell hits both runs of a round, a spike only one round.
        round_ratio = {
            k: statistics.median(t / f for t, f in zip(v, floor_s, strict=True))
            for k, v in samples.items()
        }
        floor_us = best["(a) floor: split + orjson"]
        openai_us = best.get("(c) openai SDK AsyncStream")
        kind = "a footnote every 9 tokens" if footnotes else "no footnotes"
        if footnotes == "dense":
            kind = "dense footnotes, one every 3 tokens"
        if words is not None:
            kind = "varied words, " + kind
        print(
            f"\n{n:,} content chunks ({kind}) + 5-citation finish chunk, 4 KiB reads, "
            f"{args.rounds} interleaved rounds"
        )
        print(
            f"{'implementation':32} {'µs/chunk':>9} {'× floor':>8} {'openai ÷ this':>14}"
            f" {'median µs':>10} {'round ×':>8}"
        )
        for k, us in best.items():
            speed = f"{openai_us / us:13.1f}×" if openai_us else f"{'-':>14}"
            print(
                f"{k:32} {us:9.2f} {us / floor_us:7.2f}× {speed} {med[k]:10.2f}"
                f" {round_ratio[k]:7.2f}×"
            )
        kind_key = (footnotes, words is not None)
        for k in impls:
            if k.startswith(("(d)", "(e)")):
                speed_by_size[(kind_key, k)].append((n, best[k], round_ratio[k]))
        if args.no_memory:
            continue
        print(f"{'peak memory (tracemalloc)':32}")
        for k, fn in impls.items():
            peak = await peak_memory(fn, parts)
            print(f"  {k:30} {peak / 1024:9.0f} KiB")
        peak, text_size, chars, refs = await bytes_per_char(parts)
        fpeak = floor_peak(parts)
        print(
            f"  ChatStreamParser beyond the text: {(peak - text_size) / chars:.2f} bytes/char "
            f"({chars:,} chars, {refs:,} citation refs); beyond the text and the floor's "
            f"own peak ({fpeak / 1024:.0f} KiB): {(peak - text_size - fpeak) / chars:.2f}"
        )
        memory[kind_key].append((chars, peak - text_size))
    _print_flatness(speed_by_size)
    _print_scaling(memory)


def _kind(footnotes: bool | str, varied: bool) -> str:
    kind = "dense footnotes" if footnotes == "dense" else "footnotes" if footnotes else "plain"
    return kind + (" (varied words)" if varied else "")


def _print_flatness(
    speed: dict[tuple[tuple[bool | str, bool], str], list[tuple[int, float, float]]],
) -> None:
    """Flat in the stream's length: µs/chunk (best) and the round ratio to the floor at
    each size, and their spread (largest over smallest) across sizes."""
    for ((footnotes, varied), impl), points in speed.items():
        if len(points) < 2:
            continue
        us = [u for _, u, _ in points]
        ratios = [r for _, _, r in points]
        sizes = " / ".join(f"{n // 1000}k" for n, _, _ in points)
        print(
            f"flatness, {_kind(footnotes, varied)}, {impl[:3]} at {sizes}: µs/chunk "
            + " / ".join(f"{u:.2f}" for u in us)
            + f" (spread {max(us) / min(us) - 1:.1%}); round × "
            + " / ".join(f"{r:.2f}" for r in ratios)
            + f" (spread {max(ratios) / min(ratios) - 1:.1%})"
        )


def _print_scaling(memory: dict[tuple[bool | str, bool], list[tuple[int, int]]]) -> None:
    """Memory as a line in the answer's length: the bytes each further answer character
    costs beyond its text (the slope between the shortest and the longest stream of a
    kind), apart from the fixed part a stream holds whatever its length."""
    for (footnotes, varied), points in memory.items():
        if len(points) < 2:
            continue
        (c0, b0), (c1, b1) = min(points), max(points)
        slope = (b1 - b0) / (c1 - c0)
        print(
            f"memory, {_kind(footnotes, varied)}: {slope:.2f} bytes per "
            f"further answer character beyond the text ({c0:,} → {c1:,} chars), "
            f"{(b0 - slope * c0) / 1024:.0f} KiB fixed"
        )


if __name__ == "__main__":
    asyncio.run(main())
