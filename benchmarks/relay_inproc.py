"""The relay's own Python work per event, in one process, with no network.

A :class:`~streamcite.relay.server.Relay`'s producer runs ``--streams`` streams of
``--tokens`` tokens each; the upstream is an in-memory response (one OpenAI chat chunk per
read, as the embedded backend sends them at 50 tokens/s) and each stream has one caught-up
WebSocket client on a live tap whose socket takes every write (no kernel, no client
process). What is timed is the relay's CPU per event: the pipeline's read loop and chunk
parsing, the producer's hot loop, the stream log, the live tap and the per-turn flush, and
the per-stream set-up and teardown (the stream, its task, its log, its ``done``) — the work
a forwarder does not do. The chunk parser alone (``ChatStreamParser.feed`` on the same
bytes) is timed in the same run, for the share that is the core's.

Run: ``python benchmarks/relay_inproc.py [--loop uvloop] [--streams 300] [--tokens 100]
[--per-read 1] [--rounds 5] [--profile out.pstat]``. Its instructions per event under
cachegrind (the source and the compiled build side by side, unmoved by the machine's
load): ``benchmarks/relay_instructions.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import AsyncIterator, Mapping
from types import SimpleNamespace
from typing import Any

import orjson

from streamcite.core.api import ChatStreamParser
from streamcite.pipeline import stream_chat
from streamcite.relay.clients import LiveFlush, WsClient, _LiveFrames
from streamcite.relay.config import RelayConfig
from streamcite.relay.guard import Identity
from streamcite.relay.live import LiveTap
from streamcite.relay.protocol import AskMessage
from streamcite.relay.server import Relay
from streamcite.transports.base import BodySink, PushBody

_WORDS = ("The", " handbook", " says", " that", " streaming", " relays", " keep", " every")


def chunks(tokens: int, per_read: int = 1) -> list[bytes]:
    """One chat chunk per token, then the finish chunk, the usage chunk and ``[DONE]``;
    ``per_read`` chunks a read (a relay that falls behind its upstreams reads several)."""
    top = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000}

    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        obj = {**top, "model": "streamcite-local", "choices": [choice], **extra}
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    out = [event({"role": "assistant", "content": ""})]
    out += [event({"content": _WORDS[i % len(_WORDS)]}) for i in range(tokens)]
    out.append(event({}, "stop"))
    usage = {"prompt_tokens": 20, "completion_tokens": tokens, "total_tokens": tokens + 20}
    out.append(b"data: " + orjson.dumps({**top, "choices": [], "usage": usage}) + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return [b"".join(out[i : i + per_read]) for i in range(0, len(out), per_read)]


class _Response:
    status = 200
    headers: Mapping[str, str] = {"Content-Type": "text/event-stream"}
    content_type = "text/event-stream"

    def __init__(self, reads: list[bytes]) -> None:
        self._reads = iter(reads)

    async def read_chunk(self) -> bytes:
        await asyncio.sleep(0)  # one loop turn per read, as a socket read is
        return next(self._reads, b"")

    async def aiter_bytes(self) -> AsyncIterator[bytes]:  # pragma: no cover - unused
        for data in self._reads:
            yield data

    async def read(self, limit: int = 1 << 20) -> bytes:  # pragma: no cover - unused
        return b"".join(self._reads)

    async def aclose(self) -> None:
        pass


class _PushResponse(PushBody):
    """The same reads pushed, as the push transport does: one read a loop turn (as a
    socket's ``data_received``), handed to the sink in that callback."""

    status = 200
    headers: Mapping[str, str] = {"Content-Type": "text/event-stream"}
    content_type = "text/event-stream"

    def __init__(self, reads: list[bytes]) -> None:
        self._reads = iter(reads)
        self._sink: BodySink | None = None
        self._paused = False
        self._due = False

    def push(self, sink: BodySink | None) -> None:
        self._sink = sink
        if sink is not None:
            self._schedule()

    def pause_reading(self) -> None:
        self._paused = True

    def resume_reading(self) -> None:
        self._paused = False
        self._schedule()

    def _schedule(self) -> None:
        if not self._due:
            self._due = True
            asyncio.get_running_loop().call_soon(self._deliver)

    def _deliver(self) -> None:
        self._due = False
        sink = self._sink
        if sink is None or self._paused:
            return
        data = next(self._reads, b"")
        if not data:
            sink.end(None)
            return
        sink.body(data)
        self._schedule()

    async def read_chunk(self) -> bytes:  # pragma: no cover - unused (pushed)
        return next(self._reads, b"")

    async def read(self, limit: int = 1 << 20) -> bytes:  # pragma: no cover - unused
        return b"".join(self._reads)

    def aiter_bytes(self) -> AsyncIterator[bytes]:  # pragma: no cover - unused
        raise NotImplementedError

    async def aclose(self) -> None:
        self._sink = None


class _Transport:
    name = "memory"

    def __init__(self, reads: list[bytes], push: bool = False) -> None:
        self.reads = reads
        self.push = push

    async def open(
        self, url: str, headers: Mapping[str, str], body: bytes, connect_timeout: float | None
    ) -> _Response | _PushResponse:
        return _PushResponse(self.reads) if self.push else _Response(self.reads)

    async def aclose(self) -> None:
        pass


class _Socket:
    """A transport that takes every write (counts the bytes)."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False


async def relay_round(
    server: Relay, n: int, reads: list[bytes], push: bool = False
) -> tuple[float, int]:
    """CPU seconds and events logged for ``n`` streams run concurrently to ``done``."""
    producer = server.producer
    producer.open_upstream = lambda msg, sid: stream_chat(
        producer.request_body(msg),
        base_url="http://127.0.0.1:9/v1",
        transport=_Transport(reads, push),
        stream_id=sid,
    )
    flush = LiveFlush()
    sock = _Socket()
    who = Identity(principal=None, remote="127.0.0.1")
    msg = AskMessage(question="What does the handbook say?")
    loop = asyncio.get_running_loop()
    logged = 0

    def count(sid: str, seq: int, t: float) -> None:
        nonlocal logged
        logged += 1

    producer.on_event = count
    c0 = time.process_time()
    streams = []
    for _ in range(n):
        stream = await producer.start(msg, who)
        request = SimpleNamespace(transport=sock, protocol=None)
        ws = SimpleNamespace(closed=False)
        client = WsClient(ws, request, 5.0, 1 << 20, who)  # type: ignore[arg-type]
        frames = _LiveFrames(client, sock, flush)  # type: ignore[arg-type]
        assert stream.taps is not None
        stream.taps.park(LiveTap(stream.stream_id, 0, frames, loop.create_future(), None))
        streams.append(stream)
    await asyncio.gather(*(s.task for s in streams if s.task is not None))
    cpu = time.process_time() - c0
    assert sock.written > 0
    return cpu, logged


def parse_only(reads: list[bytes], n: int, whole: bool = False) -> float:
    """CPU seconds of ``ChatStreamParser.feed`` alone on the same reads, ``n`` streams
    (``whole``: each stream's bytes in one call, as ``bench_parse.py`` feeds them)."""
    feeds = [b"".join(reads)] if whole else reads
    c0 = time.process_time()
    for _ in range(n):
        parser = ChatStreamParser("keep", dialect="chat")
        for data in feeds:
            parser.feed(data)
        parser.close()
    return time.process_time() - c0


async def main_async(args: argparse.Namespace) -> dict[str, float]:
    reads = chunks(args.tokens, args.per_read)
    cfg = RelayConfig(base_url="http://127.0.0.1:9/v1", max_streams_total=args.streams * 2)
    server = Relay(cfg)
    rows: list[float] = []
    parse: list[float] = []
    whole: list[float] = []
    events = 0
    for _ in range(args.rounds):
        gc.collect()
        cpu, events = await relay_round(server, args.streams, reads, args.push)
        rows.append(cpu / events * 1e6)
        if not args.no_parse:
            parse.append(parse_only(reads, args.streams) / events * 1e6)
            whole.append(parse_only(reads, args.streams, whole=True) / events * 1e6)
    await server.log.aclose()
    return {
        "events_per_round": events,
        "relay_us_per_event": statistics.median(rows),
        "relay_min": min(rows),
        "parse_us_per_event": statistics.median(parse) if parse else float("nan"),
        "parse_whole_us_per_event": statistics.median(whole) if whole else float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default="uvloop")
    ap.add_argument("--streams", type=int, default=300)
    ap.add_argument("--tokens", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-read", type=int, default=1, help="upstream chunks per read")
    ap.add_argument("--profile", default="", help="cProfile stats to this path")
    ap.add_argument("--no-parse", action="store_true", help="skip the parser-alone pass")
    ap.add_argument(
        "--push", action="store_true", help="the upstream pushes its reads (push transport)"
    )
    args = ap.parse_args()
    if args.loop == "uvloop":
        import uvloop

        run: Any = uvloop.run
    else:
        run = asyncio.run
    if args.profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
        res = run(main_async(args))
        prof.disable()
        prof.dump_stats(args.profile)
    else:
        res = run(main_async(args))
    print(
        f"{args.loop}{' push' if args.push else ''}: {args.streams} streams × {args.tokens} tokens: "
        f"{args.per_read} a read; {res['events_per_round']} events a round; relay {res['relay_us_per_event']:.2f} µs/event "
        f"(min {res['relay_min']:.2f}), of which the chunk parser alone "
        f"{res['parse_us_per_event']:.2f} (fed a stream at once: "
        f"{res['parse_whole_us_per_event']:.2f})"
    )


if __name__ == "__main__":
    main()
