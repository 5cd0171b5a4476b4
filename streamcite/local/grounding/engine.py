"""The scoring engine of the offline grounding checker (pure, synchronous, no I/O).

For each claim (one sentence of the answer) and each candidate fact:

1. **Candidates.** With more than a handful of facts, BM25 over the facts' content
   stems picks the few facts worth a close look (numpy; ≤ 200 facts).
2. **Best window.** Each fact is cut into sentences; the claim is aligned with the
   window of one sentence, or two adjacent ones (discounted, unless the second
   opens with a pronoun: "… film. It was directed by …"), that covers most of it.
3. **Recall.** Weighted recall of the claim's content stems (stopwords dropped,
   light per-language stemming) in that window; names and numbers weigh more. It
   is blended with the character 4-gram containment of the claim's words in the
   window, which credits inflected and derived forms (``directed``/``director``).
4. **Vetoes.** A number or date of the claim missing from the window, or a negation
   on one side only, cuts the score hard: "founded in 1975" is not supported by
   "founded in 1998", whatever the overlap.
5. **Calibration.** A logistic maps recall to a support score in [0, 1] so that a
   fully covered claim scores ≈ 1 and a claim missing a name or a key word falls
   under the default citation threshold (0.6).

A claim's score is its best fact's score; the facts cited for it are those whose
score reaches the citation threshold (decided by the caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from streamcite.local.grounding.bm25 import BM25
from streamcite.local.grounding.claims import Claim, question_keys, structured_claim
from streamcite.local.grounding.comparators import comparisons
from streamcite.local.grounding.config import DEFAULT_CONFIG, EngineConfig
from streamcite.local.grounding.facts import Fact
from streamcite.local.grounding.rules import status_conflict
from streamcite.local.grounding.scoring import calibrate, score_pair
from streamcite.local.grounding.tokens import TextFeatures, analyze, raw_tokens, token_table
from streamcite.local.grounding.words import detect_language
from streamcite.local.sentences import needs_grounding, split_sentences, without_markers

__all__ = ["ClaimVerdict", "EngineConfig", "calibrate", "evaluate"]


@dataclass(slots=True)
class ClaimVerdict:
    """The engine's verdict on one sentence of the answer."""

    start: int
    end: int
    text: str
    required: bool
    score: float | None = None
    """Support score in [0, 1] (best fact, calibrated); None when no check was required."""
    raw_score: float | None = None
    """``score`` before :func:`calibrate`."""
    fact_scores: list[tuple[int, float]] = field(default_factory=list)
    """(fact index, support score) of the facts that support it at all, best first."""


def evaluate(
    answer: str,
    facts: Sequence[str],
    *,
    lang: str | None = None,
    config: EngineConfig = DEFAULT_CONFIG,
) -> list[ClaimVerdict]:
    """Split ``answer`` into claims and score each against ``facts`` (texts).

    ``lang`` (``en``, ``fr``, ``it``, ``he``) is detected from the answer when None.
    Footnote markers ``[n]`` in the answer are ignored for scoring; offsets are on
    the raw answer.
    """
    if lang is None:
        # The answer AND its facts: a short Italian claim ("sono cinque settimane")
        # has too few cues of its own and would be read with French numbers.
        sample = answer[:2000]
        if facts:
            sample += " " + " ".join(f[:1000] for f in facts[:4])
        lang = detect_language(sample)
    sentences = split_sentences(answer)
    verdicts: list[ClaimVerdict] = []
    claims: list[tuple[ClaimVerdict, TextFeatures]] = []
    for sent in sentences:
        verdict = ClaimVerdict(sent.start, sent.end, sent.text, required=False)
        verdicts.append(verdict)
        if (sent.heading and not structured_claim(sent.text)) or not needs_grounding(sent.text):
            continue
        feats = analyze(without_markers(sent.text), lang, salience=True)
        if not feats.stems:
            continue  # only function words: nothing to check
        verdict.required = True
        verdict.score = verdict.raw_score = 0.0
        claims.append((verdict, feats))
    if not claims or not facts:
        return verdicts

    table = token_table(lang)
    built = [Fact(f, table) for f in facts]
    prepared = [
        (verdict, Claim(feats, config, question_keys(verdict.text, table)))
        for verdict, feats in claims
    ]
    for verdict, claim in prepared:
        if claim.features.numbers:
            claim.comparisons = comparisons(without_markers(verdict.text), table)
        tokens = raw_tokens(verdict.text)
        if status_conflict(tokens, [b"will"]):
            claim.done = tokens
    terms = {k for _, c in prepared for k in c.unique}
    names = {k for _, c in prepared for k in c.names}
    if names:
        known = set().union(*(f.counts.keys() & names for f in built))
        for _, c in prepared:
            c.unknown_name = not c.names <= known
    bm25 = BM25(built, terms) if len(built) >= config.bm25_min_facts else None
    if bm25 is not None:
        k = config.candidates if len(built) <= config.scale_facts else config.candidates_at_scale
        shortlists = bm25.top_many([c.unique for _, c in prepared], k)
    else:
        shortlists = [list(range(len(built)))] * len(prepared)
    for (verdict, claim), candidates in zip(prepared, shortlists, strict=True):
        scored: list[tuple[int, float]] = []
        for j in candidates:
            score = score_pair(claim, built[j], config)
            if score > 0.0:
                scored.append((j, score))
        scored.sort(key=lambda p: (-p[1], p[0]))
        verdict.raw_score = scored[0][1] if scored else 0.0
        verdict.fact_scores = [(j, calibrate(x, config)) for j, x in scored]
        verdict.score = calibrate(verdict.raw_score, config)
    return verdicts
