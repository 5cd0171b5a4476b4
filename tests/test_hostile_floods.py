"""Offset conversions and tool-call floods are linear (docs/security.md, "Nested,
oversized and flooding upstream events"). Time bounds are far above the fixed figures
(measured ~0.05 s each) and far below the old ones (seconds)."""

from __future__ import annotations

import time

import orjson

from streamcite.core.api import ChatStreamParser
from tests._dialect_sse import sse


def _run(dialect: str, chunks: list[bytes]) -> tuple[float, object]:
    parser = ChatStreamParser(dialect=dialect)  # type: ignore[arg-type]
    t0 = time.process_time()  # CPU time: what a loaded machine does not stretch
    for c in chunks:
        parser.feed(c)
    parser.close()
    return time.process_time() - t0, parser.answer


def _gem(cand: dict[str, object], **extra: object) -> bytes:
    return sse({"candidates": [cand], "responseId": "r", **extra})


def test_gemini_supports_in_reverse_order_are_converted_in_one_pass() -> None:
    piece = "Grounded claim é. " * 50  # 900 characters, 950 bytes
    n = 1024
    text = piece * n
    chunks = [_gem({"content": {"parts": [{"text": text}]}})]
    supports = [
        {
            "segment": {"startIndex": i * 950, "endIndex": (i + 1) * 950},
            "groundingChunkIndices": [0],
        }
        for i in reversed(range(n))
    ]
    meta = {
        "groundingChunks": [{"web": {"uri": "https://e.org", "title": "E"}}],
        "groundingSupports": supports,
    }
    chunks.append(_gem({"groundingMetadata": meta, "finishReason": "STOP"}))
    took, answer = _run("gemini", chunks)
    assert len(answer.citation_spans) == n  # type: ignore[attr-defined]
    assert took < 0.8  # old: each support re-walks the answer from 0 (~2 s here)


def test_gemini_pending_supports_do_not_rewalk_per_chunk() -> None:
    never = [
        {"segment": {"startIndex": 0, "endIndex": 10**12 + i}, "groundingChunkIndices": [0]}
        for i in range(1024)
    ]
    meta = {
        "groundingChunks": [{"web": {"uri": "https://e.org", "title": "E"}}],
        "groundingSupports": never,
    }
    chunks = [_gem({"content": {"parts": [{"text": "a"}]}, "groundingMetadata": meta})]
    # Off the fast path (a safety rating on every chunk): each takes the general way.
    rating = [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"}]
    body = "x" * 979 + "é"
    chunks += [
        _gem({"content": {"parts": [{"text": body}]}, "safetyRatings": rating}) for _ in range(3000)
    ]
    chunks.append(_gem({"content": {"parts": []}, "finishReason": "STOP"}))
    took, _answer = _run("gemini", chunks)
    assert took < 1.0  # old: every chunk re-encodes the answer, re-walks 1,024 supports (~3 s)


def test_gemini_function_call_flood_is_capped_and_linear() -> None:
    chunks = [_gem({"content": {"parts": [{"text": "calling"}]}})]
    for k in range(200):
        cands = [
            {"index": c, "content": {"parts": [{"functionCall": {"name": "f", "args": {"k": k}}}]}}
            for c in range(100)
        ]
        chunks.append(sse({"candidates": cands}))
    chunks.append(_gem({"content": {"parts": []}, "finishReason": "STOP"}))
    took, answer = _run("gemini", chunks)
    codes = [e.code for e in answer.errors]  # type: ignore[attr-defined]
    assert codes.count("bad_tool_call") == 1
    assert took < 1.0  # old: each new call counted its choice's calls by a scan (~2 s for 20k)


def test_anthropic_tool_use_flood_is_capped_and_linear() -> None:
    chunks = [sse({"type": "message_start", "message": {"id": "m", "model": "c"}}, "message_start")]
    for i in range(12_000):
        block = {"type": "tool_use", "id": f"t{i}", "name": "f", "input": {}}
        chunks.append(
            sse(
                {"type": "content_block_start", "index": i, "content_block": block},
                "content_block_start",
            )
        )
        chunks.append(sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    chunks.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 1},
            },
            "message_delta",
        )
    )
    chunks.append(sse({"type": "message_stop"}, "message_stop"))
    took, answer = _run("anthropic", [b"".join(chunks)])
    assert len(answer.tool_calls) <= 4096  # type: ignore[attr-defined]
    assert took < 1.0  # old: the block table rebuilt on every stop past 4,096 (~2.5 s), all kept
    assert orjson.dumps(answer)
