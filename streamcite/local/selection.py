"""Section-scoped choice of what the extractive answer quotes.

For each part of the question (``…, and which …`` starts a new one, see
:func:`streamcite.local.analysis.analyze_query`):

1. the section that covers that part best (share of its weight found in the section's text,
   heading or document title) and says it most strongly (BM25) answers it;
2. another section answers it as well only when it covers as much of it, scores at least
   half as much, and is *about* it: in the same document (whose title covers every section
   alike) its heading must say as much as the first one's ("Spese rimborsabili", not
   "Nota spese"); in another document its heading or title must name part of it;
3. a part that no section covers well enough is left out when another part is answered.

Then, per section, the sentences that say the question's words themselves (the strongest
first, the part the section was chosen for before the rest); when only the heading says
them ("Le parrainage"), the section's first sentences. Nothing is quoted from a section
that was not chosen.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamcite.local.analysis import index_terms
from streamcite.local.corpus import sentence_spans
from streamcite.local.retrieval import Hit, Query, Retriever

__all__ = ["Candidate", "Section", "choose_sections", "choose_sentences"]

TIE_COVERAGE = 0.05
"""A second section must cover the part within this share of the first one."""
TIE_SCORE = 0.5
"""… and score at least this fraction of the first one's BM25 score."""
MAX_PER_PART = 2
"""Sections quoted for one part of the question."""


@dataclass(slots=True)
class Section:
    """A chosen section and the part of the question (term indices) it answers."""

    hit: Hit
    part: list[int]


@dataclass(slots=True)
class Candidate:
    """A sentence of a chosen section."""

    hit: Hit
    start: int
    end: int
    terms: frozenset[int]
    """Indices of the query terms the sentence itself says."""
    coverage: float
    """Their share of the question's weight."""
    part_coverage: float
    """Their share of the weight of the part the section was chosen for."""


def _part_share(
    retriever: Retriever, query: Query, covered: frozenset[int], part: list[int]
) -> float:
    return round(retriever.share(query, covered, part), 2)


def _answers_part(
    retriever: Retriever, query: Query, hits: list[Hit], part: list[int]
) -> list[Hit]:
    """The sections that answer one part of the question, best first (may be empty)."""
    relevant = [h for h in hits if h.covered.intersection(part)]
    if not relevant:
        return []
    best_score = max(h.score for h in relevant) or 1.0

    def cov(h: Hit) -> float:
        return _part_share(retriever, query, h.covered, part)

    top = max(relevant, key=lambda h: cov(h) + 0.5 * h.score / best_score)
    top_heading = retriever.share(query, top.in_heading, part)

    def also(h: Hit) -> bool:
        if h is top or cov(h) < cov(top) - TIE_COVERAGE or h.score < TIE_SCORE * top.score:
            return False
        if h.chunk.document_id == top.chunk.document_id:
            return retriever.share(query, h.in_heading, part) >= top_heading
        return bool(h.named.intersection(part))

    others = sorted((h for h in relevant if also(h)), key=lambda h: (-cov(h), -h.score))
    return [top, *others][:MAX_PER_PART]


def choose_sections(
    retriever: Retriever, query: Query, hits: list[Hit], min_coverage: float, max_sections: int
) -> list[Section]:
    """The sections that answer each part of the question, in the order of the parts."""
    chosen: list[Section] = []
    for part in query.clauses():
        if all(query.terms[i].light for i in part):
            continue  # "and how much?": nothing to look for on its own
        answering = _answers_part(retriever, query, hits, part)
        if not answering:
            continue
        if chosen and _part_share(retriever, query, answering[0].covered, part) < min_coverage:
            continue  # a part the corpus does not speak about: answer the rest
        for hit in answering:
            if all(s.hit is not hit for s in chosen):
                chosen.append(Section(hit, part))
    return chosen[:max_sections]


def _candidates(retriever: Retriever, query: Query, section: Section) -> list[Candidate]:
    hit = section.hit
    lang = retriever.language(hit.chunk)
    out: list[Candidate] = []
    for start, end in sentence_spans(hit.chunk.text):
        sentence = hit.chunk.text[start:end]
        if len(sentence.split()) < 3:
            continue
        said = retriever.covered(query, frozenset(index_terms(sentence, lang))) & hit.covered
        out.append(
            Candidate(
                hit,
                start,
                end,
                said,
                retriever.share(query, said),
                retriever.share(query, said, section.part),
            )
        )
    return out


def choose_sentences(
    retriever: Retriever,
    query: Query,
    sections: list[Section],
    max_per_section: int,
    max_sentences: int,
) -> list[Candidate]:
    """Up to ``max_per_section`` sentences of each section, ``max_sentences`` in all: the
    best sentence of every section first, then the second ones."""
    per_section: list[list[Candidate]] = []
    for section in sections:
        candidates = _candidates(retriever, query, section)
        direct = [c for c in candidates if c.terms]
        if direct:
            direct.sort(key=lambda c: (-c.part_coverage, -c.coverage, c.start))
            keep = [c for c in direct if c.coverage >= 0.5 * direct[0].coverage]
        else:
            keep = candidates  # only the heading says it: the section's first sentences
        per_section.append(keep[:max_per_section])
    chosen = [group[0] for group in per_section if group]
    for group in per_section:
        chosen.extend(group[1:])
    return chosen[:max_sentences]
