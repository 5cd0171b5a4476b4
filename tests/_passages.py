"""The quoted passages a provider sent, read from its raw bytes independently of the
dialects (a plain walk of the JSON), and the passages a :class:`CitedAnswer` kept — for
the property "every passage in, every passage out"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from streamcite.core.citations import ANSWER_SEGMENT
from streamcite.core.models import CitedAnswer

__all__ = ["answer_passages_of", "json_objects", "passages_sent"]


def json_objects(raw: bytes) -> Iterator[Any]:
    """Each JSON object of an SSE stream's ``data:`` lines, or a whole JSON body."""
    stripped = raw.lstrip()
    if stripped.startswith(b"{") and b"\ndata:" not in raw and not raw.startswith(b"data:"):
        yield orjson.loads(raw)
        return
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(
            line[5:].removeprefix(b" ") for line in block.split(b"\n") if line.startswith(b"data:")
        )
        if data and data != b"[DONE]":
            try:
                yield orjson.loads(data)
            except orjson.JSONDecodeError:
                continue


def _text(value: Any) -> list[str]:
    return [value] if isinstance(value, str) and value.strip() else []


def _anthropic(obj: dict[str, Any]) -> list[str]:
    out: list[str] = []
    delta = obj.get("delta")
    if isinstance(delta, dict) and delta.get("type") == "citations_delta":
        cit = delta.get("citation")
        out += _text(cit.get("cited_text")) if isinstance(cit, dict) else []
    blocks = [obj.get("content_block"), *(obj.get("content") or [])]
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            for cit in block.get("citations") or ():
                out += _text(cit.get("cited_text")) if isinstance(cit, dict) else []
    return out


def _cohere(obj: dict[str, Any]) -> list[str]:
    cits: list[Any] = []
    msg = (obj.get("delta") or {}).get("message") if isinstance(obj.get("delta"), dict) else None
    if isinstance(msg, dict):
        got = msg.get("citations")
        cits += got if isinstance(got, list) else [got]
    body = obj.get("message")
    if isinstance(body, dict) and isinstance(body.get("citations"), list):
        cits += body["citations"]
    out: list[str] = []
    for cit in cits:
        if not isinstance(cit, dict) or cit.get("type") == "THINKING_CONTENT":
            continue
        for src in cit.get("sources") or ():
            doc = src.get("document") if isinstance(src, dict) else None
            out += _text(doc.get("text")) if isinstance(doc, dict) else []
    return out


def _gemini(obj: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for cand in obj.get("candidates") or ():
        meta = cand.get("groundingMetadata") if isinstance(cand, dict) else None
        if not isinstance(meta, dict) or cand.get("index", 0) != 0:
            continue
        for ch in meta.get("groundingChunks") or ():
            for kind in ("retrievedContext", "web", "maps"):
                src = ch.get(kind) if isinstance(ch, dict) else None
                out += _text(src.get("text")) if isinstance(src, dict) else []
    return out


def _chat(obj: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for cit in obj.get("citations") or ():
        out += _text(cit.get("cited_text")) if isinstance(cit, dict) else []
    for res in obj.get("search_results") or ():
        out += _text(res.get("snippet")) if isinstance(res, dict) else []
    return out


_READERS = {"anthropic": _anthropic, "cohere": _cohere, "gemini": _gemini, "chat": _chat}


def passages_sent(raw: bytes, dialect: str) -> set[str]:
    """Every non-blank passage the provider quoted (Responses annotations quote none)."""
    read = _READERS.get(dialect)
    if read is None:
        return set()
    return {p for obj in json_objects(raw) if isinstance(obj, dict) for p in read(obj)}


def answer_passages_of(answer: CitedAnswer) -> set[str]:
    """Every passage the answer kept: its citations' and its spans' (a citation that shows
    the answer's own segment, a Gemini web source, quotes no passage)."""
    quoted = [c for c in answer.citations if not (c.provider_metadata or {}).get(ANSWER_SEGMENT)]
    kept = {c.cited_text for c in quoted} | {s.cited_text for s in answer.citation_spans}
    return {p for p in kept if p}
