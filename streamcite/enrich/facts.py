"""Grounding facts built from what the stream produced: citations, Wikit sources, text.

Google accepts at most 200 facts of at most 10,000 characters each. The one policy
to fit them, :func:`prepare_facts`: long facts are split into overlapping windows
that keep their attributes (Google's advice); past the count limit, the facts the
answer's ``[n]`` footnotes point at are kept first (:func:`answer_footnotes`), then
the others in order; every step taken is reported as a warning.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from streamcite.core._validate import digits_int
from streamcite.core.citations import answer_passages
from streamcite.core.enricher import EnrichContext
from streamcite.core.events import SourcesEvent
from streamcite.core.grounding import GroundingFact
from streamcite.core.markers import footnote_numbers
from streamcite.core.models import Citation, CitationSpan, CitedAnswer
from streamcite.core.sources import QuotedSource

__all__ = [
    "MAX_FACTS",
    "MAX_FACT_CHARS",
    "PreparedFacts",
    "answer_facts",
    "answer_footnotes",
    "build_facts",
    "fact_from",
    "passage_facts",
    "prepare_facts",
    "split_fact",
]

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


# -- the policy: split, then cap with the cited facts first ---------------------


@dataclass(slots=True)
class PreparedFacts:
    """The facts to send, and what had to be done to fit Google's limits."""

    facts: list[GroundingFact]
    warnings: list[str]
    split: int = 0
    """Facts longer than the limit that were split into windows."""
    dropped: int = 0
    """Facts (windows) left out to stay within ``MAX_FACTS``."""


def answer_footnotes(answer: CitedAnswer | str) -> set[int]:
    """The footnote numbers choice 0 writes: its ``citation_refs``, else markers in the text."""
    if isinstance(answer, CitedAnswer):
        numbers = {r.number for r in answer.citation_refs if r.index == 0}
        if numbers:
            return numbers
    text = answer.text if isinstance(answer, CitedAnswer) else answer
    return set(footnote_numbers(text))


def _is_cited(item: Any, fact: GroundingFact, numbers: set[int]) -> bool:
    if not numbers:
        return False
    if isinstance(item, Citation):
        return item.document_index is not None and item.document_index + 1 in numbers
    if isinstance(item, QuotedSource):
        return item.number in numbers
    # A prebuilt fact from a citation / source carries its label in its attributes.
    label = fact.attributes.get("quoted_as")
    if label is not None:
        return digits_int(label) in numbers
    index = fact.attributes.get("document_index")
    n = None if index is None else digits_int(index)
    return n is not None and n + 1 in numbers


def prepare_facts(
    items: Iterable[Any],
    cited_numbers: Iterable[int] = (),
    *,
    max_facts: int = MAX_FACTS,
    max_chars: int = MAX_FACT_CHARS,
) -> PreparedFacts:
    """Facts from strings, GroundingFacts, Citations or QuotedSources, fitted to the limits.

    Each item's list position becomes ``origin_index`` (unless a GroundingFact already
    has one). Long facts are split into windows of at most ``max_chars`` characters.
    Past ``max_facts``, the facts whose footnote the answer writes (``cited_numbers``)
    are kept first, then the others in order; kept facts keep their original order.
    """
    numbers = set(cited_numbers)
    windows: list[tuple[GroundingFact, bool]] = []
    split = 0
    for pos, item in enumerate(items):
        fact = fact_from(item, pos)
        if fact is None:
            continue
        parts = split_fact(fact, max_chars)
        if len(parts) > 1:
            split += 1
        cited = _is_cited(item, fact, numbers)
        windows.extend((p, cited) for p in parts)
    warnings: list[str] = []
    if split:
        warnings.append(
            f"{split} fact(s) longer than {max_chars} characters were split into "
            "overlapping windows that keep their attributes"
        )
    dropped = 0
    if len(windows) > max_facts:
        order = sorted(range(len(windows)), key=lambda i: (not windows[i][1], i))
        keep = sorted(order[:max_facts])
        dropped = len(windows) - max_facts
        kept_cited = sum(1 for i in keep if windows[i][1])
        warnings.append(
            f"{len(windows)} facts exceed Google's limit of {max_facts}: kept the "
            f"{kept_cited} cited by the answer's footnotes first, dropped {dropped} others"
        )
        windows = [windows[i] for i in keep]
    return PreparedFacts([f for f, _ in windows], warnings, split, dropped)


def passage_facts(
    citations: Sequence[Citation],
    spans: Sequence[CitationSpan] = (),
    max_chars: int = MAX_FACT_CHARS,
) -> list[GroundingFact]:
    """One fact per distinct passage the answer quotes (its citations' and its spans':
    :func:`~streamcite.core.citations.answer_passages`), each fact's ``origin_index``
    the position of its source in ``citations`` (long ones in windows, as
    :func:`build_facts`)."""
    out: list[GroundingFact] = []
    for at, c in answer_passages(citations, spans):
        fact = fact_from(c, at)
        if fact is not None:
            out.extend(split_fact(fact, max_chars))
    return out


async def answer_facts(
    ctx: EnrichContext, facts_from: str
) -> tuple[list[GroundingFact], list[QuotedSource] | None]:
    """What a grounding check of the streamed answer takes its facts from, per
    ``facts_from`` (``"citations"``, ``"sources"`` or ``"both"``): every distinct passage
    the answer quotes (:func:`passage_facts`), and the Wikit quoted sources of the
    ``sources`` step (``[]`` when not asked for; ``None`` when asked for but the step
    gave none, which each checker reports in its own way)."""
    passages: list[GroundingFact] = []
    if facts_from in ("citations", "both"):
        passages = passage_facts(ctx.answer.citations, ctx.answer.citation_spans)
    sources: list[QuotedSource] | None = []
    if facts_from in ("sources", "both"):
        event = await ctx.result_of("sources")
        sources = list(event.sources) if isinstance(event, SourcesEvent) else None
    return passages, sources
