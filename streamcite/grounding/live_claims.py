"""The offline checker's live claims: each sentence checked once it ends. Sans-I/O.

:class:`LocalClaimSession` (made by :meth:`LocalGrounding.claim_session
<streamcite.grounding.checker.LocalGrounding.claim_session>`) splits the streamed text
with :class:`~streamcite.grounding.sentence_stream.SentenceStream` and decides, for each
complete sentence, when the facts to check it against are known:

* **request-time facts** (``LocalGrounding(facts=[...])``): at once;
* **citations with spans** that arrive mid-stream (Anthropic cited text, Responses and
  Cohere spans): once a span anchoring the sentence (overlapping it) is known, against
  every fact known then;
* **citations without spans** known mid-stream: at once, against those;
* otherwise at the finish chunk, against every fact known then.

The facts are every distinct passage quoted (the citations' and the spans'). With no
fact at all (a Responses ``url_citation`` quotes nothing) a claim gets no verdict
(``supported`` and ``score`` ``None``).

A sentence that cannot be checked yet waits, bounded (``max_waiting``; beyond, it is
counted in ``dropped`` and the pipeline reports it). Only the answer's first
``max_chars`` characters (:data:`MAX_LIVE_CHARS`, the whole-answer check's limit) are
split and checked live: the rest is counted in ``unchecked_chars`` (the pipeline reports
it as one ``claims_cut`` error), so an 8 MiB answer costs the shared worker thread and
the event loop no more than a 64,000-character one. :meth:`run` does the check (in a
worker thread) with the facts fixed when the job was made.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from streamcite.core.claim_channel import ClaimChecker, ClaimJob, ClaimScore
from streamcite.core.events import CitationsEvent, ClaimEvent
from streamcite.core.grounding import GroundingFact
from streamcite.enrich.facts import MAX_FACTS, passage_facts
from streamcite.grounding import lexicon
from streamcite.grounding.live import FactIndex
from streamcite.grounding.sentence_stream import SentenceStream, StreamedSentence
from streamcite.grounding.words import detect_language

__all__ = ["MAX_LIVE_CHARS", "MAX_WAITING", "LocalClaimSession", "OfflineClaimChecker"]

MAX_WAITING = 4096
"""Complete sentences kept waiting for facts, at most (a capped answer has far fewer)."""

MAX_LIVE_CHARS = 64_000
"""Characters of an answer split and checked live, at most: the limit of the
whole-answer check (:data:`streamcite.grounding.checker.MAX_CHECK_CHARS`). Beyond it no
sentence is split or checked live (counted in ``unchecked_chars``)."""


class OfflineClaimChecker:
    """The offline checker, one claim at a time (:class:`FactIndex`): a ``ClaimChecker``."""

    name = "local"

    def index(self, facts: Sequence[str], *, lang: str | None, sample: str) -> FactIndex:
        return FactIndex(facts, lang=lang, sample=sample)

    def check(self, index: FactIndex, text: str, *, heading: bool = False) -> ClaimScore:
        v = index.check(text, heading=heading)
        return ClaimScore(v.required, v.score, v.fact_scores)


_OFFLINE = OfflineClaimChecker()


@dataclass(slots=True, frozen=True)
class _Facts:
    """The facts known at one moment, as the checker indexed them."""

    index: object
    facts: list[GroundingFact]


class LocalClaimSession:
    """Live claims of one stream (see the module doc): the splitting and the scheduling;
    the scoring is ``checker``'s (the offline checker by default, or any
    :class:`~streamcite.enrich.claims.ClaimChecker`)."""

    def __init__(
        self,
        facts: Sequence[GroundingFact] = (),
        *,
        checker: ClaimChecker = _OFFLINE,
        citation_threshold: float = 0.6,
        lang: str | None = None,
        sample: str = "",
        max_waiting: int = MAX_WAITING,
        timeout: float = 2.0,
        max_chars: int = MAX_LIVE_CHARS,
    ) -> None:
        self._checker = checker
        self.checker = checker.name
        """The ``checker`` of its claim events."""
        self.timeout = timeout
        """Seconds one check may take (its queue wait included) before its claim goes
        out unchecked."""
        self._static = list(facts)[:MAX_FACTS]
        self._cited: list[GroundingFact] = []
        self._spans: list[tuple[int, int]] = []
        self._spans_seen = False
        self._threshold = citation_threshold
        self._lang = lang
        self._sample = sample
        self._split = SentenceStream()
        self._waiting: deque[StreamedSentence] = deque()
        self._max_waiting = max_waiting
        self._count = 0
        self._finished = False
        self.dropped = 0
        self._max_chars = max_chars
        self.unchecked_chars = 0
        """Characters of the answer beyond ``max_chars``: not split, not checked live."""
        self._known: _Facts | None = None
        if self._static:
            self._known = self._facts_now()

    # -- what the stream tells it ------------------------------------------------

    def on_token(self, text: str) -> list[ClaimJob]:
        if self._finished:
            return []
        room = self._max_chars - self._split.text_length
        if len(text) > room:
            self.unchecked_chars += len(text) - max(room, 0)
            text = text[: max(room, 0)]
        done = self._split.feed(text)
        return self._route(done) if done else []

    def on_citations(self, event: CitationsEvent) -> list[ClaimJob]:
        if self._finished:
            return []
        if event.citations or event.spans:
            # Every distinct passage known now: the citations' and the spans' own.
            self._cited = passage_facts(event.citations, event.spans)
            self._known = self._facts_now()
        if event.spans:
            self._spans_seen = True
            self._spans = [
                (s.start, s.end) for s in event.spans if s.start is not None and s.end is not None
            ]
        waiting, self._waiting = list(self._waiting), deque()
        return self._route(waiting)

    def on_finish(self) -> list[ClaimJob]:
        """Every sentence not checked yet, against every fact known now."""
        if self._finished:
            return []
        self._finished = True
        rest = [*self._waiting, *self._split.close()]
        self._waiting.clear()
        known = self._known or self._facts_now()
        return [self._job(s, known) for s in rest]

    # -- the check (worker thread) -------------------------------------------------

    def prepare(self) -> None:
        """Load the lexicon of the answer's likely language (the request's ``lang``, else
        detected from the question and the request facts) before the first check:
        its first load in a process takes 0.2-3 s, more than a check's timeout. The
        pipeline runs this in the claim worker thread as the stream starts
        (:mod:`streamcite.pipeline.claims`); a custom checker needs nothing."""
        if self._checker is not _OFFLINE or not lexicon.available():
            return
        lang = self._lang
        if lang is None:
            probe = self._sample[:2000] + " " + " ".join(f.text[:1000] for f in self._static[:4])
            lang = detect_language(probe)
        lexicon.warm((lang,))

    def run(self, job: ClaimJob) -> ClaimEvent:
        known: _Facts = job.payload
        if not known.facts:  # nothing to check against: no verdict
            return job.unchecked(self.checker)
        v = self._checker.check(known.index, job.text, heading=job.heading)
        ev = job.unchecked(self.checker)
        if not v.required:
            return ev
        chosen = [fi for fi, s in v.fact_scores if s >= self._threshold and s > 0.0]
        ev.score = round(v.score or 0.0, 4)
        ev.supported = bool(chosen)
        ev.citation_indices = sorted(
            {
                f.origin_index
                for fi in chosen
                if (f := known.facts[fi]).origin_kind == "citation" and f.origin_index is not None
            }
        )
        return ev

    # -- internals -----------------------------------------------------------------

    def _facts_now(self) -> _Facts:
        facts = [*self._static, *self._cited][:MAX_FACTS]
        index = self._checker.index([f.text for f in facts], lang=self._lang, sample=self._sample)
        return _Facts(index, facts)

    def _ready(self, s: StreamedSentence) -> bool:
        if self._static:
            return True
        if self._spans_seen:
            return any(a < s.end and b > s.start for a, b in self._spans)
        return bool(self._cited)

    def _route(self, sentences: Sequence[StreamedSentence]) -> list[ClaimJob]:
        jobs: list[ClaimJob] = []
        for s in sentences:
            if self._known is not None and self._ready(s):
                jobs.append(self._job(s, self._known))
            elif len(self._waiting) < self._max_waiting:
                self._waiting.append(s)
            else:
                self.dropped += 1
        return jobs

    def _job(self, s: StreamedSentence, known: _Facts) -> ClaimJob:
        job = ClaimJob(
            self._count, s.start, s.end, s.start_utf16, s.end_utf16, s.text, s.heading, known
        )
        self._count += 1
        return job
