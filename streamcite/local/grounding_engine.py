"""The scoring engine of the offline grounding checker (pure, synchronous, no I/O).

For each claim (one sentence of the answer) and each candidate fact:

1. **Candidates.** With more than a handful of facts, BM25 over the facts' content
   stems picks the few facts worth a close look (numpy; ≤ 200 facts).
2. **Best window.** Each fact is cut into sentences; the claim is aligned with the
   window of one or two adjacent sentences that covers most of it.
3. **Recall.** Weighted recall of the claim's content stems in that window: exact
   stem matches count fully, shared 5-letter prefixes (``directed``/``director``)
   partly; names and numbers weigh more. It is blended with the character 4-gram
   containment of the claim's content words in the window (morphology, compounds).
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

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from streamcite.local.lexical import TextFeatures, analyze, char_ngrams, detect_language
from streamcite.local.sentences import needs_grounding, split_sentences, strip_markers

__all__ = ["ClaimVerdict", "EngineConfig", "evaluate"]


@dataclass(slots=True, frozen=True)
class EngineConfig:
    """Tunable constants (the defaults were chosen on HaluEval's dev split)."""

    candidates: int = 4
    """Facts scored closely per claim (after BM25)."""
    bm25_min_facts: int = 6
    """Below this many facts, every fact is scored closely."""
    salient_weight: float = 1.6
    """Weight of names and numbers relative to other content words."""
    prefix_credit: float = 0.7
    """Credit of a shared 5-letter prefix (vs 1.0 for the same stem)."""
    ngram_weight: float = 0.25
    """Share of character 4-gram containment in the blended recall."""
    number_veto: float = 0.3
    negation_veto: float = 0.35
    midpoint: float = 0.72
    """Recall at which the calibrated score is 0.5."""
    steepness: float = 11.0
    anchors: int = 4
    """Best sentences of a fact from which windows are grown."""
    number_scope: str = "window"
    """Where a claim's numbers must appear: ``window`` or anywhere in the ``fact``."""
    max_window: int = 2
    """Most adjacent fact sentences a claim may be aligned with."""
    window_discount: float = 0.8
    """Recall of a window of k sentences is multiplied by this to the power k-1."""
    idf_weight: float = 0.0
    """How much rarity among the facts (BM25 idf) adds to a word's weight."""


DEFAULT_CONFIG = EngineConfig()


@dataclass(slots=True)
class ClaimVerdict:
    """The engine's verdict on one sentence of the answer."""

    start: int
    end: int
    text: str
    required: bool
    score: float | None = None
    """Support score in [0, 1] (best fact); None when no check was required."""
    fact_scores: list[tuple[int, float]] = field(default_factory=list)
    """(fact index, support score) of the facts that support it at all, best first."""


# Fact sentences only need to be windows, not exact claims: a fast regex split.
_FACT_SPLIT_RE = re.compile(r"(?<=[.!?…׃。！？])[\"'”’»)\]]*\s+|\s*\n\s*")


@dataclass(slots=True)
class _Fact:
    sents: list[TextFeatures]
    counts: Counter[str]
    length: int
    key_sents: dict[str, list[int]] | None = None
    prefix_sents: dict[str, list[int]] | None = None
    grams: dict[int, set[str]] = field(default_factory=dict)

    def index(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        if self.key_sents is None or self.prefix_sents is None:
            keys: dict[str, list[int]] = {}
            prefixes: dict[str, list[int]] = {}
            for i, feats in enumerate(self.sents):
                for s in set(feats.stems):
                    keys.setdefault(s, []).append(i)
                    if len(s) >= 5 and s[0] != "#":
                        prefixes.setdefault(s[:5], []).append(i)
            self.key_sents, self.prefix_sents = keys, prefixes
        return self.key_sents, self.prefix_sents

    def sent_grams(self, i: int) -> set[str]:
        g = self.grams.get(i)
        if g is None:
            g = self.grams[i] = char_ngrams(" ".join(self.sents[i].words))
        return g


def _build_fact(text: str, lang: str) -> _Fact:
    sents = [analyze(part, lang) for part in _FACT_SPLIT_RE.split(text) if part.strip()]
    counts: Counter[str] = Counter()
    for feats in sents:
        counts.update(feats.stems)
    return _Fact(sents, counts, sum(counts.values()))


class _BM25:
    """Okapi BM25 over facts as a dense (vocabulary × facts) float32 matrix."""

    __slots__ = ("idf", "matrix", "vocab")

    def __init__(self, facts: Sequence[_Fact], k1: float = 1.2, b: float = 0.75):
        vocab: dict[str, int] = {}
        df: Counter[str] = Counter()
        for f in facts:
            df.update(f.counts.keys())
            for term in f.counts:
                if term not in vocab:
                    vocab[term] = len(vocab)
        n = len(facts)
        avg = (sum(f.length for f in facts) / n) if n else 0.0
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        self.idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        for j, f in enumerate(facts):
            norm = k1 * (1.0 - b + b * (f.length / avg if avg else 1.0))
            for term, tf in f.counts.items():
                rows.append(vocab[term])
                cols.append(j)
                vals.append(self.idf[term] * tf * (k1 + 1.0) / (tf + norm))
        self.matrix = np.zeros((len(vocab), n), dtype=np.float32)
        if rows:
            self.matrix[np.asarray(rows), np.asarray(cols)] = np.asarray(vals, dtype=np.float32)
        self.vocab = vocab

    def top(self, terms: Sequence[str], k: int) -> list[int]:
        ids = [self.vocab[t] for t in terms if t in self.vocab]
        if not ids:
            return []
        scores = self.matrix[ids].sum(axis=0)
        if k < len(scores):
            best = np.argpartition(-scores, k)[:k]
        else:
            best = np.arange(len(scores))
        return [int(j) for j in best[np.argsort(-scores[best])] if scores[j] > 0]


def _windows(anchor: int, size: int) -> list[tuple[int, ...]]:
    out = [(anchor,)]
    for width in range(2, size + 1):
        for first in range(anchor - width + 1, anchor + 1):
            out.append(tuple(range(first, first + width)))
    return out


def _calibrate(recall: float, cfg: EngineConfig) -> float:
    return 1.0 / (1.0 + math.exp(-cfg.steepness * (recall - cfg.midpoint)))


def _score_pair(
    claim: TextFeatures,
    weights: dict[str, float],
    claim_grams: set[str],
    fact: _Fact,
    cfg: EngineConfig,
) -> float:
    keys, prefixes = fact.index()
    total = sum(weights.values())
    # credit[stem] = {sentence index: credit}
    credit: dict[str, dict[int, float]] = {}
    per_sentence: dict[int, float] = {}
    for s, w in weights.items():
        hits: dict[int, float] = {}
        for i in keys.get(s, ()):
            hits[i] = 1.0
        if len(s) >= 5 and s[0] != "#":
            for i in prefixes.get(s[:5], ()):
                if i not in hits:
                    hits[i] = cfg.prefix_credit
        if hits:
            credit[s] = hits
            for i, c in hits.items():
                per_sentence[i] = per_sentence.get(i, 0.0) + w * c
    if not per_sentence:
        return 0.0
    anchors = sorted(per_sentence, key=per_sentence.__getitem__, reverse=True)[: cfg.anchors]
    n_sents = len(fact.sents)
    best_recall, best_window, best_anchor = -1.0, (anchors[0],), anchors[0]
    seen: set[tuple[int, ...]] = set()
    for a in anchors:
        for window in _windows(a, cfg.max_window):
            if window[0] < 0 or window[-1] >= n_sents or window in seen:
                continue
            seen.add(window)
            got = 0.0
            for s, hits in credit.items():
                c = max(hits.get(i, 0.0) for i in window)
                if c:
                    got += weights[s] * c
            if len(window) > 1:
                got *= cfg.window_discount ** (len(window) - 1)
            if got > best_recall:
                best_recall, best_window, best_anchor = got, window, a
    recall = best_recall / total if total else 0.0
    if cfg.ngram_weight and claim_grams:
        window_grams: set[str] = set()
        for i in best_window:
            window_grams |= fact.sent_grams(i)
        containment = len(claim_grams & window_grams) / len(claim_grams)
        recall = (1.0 - cfg.ngram_weight) * recall + cfg.ngram_weight * containment
    score = _calibrate(recall, cfg)
    if claim.numbers:
        window_numbers: set[str] = set()
        for i in best_window:
            window_numbers |= fact.sents[i].numbers
        if cfg.number_scope == "fact":
            window_numbers = set().union(*(f.numbers for f in fact.sents))
        if not claim.numbers <= window_numbers:
            score *= cfg.number_veto
    if claim.negated != fact.sents[best_anchor].negated:
        score *= cfg.negation_veto
    return score


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
        lang = detect_language(answer)
        if lang == "und" and facts:
            lang = detect_language(" ".join(facts[:5]))
    sentences = split_sentences(answer)
    verdicts: list[ClaimVerdict] = []
    claims: list[tuple[ClaimVerdict, TextFeatures]] = []
    for sent in sentences:
        verdict = ClaimVerdict(sent.start, sent.end, sent.text, required=False)
        verdicts.append(verdict)
        if sent.heading or not needs_grounding(sent.text):
            continue
        feats = analyze(strip_markers(sent.text), lang, salience=True)
        if not feats.stems:
            continue  # only function words: nothing to check
        verdict.required = True
        verdict.score = 0.0
        claims.append((verdict, feats))
    if not claims or not facts:
        return verdicts

    built = [_build_fact(f, lang) for f in facts]
    bm25 = _BM25(built) if len(built) >= config.bm25_min_facts else None
    for verdict, feats in claims:
        unique = list(dict.fromkeys(feats.stems))
        weights = {s: (config.salient_weight if s in feats.salient else 1.0) for s in unique}
        if config.idf_weight and bm25 is not None:
            top_idf = max(bm25.idf.values(), default=1.0) or 1.0
            for s in unique:
                weights[s] *= 1.0 + config.idf_weight * bm25.idf.get(s, top_idf) / top_idf
        grams = char_ngrams(" ".join(feats.words)) if config.ngram_weight else set()
        if bm25 is not None:
            candidates = bm25.top(unique, config.candidates)
        else:
            candidates = list(range(len(built)))
        scored: list[tuple[int, float]] = []
        for j in candidates:
            s = _score_pair(feats, weights, grams, built[j], config)
            if s > 0.0:
                scored.append((j, s))
        scored.sort(key=lambda p: (-p[1], p[0]))
        verdict.fact_scores = scored
        verdict.score = scored[0][1] if scored else 0.0
    return verdicts
