"""Parse cost of the four non-chat dialects: µs per SSE event, side by side.

Per dialect (``responses``, ``anthropic``, ``gemini``, ``cohere``), one process,
interleaved rounds, a generated stream (non-ASCII words, a citation every 40 deltas,
finish and usage) fed from memory in 4 KiB reads:

  floor      split on blank lines, take the ``data:`` line, ``orjson.loads`` it
  streamcite ``ChatStreamParser(dialect=D).feed`` per read (SSE decode, the dialect's
             interpreter, live footnotes and citations, answer accumulation), ``close``
  SDK        the vendor SDK's own stream parser and accumulator over an httpx
             MockTransport: openai ``responses.stream`` (ResponseStream, final response),
             anthropic ``messages.stream`` (MessageStream, final message), google-genai
             ``models.generate_content_stream`` (every chunk a typed response), cohere
             ``ClientV2.chat_stream`` (typed events)

Times are this process's CPU time (``time.process_time``: on a shared machine wall
time also counts the other processes' turns). Prints the best (minimum) µs/event of
the rounds and the median, the ratio of the
minima to the floor (target ≤ 1.5×), the speed-up over the SDK (target ≥ 20×) and the
peak traced memory (tracemalloc) of streamcite per answer character.

Run: ``.venv/bin/python benchmarks/bench_dialects.py [--rounds 5] [--sizes 2000 20000]
[--dialects anthropic gemini] [--no-sdk]``
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson

READ = 4096
WORDS = [
    "Le",
    " café",
    " de",
    " Tel",
    " Aviv",
    " —",
    " תל",
    " אביב",
    " ouvre",
    " à",
    " 8 h",
    " ☕",
    ".",
]
"""Accents, Hebrew, a symbol: escapes and multi-byte UTF-8 in the JSON. No ``[n]``
footnote by default: these APIs cite with events, not markers (``--markers`` adds one
every 14 words, as the chat benchmark's text has)."""
CITE_EVERY = 40


def _j(obj: Any) -> bytes:
    return orjson.dumps(obj)


def _named(name: str, obj: Any) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + _j(obj) + b"\n\n"


def _words(n: int) -> Iterator[str]:
    for i in range(n):
        yield WORDS[i % len(WORDS)]


def responses_stream(n: int) -> bytes:
    msg = "msg_b"
    seq = iter(range(10**9))

    def ev(name: str, **f: Any) -> bytes:
        return _named(name, {"type": name, "sequence_number": next(seq), **f})

    resp = {"id": "resp_b", "object": "response", "created_at": 1, "status": "in_progress",
            "model": "gpt-b", "output": [], "usage": None, "error": None,
            "incomplete_details": None, "instructions": None, "tools": [],
            "parallel_tool_calls": True, "tool_choice": "auto", "metadata": {}}  # fmt: skip
    where = {"item_id": msg, "output_index": 0, "content_index": 0}
    out = [ev("response.created", response=resp)]
    item = {
        "id": msg,
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    out.append(ev("response.output_item.added", output_index=0, item=item))
    out.append(ev("response.content_part.added", **where,
                  part={"type": "output_text", "text": "", "annotations": [], "logprobs": []}))  # fmt: skip
    text = ""
    notes = []
    for i, w in enumerate(_words(n)):
        out.append(ev("response.output_text.delta", **where, delta=w, logprobs=[]))
        start = len(text)
        text += w
        if i % CITE_EVERY == CITE_EVERY - 1:
            note = {"type": "url_citation", "start_index": start, "end_index": len(text),
                    "title": f"Source {i % 7}", "url": f"https://s{i % 7}.example/"}  # fmt: skip
            notes.append(note)
            out.append(ev("response.output_text.annotation.added", **where,
                          annotation_index=len(notes) - 1, annotation=note))  # fmt: skip
    part = {"type": "output_text", "text": text, "annotations": notes, "logprobs": []}
    out.append(ev("response.output_text.done", **where, text=text, logprobs=[]))
    out.append(ev("response.content_part.done", **where, part=part))
    done_item = {**item, "status": "completed", "content": [part]}
    out.append(ev("response.output_item.done", output_index=0, item=done_item))
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": n, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": n + 10}  # fmt: skip
    final = {**resp, "status": "completed", "output": [done_item], "usage": usage}
    out.append(ev("response.completed", response=final))
    return b"".join(out)


def anthropic_stream(n: int) -> bytes:
    out = [_named("message_start", {"type": "message_start", "message": {
        "id": "msg_b", "type": "message", "role": "assistant", "model": "claude-b",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})]  # fmt: skip
    block = 0
    for i, w in enumerate(_words(n)):
        if i % CITE_EVERY == 0:
            if i:
                out.append(
                    _named("content_block_stop", {"type": "content_block_stop", "index": block})
                )
                block += 1
            out.append(_named("content_block_start", {"type": "content_block_start", "index": block,
                              "content_block": {"type": "text", "text": "", "citations": []}}))  # fmt: skip
            cite = {"type": "web_search_result_location", "cited_text": "Un passage cité…",
                    "url": f"https://s{i % 7}.example/", "title": f"Source {i % 7}",
                    "encrypted_index": "EpMB"}  # fmt: skip
            out.append(_named("content_block_delta", {"type": "content_block_delta", "index": block,
                              "delta": {"type": "citations_delta", "citation": cite}}))  # fmt: skip
        out.append(_named("content_block_delta", {"type": "content_block_delta", "index": block,
                          "delta": {"type": "text_delta", "text": w}}))  # fmt: skip
    out.append(_named("content_block_stop", {"type": "content_block_stop", "index": block}))
    out.append(_named("message_delta", {"type": "message_delta",
                      "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                      "usage": {"output_tokens": n}}))  # fmt: skip
    out.append(_named("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def gemini_stream(n: int) -> bytes:
    out = []
    text = b""
    supports = []
    for i, w in enumerate(_words(n)):
        start = len(text)
        text += w.encode()
        if i % CITE_EVERY == CITE_EVERY - 1:
            supports.append({"segment": {"startIndex": start, "endIndex": len(text), "text": w},
                             "groundingChunkIndices": [i % 7]})  # fmt: skip
        cand: dict[str, Any] = {"content": {"parts": [{"text": w}], "role": "model"}, "index": 0}
        if i == n - 1:
            cand["finishReason"] = "STOP"
            cand["groundingMetadata"] = {
                "groundingChunks": [
                    {"web": {"uri": f"https://s{k}.example/", "title": f"s{k}"}} for k in range(7)
                ],
                "groundingSupports": supports,
            }
        chunk = {"candidates": [cand], "modelVersion": "gemini-b", "responseId": "r_b",
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": i + 1,
                                   "totalTokenCount": i + 11}}  # fmt: skip
        out.append(b"data: " + _j(chunk) + b"\r\n\r\n")
    return b"".join(out)


def cohere_stream(n: int) -> bytes:
    out = [_named("message-start", {"id": "c_b", "type": "message-start", "delta": {"message": {
        "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}})]  # fmt: skip
    out.append(_named("content-start", {"type": "content-start", "index": 0,
                      "delta": {"message": {"content": {"type": "text", "text": ""}}}}))  # fmt: skip
    text = ""
    k = 0
    for i, w in enumerate(_words(n)):
        out.append(_named("content-delta", {"type": "content-delta", "index": 0,
                          "delta": {"message": {"content": {"text": w}}}}))  # fmt: skip
        start = len(text)
        text += w
        if i % CITE_EVERY == CITE_EVERY - 1:
            src = {"type": "document", "id": f"doc-{i % 7}",
                   "document": {"id": f"doc-{i % 7}", "title": f"Doc {i % 7}", "text": "Passage."}}  # fmt: skip
            cit = {"start": start, "end": len(text), "text": w, "sources": [src],
                   "type": "TEXT_CONTENT", "content_index": 0}  # fmt: skip
            out.append(_named("citation-start", {"type": "citation-start", "index": k,
                              "delta": {"message": {"citations": cit}}}))  # fmt: skip
            out.append(_named("citation-end", {"type": "citation-end", "index": k}))
            k += 1
    out.append(_named("content-end", {"type": "content-end", "index": 0}))
    out.append(_named("message-end", {"type": "message-end", "delta": {"finish_reason": "COMPLETE",
                      "usage": {"billed_units": {"input_tokens": 10, "output_tokens": n},
                                "tokens": {"input_tokens": 10, "output_tokens": n}}}}))  # fmt: skip
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


STREAMS: dict[str, Callable[[int], bytes]] = {
    "responses": responses_stream,
    "anthropic": anthropic_stream,
    "gemini": gemini_stream,
    "cohere": cohere_stream,
}


def pieces(data: bytes) -> list[bytes]:
    return [data[i : i + READ] for i in range(0, len(data), READ)]


def count_events(data: bytes) -> int:
    """SSE events of ``data`` (each has one ``data:`` line here)."""
    return data.count(b"\ndata: ") + data.startswith(b"data: ")


# -- implementations: each returns the answer's text length ---------------------------


def floor(parts: list[bytes]) -> int:
    buf = b""
    n = 0
    loads = orjson.loads
    for piece in parts:
        buf += piece
        blocks = buf.replace(b"\r\n", b"\n").split(b"\n\n") if b"\r" in buf else buf.split(b"\n\n")
        buf = blocks.pop()
        for block in blocks:
            data = block[block.find(b"data: ") + 6 :]
            if data != b"[DONE]":
                loads(data)
                n += 1
    return n


def make_streamcite(dialect: str) -> Callable[[list[bytes]], int]:
    from streamcite.core.api import ChatStreamParser

    def run(parts: list[bytes]) -> int:
        p = ChatStreamParser(dialect=dialect)  # type: ignore[arg-type]
        for piece in parts:
            p.feed(piece)
        p.close()
        return len(p.builder.text_so_far())

    return run


def _http(parts: list[bytes], lib: Any = httpx) -> Any:
    """A client of ``lib`` (httpx, or httpx2 for the SDKs built on it) answering every
    request with ``parts`` as a text/event-stream body."""

    class Body(lib.SyncByteStream):  # type: ignore[misc,name-defined]
        def __iter__(self) -> Iterator[bytes]:
            yield from parts

    def handler(request: Any) -> Any:
        return lib.Response(200, headers={"content-type": "text/event-stream"}, stream=Body())

    return lib.Client(transport=lib.MockTransport(handler))


def _httpx_of(module: Any) -> Any:
    """The httpx package an SDK is built on (newer ones use ``httpx2``)."""
    import importlib

    src = sys.modules[module.__name__ + "._base_client"]
    return importlib.import_module("httpx2") if hasattr(src, "httpx2") else httpx


def sdk_responses(parts: list[bytes]) -> int:
    import openai

    with _http(parts, _httpx_of(openai)) as http:
        client = openai.OpenAI(api_key="x", base_url="http://bench/v1", http_client=http)
        with client.responses.stream(model="gpt-b", input="q") as stream:
            for _ in stream:
                pass
            final = stream.get_final_response()
    return len(final.output_text)


def sdk_anthropic(parts: list[bytes]) -> int:
    import anthropic

    with _http(parts, _httpx_of(anthropic)) as http:
        client = anthropic.Anthropic(api_key="x", base_url="http://bench", http_client=http)
        with client.messages.stream(
            model="claude-b", max_tokens=10, messages=[{"role": "user", "content": "q"}]
        ) as stream:
            for _ in stream:
                pass
            msg = stream.get_final_message()
    return sum(len(b.text) for b in msg.content if b.type == "text")


def sdk_gemini(parts: list[bytes]) -> int:
    from google import genai
    from google.genai import types

    with _http(parts) as http:
        client = genai.Client(
            api_key="x",
            http_options=types.HttpOptions(base_url="http://bench", httpx_client=http),
        )
        n = 0
        for chunk in client.models.generate_content_stream(model="gemini-b", contents="q"):
            n += len(chunk.text or "")
    return n


def sdk_cohere(parts: list[bytes]) -> int:
    import cohere

    with _http(parts) as http:
        client = cohere.ClientV2(api_key="x", base_url="http://bench", httpx_client=http)
        n = 0
        for ev in client.chat_stream(model="c", messages=[{"role": "user", "content": "q"}]):
            if ev.type == "content-delta":
                n += len(ev.delta.message.content.text)  # type: ignore[union-attr]
    return n


SDKS: dict[str, Callable[[list[bytes]], int]] = {
    "responses": sdk_responses,
    "anthropic": sdk_anthropic,
    "gemini": sdk_gemini,
    "cohere": sdk_cohere,
}


def timed(fn: Callable[[list[bytes]], int], parts: list[bytes]) -> float:
    """CPU seconds of this process for one run (the machine is shared: wall time counts
    other processes' turns too)."""
    gc.collect()
    t0 = time.process_time()
    fn(parts)
    return time.process_time() - t0


def bytes_per_char(dialect: str, parts: list[bytes]) -> tuple[int, int]:
    from streamcite.core.api import ChatStreamParser

    gc.collect()
    tracemalloc.start()
    p = ChatStreamParser(dialect=dialect)  # type: ignore[arg-type]
    for piece in parts:
        p.feed(piece)
    p.close()
    answer = p.builder.snapshot()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, len(answer.text)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=[2000, 20000])
    ap.add_argument("--dialects", nargs="*", default=list(STREAMS))
    ap.add_argument("--no-sdk", action="store_true", help="skip the vendor SDKs")
    ap.add_argument("--markers", action="store_true", help="a [1] footnote every 14 words")
    ap.add_argument("--sdk-above", type=int, default=20000, help="skip the SDKs above this size")
    args = ap.parse_args()
    if args.markers:
        WORDS.insert(12, " [1]")
    print(f"python {sys.version.split()[0]}; {args.rounds} rounds; µs per SSE event (min / median)")
    head = f"{'dialect':<10} {'deltas':>6} {'events':>6}  {'floor':>13}  {'streamcite':>13}  ×floor  {'SDK':>13}  SDK÷ours  B/char"
    print(head)
    for dialect in args.dialects:
        for n in args.sizes:
            data = STREAMS[dialect](n)
            parts = pieces(data)
            events = count_events(data)
            ours = make_streamcite(dialect)
            want = ours(parts)
            impls: dict[str, Callable[[list[bytes]], int]] = {"floor": floor, "ours": ours}
            if not args.no_sdk and n <= args.sdk_above:
                sdk = SDKS[dialect]
                got = sdk(parts)
                assert got == want, f"{dialect} SDK read {got} characters, streamcite {want}"
                impls["sdk"] = sdk
            times: dict[str, list[float]] = {k: [] for k in impls}
            for _ in range(args.rounds):
                for k, fn in impls.items():
                    times[k].append(timed(fn, parts) / events * 1e6)
            best = {k: min(v) for k, v in times.items()}
            med = {k: statistics.median(v) for k, v in times.items()}
            peak, chars = bytes_per_char(dialect, parts)
            sdk_s = f"{best['sdk']:6.2f} / {med['sdk']:5.2f}" if "sdk" in best else f"{'-':>13}"
            speed = f"{best['sdk'] / best['ours']:7.0f}×" if "sdk" in best else f"{'-':>8}"
            print(
                f"{dialect:<10} {n:>6} {events:>6}  {best['floor']:6.2f} / {med['floor']:5.2f}"
                f"  {best['ours']:6.2f} / {med['ours']:5.2f}  {best['ours'] / best['floor']:5.2f}×"
                f"  {sdk_s}  {speed}  {peak / max(chars, 1):6.1f}"
            )


if __name__ == "__main__":
    main()
