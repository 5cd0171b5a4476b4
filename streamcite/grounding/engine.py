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
4. **Comparisons.** "more than / under / before N" is compared with the fact's
   closest number or date (:mod:`~streamcite.grounding.comparators`).
5. **Vetoes.** A number or date of the claim missing from the window, a failed
   comparison, a negation on one side only, a name found in no fact, a changed event
   status cut the score hard: "founded in 1975" is not supported by "founded in
   1998", whatever the overlap.
6. **Calibration.** A logistic maps recall to a raw score, and a monotone map sends
   the raw cut chosen on the dev splits to 0.6, Google's default citation threshold.

A claim's score is its best fact's score; the facts cited for it are those whose
score reaches the citation threshold (decided by the caller).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from streamcite.grounding import lexicon
from streamcite.grounding.answer import rarity_weights
from streamcite.grounding.bm25 import BM25
from streamcite.grounding.claims import (
    Claim,
    question_keys,
    structured_claim,
    without_enumerators,
)
from streamcite.grounding.comparators import comparisons
from streamcite.grounding.config import DEFAULT_CONFIG, EngineConfig
from streamcite.grounding.facts import Facts
from streamcite.grounding.roles import apposition_roles, claim_clauses, claim_roles
from streamcite.grounding.rules import status_conflict
from streamcite.grounding.scoring import calibrate, score_with_coverage
from streamcite.grounding.sentences import needs_grounding, split_sentences, without_markers
from streamcite.grounding.tokens import (
    TextFeatures,
    TokenTable,
    features,
    raw_tokens,
    token_table,
)
from streamcite.grounding.words import detect_language

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
    coverage: float = 0.0
    """Best rarity-weighted share of its keys in one fact sentence (answers of several
    claims only; :mod:`~streamcite.grounding.answer`)."""
    weight: float = 0.0
    """Its number of distinct content keys (its weight in the answer's score)."""


def _language(answer: str, facts: Sequence[str]) -> str:
    # The answer AND its facts: a short Italian claim ("sono cinque settimane") has
    # too few cues of its own and would be read with French numbers.
    sample = answer[:2000]
    if facts:
        sample += " " + " ".join(f[:1000] for f in facts[:4])
    return detect_language(sample)


def _claims(answer: str, lang: str, cfg: EngineConfig) -> tuple[list[ClaimVerdict], list[Claim]]:
    """Every sentence's verdict, and the claims of those that need a check (same order)."""
    table = token_table(lang)
    verdicts: list[ClaimVerdict] = []
    claims: list[Claim] = []
    for sent in split_sentences(answer):
        verdict = ClaimVerdict(sent.start, sent.end, sent.text, required=False)
        verdicts.append(verdict)
        if (sent.heading and not structured_claim(sent.text)) or not needs_grounding(sent.text):
            continue
        text = without_enumerators(without_markers(sent.text))
        tokens = raw_tokens(text)
        feats = features(text, tokens, table, salience=True)
        if not feats.stems:
            continue  # only function words: nothing to check
        verdict.required = True
        verdict.score = verdict.raw_score = 0.0
        claims.append(_claim(text, tokens, feats, table, cfg))
    return verdicts, claims


def _claim(
    text: str, tokens: list[bytes], feats: TextFeatures, table: TokenTable, cfg: EngineConfig
) -> Claim:
    claim = Claim(feats, cfg, question_keys(text, table))
    if feats.numbers:
        claim.comparisons = comparisons(text, table)
    if status_conflict(tokens, [b"will"]):
        claim.done = tokens
    claim.roles = claim_roles(tokens, table.lang)
    claim.order = claim_clauses(tokens, claim.names, table.lang)
    if cfg.role_swap:
        q = claim.question
        claim.appositions = [p for p in apposition_roles(tokens, table.lang) if p[0] not in q]
    if cfg.synonym_weight and lexicon.available():
        # A name has no synonyms; a question's words restate the topic.
        skip = claim.names | claim.question
        words = [k for k in claim.unique if k not in skip] if skip else claim.unique
        claim.synonyms, claim.antonyms = syn, ant = lexicon.relations(words, table.lang)
        if syn:
            claim.any_synonym = frozenset().union(*syn.values()) - claim.keyset
        if ant:
            claim.any_antonym = frozenset().union(*ant.values())
    return claim


def _mark_unknown_names(claims: list[Claim], facts: Facts) -> None:
    names = {k for c in claims for k in c.names}
    if names:
        known = facts.known(names)
        for c in claims:
            c.unknown_name = not c.names <= known


def _absent_keys(claims: list[Claim], facts: Facts) -> set[str]:
    """The claims' keys found in no fact (for the answer's coverage)."""
    keys = {k for c in claims for k in c.unique}
    return keys - facts.known(keys)


def _shortlists(claims: list[Claim], facts: Facts, cfg: EngineConfig) -> list[list[int]]:
    """The candidate facts of each claim (all of them below ``bm25_min_facts``)."""
    if len(facts) < cfg.bm25_min_facts:
        return [list(range(len(facts)))] * len(claims)
    bm25 = BM25(facts, {k for c in claims for k in c.unique})
    k = cfg.candidates if len(facts) <= cfg.scale_facts else cfg.candidates_at_scale
    return bm25.top_many([c.unique for c in claims], k)


@contextmanager
def _no_gc_pauses() -> Iterator[None]:
    """The cyclic garbage collector paused for one check, and resumed after it.

    A check at the API limits allocates some 10,000 containers (sets, lists, tuples of
    the claims and the candidates' sentences) that live until its end and form no cycle:
    the collector's passes during a check (about 8 young ones) free nothing and cost
    3-4 ms of ~50. Reference counting frees everything as usual; only the cycle search
    waits, and its allocation count keeps running, so the first allocation after the
    check collects as it would have. Resumed only by the call that paused it: never
    left paused, never resumed when the application had paused it. (Process-wide: a
    check running in another thread meanwhile also skips collections; the one that
    paused resumes them when it ends.)
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def evaluate(
    answer: str,
    facts: Sequence[str],
    *,
    lang: str | None = None,
    config: EngineConfig = DEFAULT_CONFIG,
) -> list[ClaimVerdict]:
    """Split ``answer`` into claims and score each against ``facts`` (texts).

    ``lang`` (``en``, ``fr``, ``it``, ``he``) is detected from the answer and its facts
    when None. Footnote markers ``[n]`` in the answer are ignored for scoring; offsets
    are on the raw answer.
    """
    with _no_gc_pauses():
        return _evaluate(answer, facts, lang, config)


def _evaluate(
    answer: str, facts: Sequence[str], lang: str | None, config: EngineConfig
) -> list[ClaimVerdict]:
    lang = lang or _language(answer, facts)
    verdicts, claims = _claims(answer, lang, config)
    if not claims or not facts:
        return verdicts
    # One table from start to end: the facts' key ids are this table's.
    corpus = Facts(facts, token_table(lang))
    _mark_unknown_names(claims, corpus)
    built = corpus.facts
    checked = (v for v in verdicts if v.required)
    several = len(claims) > 1  # the answer's score then reads each claim's coverage
    absent = _absent_keys(claims, corpus) if several else set()
    for verdict, claim, candidates in zip(
        checked, claims, _shortlists(claims, corpus, config), strict=True
    ):
        rare = rarity_weights(claim.unique, absent) if several else None
        pairs = [(j, *score_with_coverage(claim, built[j], config, rare)) for j in candidates]
        if rare:
            verdict.weight = float(len(claim.unique))
            verdict.coverage = max((c for _, _, c in pairs), default=0.0) / sum(rare.values())
        scored = sorted(((j, x) for j, x, _ in pairs if x > 0.0), key=lambda p: (-p[1], p[0]))
        verdict.raw_score = scored[0][1] if scored else 0.0
        verdict.fact_scores = [(j, calibrate(x, config)) for j, x in scored]
        verdict.score = calibrate(verdict.raw_score, config)
    return verdicts
