"""The byte caps of citations and citation spans, in one place. Sans-I/O.

The count of citations is capped (``StreamBounds.max_citations``), and so is what each
one carries and all of them together: every dialect, and the citation registry that
keeps each span's passage, hands each new citation or span to :func:`cap_citation`
(fields clipped in place) through a :class:`CitationBudget` (the total). The caps are
``StreamBounds``' ``max_citation_text_chars`` (each string field), ``max_metadata_bytes``
(``provider_metadata`` as JSON) and ``max_citation_bytes`` (all of them).

>>> from streamcite.core.bounds import StreamBounds
>>> from streamcite.core.models import Citation
>>> bounds = StreamBounds(max_citation_text_chars=8, max_citation_bytes=400)
>>> c = Citation(cited_text="0123456789abc", provider_metadata={"page": 3})
>>> cost, problems = cap_citation(c, bounds)
>>> c.cited_text, c.provider_metadata, problems
('0123456…', {'page': 3}, ['cited_text cut to 8 of its 13 characters'])
>>> budget = CitationBudget(bounds)
>>> budget.admit(Citation(cited_text="x" * 8)), budget.admit(Citation(cited_text="y" * 8))
((True, []), (True, []))
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

import orjson

from streamcite.core.bounds import StreamBounds
from streamcite.core.models import Citation, CitationSpan
from streamcite.core.quote import quote

__all__ = [
    "CITATION_TOO_LARGE",
    "SPAN_BYTES",
    "TEXT_FIELDS",
    "CitationBudget",
    "cap_citation",
    "cap_metadata",
    "clip_text",
]

CITATION_TOO_LARGE = "citation_too_large"
"""The error code of a citation field cut to its cap, or a citation beyond the total."""

TEXT_FIELDS = (
    "cited_text",
    "cited_text_heading",
    "document_title",
    "document_author",
    "document_year",
    "document_reference",
    "source_url",
)
"""The string fields of a citation (and of a span, where it has them) held to
``max_citation_text_chars``."""

SPAN_BYTES = 96
"""What a citation or span costs on the wire besides its strings and metadata (its
field names, offsets and punctuation): counted in the total."""


def clip_text(text: str | None, bounds: StreamBounds) -> str | None:
    """``text`` within ``bounds.max_citation_text_chars`` (its end replaced by ``…``):
    what a passage is cut to before anything keeps it.

    >>> clip_text("0123456789", StreamBounds(max_citation_text_chars=5))
    '0123…'
    """
    limit = bounds.max_citation_text_chars
    if text is None or len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def cap_metadata(meta: Any, limit: int) -> tuple[dict[str, Any] | None, int, str | None]:
    """``provider_metadata`` held to ``limit`` bytes of JSON: (the value to keep, its
    bytes, what was wrong or ``None``). Beyond the limit, or not JSON-serialisable
    (nested beyond orjson's 255 levels), it becomes ``{"truncated": true, "bytes": n,
    "preview": …}`` (a bounded :func:`~streamcite.core.quote.quote` of it)."""
    if meta is None:
        return None, 0, None
    try:
        size = len(orjson.dumps(meta))
    except orjson.JSONEncodeError:
        size = -1
    if 0 <= size <= limit:
        return meta, size, None
    preview = quote(meta, min(200, max(limit // 2, 16)))
    kept = {"truncated": True, "bytes": size if size >= 0 else None, "preview": preview}
    why = (
        f"provider_metadata of {size:,} bytes cut to a preview (cap {limit:,})"
        if size >= 0
        else "provider_metadata is not serialisable JSON (nested too deeply): cut to a preview"
    )
    return kept, len(orjson.dumps(kept)), why


_TEXTS: dict[type, Callable[[Any], tuple[Any, ...]]] = {Citation: attrgetter(*TEXT_FIELDS)}
"""The string fields of a citation, read in one call (a span has one: :func:`_cap_span`)."""


def cap_citation(obj: Any, bounds: StreamBounds) -> tuple[int, list[str]]:
    """Clip a :class:`~streamcite.core.models.Citation` or
    :class:`~streamcite.core.models.CitationSpan` in place to the per-field caps of
    ``bounds``: (its cost in bytes, the problems found). Fields it does not have are
    skipped, so a span with or without a passage is held alike."""
    if obj.__class__ is CitationSpan:
        return _cap_span(obj, bounds)
    texts = _TEXTS.get(obj.__class__)
    if texts is not None:
        # The common case in one pass: strings (or None) whose sum is within the cap of
        # each (so each one is), their UTF-8 bytes counted as they come (a loop: no
        # ``map``, ``filter`` or join made per citation).
        chars = n = 0
        for v in texts(obj):
            if v is None:
                continue
            if v.__class__ is not str:
                return _cap_fields(obj, bounds)
            chars += len(v)
            n += len(v) if v.isascii() else len(v.encode("utf-8", "surrogatepass"))
        if chars <= bounds.max_citation_text_chars:
            return _with_metadata(obj, n, bounds)
    return _cap_fields(obj, bounds)


def _cap_span(span: Any, bounds: StreamBounds) -> tuple[int, list[str]]:
    """:func:`cap_citation` of a :class:`~streamcite.core.models.CitationSpan`: its one
    string (its passage) costed without the general pass's reading of a citation's
    fields, filter and join (a Gemini support makes one span per source). ``span`` is
    typed ``Any``: its fields may hold anything (compiled, a field read as its declared
    type would raise on a wrong one instead of handing it to the field-by-field way)."""
    text = span.cited_text
    if text is None:
        n = 0
    elif text.__class__ is str and len(text) <= bounds.max_citation_text_chars:
        n = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    else:
        return _cap_fields(span, bounds)
    return _with_metadata(span, n, bounds)


def _with_metadata(obj: Any, n: int, bounds: StreamBounds) -> tuple[int, list[str]]:
    """The cost of ``obj`` whose strings, ``n`` UTF-8 bytes, are within their caps: with
    its metadata's if that is within its cap too, else field by field (which clips it)."""
    meta = obj.provider_metadata
    if meta is None:
        return SPAN_BYTES + n, []
    _, size, why = cap_metadata(meta, bounds.max_metadata_bytes)
    if why is None:
        return SPAN_BYTES + n + size, []
    return _cap_fields(obj, bounds)


def _cap_fields(obj: Any, bounds: StreamBounds) -> tuple[int, list[str]]:
    """:func:`cap_citation` field by field (anything clipped, or another class)."""
    limit = bounds.max_citation_text_chars
    cost = SPAN_BYTES
    problems: list[str] = []
    for name in TEXT_FIELDS:
        v = getattr(obj, name, None)
        if type(v) is not str:
            continue
        if len(v) > limit:
            problems.append(f"{name} cut to {limit:,} of its {len(v):,} characters")
            v = v[: max(limit - 1, 0)] + "…"  # as clip_text cuts it
            setattr(obj, name, v)
        cost += len(v) if v.isascii() else len(v.encode("utf-8", "surrogatepass"))
    if hasattr(obj, "provider_metadata"):
        meta, size, why = cap_metadata(obj.provider_metadata, bounds.max_metadata_bytes)
        if why is not None:
            obj.provider_metadata = meta
            problems.append(why)
        cost += size
    return cost, problems


class CitationBudget:
    """The bytes of one answer's citations and spans so far, against
    ``bounds.max_citation_bytes``."""

    __slots__ = ("bounds", "dropped", "used")

    def __init__(self, bounds: StreamBounds) -> None:
        self.bounds = bounds
        self.used = 0
        """Bytes of what was admitted (strings, metadata, :data:`SPAN_BYTES` each)."""
        self.dropped = 0
        """Citations or spans refused for the total."""

    def admit(self, obj: Any) -> tuple[bool, list[str]]:
        """``obj`` clipped (:func:`cap_citation`) and counted: (kept, problems). Not
        kept when it would take the total beyond ``max_citation_bytes``."""
        cost, problems = cap_citation(obj, self.bounds)
        if self.used + cost > self.bounds.max_citation_bytes:
            self._refuse(problems)
            return False, problems
        self.used += cost
        return True, problems

    def admit_all(self, items: list[Any], max_problems: int = 3) -> tuple[list[Any], list[str]]:
        """:meth:`admit` of each of ``items`` in turn up to the first refused (a chunk's
        list of citations in one call): the ones kept, and the first ``max_problems``
        problems."""
        kept: list[Any] = []
        problems: list[str] = []
        for obj in items:
            ok, why = self.admit(obj)
            problems.extend(why[: max_problems - len(problems)])
            if not ok:
                break
            kept.append(obj)
        return kept, problems

    def _refuse(self, problems: list[str]) -> None:
        """One more refused for the total (said in ``problems`` the first time)."""
        if not self.dropped:
            cap = self.bounds.max_citation_bytes
            problems.append(f"citations beyond {cap:,} bytes in all: the rest dropped")
        self.dropped += 1
