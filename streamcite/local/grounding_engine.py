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

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from streamcite.local.comparators import (
    Comparison,
    comparisons,
    holds,
    number_value,
    status_conflict,
    swapped_number,
)
from streamcite.local.lexical import (
    TextFeatures,
    TokenTable,
    analyze,
    detect_language,
    raw_tokens,
    token_table,
    word_ngrams,
)
from streamcite.local.sentences import needs_grounding, split_sentences, strip_markers

__all__ = ["ClaimVerdict", "EngineConfig", "calibrate", "evaluate"]


@dataclass(slots=True, frozen=True)
class EngineConfig:
    """Tunable constants (the defaults were chosen on HaluEval's dev split)."""

    candidates: int = 3
    """Facts scored closely per claim (after BM25): at most this many are cited."""
    candidates_at_scale: int = 2
    """``candidates`` when there are more than ``scale_facts`` facts (time budget)."""
    scale_facts: int = 50
    bm25_min_facts: int = 6
    """Below this many facts, every fact is scored closely."""
    salient_weight: float = 1.6
    """Weight of names and numbers relative to other content words."""
    ngram_weight: float = 0.25
    """Share of character 4-gram containment in the blended recall."""
    number_veto: float = 0.2
    negation_veto: float = 0.2
    name_veto: float = 0.35
    """Factor when a name (a word capitalised mid-sentence) of the claim is in no fact."""
    midpoint: float = 0.72
    """Recall at which the sigmoid is 0.5 (before the threshold calibration)."""
    steepness: float = 11.0
    anchors: int = 2
    """Best sentences of a fact from which windows are grown."""
    number_scope: str = "window"
    """Where a claim's numbers must appear: ``window`` or anywhere in the ``fact``."""
    max_window: int = 2
    """Most adjacent fact sentences a claim may be aligned with."""
    window_discount: float = 0.8
    """Recall of a window of k sentences is multiplied by this to the power k-1."""
    cut: float = 0.24
    """Raw score mapped to 0.6, Google's default ``citationThreshold`` (chosen on the dev
    splits of HaluEval, VitaminC and the conflict set; see :func:`calibrate`)."""


DEFAULT_CONFIG = EngineConfig()


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


# A sentence that opens with a pronoun continues the previous one ("Titanic is a
# film. It was directed by ..."): such a pair is aligned with a claim undiscounted.
_PRONOUNS = frozenset(
    w.encode()
    for w in str.split(
        "it he she they this these its his her their "
        "il elle ils elles ce cette celui celle "
        "esso essa lui lei essi esse questo questa "
        "הוא היא הם הן זה זו זאת"
    )
)


class _Fact:
    """One fact as raw tokens and content keys, cut lazily into rough sentences.

    Only the fact-level key counts (for BM25) are computed up front, in C-level
    passes; the sentences' key sets and negation flags are built when the fact is a
    candidate for some claim.
    """

    __slots__ = (
        "_grams",
        "_negs",
        "_sentences",
        "_sets",
        "counts",
        "keys",
        "length",
        "table",
        "tokens",
    )

    def __init__(self, text: str, table: TokenTable) -> None:
        self.table = table
        self.tokens = raw_tokens(text)
        self.keys = table.keys(self.tokens)
        self.counts: Counter[str] = Counter(self.keys)
        self.length = len(self.keys) - self.counts.pop("", 0)
        self._sentences: list[tuple[int, int]] | None = None
        self._sets: list[set[str]] | None = None
        self._negs: dict[int, bool] | None = None
        self._grams: dict[int, str] = {}

    def sentences(self) -> list[tuple[int, int]]:
        """Token ranges of the rough sentences."""
        if self._sentences is None:
            out: list[tuple[int, int]] = []
            start = 0
            for end in self.table.sentence_ends(self.tokens):
                out.append((start, end + 1))
                start = end + 1
            if len(self.tokens) > start:
                out.append((start, len(self.tokens)))
            self._sentences = out
        return self._sentences

    @property
    def n_sentences(self) -> int:
        return len(self.sentences())

    def sets(self) -> list[set[str]]:
        if self._sets is None:
            keys = self.keys
            self._sets = [set(keys[a:b]) for a, b in self.sentences()]
            for keys_of_sentence in self._sets:
                keys_of_sentence.discard("")
        return self._sets

    def continues(self, i: int) -> bool:
        """Whether rough sentence ``i`` opens with a pronoun (refers to the one before)."""
        a, b = self.sentences()[i]
        return b > a and self.tokens[a] in _PRONOUNS

    def negated(self, i: int) -> bool:
        """Whether rough sentence ``i`` holds a negation cue."""
        if self._negs is None:
            self._negs = {}
        neg = self._negs.get(i)
        if neg is None:
            a, b = self.sentences()[i]
            neg = self._negs[i] = self.table.negated(self.tokens[a:b])
        return neg

    def gram_text(self, i: int) -> str:
        """Keys of sentence ``i`` space-separated and padded: n-gram containment by substring."""
        g = self._grams.get(i)
        if g is None:
            g = self._grams[i] = " " + " ".join(self.sets()[i]) + " "
        return g

    def number_units(self, window: Sequence[int]) -> list[tuple[float, str]]:
        """(value, key of the next content word) of the numbers of the window's sentences."""
        out: list[tuple[float, str]] = []
        keys = self.keys
        spans = self.sentences()
        for i in window:
            a, b = spans[i]
            for j in range(a, b):
                k = keys[j]
                if k[:1] == "#" and (value := number_value(k)) is not None:
                    unit = next((u for u in keys[j + 1 : b] if u), "")
                    out.append((value, unit))
        return out

    def window_keys(self, window: Sequence[int]) -> list[str]:
        """Content keys of the window's sentences, in order."""
        spans = self.sentences()
        a, b = spans[window[0]][0], spans[window[-1]][1]
        return [k for k in self.keys[a:b] if k]

    def numbers(self, window: Sequence[int]) -> set[str]:
        sets = self.sets()
        out: set[str] = set()
        for i in window:
            out.update(k for k in sets[i] if k[0] == "#")
        return out


class _BM25:
    """Okapi BM25 of the facts for the claims' terms, as a dense (terms × facts) matrix.

    Only terms that occur in some claim get a row, so building it costs one set
    intersection per fact, not a pass over the facts' whole vocabulary.
    """

    __slots__ = ("matrix", "vocab")

    def __init__(self, facts: Sequence[_Fact], terms: set[str], k1: float = 1.2, b: float = 0.75):
        self.vocab = {t: i for i, t in enumerate(terms)}
        n = len(facts)
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[int] = []
        for j, f in enumerate(facts):
            shared = f.counts.keys() & terms
            rows.extend([self.vocab[t] for t in shared])
            tfs.extend([f.counts[t] for t in shared])
            cols.extend([j] * len(shared))
        row = np.asarray(rows, dtype=np.int64)
        col = np.asarray(cols, dtype=np.int64)
        tf = np.asarray(tfs, dtype=np.float32)
        df = np.bincount(row, minlength=len(self.vocab)).astype(np.float32)
        idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
        lengths = np.asarray([f.length for f in facts], dtype=np.float32)
        avg = float(lengths.mean()) if n else 0.0
        norm = k1 * (1.0 - b + b * lengths / (avg or 1.0))
        self.matrix = np.zeros((len(self.vocab), n), dtype=np.float32)
        if len(row):
            self.matrix[row, col] = idf[row] * tf * (k1 + 1.0) / (tf + norm[col])

    def top_many(self, claims: Sequence[Sequence[str]], k: int) -> list[list[int]]:
        """For each claim (its terms), the ``k`` best facts with a positive score, best first.

        One gather and one segmented sum for all claims: no per-claim numpy calls.
        """
        n_facts = self.matrix.shape[1]
        ids: list[int] = []
        starts: list[int] = []
        has_terms: list[bool] = []
        for terms in claims:
            mine = [self.vocab[t] for t in terms if t in self.vocab]
            has_terms.append(bool(mine))
            starts.append(len(ids))
            ids.extend(mine or [0])  # placeholder row keeps reduceat's segments aligned
        if not ids or not n_facts:
            return [[] for _ in claims]
        scores = np.add.reduceat(self.matrix[ids], starts, axis=0)
        k = min(k, n_facts)
        if k < n_facts:
            best = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        else:
            best = np.tile(np.arange(n_facts), (len(claims), 1))
        out: list[list[int]] = []
        for row, (cols, ok) in enumerate(zip(best, has_terms, strict=True)):
            if not ok:
                out.append([])
                continue
            vals = scores[row, cols]
            order = np.argsort(-vals, kind="stable")
            out.append([int(cols[o]) for o in order if vals[o] > 0])
        return out


class _Claim:
    __slots__ = (
        "comparisons",
        "done",
        "features",
        "grams",
        "keyset",
        "n_grams",
        "names",
        "total",
        "unique",
        "unknown_name",
        "weights",
    )

    def __init__(self, features: TextFeatures, cfg: EngineConfig) -> None:
        self.features = features
        self.names = {k for k in features.salient if k[0] != "#"}
        self.comparisons: list[Comparison] = []
        self.done: list[bytes] = []
        """The claim's raw tokens when it states something done (status check)."""
        self.unknown_name = False
        """A name of the claim is in no fact at all (set by :func:`evaluate`)."""
        self.unique = list(dict.fromkeys(features.stems))
        self.keyset = set(self.unique)
        self.weights = {
            k: (cfg.salient_weight if k in features.salient else 1.0) for k in self.unique
        }
        self.total = sum(self.weights.values())
        # Character 4-grams per word: a word matched as such contains all of its own,
        # so only the grams of unmatched words are searched in the window.
        self.grams = {k: word_ngrams(k) for k in self.unique} if cfg.ngram_weight else {}
        self.n_grams = sum(len(g) for g in self.grams.values())


def calibrate(raw: float, cfg: EngineConfig = DEFAULT_CONFIG) -> float:
    """Monotone piecewise-linear map of a raw score so that 0.6 is the right decision cut.

    ``cfg.cut`` goes to 0.6, 0 to 0 and 1 to 1; a single claim ranks as before.
    """
    if raw <= cfg.cut:
        return 0.6 * raw / cfg.cut
    return 0.6 + 0.4 * (raw - cfg.cut) / (1.0 - cfg.cut)


def _calibrate(recall: float, cfg: EngineConfig) -> float:
    return 1.0 / (1.0 + math.exp(-cfg.steepness * (recall - cfg.midpoint)))


def _score_pair(claim: _Claim, fact: _Fact, cfg: EngineConfig) -> float:
    """Support of one claim by one fact, in [0, 1]."""
    present = claim.keyset & fact.counts.keys()
    if not present:
        return 0.0
    weights = claim.weights
    credit: dict[str, set[int]] = {}
    per_sentence: dict[int, float] = {}
    for i, common in enumerate(map(present.intersection, fact.sets())):
        if not common:
            continue
        got = 0.0
        for k in common:
            where = credit.get(k)
            if where is None:
                credit[k] = {i}
            else:
                where.add(i)
            got += weights[k]
        per_sentence[i] = got
    if not per_sentence:
        return 0.0
    # Single sentences score per_sentence directly; pairs are tried around the best.
    ranked = sorted(per_sentence, key=per_sentence.__getitem__, reverse=True)
    best_anchor = ranked[0]
    best_got = per_sentence[best_anchor]
    best_window: tuple[int, ...] = (best_anchor,)
    if cfg.max_window > 1:
        for a in ranked[: cfg.anchors]:
            for b in (a - 1, a + 1):
                # The union of two sentences scores at most the sum of both: skip a pair
                # that cannot beat the best even then (most pairs, at a 0.8 discount).
                other = per_sentence.get(b)
                if other is None or per_sentence[a] + other <= best_got:
                    continue
                discount = 1.0 if fact.continues(max(a, b)) else cfg.window_discount
                if (per_sentence[a] + other) * discount <= best_got:
                    continue
                got = 0.0
                for k, where in credit.items():
                    if a in where or b in where:
                        got += weights[k]
                got *= discount
                if got > best_got:
                    best_got, best_window, best_anchor = got, (min(a, b), max(a, b)), a
    recall = best_got / claim.total if claim.total else 0.0
    if claim.n_grams:
        contained = 0
        text: str | None = None
        first, last = best_window[0], best_window[-1]
        for k, grams in claim.grams.items():
            where = credit.get(k)
            if where is not None and (first in where or last in where):
                contained += len(grams)  # the word itself is there: all its grams are
                continue
            if text is None:
                text = "".join(fact.gram_text(i) for i in best_window)
            contained += sum(map(text.__contains__, grams))
        recall = (1.0 - cfg.ngram_weight) * recall + cfg.ngram_weight * contained / claim.n_grams
    score = _calibrate(recall, cfg)
    numbers = claim.features.numbers
    if numbers:
        scope = best_window if cfg.number_scope == "window" else range(fact.n_sentences)
        missing = numbers - fact.numbers(scope)
        # "more than 20" is supported by a fact's 23: a comparator's number need not
        # be in the fact when the relation holds for the fact's value (same unit).
        for cmp in claim.comparisons if missing else ():
            if cmp.key in missing and holds(cmp, fact.number_units(scope)):
                missing.discard(cmp.key)
        if missing or (
            len(best_window) and swapped_number(claim.features.stems, fact.window_keys(best_window))
        ):
            score *= cfg.number_veto
    if claim.features.negated != fact.negated(best_anchor):
        score *= cfg.negation_veto
    if claim.unknown_name:
        score *= cfg.name_veto
    if claim.done:
        a, b = fact.sentences()[best_window[0]][0], fact.sentences()[best_window[-1]][1]
        if status_conflict(claim.done, fact.tokens[a:b]):
            score *= cfg.negation_veto
    return score


_SECTION_NUMBER_RE = re.compile(r"^\s*\d+(?:\.\d+)*[.)]?\s+")
_TABLE_RULE_RE = re.compile(r"^[\s|:\-+]*$")


def _structured_claim(text: str) -> bool:
    """A heading or table row is checked when it states a number ("| Meals | 25 € |",
    "Budget 2024"); a section number ("2. Remote work") and a table rule do not count."""
    if _TABLE_RULE_RE.match(text):
        return False
    return any(c.isdigit() for c in _SECTION_NUMBER_RE.sub("", text.lstrip("#| ")))


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
        if (sent.heading and not _structured_claim(sent.text)) or not needs_grounding(sent.text):
            continue
        feats = analyze(strip_markers(sent.text), lang, salience=True)
        if not feats.stems:
            continue  # only function words: nothing to check
        verdict.required = True
        verdict.score = verdict.raw_score = 0.0
        claims.append((verdict, feats))
    if not claims or not facts:
        return verdicts

    table = token_table(lang)
    built = [_Fact(f, table) for f in facts]
    prepared = [(verdict, _Claim(feats, config)) for verdict, feats in claims]
    for verdict, claim in prepared:
        if claim.features.numbers:
            claim.comparisons = comparisons(strip_markers(verdict.text), table)
        tokens = raw_tokens(verdict.text)
        if status_conflict(tokens, [b"will"]):
            claim.done = tokens
    terms = {k for _, c in prepared for k in c.unique}
    names = {k for _, c in prepared for k in c.names}
    if names:
        known = set().union(*(f.counts.keys() & names for f in built))
        for _, c in prepared:
            c.unknown_name = not c.names <= known
    bm25 = _BM25(built, terms) if len(built) >= config.bm25_min_facts else None
    if bm25 is not None:
        k = config.candidates if len(built) <= config.scale_facts else config.candidates_at_scale
        shortlists = bm25.top_many([c.unique for _, c in prepared], k)
    else:
        shortlists = [list(range(len(built)))] * len(prepared)
    for (verdict, claim), candidates in zip(prepared, shortlists, strict=True):
        scored: list[tuple[int, float]] = []
        for j in candidates:
            score = _score_pair(claim, built[j], config)
            if score > 0.0:
                scored.append((j, score))
        scored.sort(key=lambda p: (-p[1], p[0]))
        verdict.raw_score = scored[0][1] if scored else 0.0
        verdict.fact_scores = [(j, calibrate(x, config)) for j, x in scored]
        verdict.score = calibrate(verdict.raw_score, config)
    return verdicts
