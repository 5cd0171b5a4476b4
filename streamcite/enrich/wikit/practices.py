"""Helpers for Wikit's documented best practices on quoted sources.

:func:`by_document` (the API may return one document several times),
:func:`sources_without_url`, :func:`match_refs` (``quoted_as`` ↔ the answer's
``[n]``), :func:`page_label` (pages are 0-based in the API, 1-based for people).
Pure functions over :class:`QuotedSource`: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from streamcite.core.markers import footnote_numbers
from streamcite.core.models import CitationRef, CitedAnswer
from streamcite.core.sources import QuotedSource, SourceDocument

__all__ = [
    "DocumentGroup",
    "RefMatch",
    "by_document",
    "match_refs",
    "page_label",
    "sources_without_url",
]


@dataclass(slots=True)
class DocumentGroup:
    """One document and every quoted source taken from it, in answer order."""

    document: SourceDocument
    sources: list[QuotedSource] = field(default_factory=list)

    @property
    def quoted_as(self) -> list[str]:
        """The ``[n]`` labels that point into this document."""
        return [s.quoted_as for s in self.sources]

    @property
    def url(self) -> str | None:
        return self.document.url

    @property
    def best_score(self) -> float | None:
        scores = [s.score for s in self.sources if s.score is not None]
        return max(scores) if scores else None

    @property
    def pages(self) -> list[int]:
        """1-based page numbers quoted from this document, sorted, without repeats."""
        out: set[int] = set()
        for s in self.sources:
            start, end = s.chunk.display_page_start, s.chunk.display_page_end
            if start is not None:
                out.update(range(start, (end if end is not None and end >= start else start) + 1))
        return sorted(out)


def by_document(sources: Iterable[QuotedSource]) -> list[DocumentGroup]:
    """Group sources by document id, documents in order of first appearance.

    Wikit may return the same document several times (one entry per quoted chunk);
    a UI usually lists each document once with its ``[n]`` labels.
    """
    groups: dict[str, DocumentGroup] = {}
    for s in sources:
        group = groups.get(s.document.id)
        if group is None:
            group = groups[s.document.id] = DocumentGroup(s.document)
        group.sources.append(s)
    return list(groups.values())


def sources_without_url(sources: Iterable[QuotedSource]) -> list[QuotedSource]:
    """Sources whose document has no URL (show them as plain text, not as links)."""
    return [s for s in sources if not s.document.url]


def page_label(source: QuotedSource) -> str | None:
    """``"p. 3"`` or ``"pp. 3–4"`` with 1-based page numbers; None when pages are unknown."""
    start, end = source.chunk.display_page_start, source.chunk.display_page_end
    if start is None:
        return None
    if end is None or end == start:
        return f"p. {start}"
    return f"pp. {start}–{end}"


@dataclass(slots=True)
class RefMatch:
    """How the answer's ``[n]`` footnotes and the sources' ``quoted_as`` line up."""

    matched: dict[int, list[QuotedSource]] = field(default_factory=dict)
    """Footnote number → the sources quoted as it (several when a chunk repeats)."""
    refs_without_source: list[int] = field(default_factory=list)
    """Numbers written in the answer that no source is quoted as."""
    sources_never_referenced: list[QuotedSource] = field(default_factory=list)
    """Sources whose ``quoted_as`` appears nowhere in the answer."""

    @property
    def ok(self) -> bool:
        return not self.refs_without_source and not self.sources_never_referenced


def _ref_numbers(answer_or_refs: CitedAnswer | str | Iterable[int | CitationRef]) -> list[int]:
    if isinstance(answer_or_refs, CitedAnswer):
        # ``text`` is choice 0; so are the sources Wikit returns for it.
        refs0 = [r for r in answer_or_refs.citation_refs if r.index == 0]
        if not refs0:
            return _ref_numbers(answer_or_refs.text)
        items: Iterable[int | CitationRef] = refs0
    elif isinstance(answer_or_refs, str):
        return footnote_numbers(answer_or_refs)
    else:
        items = answer_or_refs
    return [r.number if isinstance(r, CitationRef) else int(r) for r in items]


def match_refs(
    answer_or_refs: CitedAnswer | str | Iterable[int | CitationRef],
    sources: Sequence[QuotedSource],
) -> RefMatch:
    """Pair the answer's footnotes with the sources' ``quoted_as``.

    ``answer_or_refs``: a CitedAnswer (its ``citation_refs``, else markers found in
    its text), the answer text, or the footnote numbers. Numbers keep their first
    appearance order; a source whose ``quoted_as`` is not a number is never matched.
    """
    by_label: dict[str, list[QuotedSource]] = {}
    for s in sources:
        by_label.setdefault(s.quoted_as.strip(), []).append(s)
    numbers = list(dict.fromkeys(_ref_numbers(answer_or_refs)))
    out = RefMatch()
    for n in numbers:
        hits = by_label.get(str(n))
        if hits:
            out.matched[n] = hits
        else:
            out.refs_without_source.append(n)
    referenced = {str(n) for n in numbers}
    out.sources_never_referenced = [s for s in sources if s.quoted_as.strip() not in referenced]
    return out
