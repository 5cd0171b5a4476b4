"""The caps of one stream, in one place: what a hostile or faulty upstream can grow. Sans-I/O.

Every list or string an upstream can grow has a cap here; going beyond one is a
typed :class:`~streamcite.core.events.ErrorEvent` (never a crash, never silence).
Every dialect interpreter reaches these through its
:class:`~streamcite.core.answer.AnswerBuilder` (``builder.bounds``) or this module, so
a cap is written once.

>>> from streamcite.core.bounds import DEFAULT_BOUNDS, StreamBounds
>>> DEFAULT_BOUNDS.max_answer_chars
8388608
>>> StreamBounds(max_answer_chars=1024).max_citations
256

The error codes a cap turns into:

===========================  ======================================================
``too_many_citations``       a chunk's ``citations``, ``search_results`` or URL list
                             (or the ``url_citation`` annotations of an answer) went
                             beyond its cap: the first ones are kept, the rest dropped
``answer_too_large``         text + reasoning + refusal + tool arguments went beyond
                             ``max_answer_chars``: the stream is cut there
                             (``complete: false``), nothing more is accumulated
``bad_chunk``                a choice index outside ``0..max_choices-1``
``bad_tool_call``            a tool call beyond ``max_tool_calls`` of its choice, or
                             beyond ``max_answer_tool_calls`` of the whole answer
``citation_too_large``       a citation field beyond ``max_citation_text_chars`` or
                             ``max_metadata_bytes`` (cut, the citation kept), the
                             sources of one citation beyond ``max_citation_sources``,
                             or citations beyond ``max_citation_bytes`` in all
                             (the rest dropped)
``event_too_large``          one event beyond ``max_event_bytes`` (skipped), or a
                             whole body beyond ``max_body_bytes`` (not read:
                             ``complete: false``)
===========================  ======================================================
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ANSWER_TOO_LARGE",
    "DEFAULT_BOUNDS",
    "MAX_ANSWER_CHARS",
    "MAX_ANSWER_TOOL_CALLS",
    "MAX_CHOICES",
    "MAX_CITATIONS",
    "MAX_CITATION_BYTES",
    "MAX_CITATION_SOURCES",
    "MAX_CITATION_TEXT_CHARS",
    "MAX_CITATION_WIRE_BYTES",
    "MAX_ERRORS",
    "MAX_ERROR_MESSAGE",
    "MAX_METADATA_BYTES",
    "MAX_TOOL_CALLS",
    "TOO_MANY_CITATIONS",
    "StreamBounds",
    "clip_message",
]

MAX_CHOICES = 128
"""Choices a stream may carry (OpenAI's ``n`` is at most 128): the per-choice state
(footnote detectors, tool-call placement) stays bounded whatever index a stream sends."""

MAX_TOOL_CALLS = 1024
"""Tool calls per choice (OpenAI allows 128 tools): what a choice's calls and their
placement hold stays bounded whatever a hostile stream numbers or names."""

MAX_CITATIONS = 256
"""Citations per list: a chunk's ``citations`` objects or URL strings, its
``search_results``, an answer's ``url_citation`` annotations (each such list of a
dialect). A ``citations`` event carries the whole set each time it changes, so a list
that keeps growing costs its size on every change: 256 is far above what any provider
cites (Perplexity sends 5-20 URLs) and keeps a re-sent set to some 100 KB."""

MAX_ANSWER_CHARS = 8 * 1024 * 1024
"""Characters of one answer: choice 0's text + reasoning + refusal + tool-call arguments.

8 MiB of characters is some two million tokens, sixteen times the longest output any
provider allows today (128k tokens), and still a bounded amount of memory per stream
(the text is held once: ~8 MiB for ASCII, up to 32 MiB for astral characters). Beyond
it the stream is cut with ``answer_too_large``."""

MAX_ANSWER_TOOL_CALLS = 4096
"""Tool calls of a whole answer, every choice together: what a stream of tool calls
costs (their table, their lookups) stays bounded whatever it numbers or spreads over
choices. Beyond it: ``bad_tool_call`` (reported once, the rest counted and dropped)."""

MAX_CITATION_TEXT_CHARS = 16 * 1024
"""Characters of one string field of a citation or span (``cited_text``, a title, a
URL): a quoted passage is a paragraph or two; beyond, it is cut (``…`` appended)."""

MAX_METADATA_BYTES = 16 * 1024
"""Bytes of one citation's or span's ``provider_metadata`` as JSON; beyond (or nested
too deeply to serialise), it is replaced by ``{"truncated": true, "bytes": n,
"preview": "…"}``."""

MAX_CITATION_SOURCES = 64
"""Sources of one citation (a Cohere citation's ``sources``): the first are kept."""

MAX_CITATION_BYTES = 2 * 1024 * 1024
"""Bytes of all the citations and spans of one answer (strings, metadata, ~100 bytes
each besides): what an answer's citations hold in memory. Beyond, the next ones are
dropped (``citation_too_large``)."""

MAX_CITATION_WIRE_BYTES = 8 * 1024 * 1024
"""Bytes of ``citations`` events a stream sends in all before they are coalesced: each
event carries the whole set so far (consumers replace), so past this many bytes an
event is sent only when the set has doubled since the last one, and the whole set
always at the finish and the end: the events of a stream stay within a small constant
times what its citations weigh."""

MAX_ERRORS = 1000
"""At most this many errors are kept on an answer; the rest are counted (``errors_dropped``)."""

MAX_ERROR_MESSAGE = 1000
"""Characters of an error message built from upstream data (a quoted value, a provider's
own message): longer ones are cut with ``…`` (see :func:`clip_message`)."""

TOO_MANY_CITATIONS = "too_many_citations"
"""The error code of a citation list beyond its cap (the first ones kept)."""

ANSWER_TOO_LARGE = "answer_too_large"
"""The error code of an answer beyond ``max_answer_chars`` (the stream is cut)."""


@dataclass(frozen=True, slots=True)
class StreamBounds:
    """The caps one stream is held to (defaults: the module's constants).

    >>> StreamBounds().max_choices
    128
    """

    max_choices: int = MAX_CHOICES
    """Choice indexes ``0..max_choices-1``; others are skipped with ``bad_chunk``."""
    max_tool_calls: int = MAX_TOOL_CALLS
    """Tool calls per choice; beyond: ``bad_tool_call``."""
    max_citations: int = MAX_CITATIONS
    """Citation objects (Magisterium) and ``url_citation`` annotations per answer."""
    max_search_results: int = MAX_CITATIONS
    """``search_results`` entries per chunk (Perplexity)."""
    max_citation_urls: int = MAX_CITATIONS
    """URL strings of a ``citations`` list (Perplexity)."""
    max_answer_chars: int = MAX_ANSWER_CHARS
    """Text + reasoning + refusal + tool arguments of choice 0, in characters."""
    max_answer_tool_calls: int = MAX_ANSWER_TOOL_CALLS
    """Tool calls of the whole answer (every choice); beyond: ``bad_tool_call``."""
    max_citation_text_chars: int = MAX_CITATION_TEXT_CHARS
    """Characters of one string field of a citation or span (cut beyond)."""
    max_metadata_bytes: int = MAX_METADATA_BYTES
    """Bytes of one ``provider_metadata`` as JSON (a preview beyond)."""
    max_citation_sources: int = MAX_CITATION_SOURCES
    """Sources of one citation (Cohere ``sources``)."""
    max_citation_bytes: int = MAX_CITATION_BYTES
    """Bytes of all citations and spans of an answer."""
    max_citation_wire_bytes: int = MAX_CITATION_WIRE_BYTES
    """Bytes of ``citations`` events before they are coalesced (sent on doubling)."""
    max_errors: int = MAX_ERRORS
    """Errors kept on an answer (the rest counted)."""
    max_error_message: int = MAX_ERROR_MESSAGE
    """Characters of an error message built from upstream data."""


DEFAULT_BOUNDS = StreamBounds()
"""The bounds a builder has unless given others."""


def clip_message(message: str, limit: int = MAX_ERROR_MESSAGE) -> str:
    """``message`` cut to ``limit`` characters (``…`` and the count of the rest appended).

    >>> clip_message("x" * 10, 4)
    'xxxx… (6 more characters)'
    >>> clip_message("short")
    'short'
    """
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… ({len(message) - limit:,} more characters)"
