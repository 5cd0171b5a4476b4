"""Grounding facts built from what the stream produced: citations, Wikit sources, text.

Google accepts at most 200 facts of at most 10,000 characters each. Long facts are
split into overlapping windows that keep their attributes (Google's advice); the
cap on the count is applied by the caller's policy (cited facts first).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streamcite.core.grounding import GroundingFact
from streamcite.core.models import Citation
from streamcite.core.sources import QuotedSource

__all__ = ["MAX_FACTS", "MAX_FACT_CHARS", "build_facts", "fact_from", "split_fact"]

MAX_FACTS = 200
MAX_FACT_CHARS = 10_000

_CITATION_ATTRS = (
    ("document_title", "title"),
    ("document_author", "author"),
    ("document_year", "year"),
    ("document_reference", "reference"),
    ("cited_text_heading", "heading"),
    ("source_url", "url"),
)


def fact_from(item: Any, position: int | None = None) -> GroundingFact | None:
    """One fact from a str, a GroundingFact, a Citation or a QuotedSource (None if empty)."""
    if isinstance(item, GroundingFact):
        return item if item.text.strip() else None
    if isinstance(item, str):
        return GroundingFact(item) if item.strip() else None
    if isinstance(item, Citation):
        if not item.cited_text or not item.cited_text.strip():
            return None
        attrs = {name: str(getattr(item, f)) for f, name in _CITATION_ATTRS if getattr(item, f)}
        if item.document_index is not None:
            attrs["document_index"] = str(item.document_index)
        return GroundingFact(item.cited_text, attrs, "citation", position)
    if isinstance(item, QuotedSource):
        if not item.chunk.data.strip():
            return None
        attrs = {"quoted_as": item.quoted_as, "document": item.document.display_name}
        if item.document.url:
            attrs["url"] = item.document.url
        if item.data_source and item.data_source.name:
            attrs["data_source"] = item.data_source.name
        if item.chunk.display_page_start is not None:
            attrs["page"] = str(item.chunk.display_page_start)
        return GroundingFact(item.chunk.data, attrs, "source", position)
    raise TypeError(f"cannot build a grounding fact from {type(item).__name__}")


def split_fact(fact: GroundingFact, max_chars: int = MAX_FACT_CHARS) -> list[GroundingFact]:
    """Windows of at most ``max_chars`` characters, cut at whitespace, overlapping ~10%."""
    text = fact.text
    if len(text) <= max_chars:
        return [fact]
    overlap = max_chars // 10
    out: list[GroundingFact] = []
    start = 0
    while start < len(text):
        end = min(start + max_chars, len(text))
        if end < len(text):
            cut = text.rfind(" ", start + max_chars // 2, end)
            if cut > start:
                end = cut
        out.append(
            GroundingFact(
                text[start:end], dict(fact.attributes), fact.origin_kind, fact.origin_index
            )
        )
        if end >= len(text):
            break
        start = max(end - overlap, start + 1)
        # Start the next window on a word boundary.
        sp = text.find(" ", start, end)
        if sp != -1:
            start = sp + 1
    return out


def build_facts(items: Iterable[Any], max_chars: int = MAX_FACT_CHARS) -> list[GroundingFact]:
    """Facts for a grounding check; each item's list position becomes ``origin_index``."""
    out: list[GroundingFact] = []
    for pos, item in enumerate(items):
        fact = fact_from(item, pos)
        if fact is not None:
            out.extend(split_fact(fact, max_chars))
    return out
