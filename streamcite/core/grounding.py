"""Grounding check results (Google ``groundingConfigs.check`` shape, or the local checker)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NO_FACTS_REASON",
    "CitedChunk",
    "GroundingClaim",
    "GroundingFact",
    "GroundingResult",
    "fill_claim_counts",
    "no_verdict",
]

NO_FACTS_REASON = "no quoted text to check against: add Wikit sources or facts"
"""The ``reason`` of a grounding result that gives no verdict for want of any fact
(a Responses ``url_citation`` quotes nothing, for instance)."""


@dataclass(slots=True)
class GroundingFact:
    """A fact the answer is checked against (``factText`` + ``attributes``)."""

    text: str
    attributes: dict[str, str] = field(default_factory=dict)
    origin_kind: str | None = None
    """What the fact was built from: ``citation``, ``source`` (Wikit) or None (caller's text)."""
    origin_index: int | None = None
    """Index in ``answer.citations`` / ``answer.sources`` (windows of one long fact share it)."""

    def to_request(self) -> dict[str, Any]:
        out: dict[str, Any] = {"factText": self.text}
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        return out


@dataclass(slots=True)
class CitedChunk:
    """A fact chunk cited by at least one claim (``citedChunks[i]``)."""

    chunk_text: str
    source: str | None = None
    """As received: the index (as a string) of the fact in the request."""
    fact_index: int | None = None
    """``source`` resolved to an int index into the request's facts."""
    index: int | None = None
    source_metadata: dict[str, str] = field(default_factory=dict)
    uri: str | None = None
    title: str | None = None
    domain: str | None = None


@dataclass(slots=True)
class GroundingClaim:
    """One claim (a sentence) of the answer and the facts that support it.

    ``start``/``end`` are CHARACTER offsets into the raw answer the user saw (end
    exclusive); ``start_byte``/``end_byte`` are as received (UTF-8 bytes of the text
    that was sent); ``start_utf16``/``end_utf16`` are for JavaScript strings.
    """

    claim_text: str
    start: int | None = None
    end: int | None = None
    start_byte: int | None = None
    end_byte: int | None = None
    start_utf16: int | None = None
    end_utf16: int | None = None
    citation_indices: list[int] = field(default_factory=list)
    """Indices into ``GroundingResult.cited_chunks``."""
    grounding_check_required: bool | None = None
    score: float | None = None
    reason: str | None = None
    """Why the checker found it unsupported, when it says (Azure with ``reasoning``)."""

    @property
    def supported(self) -> bool:
        return bool(self.citation_indices)


@dataclass(slots=True)
class GroundingResult:
    provider: str
    """``google`` or ``local``."""
    support_score: float | None = None
    claims: list[GroundingClaim] = field(default_factory=list)
    cited_chunks: list[CitedChunk] = field(default_factory=list)
    cited_facts: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Policies applied to fit the API's limits (facts dropped, facts split, ...)."""
    facts: list[GroundingFact] = field(default_factory=list, repr=False)
    """The facts that were sent, so ``cited_chunks[i].fact_index`` can be resolved."""
    checked_claims: int | None = None
    """Claims that needed a check (derived from ``claims`` when not given)."""
    unsupported_claims: int | None = None
    """Claims that needed a check and cite no fact (derived from ``claims`` when not given)."""
    nothing_to_check: bool | None = None
    """True when no claim needed a check: ``support_score`` then says nothing about
    support (Google reports 1.0, or nothing); render "nothing to check", not "100%"."""
    reason: str | None = None
    """Why there is no verdict (``support_score`` is ``None``, no claim is marked
    unsupported), e.g. :data:`NO_FACTS_REASON`; ``None`` when the answer was checked."""

    def __post_init__(self) -> None:
        fill_claim_counts(self)

    def fact_for_chunk(self, chunk_index: int) -> GroundingFact | None:
        """The request fact behind ``cited_chunks[chunk_index]``."""
        if not 0 <= chunk_index < len(self.cited_chunks):
            return None
        fi = self.cited_chunks[chunk_index].fact_index
        if fi is None or not 0 <= fi < len(self.facts):
            return None
        return self.facts[fi]

    def origins_for(
        self,
        claim: GroundingClaim,
        citations: Sequence[Any] = (),
        sources: Sequence[Any] = (),
    ) -> list[Any]:
        """The original Citations / QuotedSources (from the answer) that support a claim."""
        out: list[Any] = []
        for ci in claim.citation_indices:
            fact = self.fact_for_chunk(ci)
            if fact is None or fact.origin_index is None:
                continue
            pool = citations if fact.origin_kind == "citation" else sources
            if fact.origin_kind in ("citation", "source") and 0 <= fact.origin_index < len(pool):
                item = pool[fact.origin_index]
                if item not in out:
                    out.append(item)
        return out


def fill_claim_counts(obj: Any) -> None:
    """Set ``checked_claims``, ``unsupported_claims`` and ``nothing_to_check`` of a result
    or event from its ``claims`` where they are None (a claim whose
    ``grounding_check_required`` is unknown counts as checked, as Google means it)."""
    claims: Sequence[GroundingClaim] = obj.claims
    required = [c for c in claims if c.grounding_check_required is not False]
    if obj.checked_claims is None:
        obj.checked_claims = len(required)
    if obj.unsupported_claims is None:
        obj.unsupported_claims = sum(1 for c in required if not c.citation_indices)
    if obj.nothing_to_check is None:
        obj.nothing_to_check = obj.checked_claims == 0


def no_verdict(provider: str, warnings: list[str] | None = None) -> GroundingResult:
    """The result of a check that had no fact at all to check against: no verdict
    (``support_score`` ``None``, no claim, none unsupported) and the reason."""
    return GroundingResult(
        provider=provider,
        support_score=None,
        warnings=list(warnings or ()),
        checked_claims=0,
        unsupported_claims=0,
        nothing_to_check=False,
        reason=NO_FACTS_REASON,
    )
