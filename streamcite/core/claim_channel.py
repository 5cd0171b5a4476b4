"""The claim channel: one ``claim`` event per claim, whichever checker made it.

Two ways a checker delivers claims:

* **Live** (while the answer streams): an enricher with a ``claim_session(request)``
  method returns a :class:`ClaimSession` (or None). The pipeline feeds it the stream's
  token texts, ``citations`` events and the finish; the session answers with
  :class:`ClaimJob` objects (a complete sentence and the facts known for it), which the
  pipeline runs with :meth:`ClaimSession.run` in a worker thread, each under a timeout,
  and emits as ``claim`` events as soon as they are done — never before a token that
  arrived first, never holding one back. :class:`~streamcite.grounding.checker.LocalGrounding`
  is such an enricher.
* **After the stream**: a ``grounding`` event of a checker with no live session
  (``google``, ``azure``, or ``local`` checking Wikit sources) is also delivered as
  ``claim`` events (:func:`claims_from_grounding`), just before the ``grounding`` event,
  which stays as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from streamcite.core.events import CitationsEvent, ClaimEvent, GroundingEvent

__all__ = [
    "ClaimChecker",
    "ClaimJob",
    "ClaimScore",
    "ClaimSession",
    "LiveClaims",
    "claims_from_grounding",
]


@dataclass(slots=True)
class ClaimJob:
    """One sentence to check, with what the session needs to check it (``payload``)."""

    index: int
    """The claim's ordinal (sentence order) among its checker's claims."""
    start: int
    end: int
    start_utf16: int
    end_utf16: int
    text: str
    heading: bool = False
    payload: Any = None
    """The session's own: e.g. the facts known when the job was made."""

    def unchecked(self, checker: str) -> ClaimEvent:
        """The claim event of this job when its check could not run (timeout, failure)."""
        return ClaimEvent(
            index=self.index,
            start=self.start,
            end=self.end,
            start_utf16=self.start_utf16,
            end_utf16=self.end_utf16,
            text=self.text,
            checker=checker,
        )


@dataclass(slots=True)
class ClaimScore:
    """One claim scored against the facts known so far."""

    required: bool
    """False when the sentence makes no claim to check (a question, filler, a heading)."""
    score: float | None = None
    """Support in [0, 1] (the best fact's), None when not ``required``."""
    fact_scores: list[tuple[int, float]] = field(default_factory=list)
    """(fact index, support) of the facts that support it at all; a fact is cited when
    its support reaches the citation threshold."""


@runtime_checkable
class ClaimChecker(Protocol):
    """Scores one claim (a sentence) against facts: the piece a live session calls.

    ``index(facts)`` is called on the event loop whenever the facts known change and must
    be cheap (defer reading the facts to the first ``check``); ``check`` runs in the
    worker thread, one claim at a time. The offline checker's is
    :class:`~streamcite.grounding.live_claims.OfflineClaimChecker`.
    """

    name: str
    """The ``checker`` of its claim events."""

    def index(self, facts: Sequence[str], *, lang: str | None, sample: str) -> Any: ...

    def check(self, index: Any, text: str, *, heading: bool = False) -> ClaimScore: ...


@runtime_checkable
class ClaimSession(Protocol):
    """The live claims of one stream (sans-I/O: the pipeline owns threads and timeouts).

    ``on_*`` return the jobs that became ready; :meth:`run` is called in a worker
    thread, one job at a time, and must not touch the session's other state.
    :meth:`prepare` is run once in that worker thread as the stream starts, before any
    check (and outside their timeout).
    """

    checker: str
    dropped: int
    """Sentences that could not be kept waiting (beyond the session's bound)."""

    def on_token(self, text: str) -> list[ClaimJob]: ...

    def on_citations(self, event: CitationsEvent) -> list[ClaimJob]: ...

    def on_finish(self) -> list[ClaimJob]: ...

    def run(self, job: ClaimJob) -> ClaimEvent: ...

    def prepare(self) -> None:
        """Load what a first check would otherwise load (the local checker's lexicon);
        return at once when there is nothing to load. Called in the worker thread."""
        ...


@runtime_checkable
class LiveClaims(Protocol):
    """An enricher that can also check claims while the answer streams."""

    def claim_session(self, request: Mapping[str, Any]) -> ClaimSession | None: ...


def claims_from_grounding(event: GroundingEvent, text: str | None = None) -> list[ClaimEvent]:
    """The ``claim`` events of a ``grounding`` event (``checker`` = its provider).

    ``citation_indices`` are mapped from the check's cited chunks to the citations of
    the answer the facts were built from (facts of other origins have none);
    ``supported`` is ``None`` for a claim that needed no check, else whether it cites
    a fact (Google) — an Azure claim is an ungrounded segment: ``False``. A claim with
    no offsets (one the checker's response did not let us place; the event's
    ``warnings`` name it) has no ``claim`` event. With the answer's ``text``, a claim's
    text is its slice of it (markers included, as the user saw it; Google's
    ``claimText`` is of the text sent, without markers).
    """
    out: list[ClaimEvent] = []
    chunks, facts = event.cited_chunks, event.facts
    for i, c in enumerate(event.claims):
        if c.start is None:
            continue  # a claim the checker could not place (its warnings say so)
        cites: set[int] = set()
        for ci in c.citation_indices:
            fi = chunks[ci].fact_index if 0 <= ci < len(chunks) else None
            fact = facts[fi] if fi is not None and 0 <= fi < len(facts) else None
            if (
                fact is not None
                and fact.origin_kind == "citation"
                and fact.origin_index is not None
            ):
                cites.add(fact.origin_index)
        required = c.grounding_check_required is not False
        start = c.start
        end = c.end if c.end is not None else start + len(c.claim_text)
        out.append(
            ClaimEvent(
                index=i,
                start=start,
                end=end,
                start_utf16=c.start_utf16 if c.start_utf16 is not None else start,
                end_utf16=c.end_utf16 if c.end_utf16 is not None else end,
                text=text[start:end] if text is not None and end <= len(text) else c.claim_text,
                score=c.score if required else None,
                supported=bool(c.citation_indices) if required else None,
                citation_indices=sorted(cites),
                checker=event.provider,
            )
        )
    return out
