"""Builders of realistic chat SSE streams and spec oracles for the sans-I/O core tests.

Everything here is independent of the implementation under test: the byte streams are
built by hand from the providers' documented shapes, and the two oracles (a reference
WHATWG SSE parser and a reference footnote detector) are written straight from the spec
text so that the tests compare the implementation against the spec, not against itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "MAGISTERIUM_CITATIONS",
    "Chunk",
    "RefSpec",
    "azure_stream",
    "chunk",
    "comment",
    "done_frame",
    "error_event_frame",
    "expected_refs",
    "frame",
    "frame_reads",
    "magisterium_stream",
    "normalise",
    "openai_stream",
    "perplexity_stream",
    "provider_error",
    "read_patterns",
    "reference_sse",
    "render_markers",
    "split_at",
    "strip_markers",
]

Chunk = dict[str, Any]

CREATED = 1_730_000_000

# ---------------------------------------------------------------------------------------------
# SSE framing
# ---------------------------------------------------------------------------------------------


def frame(payload: Chunk | str | bytes, *, eol: bytes = b"\n", event: str | None = None) -> bytes:
    """One SSE event block: optional ``event:`` line, one ``data:`` line, a blank line."""
    if isinstance(payload, dict):
        data = orjson.dumps(payload)
    elif isinstance(payload, str):
        data = payload.encode()
    else:
        data = payload
    head = b"" if event is None else b"event: " + event.encode() + eol
    return head + b"data: " + data + eol + eol


def done_frame(eol: bytes = b"\n") -> bytes:
    return b"data: [DONE]" + eol + eol


def comment(text: str = "keep-alive", eol: bytes = b"\n") -> bytes:
    """A comment line followed by a blank line (as OpenRouter's ``: OPENROUTER PROCESSING``)."""
    return b": " + text.encode() + eol + eol


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """Split ``data`` at the given byte positions (sorted, deduplicated, clamped)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    out: list[bytes] = []
    prev = 0
    for p in points:
        out.append(data[prev:p])
        prev = p
    out.append(data[prev:])
    return out


def frame_reads(data: bytes) -> list[bytes]:
    """One read per SSE block: split right after every blank line (LF, CR or CRLF)."""
    cuts = [m.end() for m in re.finditer(rb"\r\n\r\n|\n\n|\r\r|\n\r|\r\n\n", data)]
    return split_at(data, cuts)


def read_patterns(data: bytes) -> dict[str, list[bytes]]:
    """The same bytes read whole, one block per read, and one byte per read."""
    return {
        "whole": [data],
        "per_block": frame_reads(data),
        "one_byte": [data[i : i + 1] for i in range(len(data))],
    }


# ---------------------------------------------------------------------------------------------
# Chat completion chunks
# ---------------------------------------------------------------------------------------------


def chunk(
    content: str | None = None,
    *,
    index: int = 0,
    finish_reason: str | None = None,
    role: str | None = None,
    id: str = "chatcmpl-7f3a",
    model: str = "magisterium-1",
    created: int = CREATED,
    extra: Chunk | None = None,
    choice_extra: Chunk | None = None,
) -> Chunk:
    """A ``chat.completion.chunk`` with one choice (OpenAI shape)."""
    delta: Chunk = {}
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    choice: Chunk = {"index": index, "delta": delta, "finish_reason": finish_reason}
    if choice_extra:
        choice.update(choice_extra)
    out: Chunk = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [choice],
    }
    if extra:
        out.update(extra)
    return out


# The Magisterium document's example citation, plus realistic siblings with fields missing.
MAGISTERIUM_CITATIONS: list[Chunk] = [
    {
        "cited_text": (
            "34. L'insegnamento della Chiesa su questioni morali si basa non solo sulla "
            "ragione e sull'argomentazione, ma anche sulla Scrittura e sulla tradizione "
            "cristiana [...]"
        ),
        "document_title": "Cherishing Life",
        "document_index": 0,
        "document_author": "Conferenza dei Vescovi Cattolici d'Inghilterra e Galles",
        "document_reference": "34",
    },
    {
        "cited_text": "Fides et ratio, quasi binae quaedam pennae videntur...",
        "cited_text_heading": "Proemio",
        "document_title": "Fides et Ratio",
        "document_index": 1,
        "document_author": "Giovanni Paolo II",
        "document_year": "1998",
        "document_reference": "1",
        "source_url": "https://www.vatican.va/content/john-paul-ii/it/encyclicals/documents/hf_jp-ii_enc_14091998_fides-et-ratio.html",
    },
    {
        "cited_text": "La Sacra Tradizione e la Sacra Scrittura costituiscono un solo sacro deposito",
        "cited_text_heading": None,
        "document_title": "Dei Verbum",
        "document_index": 2,
        "document_author": None,
        "document_year": "1965",
        "document_reference": "10",
        "source_url": "https://www.vatican.va/archive/hist_councils/ii_vatican_council/documents/vat-ii_const_19651118_dei-verbum_it.html",
    },
]

CITATION_FIELDS = (
    "cited_text",
    "cited_text_heading",
    "document_title",
    "document_index",
    "document_author",
    "document_year",
    "document_reference",
    "source_url",
)


def citation_dict(raw: Chunk) -> dict[str, Any]:
    """The expected Citation (all eight fields, None where absent; ``provider_metadata``
    None: a Magisterium citation has no field beyond the eight) for a raw citation object."""
    return {**{f: raw.get(f) for f in CITATION_FIELDS}, "provider_metadata": None}


def magisterium_stream(
    deltas: Sequence[str],
    citations: Sequence[Chunk] | None = None,
    *,
    id: str = "chatcmpl-mag-1",
    model: str = "magisterium-1",
    eol: bytes = b"\n",
    finish_reason: str = "stop",
    with_done: bool = True,
    with_finish: bool = True,
    citations_on_finish: bool = True,
) -> bytes:
    """A Magisterium-style stream: role chunk, content chunks, finish chunk with citations.

    Per the Magisterium document the ``citations`` field is on one chunk only, the last
    one, which carries ``finish_reason``.
    """
    cites = list(MAGISTERIUM_CITATIONS if citations is None else citations)
    out = [frame(chunk(role="assistant", content="", id=id, model=model), eol=eol)]
    for d in deltas:
        out.append(frame(chunk(d, id=id, model=model), eol=eol))
    if with_finish:
        extra = {"citations": cites} if citations_on_finish else None
        out.append(
            frame(chunk(finish_reason=finish_reason, id=id, model=model, extra=extra), eol=eol)
        )
    if with_done:
        out.append(done_frame(eol))
    return b"".join(out)


def openai_stream(
    deltas: Sequence[str],
    *,
    id: str = "chatcmpl-oai-1",
    model: str = "gpt-4o-mini-2024-07-18",
    usage: tuple[int, int, int] | None = (21, 9, 30),
    eol: bytes = b"\n",
) -> bytes:
    """OpenAI with ``stream_options.include_usage``: a final chunk with empty choices + usage."""
    out = [frame(chunk(role="assistant", content="", id=id, model=model), eol=eol)]
    for d in deltas:
        out.append(frame(chunk(d, id=id, model=model), eol=eol))
    out.append(frame(chunk(finish_reason="stop", id=id, model=model), eol=eol))
    if usage is not None:
        p, c, t = usage
        out.append(
            frame(
                {
                    "id": id,
                    "object": "chat.completion.chunk",
                    "created": CREATED,
                    "model": model,
                    "choices": [],
                    "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": t},
                },
                eol=eol,
            )
        )
    out.append(done_frame(eol))
    return b"".join(out)


_FILTER_OK = {
    "hate": {"filtered": False, "severity": "safe"},
    "self_harm": {"filtered": False, "severity": "safe"},
    "sexual": {"filtered": False, "severity": "safe"},
    "violence": {"filtered": False, "severity": "safe"},
}


def azure_stream(
    deltas: Sequence[str],
    *,
    id: str = "chatcmpl-azure-9",
    model: str = "gpt-4o-2024-05-13",
    eol: bytes = b"\r\n",
) -> bytes:
    """Azure OpenAI: a leading chunk with empty ``choices``, empty id/model and
    ``prompt_filter_results``; content chunks carry ``content_filter_results``."""
    preamble = {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": _FILTER_OK}],
    }
    out = [frame(preamble, eol=eol)]
    out.append(
        frame(
            chunk(
                role="assistant",
                content="",
                id=id,
                model=model,
                choice_extra={"content_filter_results": {}},
            ),
            eol=eol,
        )
    )
    for d in deltas:
        out.append(
            frame(
                chunk(d, id=id, model=model, choice_extra={"content_filter_results": _FILTER_OK}),
                eol=eol,
            )
        )
    out.append(
        frame(
            chunk(
                finish_reason="stop",
                id=id,
                model=model,
                choice_extra={"content_filter_results": {}},
            ),
            eol=eol,
        )
    )
    out.append(done_frame(eol))
    return b"".join(out)


def perplexity_stream(
    deltas: Sequence[str],
    urls: Sequence[str],
    *,
    search_results: Sequence[Chunk] | None = None,
    id: str = "pplx-5d1e",
    model: str = "sonar",
    eol: bytes = b"\n",
) -> bytes:
    """Perplexity: every chunk repeats top-level ``citations`` (URL strings) and, when given,
    ``search_results``; the last content chunk carries ``finish_reason``."""
    extra: Chunk = {"citations": list(urls)}
    if search_results is not None:
        extra["search_results"] = list(search_results)
    out = []
    for i, d in enumerate(deltas):
        last = i == len(deltas) - 1
        out.append(
            frame(
                chunk(
                    d,
                    id=id,
                    model=model,
                    role="assistant" if i == 0 else None,
                    finish_reason="stop" if last else None,
                    extra=extra,
                ),
                eol=eol,
            )
        )
    out.append(done_frame(eol))
    return b"".join(out)


def provider_error(
    message: str, *, type: str | None = None, code: str | None = None, param: str | None = None
) -> Chunk:
    """OpenAI-compatible in-stream error payload ``{"error": {...}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def error_event_frame(message: str = "Overloaded", eol: bytes = b"\n") -> bytes:
    """An ``event: error`` SSE frame (Anthropic/LiteLLM-style)."""
    payload = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
    return frame(payload, eol=eol, event="error")


# ---------------------------------------------------------------------------------------------
# Reference WHATWG SSE parser (oracle), written from the HTML standard, whole-input only
# ---------------------------------------------------------------------------------------------

_EOL = re.compile(r"\r\n|\r|\n")
_ASCII_DIGITS = re.compile(r"[0-9]+")


def reference_sse(data: bytes) -> list[tuple[str, str, str, int | None]]:
    """(event, data, id, retry) of every dispatched event, per the HTML standard.

    Decodes with UTF-8 decode (one leading BOM stripped, errors replaced), splits lines on
    CRLF / CR / LF, discards the unterminated tail (end of file discards pending data).
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.decode("utf-8", "replace")
    events: list[tuple[str, str, str, int | None]] = []
    event_type = ""
    buf = ""
    last_id = ""
    retry: int | None = None
    pos = 0
    for m in _EOL.finditer(text):
        line = text[pos : m.start()]
        pos = m.end()
        if line == "":
            if buf == "":
                event_type = ""
                continue
            if buf.endswith("\n"):
                buf = buf[:-1]
            events.append((event_type or "message", buf, last_id, retry))
            buf = ""
            event_type = ""
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            name, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            name, value = line, ""
        if name == "event":
            event_type = value
        elif name == "data":
            buf += value + "\n"
        elif name == "id":
            if "\0" not in value:
                last_id = value
        elif name == "retry" and _ASCII_DIGITS.fullmatch(value):
            retry = int(value)
    # A CR at the very end followed by nothing is a complete line end; anything after the
    # last line end is the unterminated tail and is discarded.
    return events


# ---------------------------------------------------------------------------------------------
# Reference footnote detector (oracle)
# ---------------------------------------------------------------------------------------------

_MARKER = re.compile(r"\[([0-9]+(?:, ?[0-9]+)*)\]")


@dataclass(frozen=True, slots=True)
class RefSpec:
    number: int
    offset: int


def _markers(text: str) -> list[tuple[int, int, list[int]]]:
    """(start, end, numbers) of every footnote marker in a complete text.

    A marker is ``[n]`` or ``[n, m, ...]`` with one-based numbers; ``[n][m]`` is two
    markers. A ``]`` followed by ``(`` makes a markdown link, not a marker.
    """
    out: list[tuple[int, int, list[int]]] = []
    i = 0
    while True:
        i = text.find("[", i)
        if i < 0:
            return out
        m = _MARKER.match(text, i)
        if m is not None:
            numbers = [int(x) for x in re.split(r", ?", m.group(1))]
            followed_by_paren = m.end() < len(text) and text[m.end()] == "("
            if not followed_by_paren and all(n >= 1 for n in numbers):
                out.append((i, m.end(), numbers))
                i = m.end()
                continue
        i += 1


def expected_refs(text: str) -> list[RefSpec]:
    return [RefSpec(n, start) for start, _end, nums in _markers(text) for n in nums]


def render_markers(text: str, render: Callable[[int], str]) -> str:
    """Display text with each marker rendered (strip: rendered as "").

    Display convention (streamcite's, chosen by the lead and documented in
    core/markers.py): spaces and tabs right before a marker go with it, so
    "Cameron [1]." shows as "Cameron." (strip) or "Cameron¹." (superscript).
    """
    out: list[str] = []
    prev = 0
    for start, end, nums in _markers(text):
        cut = start
        while cut > prev and text[cut - 1] in " \t":
            cut -= 1
        out.append(text[prev:cut])
        out.append("".join(render(n) for n in nums))
        prev = end
    out.append(text[prev:])
    return "".join(out)


def strip_markers(text: str) -> str:
    return render_markers(text, lambda _n: "")


# A suffix that may still become (or be confirmed as) a marker, with the spaces before it
# (which go with a marker in strip/render display): what a live detector may legitimately
# hold back. Deliberately permissive so liveness checks never over-constrain.
PARTIAL_MARKER_SUFFIX = re.compile(r"[ \t]*(?:\[[0-9]*(?:,\s*[0-9]*)*\]?)*\Z")


def releasable_prefix(text_so_far: str) -> str:
    """The part of the text that no conforming detector may still hold back."""
    m = PARTIAL_MARKER_SUFFIX.search(text_so_far)
    return text_so_far if m is None else text_so_far[: m.start()]


# ---------------------------------------------------------------------------------------------
# Event normalisation
# ---------------------------------------------------------------------------------------------


def normalise(events: Iterable[Any]) -> list[dict[str, Any]]:
    """Wire dicts of events, with wall-clock timings removed so two runs compare equal."""
    out = []
    for e in events:
        d = e.to_dict()
        if d.get("type") == "done":
            d["answer"].pop("timings", None)
        out.append(d)
    return out


def general_path_events(stream: bytes) -> list[Any]:
    """Reference for the fast path: every payload through ``ChunkInterpreter.feed`` (the
    general path), then ``close``."""
    from streamcite.core.answer import AnswerBuilder
    from streamcite.core.chunks import ChunkInterpreter
    from streamcite.core.sse import SSEDecoder

    interp = ChunkInterpreter(AnswerBuilder())
    dec = SSEDecoder()
    out: list[Any] = []
    for item in dec.feed_raw(stream):
        if isinstance(item, bytes):
            interp.feed(item, b"", out)
        else:
            interp.feed(item[1], item[0], out)
    dec.close()
    out.extend(interp.close(truncated_block=dec.truncated))
    return out
