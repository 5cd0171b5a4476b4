"""SSE framing and offset helpers shared by the spec suite's stream builders."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

__all__ = ["Obj", "byte_span", "split_at", "sse", "utf16_len"]

Obj = dict[str, Any]


def sse(payload: Obj | str | bytes, event: str | None = None) -> bytes:
    """One SSE block: an optional ``event:`` line, one ``data:`` line, a blank line."""
    if isinstance(payload, dict):
        data = orjson.dumps(payload)
    elif isinstance(payload, str):
        data = payload.encode()
    else:
        data = payload
    head = b"" if event is None else b"event: " + event.encode() + b"\n"
    return head + b"data: " + data + b"\n\n"


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """``data`` cut at the given byte positions (sorted, deduplicated, clamped)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    out: list[bytes] = []
    prev = 0
    for p in points:
        out.append(data[prev:p])
        prev = p
    out.append(data[prev:])
    return out


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (what JavaScript's ``length`` says)."""
    return len(text.encode("utf-16-le")) // 2


def byte_span(text: str, piece: str) -> tuple[int, int]:
    """UTF-8 byte offsets of the first ``piece`` in ``text`` (Gemini's segment units)."""
    i = text.index(piece)
    start = len(text[:i].encode())
    return start, start + len(piece.encode())
