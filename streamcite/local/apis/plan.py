"""What the four other APIs of the local backend share: the answer planned once.

``POST /v1/responses`` (:mod:`~streamcite.local.apis.responses`), ``POST /v1/messages``
(:mod:`~streamcite.local.apis.anthropic`), Gemini's ``:generateContent`` /
``:streamGenerateContent`` (:mod:`~streamcite.local.apis.gemini`) and ``POST /v2/chat``
(:mod:`~streamcite.local.apis.cohere`) all answer from the same answerer as
``/v1/chat/completions``: the same text, footnotes ``[n]`` included, and the same cited
passages. Each API then writes the citations in its own native form; what they share
is here:

- :class:`DialectPlan`: the answer text, its stream pieces, the Magisterium citations,
  and the :class:`CitedSegment` of every cited sentence (its character span in the text
  and the sentence quoted from the passage);
- :func:`plan_answer`: reads the faults, the body (within the body-size cap) and the
  question, answers, keeps the answer in the store (so the Wikit endpoints serve the
  response id too), and plans the reply; or returns the error the API should send;
- offsets in the units each API uses: :func:`utf8_offset` (Gemini's bytes).
"""

from __future__ import annotations

import secrets
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from streamcite.core.quote import quote
from streamcite.local.answerer import Answer, token_pieces, with_wrong_number
from streamcite.local.config import MODEL
from streamcite.local.faults import FaultSpec, FaultSpecError
from streamcite.local.request_guards import fault_status, faults_of, read_body
from streamcite.local.state import STATE, root_url
from streamcite.local.store import StoredAnswer

__all__ = [
    "CHAT_ONLY_FAULTS",
    "CitedSegment",
    "DialectPlan",
    "DialectRequest",
    "ErrorReply",
    "UnknownModel",
    "plan_answer",
    "positive_int",
    "shown_model",
    "split_at",
    "utf8_offset",
    "word_count",
]

CHAT_ONLY_FAULTS = ("profile", "tool_call", "provider_error")
"""Fault keys only ``/v1/chat/completions`` serves (the other APIs answer 400)."""

ErrorReply = Callable[[int, str, FaultSpec | None], web.Response]
"""An API's error response: ``(status, message, spec)`` (``spec`` adds ``Retry-After``)."""

UnknownModel = Callable[[str], web.Response]
"""An API's refusal of a model it does not serve (each API's own 404), given the model
name as shown (see :func:`shown_model`)."""


def shown_model(model: object) -> str:
    """A requested model name as an error message may quote it: at most 80 characters,
    anything unprintable as ``?`` (inert when echoed to a terminal or a page)."""
    shown = model if isinstance(model, str) else quote(model, 80)  # any depth: bounded
    return "".join(c if c.isprintable() else "?" for c in shown[:80])


@dataclass(slots=True)
class DialectRequest:
    """What a request to one of the APIs asks, read from its own body shape."""

    question: str
    stream: bool
    max_tokens: int | None
    model: str
    prompt_words: int


@dataclass(slots=True, frozen=True)
class CitedSegment:
    """A cited sentence of the answer: ``text[start:end]`` (characters), footnote included."""

    start: int
    end: int
    number: int
    """Its footnote: the citation is ``citations[number - 1]``."""
    quote: str
    """The sentence as the passage says it (what the API reports as the cited text)."""


@dataclass(slots=True)
class DialectPlan:
    """Everything one answer sends, in any API, decided before the first byte."""

    answer_id: str
    """The id the response reports (each API prefixes its own)."""
    created: int
    model: str
    stream: bool
    pieces: list[str]
    text: str
    """``"".join(pieces)``: the answer, cut after ``max_tokens`` pieces."""
    finish: str
    """``stop`` or ``length`` (each API words it its own way)."""
    citations: list[dict[str, Any]]
    """The Magisterium citations, one per cited passage (``document_index`` = footnote - 1)."""
    segments: list[CitedSegment]
    """The cited sentences wholly inside :attr:`text`, in order."""
    prompt_tokens: int
    spec: FaultSpec
    first_delay: float
    token_delay: float

    @property
    def completion_tokens(self) -> int:
        return len(self.pieces)


def word_count(text: str) -> int:
    """Words stand in for tokens, as in the chat API's usage."""
    return len(text.split())


def utf8_offset(text: str, index: int) -> int:
    """The UTF-8 byte offset of character ``index`` of ``text`` (Gemini's unit)."""
    return len(text[:index].encode("utf-8"))


def split_at(pieces: list[str], cuts: list[int]) -> list[list[str]]:
    """``pieces`` regrouped into the runs between the character offsets ``cuts`` of their
    concatenation (a piece across a cut is split there); ``len(cuts) + 1`` runs, some
    maybe empty. Run ``k`` covers ``[cuts[k-1], cuts[k])``."""
    bounds = sorted(set(cuts))
    runs: list[list[str]] = [[] for _ in range(len(bounds) + 1)]
    at = 0
    for piece in pieces:
        end = at + len(piece)
        run = bisect_right(bounds, at)
        pos = at
        for cut in bounds[run:]:
            if cut >= end:
                break
            runs[run].append(piece[pos - at : cut - at])
            pos, run = cut, run + 1
        runs[run].append(piece[pos - at :])
        at = end
    return runs


def _segments(answer: Answer, text_len: int) -> list[CitedSegment]:
    return [
        CitedSegment(s.answer_start, s.answer_end, s.number, s.text)
        for s in answer.sentences
        if s.answer_end <= text_len
    ]


async def _read_question(
    request: web.Request,
    error: ErrorReply,
    parse: Callable[[Any], DialectRequest | str],
    unknown_model: UnknownModel,
) -> DialectRequest | web.Response:
    """The request's body read as the API's (bounded), or the error to send instead."""
    state = request.app[STATE]
    limit = state.config.max_body_bytes
    raw = await read_body(request, limit)
    if raw is None:
        return error(413, f"the request body is larger than {limit} bytes", None)
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return error(400, "the request body is not valid JSON", None)
    if not isinstance(body, dict):
        return error(400, "the request body must be a JSON object", None)
    asked = parse(body)
    if isinstance(asked, str):
        return error(400, asked, None)
    if asked.model != MODEL:
        return unknown_model(shown_model(asked.model))
    if len(asked.question) > state.config.max_question_chars:
        return error(
            413, f"the question is longer than {state.config.max_question_chars} characters", None
        )
    return asked


async def plan_answer(
    request: web.Request,
    error: ErrorReply,
    parse: Callable[[Any], DialectRequest | str],
    *,
    unknown_model: UnknownModel,
    prefix: str = "",
    make_id: Callable[[], str] | None = None,
    stream: bool | None = None,
) -> DialectPlan | web.Response:
    """Read and answer ``request`` for one API; the error to send instead, in its shape.

    ``parse`` reads the API's JSON body (an error message for a body it refuses);
    a model other than :data:`~streamcite.local.config.MODEL` gets ``unknown_model``'s
    404 (the API's own shape), as ``/v1/chat/completions`` answers ``model_not_found``;
    ``prefix`` starts the response id (``make_id``, when given, makes it); ``stream``, when given, overrides the body's.
    """
    state = request.app[STATE]
    try:
        spec = faults_of(request)
    except FaultSpecError as exc:
        return error(fault_status(exc), f"fault spec: {exc}", None)
    if spec.status is not None:
        return error(spec.status, f"injected fault: HTTP {spec.status}", spec)
    chat_only = [k for k in CHAT_ONLY_FAULTS if getattr(spec, k) is not None]
    if chat_only:
        return error(400, f"fault {chat_only[0]} is served by /v1/chat/completions only", None)
    asked = await _read_question(request, error, parse, unknown_model)
    if isinstance(asked, web.Response):
        return asked
    if stream is not None:
        asked.stream = stream
    answer = state.answer(asked.question)
    if spec.hallucinate:
        answer = with_wrong_number(answer)
    answer_id = make_id() if make_id is not None else prefix + secrets.token_hex(12)
    created = int(time.time())
    state.store.put(StoredAnswer(answer_id, created, answer, spec.sources_404_until))
    pieces = token_pieces(answer.text)
    finish = "stop"
    if asked.max_tokens is not None and len(pieces) > asked.max_tokens:
        pieces, finish = pieces[: asked.max_tokens], "length"
    text = "".join(pieces)
    first = spec.first_token_delay
    if first is None:
        first = state.config.first_token_delay
    token = spec.token_delay if spec.token_delay is not None else state.config.token_delay
    state.log.debug(
        "dialect answer",
        api=request.path[:100],
        found=answer.found,
        pieces=len(pieces),
        stream=asked.stream,
    )
    return DialectPlan(
        answer_id=answer_id,
        created=created,
        model=asked.model,
        stream=asked.stream,
        pieces=pieces,
        text=text,
        finish=finish,
        citations=answer.citations(root_url(request)),
        segments=_segments(answer, len(text)),
        prompt_tokens=asked.prompt_words + 4,
        spec=spec,
        first_delay=first or 0.0,
        token_delay=token or 0.0,
    )


def positive_int(value: Any) -> bool:
    """A JSON integer >= 1 (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
