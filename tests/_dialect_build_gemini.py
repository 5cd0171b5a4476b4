"""Gemini streamGenerateContent chunks and bodies, hand-written from Google's documented GenerateContentResponse (spec suite)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from tests._dialect_sse import Obj, byte_span, sse


@dataclass
class GeminiSupport:
    """A grounding support over ``piece`` (its UTF-8 byte offsets in the whole answer)."""

    piece: str
    chunks: Sequence[int]


def _grounding(text: str, web: Sequence[tuple[str, str]], supports: Sequence[GeminiSupport]) -> Obj:
    sups: list[Obj] = []
    for s in supports:
        b0, b1 = byte_span(text, s.piece)
        seg: Obj = {"endIndex": b1, "text": s.piece}
        if b0:  # a startIndex of 0 is omitted, as the API does
            seg["startIndex"] = b0
        sups.append({"segment": seg, "groundingChunkIndices": list(s.chunks)})
    return {
        "webSearchQueries": ["spec suite query"],
        "groundingChunks": [{"web": {"uri": u, "title": t}} for u, t in web],
        "groundingSupports": sups,
    }


def gemini_chunk(
    parts: Sequence[Obj] | None = None,
    *,
    finish: str | None = None,
    grounding: Obj | None = None,
    usage: tuple[int, int] | None = None,
    response_id: str = "spec-gemini-01",
) -> Obj:
    """One GenerateContentResponse of a stream."""
    cand: Obj = {"index": 0}
    if parts is not None:
        cand["content"] = {"role": "model", "parts": list(parts)}
    if finish is not None:
        cand["finishReason"] = finish
    if grounding is not None:
        cand["groundingMetadata"] = grounding
    obj: Obj = {"candidates": [cand], "modelVersion": "gemini-2.5-flash", "responseId": response_id}
    if usage is not None:
        obj["usageMetadata"] = {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "totalTokenCount": usage[0] + usage[1],
        }
    return obj


def gemini_stream(
    texts: Sequence[str],
    *,
    web: Sequence[tuple[str, str]] = (),
    supports: Sequence[GeminiSupport] = (),
    finish: str = "STOP",
    usage: tuple[int, int] = (11, 29),
    thoughts: Sequence[str] = (),
    split_grounding: bool = False,
) -> bytes:
    """A Gemini stream: thought parts, one text part per chunk (usage cumulative on each, as
    the API sends it), the finish reason and the grounding metadata on the last chunk
    (``split_grounding``: the chunks list one chunk early, the supports on the last)."""
    text = "".join(texts)
    out: list[bytes] = []
    for t in thoughts:
        out.append(sse(gemini_chunk([{"text": t, "thought": True}], usage=(usage[0], 1))))
    grounding = _grounding(text, web, supports) if (web or supports) else None
    for n, t in enumerate(texts):
        last = n == len(texts) - 1
        g: Obj | None = None
        if grounding is not None:
            if last:
                g = grounding
            elif split_grounding and n == len(texts) - 2:
                g = {"groundingChunks": grounding["groundingChunks"]}
        out.append(
            sse(
                gemini_chunk(
                    [{"text": t}],
                    finish=finish if last else None,
                    grounding=g,
                    usage=(usage[0], usage[1] if last else n + 1),
                )
            )
        )
    return b"".join(out)


def gemini_body(
    texts: Sequence[str],
    *,
    web: Sequence[tuple[str, str]] = (),
    supports: Sequence[GeminiSupport] = (),
    finish: str = "STOP",
    usage: tuple[int, int] = (11, 29),
) -> bytes:
    """The non-streaming ``generateContent`` body of the same answer."""
    text = "".join(texts)
    grounding = _grounding(text, web, supports) if (web or supports) else None
    return orjson.dumps(
        gemini_chunk([{"text": text}], finish=finish, grounding=grounding, usage=usage)
    )
