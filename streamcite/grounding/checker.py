"""``LocalGrounding``: Google's grounding check, offline, in-process, no model weights.

Same call and result as the Google client::

    result = await LocalGrounding().check(answer, facts, citation_threshold=0.6)
    for claim in result.claims:
        print(claim.claim_text, claim.supported, claim.start, claim.end)

and a pipeline enricher (``after=[LocalGrounding()]``) that checks the streamed
answer against its own citations (or Wikit sources, or facts you give).
:mod:`streamcite.grounding.google_check` answers Google's request JSON with Google's
response JSON through this checker, for the local backend's ``…:check`` endpoint.

Behaviour follows Google's documentation: one sentence = one claim; questions and
filler get ``groundingCheckRequired: false``, no citations, and do not count in the
support score; a claim cites every fact whose support reaches ``citationThreshold``;
``citedChunks[i].source`` is the fact's index; ``supportScore`` is the one checked
claim's score, or for several claims the share of the answer's content the facts
support (:mod:`streamcite.grounding.answer`: not the mean of the claim scores);
a claim's ``score`` only when asked. Scoring is lexical and rule-based (see
:mod:`streamcite.grounding`).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streamcite.core.enricher import EnrichContext
from streamcite.core.events import GroundingEvent
from streamcite.core.grounding import (
    CitedChunk,
    GroundingClaim,
    GroundingFact,
    GroundingResult,
    no_verdict,
)
from streamcite.core.models import Citation, CitedAnswer
from streamcite.core.sources import QuotedSource
from streamcite.enrich.facts import MAX_FACT_CHARS, MAX_FACTS, answer_facts, build_facts
from streamcite.enrich.limits import (
    MAX_ANSWER_TOKENS,
    InvalidGroundingRequest,
    count_answer_tokens,
    validate_citation_threshold,
)
from streamcite.enrich.question import question_of
from streamcite.grounding import ClaimVerdict, evaluate, lexicon
from streamcite.grounding.answer import answer_support
from streamcite.grounding.live import ENGINE_LOCK
from streamcite.grounding.live_claims import LocalClaimSession
from streamcite.logs import get_logger

__all__ = [
    "MAX_CHECK_CHARS",
    "InvalidGroundingRequest",
    "LocalGrounding",
    "bound_answer",
    "check_facts",
    "runs_off_loop",
]

FactLike = str | GroundingFact | Citation | QuotedSource

_FACTS_FROM = ("citations", "sources", "both")
INLINE_MAX_CHARS = 4_000
"""Above this many characters (answer + facts) a check runs in a worker thread, so the
event loop is not held for more than a few milliseconds (a check costs some 2 ms per
1,000 characters: 64,000 held it 100-240 ms; a worker thread costs ~0.1 ms)."""

MAX_CHECK_CHARS = 64_000
"""Characters of an answer :meth:`LocalGrounding.check` looks at, at most: its first
4,096 tokens (Google's own limit, counted as Google does) within these characters.
The rest is not checked (reported in ``result.warnings``), so a check of any answer
ends in well under a second even in a worker thread no timeout can stop."""

_log = get_logger("streamcite.grounding.checker")


def runs_off_loop(size: int) -> bool:
    """A check of ``size`` characters (answer + facts) goes to a worker thread: it is
    large, or it would wait on the loop for the engine's lock or for a first read of the
    lexicon's data (0.2-3 s per language)."""
    return size > INLINE_MAX_CHARS or ENGINE_LOCK.locked() or not lexicon.ready()


def bound_answer(answer: str) -> tuple[str, str | None]:
    """The part of ``answer`` a local check looks at, and the warning when it is not all.

    The longest prefix of at most :data:`MAX_CHECK_CHARS` characters and
    ``MAX_ANSWER_TOKENS`` (4,096) tokens. Claim offsets stay those of ``answer``.

    >>> bound_answer("Rome is in Italy.")
    ('Rome is in Italy.', None)
    >>> part, why = bound_answer("word " * 5000)
    >>> count_answer_tokens(part), why.split(":")[0]
    (4096, 'only the first 4,096 tokens of the answer were checked (20,480 characters)')
    """
    part = answer[:MAX_CHECK_CHARS]
    if len(part) == len(answer) and len(answer) <= MAX_ANSWER_TOKENS:
        return answer, None  # fewer characters than the limit's tokens: within it
    if count_answer_tokens(part) > MAX_ANSWER_TOKENS:
        lo, hi = 0, len(part)  # the longest prefix within the limit (tokens grow with it)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count_answer_tokens(part[:mid]) <= MAX_ANSWER_TOKENS:
                lo = mid
            else:
                hi = mid - 1
        part = part[:lo]
    if len(part) == len(answer):
        return answer, None
    return part, (
        f"only the first {MAX_ANSWER_TOKENS:,} tokens of the answer were checked"
        f" ({len(part):,} characters): {len(answer) - len(part):,} characters not checked"
    )


class LocalGrounding:
    """Offline grounding checker with the Google client's interface; also an enricher.

    As an enricher (``kind = "grounding"``) it checks ``ctx.answer.text`` (the raw
    text, footnote markers included: offsets are on it) against facts built from
    the answer's citations (``facts_from="citations"``, the default), from the Wikit
    sources of the ``sources`` enricher (``"sources"``; it then waits for that
    enricher), from both (``"both"``), or from the explicit ``facts``.
    """

    kind = "grounding"

    def __init__(
        self,
        *,
        timeout: float = 5.0,
        needs: tuple[str, ...] = (),
        facts: Sequence[FactLike] | None = None,
        facts_from: str = "citations",
        citation_threshold: float = 0.6,
        claim_level_scores: bool = True,
        lang: str | None = None,
        live_claims: bool = True,
        claim_timeout: float = 2.0,
    ) -> None:
        """
        :param timeout: seconds the pipeline allows :meth:`enrich`.
        :param needs: kinds of enrichers to wait for; ``"sources"`` is added when
            ``facts_from`` is ``"sources"`` or ``"both"``.
        :param facts: explicit facts for :meth:`enrich` (overrides ``facts_from``).
        :param facts_from: ``"citations"``, ``"sources"`` or ``"both"``.
        :param citation_threshold: threshold used by :meth:`enrich`.
        :param claim_level_scores: whether :meth:`enrich` reports claim scores.
        :param lang: ``en``, ``fr``, ``it`` or ``he``; detected from the answer if None.
        :param live_claims: in a pipeline, also check each sentence as soon as it ends
            (``claim`` events while the answer streams; :meth:`claim_session`).
        :param claim_timeout: seconds one live check may take (queue wait included);
            past it the claim goes out unchecked with a ``claim_timeout`` error.
        """
        if facts_from not in _FACTS_FROM:
            raise ValueError(f"facts_from must be one of {_FACTS_FROM}, got {facts_from!r}")
        self.timeout = timeout
        self.facts_from = facts_from
        self.facts = list(facts) if facts is not None else None
        if facts is None and facts_from in ("sources", "both") and "sources" not in needs:
            needs = (*needs, "sources")
        self.needs = tuple(needs)
        self.citation_threshold = validate_citation_threshold(citation_threshold)
        self.claim_level_scores = claim_level_scores
        self.lang = lang
        self.live_claims = live_claims
        self.claim_timeout = claim_timeout

    def __repr__(self) -> str:
        return (
            f"LocalGrounding(facts_from={self.facts_from!r}, needs={self.needs!r}, "
            f"timeout={self.timeout!r})"
        )

    # ------------------------------------------------------------------ checking

    async def check(
        self,
        answer: str | CitedAnswer,
        facts: Iterable[FactLike],
        *,
        citation_threshold: float = 0.6,
        claim_level_scores: bool = False,
    ) -> GroundingResult:
        """Check ``answer`` against ``facts`` (texts, GroundingFacts, Citations, QuotedSources).

        With no fact at all there is no verdict: ``support_score`` is ``None``, no claim
        is marked unsupported, and ``reason`` says why.

        ``answer`` is the raw text (footnote markers may stay: claim offsets are on it),
        or a CitedAnswer, whose ``text`` is checked.

        Facts longer than 10,000 characters are split into windows and only the
        first 200 facts are used, as with Google (each policy applied is reported in
        ``result.warnings``). Only the answer's first 4,096 tokens are checked
        (:func:`bound_answer`; a warning says so). ``cited_chunks[i].fact_index``
        indexes ``result.facts``.
        Large inputs are scored in a worker thread; small ones inline.
        """
        threshold = validate_citation_threshold(citation_threshold)
        if isinstance(answer, CitedAnswer):
            answer = answer.text
        answer, cut = bound_answer(answer)
        prepared, warnings = _prepare_facts(facts)
        if cut:
            warnings.append(cut)
        size = len(answer) + sum(len(f.text) for f in prepared)
        if runs_off_loop(size):
            return await asyncio.to_thread(
                self._run, answer, prepared, threshold, claim_level_scores, warnings
            )
        return self._run(answer, prepared, threshold, claim_level_scores, warnings)

    def check_sync(
        self,
        answer: str | CitedAnswer,
        facts: Iterable[FactLike],
        *,
        citation_threshold: float = 0.6,
        claim_level_scores: bool = False,
    ) -> GroundingResult:
        """:meth:`check` without an event loop (always inline)."""
        threshold = validate_citation_threshold(citation_threshold)
        if isinstance(answer, CitedAnswer):
            answer = answer.text
        answer, cut = bound_answer(answer)
        prepared, warnings = _prepare_facts(facts)
        if cut:
            warnings.append(cut)
        return self._run(answer, prepared, threshold, claim_level_scores, warnings)

    def _run(
        self,
        answer: str,
        facts: list[GroundingFact],
        threshold: float,
        claim_level_scores: bool,
        warnings: list[str],
    ) -> GroundingResult:
        t0 = time.perf_counter()
        result = check_facts(answer, facts, threshold, claim_level_scores, self.lang)
        if not facts and result.checked_claims:
            # Claims to check and nothing to check them against: no verdict (not "every
            # claim unsupported"). With no claim to check, "nothing to check" stands.
            return no_verdict("local", warnings)
        result.warnings.extend(warnings)
        _log.debug(
            "local_grounding_checked",
            claims=len(result.claims),
            facts=len(facts),
            answer_chars=len(answer),
            support_score=result.support_score,
            ms=round((time.perf_counter() - t0) * 1000, 2),
        )
        return result

    # ------------------------------------------------------------------ enricher

    def claim_session(self, request: Mapping[str, Any]) -> LocalClaimSession | None:
        """The live claims of one stream (the pipeline calls this when it starts).

        With explicit ``facts``, each sentence is checked as soon as it ends; with facts
        from the answer's citations, once citations anchoring it arrive, else at the
        finish chunk. None when ``live_claims`` is off or the facts only come after the
        stream (``facts_from="sources"``: the ``grounding`` event's claims are then
        delivered as ``claim`` events instead).
        """
        if not self.live_claims:
            return None
        if self.facts is not None:
            facts = build_facts(self.facts)
        elif self.facts_from == "citations":
            facts = []
        else:
            return None
        return LocalClaimSession(
            facts,
            citation_threshold=self.citation_threshold,
            lang=self.lang,
            sample=_question(request),
            timeout=self.claim_timeout,
        )

    async def enrich(self, ctx: EnrichContext) -> GroundingEvent:
        """Check the streamed answer; the result becomes the ``grounding`` event."""
        warnings: list[str] = []
        items: list[GroundingFact] = []
        if self.facts is not None:
            items = build_facts(self.facts)
        else:
            items, sources = await answer_facts(ctx, self.facts_from)
            if sources is None:
                warnings.append("no Wikit sources available: the sources step failed")
            else:
                items.extend(build_facts(sources))
        result = await self.check(
            ctx.answer.text,
            items,
            citation_threshold=self.citation_threshold,
            claim_level_scores=self.claim_level_scores,
        )
        result.warnings[:0] = warnings
        return GroundingEvent.from_result(result)


def _question(request: Mapping[str, Any]) -> str:
    """The last user turn's text of a request of any API (a language sample), or ""."""
    return question_of(request)[:2000]


def _text_of(item: FactLike) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, GroundingFact):
        return item.text
    if isinstance(item, Citation):
        return item.cited_text or ""
    return item.chunk.data


def _prepare_facts(facts: Iterable[FactLike]) -> tuple[list[GroundingFact], list[str]]:
    """Facts as GroundingFacts, fitted to Google's limits the way the Google client does."""
    items = list(facts)
    prepared = build_facts(items)
    warnings: list[str] = []
    long_items = sum(1 for item in items if len(_text_of(item)) > MAX_FACT_CHARS)
    if long_items:
        warnings.append(
            f"{long_items} fact(s) longer than {MAX_FACT_CHARS:,} characters split into windows"
        )
    if len(prepared) > MAX_FACTS:
        warnings.append(f"{len(prepared) - MAX_FACTS} facts beyond the first {MAX_FACTS} dropped")
        prepared = prepared[:MAX_FACTS]
    return prepared, warnings


def _support_score(answer: str, verdicts: list[ClaimVerdict]) -> float:
    score = answer_support(verdicts)
    if score is not None:
        return round(score, 4)
    # Nothing needed a check: nothing is unsupported (an empty answer supports nothing).
    return 1.0 if answer.strip() else 0.0


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # characters that are 2 UTF-16 units


def _offsets_in_units(text: str, offsets: list[int]) -> dict[int, tuple[int, int]]:
    """Character offset -> (UTF-8 byte offset, UTF-16 offset), as :class:`~streamcite.core.offsets.OffsetMap` gives
    them, for many offsets at once: the text between consecutive offsets is encoded once
    (a claim list's offsets are increasing; a map's per-character tables cost more)."""
    if text.isascii():
        return {p: (at, at) for p in offsets for at in (max(0, min(p, len(text))),)}
    astral = _ASTRAL.search(text) is not None
    out: dict[int, tuple[int, int]] = {}
    prev = byte = unit = 0
    for p in sorted(set(offsets)):
        at = max(0, min(p, len(text)))
        piece = text[prev:at]
        byte += len(piece.encode("utf-8", "surrogatepass"))
        unit += len(piece.encode("utf-16-le", "surrogatepass")) // 2 if astral else len(piece)
        out[p] = (byte, unit)
        prev = at
    return out


def check_facts(
    answer: str,
    facts: list[GroundingFact],
    threshold: float,
    claim_level_scores: bool,
    lang: str | None,
) -> GroundingResult:
    """The offline check of ``answer`` against ``facts`` (already bounded and prepared),
    on the calling thread: each claim's fact indices whose support reaches
    ``threshold``, the cited chunks, the support score. What :class:`LocalGrounding`
    and Google's ``:check`` JSON (:mod:`~streamcite.grounding.google_check`) run."""
    with ENGINE_LOCK:  # the live claim checks run in a worker thread
        verdicts = evaluate(answer, [f.text for f in facts], lang=lang)
    cited: dict[int, list[int]] = {}  # claim position -> fact indices
    cited_facts: set[int] = set()
    for pos, v in enumerate(verdicts):
        if not v.required:
            continue
        chosen = sorted(fi for fi, s in v.fact_scores if s >= threshold and s > 0.0)
        cited[pos] = chosen
        cited_facts.update(chosen)
    order = sorted(cited_facts)
    chunk_of = {fi: i for i, fi in enumerate(order)}
    units = _offsets_in_units(answer, [p for v in verdicts for p in (v.start, v.end)])
    claims: list[GroundingClaim] = []
    for pos, v in enumerate(verdicts):
        start_byte, start_utf16 = units[v.start]
        end_byte, end_utf16 = units[v.end]
        claims.append(
            GroundingClaim(
                claim_text=v.text,
                start=v.start,
                end=v.end,
                start_byte=start_byte,
                end_byte=end_byte,
                start_utf16=start_utf16,
                end_utf16=end_utf16,
                citation_indices=[chunk_of[fi] for fi in cited.get(pos, [])],
                grounding_check_required=v.required,
                score=round(v.score or 0.0, 4) if claim_level_scores and v.required else None,
            )
        )
    return GroundingResult(
        provider="local",
        support_score=_support_score(answer, verdicts),
        claims=claims,
        cited_chunks=[
            CitedChunk(chunk_text=facts[fi].text, source=str(fi), fact_index=fi) for fi in order
        ],
        cited_facts=[facts[fi].text for fi in order],
        facts=list(facts),
    )
