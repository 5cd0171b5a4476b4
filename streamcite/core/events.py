"""The typed events of a citation-aware stream — the wire format of DESIGN.md.

Each event is a slotted dataclass whose first field is ``type``; ``orjson.dumps(event)``
is its wire form (one JSON object, ``type`` first, unknown fields ``null``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeAlias

import orjson

from streamcite.core.errors import MalformedResponse
from streamcite.core.grounding import (
    CitedChunk,
    GroundingClaim,
    GroundingFact,
    GroundingResult,
    fill_claim_counts,
)
from streamcite.core.models import (
    Citation,
    CitationRef,
    CitationSpan,
    CitedAnswer,
    Timings,
    ToolCall,
    Usage,
)
from streamcite.core.sources import QuotedSource

__all__ = [
    "CitationRefEvent",
    "CitationsEvent",
    "ClaimEvent",
    "DoneEvent",
    "ErrorEvent",
    "Event",
    "FinishEvent",
    "GroundingEvent",
    "MetaEvent",
    "ProviderToolEvent",
    "ReasoningEvent",
    "RefusalEvent",
    "SourcesEvent",
    "TokenEvent",
    "ToolCallEvent",
    "UsageEvent",
    "answer_from_dict",
    "event_from_dict",
    "event_from_json",
    "event_to_json",
]


class _Wire:
    """Mixin: wire serialisation shared by every event."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = orjson.loads(orjson.dumps(self))
        return out

    def to_json(self) -> bytes:
        return orjson.dumps(self)


@dataclass(slots=True)
class MetaEvent(_Wire):
    type: str = field(default="meta", init=False)
    id: str | None = None
    model: str | None = None
    created: int | None = None


@dataclass(slots=True)
class TokenEvent(_Wire):
    """A non-empty ``delta.content``, exactly as received (never coalesced).

    ``display`` is what a UI shows for this token under the marker mode: in ``keep``
    mode it is ``text``; in ``strip``/render mode a partial footnote marker is held
    back until it is known, so ``display`` may be empty or hold earlier text.
    """

    type: str = field(default="token", init=False)
    index: int = 0
    text: str = ""
    display: str = ""


@dataclass(slots=True)
class CitationRefEvent(_Wire):
    type: str = field(default="citation_ref", init=False)
    index: int = 0
    number: int = 0
    document_index: int = 0
    offset: int = 0


@dataclass(slots=True)
class FinishEvent(_Wire):
    """A choice finished. ``reason`` is in the chat vocabulary (``stop``, ``length``,
    ``tool_calls``, ``content_filter``, ``refusal``, ``error``); ``raw_reason`` is the
    provider's own value in the other dialects (Anthropic ``end_turn``, Gemini ``STOP``...),
    ``None`` in the chat dialect, whose vocabulary this is."""

    type: str = field(default="finish", init=False)
    index: int = 0
    reason: str | None = None
    raw_reason: str | None = None


@dataclass(slots=True)
class CitationsEvent(_Wire):
    type: str = field(default="citations", init=False)
    citations: list[Citation] = field(default_factory=list)
    spans: list[CitationSpan] = field(default_factory=list)
    """Where ``url_citation`` annotations (OpenAI search models) anchor their citation in
    the answer text; empty for citations that come without a span."""


@dataclass(slots=True)
class ReasoningEvent(_Wire):
    """A non-empty reasoning delta, exactly as received (never coalesced):
    ``delta.reasoning_content``, ``delta.reasoning`` or a Mistral ``thinking`` part."""

    type: str = field(default="reasoning", init=False)
    index: int = 0
    text: str = ""


@dataclass(slots=True)
class ToolCallEvent(_Wire):
    """One ``delta.tool_calls`` entry as it arrives. ``arguments`` is this delta's
    fragment; ``id`` and ``name`` are ``None`` on fragments that do not carry them."""

    type: str = field(default="tool_call", init=False)
    index: int = 0
    tool_index: int = 0
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True)
class ProviderToolEvent(_Wire):
    """A tool the provider runs itself (web search, web fetch, code execution, file
    search, an MCP server's tool): ``phase`` ``"call"`` when it starts, ``"result"`` when
    its result arrives. ``tool_index`` is its order among the answer's provider tools (a
    call and its result share it), ``id`` the provider's (``srvtoolu_…``, ``ws_…``),
    ``name`` the tool's (``web_search``, ``code_execution``, the MCP tool's), ``server``
    the MCP server's name where given. ``input`` is the tool's input as JSON text
    (bounded: long values cut with ``…``, always valid JSON), ``None`` where not known
    yet; ``status`` the result's (``completed``, ``failed``, ``error``…); ``summary`` a
    bounded digest of the result (for a search its ``count`` and the results' URLs and
    titles, never page contents; for code its return code and clipped output).

    >>> ProviderToolEvent(id="srvtoolu_1", name="web_search", input='{"query":"café"}').phase
    'call'
    """

    type: str = field(default="provider_tool", init=False)
    index: int = 0
    tool_index: int = 0
    id: str | None = None
    name: str | None = None
    phase: str = "call"
    input: str | None = None
    status: str | None = None
    summary: dict[str, Any] | None = None
    server: str | None = None


@dataclass(slots=True)
class RefusalEvent(_Wire):
    """A non-empty ``delta.refusal``, exactly as received."""

    type: str = field(default="refusal", init=False)
    index: int = 0
    text: str = ""


@dataclass(slots=True)
class UsageEvent(_Wire):
    type: str = field(default="usage", init=False)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None

    def to_usage(self) -> Usage:
        return Usage(self.prompt_tokens, self.completion_tokens, self.total_tokens)


@dataclass(slots=True)
class SourcesEvent(_Wire):
    type: str = field(default="sources", init=False)
    provider: str = "wikit"
    query_id: str | None = None
    sources: list[QuotedSource] = field(default_factory=list)


@dataclass(slots=True)
class GroundingEvent(_Wire):
    type: str = field(default="grounding", init=False)
    provider: str = "local"
    support_score: float | None = None
    claims: list[GroundingClaim] = field(default_factory=list)
    cited_chunks: list[CitedChunk] = field(default_factory=list)
    cited_facts: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    facts: list[GroundingFact] = field(default_factory=list)
    checked_claims: int | None = None
    """Claims that needed a check (added field; derived from ``claims`` when not given)."""
    unsupported_claims: int | None = None
    """Checked claims citing no fact (added field; derived from ``claims``)."""
    nothing_to_check: bool | None = None
    """True when no claim needed a check: ``support_score`` is then no measure of support."""
    reason: str | None = None
    """Why there is no verdict (added field): ``support_score`` is ``None`` and no claim is
    marked unsupported, e.g. "no quoted text to check against: add Wikit sources or facts"."""

    def __post_init__(self) -> None:
        fill_claim_counts(self)

    @classmethod
    def from_result(cls, r: GroundingResult) -> GroundingEvent:
        return cls(
            provider=r.provider,
            support_score=r.support_score,
            claims=r.claims,
            cited_chunks=r.cited_chunks,
            cited_facts=r.cited_facts,
            warnings=r.warnings,
            facts=r.facts,
            checked_claims=r.checked_claims,
            unsupported_claims=r.unsupported_claims,
            nothing_to_check=r.nothing_to_check,
            reason=r.reason,
        )

    def to_result(self) -> GroundingResult:
        return GroundingResult(
            provider=self.provider,
            support_score=self.support_score,
            claims=self.claims,
            cited_chunks=self.cited_chunks,
            cited_facts=self.cited_facts,
            warnings=self.warnings,
            facts=self.facts,
            checked_claims=self.checked_claims,
            unsupported_claims=self.unsupported_claims,
            nothing_to_check=self.nothing_to_check,
            reason=self.reason,
        )


@dataclass(slots=True)
class ClaimEvent(_Wire):
    """One claim (a sentence, or a span a checker flagged) of the answer and its verdict.

    Emitted as soon as it is known: by the offline checker while the answer streams
    (each sentence once it is complete and facts to check it against are known), by
    the cloud checkers (``google``, ``azure``) after the stream. ``start``/``end`` are
    CHARACTER offsets into ``answer.text`` (end exclusive), ``start_utf16``/``end_utf16``
    the same in UTF-16 units (JavaScript). ``score`` is in [0, 1], ``None`` when no
    check was needed (a question, filler) or the checker gives none; ``supported`` is
    ``None`` when no check was needed. ``citation_indices`` index ``answer.citations``.
    ``index`` is the claim's ordinal among its checker's claims.

    >>> ClaimEvent(index=0, start=0, end=3, start_utf16=0, end_utf16=3, text="Hi.").type
    'claim'
    """

    type: str = field(default="claim", init=False)
    index: int = 0
    start: int = 0
    end: int = 0
    start_utf16: int = 0
    end_utf16: int = 0
    text: str = ""
    score: float | None = None
    supported: bool | None = None
    citation_indices: list[int] = field(default_factory=list)
    checker: str = "local"
    """``local``, ``google``, ``azure``, or a custom checker's name."""


@dataclass(slots=True)
class ErrorEvent(_Wire):
    """A fault. The stream goes on where it can; ``done`` always follows eventually."""

    type: str = field(default="error", init=False)
    code: str = "error"
    message: str = ""
    retryable: bool = False
    stage: str = "chunk"
    """connect, http, sse, chunk, sources, grounding, timeout or cancelled."""
    status: int | None = None
    """HTTP status, when the fault is an HTTP response."""
    retry_after: float | None = None
    """Seconds the provider asked to wait (``Retry-After``)."""


@dataclass(slots=True)
class DoneEvent(_Wire):
    type: str = field(default="done", init=False)
    answer: CitedAnswer = field(default_factory=CitedAnswer)


Event: TypeAlias = (
    MetaEvent
    | TokenEvent
    | CitationRefEvent
    | FinishEvent
    | CitationsEvent
    | UsageEvent
    | ReasoningEvent
    | ToolCallEvent
    | ProviderToolEvent
    | RefusalEvent
    | SourcesEvent
    | GroundingEvent
    | ClaimEvent
    | ErrorEvent
    | DoneEvent
)


def event_to_json(event: Event) -> bytes:
    """The wire form of an event: one JSON object, ``type`` first."""
    return orjson.dumps(event)


# -- the other direction: wire form → event (cold path: strict, typed errors) -----------


def event_from_json(data: bytes | str) -> Event:
    """An event from its wire JSON, as :func:`event_to_json` (or the relay) wrote it.

    >>> event_from_json(b'{"type":"token","index":0,"text":"Hi","display":"Hi"}')
    TokenEvent(type='token', index=0, text='Hi', display='Hi')

    Raises :class:`~streamcite.core.errors.MalformedResponse` for anything that is not
    one event of the wire format (bad JSON, unknown ``type``, wrong field shapes).
    """
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MalformedResponse(f"event: not JSON ({exc})") from None
    return event_from_dict(obj)


def event_from_dict(obj: Any) -> Event:
    """An event from its wire dict (``event.to_dict()``): the inverse of the codec.

    Unknown fields are ignored (the contract only adds fields), so a client built on an
    older streamcite reads a newer stream.

    >>> event_from_dict({"type": "finish", "index": 0, "reason": "stop"})
    FinishEvent(type='finish', index=0, reason='stop', raw_reason=None)
    """
    if not isinstance(obj, dict):
        raise MalformedResponse(f"event: expected a JSON object, got {type(obj).__name__}")
    kind = obj.get("type")
    decode = _DECODERS.get(kind) if isinstance(kind, str) else None
    if decode is None:
        raise MalformedResponse(f"event: unknown type {str(kind)[:40]!r}")
    try:
        event: Event = decode(obj)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise MalformedResponse(f"event {kind}: bad fields ({exc})") from None
    return event


def answer_from_dict(obj: Any) -> CitedAnswer:
    """A :class:`CitedAnswer` from its wire dict (the ``answer`` of a ``done`` event)."""
    if not isinstance(obj, dict):
        raise MalformedResponse("answer: expected a JSON object")
    kw = _kwargs(CitedAnswer, obj)
    kw["citations"] = _list(Citation, obj.get("citations"))
    kw["citation_refs"] = _list(CitationRef, obj.get("citation_refs"))
    kw["citation_spans"] = _list(CitationSpan, obj.get("citation_spans"))
    kw["tool_calls"] = _list(ToolCall, obj.get("tool_calls"))
    kw["sources"] = [QuotedSource.from_dict(x) for x in obj.get("sources") or ()]
    kw["errors"] = [_flat(ErrorEvent, x) for x in obj.get("errors") or ()]
    kw["claims"] = [_flat(ClaimEvent, x) for x in obj.get("claims") or ()]
    kw["provider_tools"] = _list(ProviderToolEvent, obj.get("provider_tools"))
    for name in ("dangling_refs", "uncited_documents", "references"):
        kw[name] = list(obj.get(name) or ())
    g = obj.get("grounding")
    kw["grounding"] = None if g is None else _grounding(GroundingEvent, g).to_result()
    u = obj.get("usage")
    kw["usage"] = None if u is None else _flat(Usage, u)
    kw["timings"] = _flat(Timings, obj.get("timings") or {})
    return CitedAnswer(**kw)


def _kwargs(cls: type, obj: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of dataclass ``cls`` found in its wire dict ``obj``."""
    return {f.name: obj[f.name] for f in fields(cls) if f.init and f.name in obj}


def _flat(cls: type, obj: Any) -> Any:
    if not isinstance(obj, dict):
        raise TypeError(f"{cls.__name__}: expected an object")
    return cls(**_kwargs(cls, obj))


def _list(cls: type, items: Any) -> list[Any]:
    return [_flat(cls, x) for x in items or ()]


def _grounding(cls: type[GroundingEvent], obj: Any) -> GroundingEvent:
    if not isinstance(obj, dict):
        raise TypeError("grounding: expected an object")
    kw = _kwargs(cls, obj)
    kw["claims"] = _list(GroundingClaim, obj.get("claims"))
    kw["cited_chunks"] = _list(CitedChunk, obj.get("cited_chunks"))
    kw["facts"] = _list(GroundingFact, obj.get("facts"))
    kw["cited_facts"] = list(obj.get("cited_facts") or ())
    kw["warnings"] = list(obj.get("warnings") or ())
    return cls(**kw)


def _citations(obj: dict[str, Any]) -> CitationsEvent:
    return CitationsEvent(
        citations=_list(Citation, obj.get("citations")),
        spans=_list(CitationSpan, obj.get("spans")),
    )


def _sources(obj: dict[str, Any]) -> SourcesEvent:
    return SourcesEvent(
        provider=obj.get("provider") or "wikit",
        query_id=obj.get("query_id"),
        sources=[QuotedSource.from_dict(x) for x in obj.get("sources") or ()],
    )


# type → decoder: the flat events are their fields; the nested ones build their parts.
_DECODERS: dict[str, Any] = {
    cls_type: (lambda o, c=cls: _flat(c, o))
    for cls_type, cls in (
        ("meta", MetaEvent),
        ("token", TokenEvent),
        ("citation_ref", CitationRefEvent),
        ("finish", FinishEvent),
        ("usage", UsageEvent),
        ("reasoning", ReasoningEvent),
        ("tool_call", ToolCallEvent),
        ("provider_tool", ProviderToolEvent),
        ("refusal", RefusalEvent),
        ("error", ErrorEvent),
        ("claim", ClaimEvent),
    )
}
_DECODERS["citations"] = _citations
_DECODERS["sources"] = _sources
_DECODERS["grounding"] = lambda o: _grounding(GroundingEvent, o)
_DECODERS["done"] = lambda o: DoneEvent(answer=answer_from_dict(o.get("answer") or {}))
