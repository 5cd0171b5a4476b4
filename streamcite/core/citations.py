"""Citations found in chat chunks: Magisterium objects, Perplexity URLs and search results;
and the distinct passages of an answer (:func:`answer_passages`), the facts its checks use.

A cold path (once per answer, or when the set changes): validated strictly, item
by item, so one bad item is reported without losing the good ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import repeat
from typing import Any

from streamcite.core._fields import expect_fields
from streamcite.core.bounds import DEFAULT_BOUNDS, StreamBounds
from streamcite.core.citation_caps import TEXT_FIELDS
from streamcite.core.models import Citation, CitationSpan
from streamcite.core.quote import quote

__all__ = [
    "ANSWER_SEGMENT",
    "ChunkCitations",
    "answer_passages",
    "bounded_citations",
    "citations_from_chunk",
    "parse_citation",
]

ANSWER_SEGMENT = "cited_text_is_answer_segment"
"""Key set (``True``) in a citation's ``provider_metadata`` when its ``cited_text`` is the
answer's own words (a Gemini web source quotes nothing; its support's segment is shown
instead): never a passage to check the answer against."""

expect_fields(
    Citation,
    [*TEXT_FIELDS[:3], "document_index", *TEXT_FIELDS[3:], "provider_metadata"],
    "citations.py (parse_citation)",
)
_STR_OR_NONE = {str: True, type(None): True}
"""The exact types a string field of the usual item has (numbers take the slow way)."""
# Providers send years and reference numbers as numbers too; they are strings in the schema.
_NUMERIC_OK = frozenset({"document_year", "document_reference"})


def parse_citation(item: Any, position: int) -> Citation:
    """One Magisterium citation object → :class:`Citation`. Raises ``ValueError``."""
    if not isinstance(item, dict):
        raise ValueError(f"citations[{position}]: expected an object, got {type(item).__name__}")
    get = item.get
    idx = get("document_index")
    if type(idx) is int and idx >= 0:
        # The usual item: every field a string or absent (one pass, positional init).
        strs = (
            get("cited_text"),
            get("cited_text_heading"),
            get("document_title"),
            get("document_author"),
            get("document_year"),
            get("document_reference"),
            get("source_url"),
        )
        if None not in map(_STR_OR_NONE.get, map(type, strs)):
            t, h, title, author, year, ref, url = strs
            return Citation(t, h, title, idx, author, year, ref, url)
    values: dict[str, Any] = {}
    for name in TEXT_FIELDS:
        v = item.get(name)
        if v is None or isinstance(v, str):
            values[name] = v
        elif name in _NUMERIC_OK and isinstance(v, int | float) and not isinstance(v, bool):
            values[name] = str(v)
        else:
            raise ValueError(
                f"citations[{position}].{name}: expected a string or null, got {quote(v)}"
            )
    idx = item.get("document_index")
    if idx is None:
        idx = position
    elif isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
        raise ValueError(
            f"citations[{position}].document_index: expected an integer >= 0, got {quote(idx)}"
        )
    return Citation(document_index=idx, **values)


def _from_url(url: Any, position: int) -> Citation:
    if not isinstance(url, str):
        raise ValueError(f"citations[{position}]: expected a URL string, got {quote(url)}")
    return Citation(source_url=url, document_index=position)


def _from_search_result(item: Any, position: int) -> Citation:
    if not isinstance(item, dict):
        raise ValueError(f"search_results[{position}]: expected an object, got {quote(item)}")
    title, url, date = item.get("title"), item.get("url"), item.get("date")
    snippet = item.get("snippet")
    for name, v in (("title", title), ("url", url), ("date", date), ("snippet", snippet)):
        if v is not None and not isinstance(v, str):
            raise ValueError(
                f"search_results[{position}].{name}: expected a string, got {quote(v)}"
            )
    head = date[:4] if date else ""
    # ASCII only: str.isdigit() also accepts "²⁰²⁴" and Arabic-Indic digits.
    year = head if len(head) == 4 and head.isascii() and head.isdigit() else None
    return Citation(
        cited_text=snippet,
        document_title=title,
        source_url=url,
        document_year=year,
        document_index=position,
    )


ChunkCitations = tuple[list[Citation], list[str], str | None]
"""A chunk's citations, the problems of its items, and what went beyond a cap (or None)."""


def citations_from_chunk(obj: dict[str, Any]) -> tuple[list[Citation], list[str]] | None:
    """Citations carried by a chunk (None if it carries none) and the problems found
    (with the default caps; a list beyond its cap is a problem too, the first kept).

    Magisterium: ``citations`` is a list of objects. Perplexity: ``citations`` is a
    list of URL strings and ``search_results`` a list of objects; search results,
    being richer, win when both are present.
    """
    got = bounded_citations(obj, DEFAULT_BOUNDS)
    if got is None:
        return None
    citations, problems, over = got
    return citations, [*problems, over] if over else problems


def bounded_citations(obj: dict[str, Any], bounds: StreamBounds) -> ChunkCitations | None:
    """:func:`citations_from_chunk` held to ``bounds``: only the first
    ``max_search_results`` / ``max_citation_urls`` / ``max_citations`` items of a list
    are looked at (linear in the cap, not in the list); the third value says what went
    beyond (``too_many_citations``), else ``None``."""
    raw = obj.get("citations")
    results = obj.get("search_results")
    problems: list[str] = []
    out: list[Citation] = []
    build: Callable[[Any, int], Citation]
    source: list[Any]
    if isinstance(results, list) and results:
        source, build, cap, what = (
            results,
            _from_search_result,
            bounds.max_search_results,
            "search_results",
        )
    elif raw is None:
        return None
    elif not isinstance(raw, list):
        return [], [f"citations: expected an array, got {type(raw).__name__}"], None
    else:
        head = raw[: bounds.max_citation_urls + 1]
        if head and all(map(isinstance, head, repeat(str))):
            source, build, cap, what = raw, _from_url, bounds.max_citation_urls, "citation URLs"
        else:
            source, build, cap, what = raw, parse_citation, bounds.max_citations, "citations"
    over = None
    if len(source) > cap:
        over = f"{len(source):,} {what} in one chunk: the first {cap} kept"
        source = source[:cap]
    for i, item in enumerate(source):
        try:
            out.append(build(item, i))
        except ValueError as exc:
            problems.append(str(exc))
    return out, problems, over


def answer_passages(
    citations: Sequence[Citation], spans: Sequence[CitationSpan] = ()
) -> list[tuple[int | None, Citation]]:
    """Every distinct passage an answer quotes, each with its source: the citations' own
    ``cited_text`` first, then each span's passage not seen yet (a source cited several
    times, each time with its own quote), in order. Each item is ``(position in
    citations or None, citation)``; a span's passage comes as a copy of its source's citation
    with ``cited_text`` set to that passage (the string itself shared, not copied).
    A passage quoted for two sources comes once (with the first); blank passages are
    left out; a span of no known source keeps its passage alone.

    >>> c = Citation(cited_text="Three days a week.", document_index=0, source_url="u")
    >>> s = CitationSpan(0, 0, 9, cited_text="Tuesday is a team day.")
    >>> [(i, p.cited_text) for i, p in answer_passages([c], [s])]
    [(0, 'Three days a week.'), (0, 'Tuesday is a team day.')]
    """
    out: list[tuple[int | None, Citation]] = []
    seen: set[str] = set()
    position: dict[int | None, int] = {}
    for i, c in enumerate(citations):
        position.setdefault(c.document_index, i)
        text = c.cited_text
        if c.provider_metadata and c.provider_metadata.get(ANSWER_SEGMENT):
            continue  # the answer's own words, not a passage of the source
        if text and text.strip() and text not in seen:
            seen.add(text)
            out.append((i, c))
    for s in spans:
        text = s.cited_text
        if not text or not text.strip() or text in seen:
            continue
        seen.add(text)
        at = position.get(s.document_index)
        if at is None:
            out.append((None, Citation(cited_text=text, document_index=s.document_index)))
        else:
            out.append((at, replace(citations[at], cited_text=text)))
    return out
