"""Hypothesis: any re-chunking of a stream carrying ``url_citation`` annotations and
provider errors gives the same events, and the errors are the same typed errors.

The fixtures of tests/fixtures/providers/ show each shape once; here streams are
generated that mix plain content chunks (so the template fast path engages after the
first token and has to hand every other shape back to the general path, wherever the
read boundaries fall) with:

- ``url_citation`` annotations, alone or beside content in one delta, valid or of an
  unknown type or with an impossible span (``bad_annotation``, not kept), or with a span
  beyond the final text (``bad_annotation``, kept);
- OpenRouter's mid-stream error: ``error {code, message}`` with ``finish_reason: "error"``,
  the code an HTTP status (number or numeric string) or a name (``server_error``);
- a bare ``finish_reason: "error"`` (``finish_error``);
- vLLM's older top-level ``{"object": "error", ...}``;
- an SSE ``event: error`` frame.

The expected answer (text, citations and spans, the typed errors in order, finish reason,
``complete``) is computed here from the documented rules, not from the implementation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamcite import aiter_events, iter_events
from streamcite.core.events import DoneEvent, ErrorEvent, Event
from tests._streams import normalise, split_at

_ENVELOPE = {"id": "chatcmpl-rc", "object": "chat.completion.chunk", "created": 1, "model": "m"}

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
# error.code as providers send it: HTTP statuses as numbers or numeric strings, or names
_status = st.sampled_from([400, 401, 402, 403, 408, 429, 500, 502, 503, 504])
_code = st.one_of(
    _status,
    _status.map(str),
    st.sampled_from(["server_error", "rate_limit_exceeded", "invalid_prompt", "moderation"]),
)
_note = st.one_of(
    st.tuples(
        st.just("url_citation"),
        _text,  # url
        _text,  # title
        st.integers(0, 500),
        st.integers(0, 500),
    ),
    st.tuples(st.just("file_citation"), _text, _text, st.just(0), st.just(0)),
)
_item = st.one_of(
    st.tuples(st.just("content"), _text),
    st.tuples(st.just("content"), _text),  # twice: mostly content, as real streams are
    st.tuples(st.just("annotations"), st.lists(_note, min_size=1, max_size=2)),
    st.tuples(st.just("content+annotations"), st.tuples(_text, st.lists(_note, min_size=1))),
    st.tuples(st.just("openrouter_error"), _code),
    st.tuples(st.just("finish_error"), st.none()),
    st.tuples(st.just("vllm_error"), _status),
    st.tuples(st.just("sse_error"), _text),
)
_ending = st.sampled_from(["stop+done", "done", "nothing"])


def _data(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return _data({**_ENVELOPE, "choices": [choice], **extra})


def _notes(notes: list[tuple[str, str, str, int, int]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, url, title, start, end in notes:
        if kind == "url_citation":
            body = {"end_index": end, "start_index": start, "title": title, "url": url}
            out.append({"type": "url_citation", "url_citation": body})
        else:
            out.append({"type": kind, kind: {"file_id": url}})
    return out


def _frame(kind: str, arg: Any) -> bytes:
    """One generated item as the provider sends it."""
    if kind == "content":
        return _chunk({"content": arg})
    if kind == "annotations":
        return _chunk({"annotations": _notes(arg)})
    if kind == "content+annotations":
        return _chunk({"content": arg[0], "annotations": _notes(arg[1])})
    if kind == "openrouter_error":
        err = {"code": arg, "message": "Provider returned error"}
        return _chunk({"content": ""}, "error", error=err, provider="Chutes")
    if kind == "finish_error":
        return _chunk({}, "error")
    if kind == "vllm_error":
        msg = "The model crashed"
        return _data(
            {"object": "error", "message": msg, "type": "Error", "param": None, "code": arg}
        )
    assert kind == "sse_error"
    payload = {"type": "error", "error": {"type": "overloaded_error", "message": arg}}
    return b"event: error\ndata: " + orjson.dumps(payload) + b"\n\n"


def _stream(items: list[tuple[str, Any]], ending: str) -> bytes:
    data = b"".join(_frame(k, a) for k, a in items)
    if ending == "stop+done":
        data += _chunk({}, "stop")
    if ending != "nothing":
        data += b"data: [DONE]\n\n"
    return data


def _status_of(code: Any) -> int | None:
    if isinstance(code, int):
        return code
    return int(code) if isinstance(code, str) and code.isdigit() else None


def _note_error(note: tuple[str, str, str, int, int]) -> bool:
    """An annotation that is reported and not kept: an unknown type, or a span that is
    not ``0 <= start <= end``."""
    kind, _url, _title, start, end = note
    return kind != "url_citation" or not 0 <= start <= end


def _expected_errors(items: list[tuple[str, Any]], ending: str) -> list[tuple[Any, ...]]:
    """(code, status, retryable, stage) of every error, in stream order (the docs' rules:
    an HTTP-status code sets ``status``; 429 and 5xx are retryable; a bare error finish is
    ``finish_error``, retryable; an unknown annotation type or an impossible span is
    ``bad_annotation``; a span ending beyond the final text is ``bad_annotation`` too,
    reported once the text is final: at choice 0's finish or ``[DONE]``, and at once for
    annotations that come after it)."""
    named_retryable = {"server_error", "rate_limit_exceeded", "overloaded_error"}
    bad_note = ("bad_annotation", None, False, "chunk")
    out: list[tuple[Any, ...]] = []
    size = 0  # characters of the text so far
    ends: list[int] = []  # span ends of the kept citations not checked yet
    final = False

    def check() -> None:
        out.extend(bad_note for end in ends if end > size)
        ends.clear()

    for kind, arg in items:
        if kind == "content":
            size += len(arg)
        elif kind in ("annotations", "content+annotations"):
            notes = arg if kind == "annotations" else arg[1]
            size += len(arg[0]) if kind == "content+annotations" else 0
            out += [bad_note for n in notes if _note_error(n)]
            ends += [n[4] for n in notes if not _note_error(n)]
            if final:
                check()
        elif kind in ("openrouter_error", "vllm_error"):
            if kind == "openrouter_error":  # its chunk finishes choice 0 first
                final = True
                check()
            status = _status_of(arg)
            retry = str(arg) in named_retryable or (
                status is not None and (status == 429 or status >= 500)
            )
            out.append((str(arg), status, retry, "chunk"))
        elif kind == "finish_error":
            final = True
            check()
            out.append(("finish_error", None, True, "chunk"))
        elif kind == "sse_error":
            out.append(("overloaded_error", None, True, "sse"))
    if ending != "nothing":  # a stop finish, or [DONE]: the text is final
        check()
    finished = any(k in ("openrouter_error", "finish_error") for k, _ in items)
    if ending == "nothing" and not finished:
        out.append(("truncated", None, True, "sse"))
    return out


def _check_answer(items: list[tuple[str, Any]], ending: str, events: list[Event]) -> None:
    done = events[-1]
    assert isinstance(done, DoneEvent)
    a = done.answer
    text = "".join(
        arg[0] if k == "content+annotations" else arg for k, arg in items if k.startswith("content")
    )
    assert a.text == text
    # Citations: every url_citation in order, document_index = position, span as sent.
    cites = [
        (n[1], n[2], n[3], n[4])
        for k, arg in items
        if k in ("annotations", "content+annotations")
        for n in (arg if k == "annotations" else arg[1])
        if not _note_error(n)
    ]
    assert [(c.source_url, c.document_title, c.document_index) for c in a.citations] == [
        (u, t, i) for i, (u, t, _s, _e) in enumerate(cites)
    ]
    assert [(s.document_index, s.start, s.end) for s in a.citation_spans] == [
        (i, s, e) for i, (_u, _t, s, e) in enumerate(cites)
    ]
    last = [e for e in events if e.type == "citations"]
    if cites:
        assert len(last[-1].to_dict()["citations"]) == len(cites)
    else:
        assert not last
    # The same typed errors, in order, on the events and on the answer.
    errs = [e for e in events if e.type == "error"]
    assert all(isinstance(e, ErrorEvent) for e in errs)
    got = [(e.code, e.status, e.retryable, e.stage) for e in errs]  # type: ignore[union-attr]
    assert got == _expected_errors(items, ending)
    assert [(e.code, e.status, e.retryable, e.stage) for e in a.errors] == got
    # An answer cut by an error finish or a vLLM error object is never complete.
    cut = any(k in ("openrouter_error", "finish_error", "vllm_error") for k, _ in items)
    assert a.complete is (not cut and ending != "nothing")
    finishes = [("error" if k in ("openrouter_error", "finish_error") else None) for k, _ in items]
    reasons = [r for r in finishes if r] + (["stop"] if ending == "stop+done" else [])
    assert a.finish_reason == (reasons[-1] if reasons else None)


async def _aiter(pieces: list[bytes]) -> list[Event]:
    async def gen() -> AsyncIterator[bytes]:
        for p in pieces:
            yield p

    return [e async for e in aiter_events(gen())]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(_item, max_size=20),
    ending=_ending,
    cuts=st.lists(st.integers(0, 100_000), max_size=12),
)
def test_annotations_and_provider_errors_any_split(
    items: list[tuple[str, Any]], ending: str, cuts: list[int]
) -> None:
    data = _stream(items, ending)
    whole = list(iter_events([data]))
    _check_answer(items, ending, whole)
    pieces = split_at(data, [c % (len(data) + 1) for c in cuts])
    assert normalise(list(iter_events(pieces))) == normalise(whole)
    assert normalise(asyncio.run(_aiter(pieces))) == normalise(whole)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(_item, min_size=1, max_size=8), ending=_ending)
def test_annotations_and_provider_errors_byte_by_byte(
    items: list[tuple[str, Any]], ending: str
) -> None:
    data = _stream(items, ending)
    whole = list(iter_events([data]))
    bytewise = list(iter_events([data[i : i + 1] for i in range(len(data))]))
    assert normalise(bytewise) == normalise(whole)
