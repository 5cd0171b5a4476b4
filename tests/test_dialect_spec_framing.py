"""Spec suite: SSE framing is the decoder's business, never the dialect's. Every dialect's stream
re-framed as the SSE standard allows (CRLF or CR line ends, no space after the colon, the data
split over several ``data:`` lines, comments, ``id:``/``retry:`` fields, a leading BOM) gives
the same events. Gemini's API itself ends its lines with CRLF."""

from __future__ import annotations

import re

import pytest

from tests import test_dialect_spec_anthropic as t_anthropic
from tests import test_dialect_spec_cohere as t_cohere
from tests import test_dialect_spec_gemini as t_gemini
from tests import test_dialect_spec_responses as t_responses
from tests._dialect_streams import (
    anthropic_stream,
    check_run,
    cohere_stream,
    responses_stream,
    run,
    split_at,
    wire,
)

STREAMS = {
    "anthropic": anthropic_stream([*t_anthropic.SERVER, *t_anthropic.CITED]),
    "responses": responses_stream(t_responses.CITED),
    "gemini": t_gemini._grounded(),
    "cohere": cohere_stream(t_cohere.TEXTS, citations=t_cohere.CITS, thinking=["θ"]),
}


def _blocks(data: bytes) -> list[tuple[bytes | None, bytes]]:
    out: list[tuple[bytes | None, bytes]] = []
    for block in data.split(b"\n\n"):
        if not block:
            continue
        name = None
        payload = b""
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                name = line[7:]
            elif line.startswith(b"data: "):
                payload = line[6:]
        out.append((name, payload))
    return out


def reframe(data: bytes, style: str) -> bytes:
    eol = {"crlf": b"\r\n", "cr": b"\r"}.get(style, b"\n")
    sep = b"" if style == "nospace" else b" "
    out = [b"\xef\xbb\xbf"] if style == "bom" else []
    for n, (name, payload) in enumerate(_blocks(data)):
        lines: list[bytes] = []
        if style == "extras":
            lines += [b": keep-alive", b"id: " + str(n).encode(), b"retry: 1000"]
        if name is not None:
            lines.append(b"event:" + sep + name)
        if style == "multiline" and payload.startswith(b"{"):
            # JSON may be cut at any ',' between members: the decoder joins data lines with LF
            parts = re.split(rb'(?<=[}\]"0-9el]),(?=")', payload)
            lines += [
                b"data:" + sep + p + (b"," if i < len(parts) - 1 else b"")
                for i, p in enumerate(parts)
            ]
        else:
            lines.append(b"data:" + sep + payload)
        out.append(eol.join(lines) + eol + eol)
        if style == "extras":
            out.append(b": ping" + eol + eol)
    return b"".join(out)


@pytest.mark.parametrize("style", ["crlf", "cr", "nospace", "multiline", "extras", "bom"])
@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_reframed_stream_gives_the_same_events(dialect: str, style: str) -> None:
    data = STREAMS[dialect]
    whole = wire(run(data, dialect))
    framed = reframe(data, style)
    assert framed != data
    for d in (dialect, "auto"):
        events = run(framed, d)
        check_run(events)
        assert wire(events) == whole, (d, style)


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_crlf_split_between_cr_and_lf(dialect: str) -> None:
    framed = reframe(STREAMS[dialect], "crlf")
    whole = wire(run(STREAMS[dialect], dialect))
    cuts = [m.start() + 1 for m in re.finditer(rb"\r\n", framed)]
    assert wire(run(split_at(framed, cuts), dialect)) == whole
