"""Bounds on what one stream sends to browsers: error events, error texts, ``done``.

* **Error events**: a stream logs (and so sends) at most ``max_errors`` error events.
  The next one is replaced by one ``errors_truncated`` notice (stage ``relay``); later
  ones are dropped. The relay's own final error (``cancelled``, ``abandoned``,
  ``shutdown``…) is always sent. ``done.answer.errors_dropped`` counts what the
  answer does not list.
* **Error texts**: browser-facing messages never carry internal addresses, URLs or
  ``errno`` details. Transport failures get a fixed message per code; other messages
  are scrubbed. The original goes to the server log (:func:`public_error` returns it).
* **done**: its wire form is at most ``max_done_bytes``. When the answer is larger,
  the relay removes, in this order, until it fits: (1) errors beyond ``max_errors``
  (the first ``max_errors - 1`` and the last are kept, the rest counted in
  ``errors_dropped``); (2) the fields the client already received as events
  (:data:`STREAMED_FIELDS`: text, display text, reasoning, citation refs, citations,
  spans, tool calls, refusal, sources, grounding, claims, provider tools); (3) the remaining lists and all
  errors but the last; (4) everything but a few scalars and that last error. The answer then carries
  ``"truncated": true`` and ``"truncated_fields"`` (the keys removed or shortened).
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from streamcite.core.events import DoneEvent, ErrorEvent, Event

if TYPE_CHECKING:
    from streamcite.logs import LibraryLogger

__all__ = [
    "STREAMED_FIELDS",
    "StreamBounds",
    "StreamErrors",
    "bounded_done",
    "public_error",
    "scrub",
]

STREAMED_FIELDS = (
    "text",
    "display_text",
    "reasoning_text",
    "citation_refs",
    "citations",
    "citation_spans",
    "tool_calls",
    "refusal",
    "sources",
    "grounding",
    "claims",
    "provider_tools",
)
"""Answer fields whose content every client already got as events of the stream."""

_LISTS = ("references", "dangling_refs", "uncited_documents", "errors")
_SCALARS = (
    "finish_reason", "id", "model", "usage", "timings", "complete",
    "errors_dropped", "enrichment_skipped", "errors",
)  # fmt: skip
_MAX_MESSAGE = 1000

_GENERIC = {
    "connect_failed": "the relay could not connect to its upstream",
    "connect_timeout": "the relay's upstream did not accept the connection in time",
    "connection_lost": "the connection to the relay's upstream was lost",
    "connection_error": "a network error occurred between the relay and its upstream",
}

_SCRUB = re.compile(
    r"""\[Errno\s*-?\d+\][^(;\]]*"""  # [Errno 111] Connect call failed
    r"""|\(\s*'[^']*'\s*,\s*\d+[^)]*\)"""  # ('127.0.0.1', 8001)
    r"""|\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\s'"<>]+"""  # URLs
    r"""|\[[0-9A-Fa-f:.%]{2,45}\](?::\d+)?"""  # [::1]:8001
    r"""|\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"""  # 10.0.0.5:8001
    r"""|\b(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}\b"""  # bare IPv6
    r"""|\b(?:localhost|(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z0-9-]{1,63}):\d{1,5}\b"""  # host:port
    r"""|\b(?:errno|os error)\s*[:=]?\s*-?\d+""",
    re.IGNORECASE,
)


def scrub(message: str) -> str:
    """``message`` without addresses, URLs and errno details, at most 1,000 characters."""
    cut = len(message) > _MAX_MESSAGE
    out = _SCRUB.sub("…", message[:_MAX_MESSAGE])
    return out + "…" if cut else out


def public_error(event: ErrorEvent) -> str | None:
    """Make ``event.message`` fit for a browser, in place; the original message when it
    changed (for the server log), else None."""
    original = event.message
    generic = _GENERIC.get(event.code)
    public = generic if generic is not None else scrub(original)
    if public == original:
        return None
    event.message = public
    return original


class StreamErrors:
    """Admission of one stream's error events (at most ``limit`` are logged)."""

    __slots__ = ("dropped", "limit", "seen")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen = 0
        self.dropped = 0

    def admit(self, event: ErrorEvent) -> ErrorEvent | None:
        """The event to log for ``event``: itself, the one ``errors_truncated`` notice,
        or None (dropped, counted)."""
        self.seen += 1
        if self.seen <= self.limit:
            return event
        self.dropped += 1
        if self.seen == self.limit + 1:
            return ErrorEvent(
                code="errors_truncated",
                message=(
                    f"more than {self.limit} errors in this stream; the rest are not sent "
                    "(done.answer.errors_dropped counts them)"
                ),
                stage="relay",
            )
        return None


def bounded_done(done: DoneEvent, *, max_errors: int, max_bytes: int) -> bytes:
    """The wire JSON of ``done`` within the bounds described in the module docstring.

    Built field by field, never as one dump of the whole answer that is then reloaded:
    a field that cannot fit (a string or list longer than ``max_bytes``) is dropped
    without being serialised, the others are serialised once, and the stages below only
    choose which of those bytes to join. Peak memory stays about ``max_bytes`` plus the
    fields kept, whatever the answer's size (600 MB of text took 5.5 GB the old way).
    """
    whole = _whole_done(done, max_errors, max_bytes)
    return whole if whole is not None else _done_by_fields(done, max_errors, max_bytes)


def _done_by_fields(done: DoneEvent, max_errors: int, max_bytes: int) -> bytes:
    """:func:`bounded_done` when a bound is passed: field by field."""
    answer = done.answer
    names = _answer_fields(answer)
    parts: dict[str, bytes | None] = {}
    for name in names:
        value = getattr(answer, name)
        parts[name] = None if _size_floor(value) > max_bytes else orjson.dumps(value)
    errors = list(answer.errors)
    if len(errors) <= max_errors and None not in parts.values():
        payload = _join(parts, {})
        if len(payload) <= max_bytes:
            return payload
    removed: list[str] = []
    if len(errors) > max_errors:
        errors = [*errors[: max(max_errors - 1, 0)], errors[-1]]
        dropped = answer.errors_dropped + len(answer.errors) - len(errors)
        parts["errors_dropped"] = orjson.dumps(dropped)
        removed.append("errors")
    parts["errors"] = _scrubbed(errors)

    def fits() -> bytes | None:
        if None in parts.values():
            return None  # a field too large to serialise is still there
        payload = _join(parts, {"truncated": True, "truncated_fields": removed})
        return payload if len(payload) <= max_bytes else None

    if removed and (out := fits()) is not None:
        return out
    for stage in (STREAMED_FIELDS, _LISTS):
        for key in stage:
            if key == "errors":
                if len(errors) > 1:
                    dropped = answer.errors_dropped + len(answer.errors) - 1
                    errors = errors[-1:]
                    parts["errors"] = _scrubbed(errors)
                    parts["errors_dropped"] = orjson.dumps(dropped)
                    if "errors" not in removed:
                        removed.append("errors")
            elif key in parts:
                del parts[key]
                removed.append(key)
        if (out := fits()) is not None:
            return out
    kept = {k: parts[k] for k in _SCALARS if k in parts and parts[k] is not None}
    removed += [k for k in parts if k not in kept]
    return _join(kept, {"truncated": True, "truncated_fields": sorted(set(removed))})


def _whole_done(done: DoneEvent, max_errors: int, max_bytes: int) -> bytes | None:
    """The common case in one dump (several times faster than field by field): nothing
    to drop, so the fields' dumps joined by :func:`bounded_done` would be these very
    bytes, and the dump is no larger than the parts it would hold at once. None: a bound
    is passed (the field-by-field way then decides what to leave out)."""
    answer = done.answer
    if len(answer.errors) > max_errors:
        return None
    floor = 0
    for value in _sized_fields(answer):  # a floor of the dump's length
        if value is not None:
            floor += len(value)
    if floor > max_bytes:
        return None
    payload = orjson.dumps(done)
    return payload if len(payload) <= max_bytes else None


def _answer_fields(answer: Any) -> tuple[str, ...]:
    cls = type(answer)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _sized_fields(answer: Any) -> tuple[Any, ...]:
    """The values of ``answer``'s string and list fields (None where optional and unset),
    in one C call (a getter made once per class)."""
    cls = type(answer)
    getter = _SIZED_GETTERS.get(cls)
    if getter is None:
        names = [
            f.name
            for f in dataclasses.fields(cls)
            if str(f.type).startswith(("str", "list", "<class 'str'>", "<class 'list'>"))
        ]
        many = operator.attrgetter(*names) if len(names) > 1 else None
        getter = _SIZED_GETTERS[cls] = many or (lambda a: tuple(getattr(a, n) for n in names))
    out: tuple[Any, ...] = getter(answer)
    return out


_SIZED_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _size_floor(value: Any) -> int:
    """Bytes the JSON of ``value`` takes at least (cheap: no serialisation)."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, list | tuple):
        return len(value) + 1
    return 0


def _scrubbed(errors: list[Any]) -> bytes:
    """The errors' JSON with every message scrubbed (the slow path, as before)."""
    plain = orjson.loads(orjson.dumps(errors))  # at most max_errors bounded errors
    for err in plain:
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            err["message"] = scrub(err["message"])
    return orjson.dumps(plain)


def _join(parts: dict[str, bytes | None], extra: dict[str, Any]) -> bytes:
    """``{"type":"done","answer":{...}}`` from serialised fields, then ``extra``."""
    items = [b'"%s":%s' % (k.encode(), v) for k, v in parts.items() if v is not None]
    items += [b'"%s":%s' % (k.encode(), orjson.dumps(v)) for k, v in extra.items()]
    return b'{"type":"done","answer":{' + b",".join(items) + b"}}"


class StreamBounds:
    """One stream's error admission and ``done`` bound, as the relay logs its events."""

    __slots__ = ("errors", "logger", "max_done", "max_errors")

    def __init__(self, *, max_errors: int, max_done_bytes: int, logger: LibraryLogger) -> None:
        self.errors = StreamErrors(max_errors)
        self.max_errors = max_errors
        self.max_done = max_done_bytes
        self.logger = logger
        """Where an error's internal detail goes (the browser gets the public message)."""

    def payload(self, event: ErrorEvent | DoneEvent) -> bytes | None:
        """Wire JSON of an upstream ``error``/``done`` event; None: not to be logged."""
        if type(event) is DoneEvent:
            return self.final_payload(event)
        assert isinstance(event, ErrorEvent)
        admitted = self.errors.admit(event)
        if admitted is None:
            return None
        return self.final_payload(admitted)

    def final_payload(self, event: Event) -> bytes:
        """Wire JSON of an event the relay always sends (its own errors, ``done``)."""
        if type(event) is DoneEvent:
            for err in event.answer.errors:
                if isinstance(err, ErrorEvent):
                    public_error(err)
            return bounded_done(event, max_errors=self.max_errors, max_bytes=self.max_done)
        if isinstance(event, ErrorEvent):
            detail = public_error(event)
            if detail is not None:  # the browser gets the code and a generic message
                self.logger.warning("relay.stream.error_detail", code=event.code, detail=detail)
        return orjson.dumps(event)
