"""Memory per answer character of each dialect (tracemalloc), an answer of N cited
sentences of one source, each quoted with its own passage: what keeping every passage
(on the spans) costs. Run the same command on two trees to compare them.

Run: ``.venv/bin/python benchmarks/bench_passage_memory.py [--sentences 400]``
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from typing import Any

import orjson

from streamcite import iter_events


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(
        b"event: %s\ndata: %s\n\n" % (name.encode(), orjson.dumps(obj)) for name, obj in events
    )


def _sentence(i: int) -> str:
    return f"Claim number {i:05d} says something the passage supports [1]. "


def _passage(i: int) -> str:
    return f"Passage {i:05d}: the source says, in its own words, what claim {i:05d} says."


def anthropic(n: int) -> bytes:
    ev: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "model": "c"}})
    ]
    for i in range(n):
        cit = {"type": "search_result_location", "cited_text": _passage(i),
               "source": "https://x/doc", "title": "Doc", "search_result_index": 0,
               "start_block_index": 0, "end_block_index": 0}  # fmt: skip
        ev += [
            ("content_block_start", {"type": "content_block_start", "index": i,
                                     "content_block": {"type": "text", "text": "", "citations": []}}),
            ("content_block_delta", {"type": "content_block_delta", "index": i,
                                     "delta": {"type": "citations_delta", "citation": cit}}),
            ("content_block_delta", {"type": "content_block_delta", "index": i,
                                     "delta": {"type": "text_delta", "text": _sentence(i)}}),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]  # fmt: skip
    ev += [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return _sse(ev)


def cohere(n: int) -> bytes:
    ev: list[tuple[str, dict[str, Any]]] = [
        ("message-start", {"type": "message-start", "id": "c", "delta": {"message": {}}}),
        ("content-start", {"type": "content-start", "index": 0,
                           "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
    ]  # fmt: skip
    at = 0
    for i in range(n):
        s = _sentence(i)
        ev.append(("content-delta", {"type": "content-delta", "index": 0,
                                     "delta": {"message": {"content": {"text": s}}}}))  # fmt: skip
        src = {"type": "document", "id": "doc_0",
               "document": {"id": "doc_0", "title": "Doc", "url": "https://x/doc",
                            "text": _passage(i)}}  # fmt: skip
        cit = {"start": at, "end": at + len(s) - 1, "sources": [src], "type": "TEXT_CONTENT",
               "content_index": 0}  # fmt: skip
        ev.append(("citation-start", {"type": "citation-start", "index": i,
                                      "delta": {"message": {"citations": cit}}}))  # fmt: skip
        at += len(s)
    ev.append(("message-end", {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}))
    return _sse(ev)


def gemini(n: int) -> bytes:
    out = []
    at = 0
    chunks, supports = [], []
    for i in range(n):
        s = _sentence(i)
        chunks.append({"retrievedContext": {"uri": "https://x/doc", "title": "Doc",
                                            "text": _passage(i)}})  # fmt: skip
        supports.append({"segment": {"startIndex": at, "endIndex": at + len(s) - 1},
                         "groundingChunkIndices": [i]})  # fmt: skip
        at += len(s)
        cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": s}]}, "index": 0}
        out.append({"candidates": [cand], "responseId": "g"})
    out[-1]["candidates"][0]["finishReason"] = "STOP"
    out[-1]["candidates"][0]["groundingMetadata"] = {
        "groundingChunks": chunks,
        "groundingSupports": supports,
    }
    return b"".join(b"data: " + orjson.dumps(o) + b"\n\n" for o in out)


def chat(n: int) -> bytes:
    out = []
    for i in range(n):
        d = {"choices": [{"index": 0, "delta": {"content": _sentence(i)}}], "id": "c"}
        out.append(d)
    cits = [{"cited_text": _passage(i), "document_index": 0, "document_title": "Doc",
             "source_url": "https://x/doc"} for i in range(1)]  # fmt: skip
    out.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "citations": cits, "id": "c"})  # fmt: skip
    return b"".join(b"data: " + orjson.dumps(o) + b"\n\n" for o in out) + b"data: [DONE]\n\n"


def measure(raw: bytes, dialect: str) -> tuple[int, int, int]:
    """(peak bytes while parsing, answer characters, spans with a passage)."""
    gc.collect()
    tracemalloc.start()
    events = list(iter_events([raw], dialect=dialect))  # type: ignore[arg-type]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    answer = events[-1].answer  # type: ignore[attr-defined]
    quoted = sum(1 for s in answer.citation_spans if getattr(s, "cited_text", None))
    return peak, len(answer.text), quoted


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", type=int, default=400)
    n = ap.parse_args().sentences
    print(f"{'dialect':10} {'chars':>7} {'peak KiB':>9} {'B/char':>7} {'quoted spans':>12}")
    for name, build in (("chat", chat), ("anthropic", anthropic), ("cohere", cohere),
                        ("gemini", gemini)):  # fmt: skip
        raw = build(n)
        peak, chars, quoted = min(measure(raw, name) for _ in range(3))
        print(f"{name:10} {chars:7} {peak / 1024:9.1f} {peak / chars:7.1f} {quoted:12}")


if __name__ == "__main__":
    main()
