"""Support of one claim by one fact: the best window, the blended recall, the vetoes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import compress
from math import fsum  # exactly rounded: a sum over a set is the same in every process

from streamcite.grounding.claims import Claim
from streamcite.grounding.comparators import _scales, fact_dates, fact_numbers, holds
from streamcite.grounding.config import DEFAULT_CONFIG, EngineConfig
from streamcite.grounding.facts import Fact
from streamcite.grounding.lexicon import ROOTED, root
from streamcite.grounding.order import order_conflict
from streamcite.grounding.roles import (
    conflicting_roles,
    could_conflict,
    other_role,
)
from streamcite.grounding.rules import status_conflict, swapped_number

__all__ = ["calibrate", "score_with_coverage"]


def calibrate(raw: float, cfg: EngineConfig = DEFAULT_CONFIG) -> float:
    """Monotone piecewise-linear map of a raw score so that 0.6 is the right decision cut.

    ``cfg.cut`` goes to 0.6, 0 to 0 and 1 to 1; a single claim ranks as before.
    """
    if raw <= cfg.cut:
        return 0.6 * raw / cfg.cut
    return 0.6 + 0.4 * (raw - cfg.cut) / (1.0 - cfg.cut)


def _sigmoid(recall: float, cfg: EngineConfig) -> float:
    return 1.0 / (1.0 + math.exp(-cfg.steepness * (recall - cfg.midpoint)))


@dataclass(slots=True)
class _Alignment:
    """The fact's window that covers most of the claim."""

    got: float
    """Weight of the claim's keys found in the window (discounted for two sentences)."""
    window: tuple[int, ...]
    anchor: int
    common: dict[int, set[str]]
    """Fact sentence -> the claim's keys it holds (sentences holding none left out)."""
    covered: float = 0.0
    """Most rarity weight of the claim's keys found in one sentence (answer aggregate)."""


_NONE: frozenset[str] = frozenset()


def _align(
    claim: Claim,
    fact: Fact,
    present: set[str],
    cfg: EngineConfig,
    rare: dict[str, float] | None = None,
    weights: dict[str, float] | None = None,
) -> _Alignment | None:
    if weights is None:
        weights = claim.weights
    sets = fact.sets()
    # The claim's keys in each sentence; compress keeps the non-empty ones (C-level).
    # Weight sums are exactly rounded (fsum): the sets' order does not matter.
    commons = list(map(present.intersection, sets))
    common = {i: commons[i] for i in compress(range(len(sets)), commons)}
    if not common:
        return None
    per_sentence = {i: fsum(map(weights.__getitem__, keys)) for i, keys in common.items()}
    covered = 0.0
    if rare is not None:
        covered = max(0.0, *(fsum(map(rare.__getitem__, keys)) for keys in common.values()))
    # Single sentences score per_sentence directly; pairs are tried around the best.
    ranked = sorted(per_sentence, key=per_sentence.__getitem__, reverse=True)
    best = _Alignment(per_sentence[ranked[0]], (ranked[0],), ranked[0], common, covered)
    if cfg.max_window < 2:
        return best
    for a in ranked[: cfg.anchors]:
        for b in (a - 1, a + 1):
            # The union of two sentences scores at most the sum of both: skip a pair
            # that cannot beat the best even then (most pairs, at a 0.8 discount).
            other = per_sentence.get(b)
            if other is None or per_sentence[a] + other <= best.got:
                continue
            discount = 1.0 if fact.continues(max(a, b)) else cfg.window_discount
            if (per_sentence[a] + other) * discount <= best.got:
                continue
            got = discount * fsum(map(weights.__getitem__, common[a] | common[b]))
            if got > best.got:
                best.got, best.window, best.anchor = got, (min(a, b), max(a, b)), a
    return best


def _ngram_share(
    claim: Claim, fact: Fact, al: _Alignment, alias: dict[str, frozenset[str]] | None = None
) -> float:
    """Share of the claim's character 4-grams found in the window (all of a word's when
    one of its synonyms is there, ``alias``)."""
    contained = 0
    text: str | None = None
    first, last = al.window[0], al.window[-1]
    inside = al.common.get(first, _NONE)
    if last != first:
        inside = inside | al.common.get(last, _NONE)
    for k, grams in claim.grams.items():
        if k in inside or (alias and not inside.isdisjoint(alias.get(k, _NONE))):
            contained += len(grams)  # the word itself is there: all its grams are
            continue
        if text is None:
            text = "".join(fact.gram_text(i) for i in al.window)
        contained += sum(map(text.__contains__, grams))
    return contained / claim.n_grams


def _comparisons(claim: Claim, fact: Fact, window: tuple[int, ...]) -> tuple[set[str], bool]:
    """(claim keys vouched for by comparisons that hold, whether one fails)."""
    keys = fact.window_keys(window)
    numbers = fact_numbers(keys, _scales(fact.table))
    dates = fact_dates(keys)
    vouched: set[str] = set()
    failed = False
    for cmp in claim.comparisons:
        verdict = holds(cmp, numbers, dates)
        if verdict:
            vouched |= cmp.keys
        elif verdict is not None:
            failed = True
    return vouched, failed


def _number_veto(claim: Claim, fact: Fact, window: tuple[int, ...], vouched: set[str]) -> bool:
    """A number of the claim missing from the window, or bound to the wrong word."""
    numbers = claim.numbers
    if not numbers:
        return False
    if numbers - vouched - fact.numbers(window):
        return True
    # swapped_number needs a word next to a claim number among the window's keys: most
    # facts hold none of them, and their window need not be read again.
    if claim.neighbours.isdisjoint(fact.keyset):
        return False
    return swapped_number(claim.features.stems, fact.window_keys(window))


def score_with_coverage(
    claim: Claim, fact: Fact, cfg: EngineConfig, rare: dict[str, float] | None = None
) -> tuple[float, float]:
    """(support of one claim by one fact in [0, 1], before :func:`calibrate`; the most of
    ``rare`` -- the rarity weight of each claim key, :func:`~.answer.rarity_weights` --
    found in one sentence of the fact, 0 without it)."""
    keyset = fact.keyset
    present = claim.keyset & keyset
    alias = _synonyms_found(claim, fact, present) if claim.synonyms else None
    weights = None
    if alias:
        # A fact key standing for a missing claim word takes that word's weight.
        weights = dict(claim.weights)
        rare = dict(rare) if rare is not None else None
        for k, subs in alias.items():
            for s in subs:
                weights[s] = weights[k] * cfg.synonym_weight
                if rare is not None:
                    # The answer's coverage reads words only (HaluEval dev: synonyms
                    # there let fabricated summaries pass).
                    rare.setdefault(s, 0.0)
        present = present.union(*alias.values())
    if not present:
        return 0.0, 0.0
    al = _align(claim, fact, present, cfg, rare, weights)
    if al is None:
        return 0.0, 0.0
    score, covers = _score(claim, fact, cfg, present, al, alias)
    return score, al.covered * covers


def _synonyms_found(
    claim: Claim, fact: Fact, present: set[str]
) -> dict[str, frozenset[str]] | None:
    """Claim key missing from the fact -> the fact's keys that are its synonyms (and not
    words of the claim themselves)."""
    out: dict[str, frozenset[str]] = {}
    if fact.table.lang in ROOTED:
        rooted = fact.rooted()
        for k, syn in claim.synonyms.items():
            if k not in present and not syn.isdisjoint(rooted):
                found = frozenset(x for r in syn & rooted.keys() for x in rooted[r])
                if found - claim.keyset:
                    out[k] = found - claim.keyset
        return out or None
    # The fact's synonyms of the claim's words (not words of the claim: any_synonym has
    # none), then the claim words they stand for.
    hits = claim.any_synonym.intersection(fact.keyset)
    if not hits:  # most facts hold no synonym of the claim's words
        return None
    for k, syn in claim.synonyms.items():
        if k not in present and not syn.isdisjoint(hits):
            out[k] = syn.intersection(hits)
    return out or None


def _antonym_found(claim: Claim, fact: Fact, al: _Alignment, present: set[str]) -> bool:
    """A claim word missing from the window while one of its antonyms is there, and not
    in the claim ("sold" against "bought", "vendu" against "acheté")."""
    window: set[str] | None = None
    mine: set[str] = claim.keyset
    lang = fact.table.lang
    rooted = lang in ROOTED  # elsewhere a key is its own root: no call a word
    for k, ant in claim.antonyms.items():
        if k in present:
            continue
        if window is None:
            window = set(fact.window_keys(al.window))
            if rooted:
                window = {root(w, lang) for w in window}
                mine = {root(w, lang) for w in claim.keyset}
        if (
            not ant.isdisjoint(window)
            and (root(k, lang) if rooted else k) not in window
            and ant.isdisjoint(mine)
        ):
            return True
    return False


def _score(
    claim: Claim,
    fact: Fact,
    cfg: EngineConfig,
    present: set[str],
    al: _Alignment,
    alias: dict[str, frozenset[str]] | None = None,
) -> tuple[float, float]:
    """(the score, the factor on the answer-level coverage).

    Only explicit contradictions (a failed comparison, a changed status) cut the
    coverage too: a number or a negation missing from the window, or a name in no fact,
    is too often a summary's abstraction (HaluEval dev binned AUC 0.839 -> 0.812 with the
    number veto on the coverage, -> 0.831 with the negation veto).
    """
    vouched: set[str] = set()
    failed = False
    if claim.comparisons:
        vouched, failed = _comparisons(claim, fact, al.window)
    # Keys a holding comparison stands for count as found ("more than 20" against 23).
    got = al.got
    if vouched:  # (an empty sum adds 0.0: skipped, the same value)
        got += fsum(claim.weights[k] for k in vouched - present if k in claim.weights)
    recall = min(got / claim.total, 1.0) if claim.total else 0.0
    if claim.n_grams:
        share = _ngram_share(claim, fact, al, alias)
        recall = (1.0 - cfg.ngram_weight) * recall + cfg.ngram_weight * share
    score = _sigmoid(recall, cfg)
    covers = 1.0
    if failed:
        score *= cfg.number_veto
        covers = cfg.number_veto
    elif _number_veto(claim, fact, al.window, vouched):
        score *= cfg.number_veto
    if claim.features.negated != fact.negated(al.anchor):
        score *= cfg.negation_veto
    if claim.unknown_name:
        score *= cfg.name_veto
    if (
        claim.antonyms
        and (fact.table.lang in ROOTED or not claim.any_antonym.isdisjoint(fact.keyset))
        and _antonym_found(claim, fact, al, present)
    ):
        score *= cfg.antonym_veto
    if claim.done:
        spans = fact.sentences()
        a, b = spans[al.window[0]][0], spans[al.window[-1]][1]
        if status_conflict(claim.done, fact.tokens[a:b]):
            score *= cfg.negation_veto
            covers *= cfg.negation_veto
    # A role given to the wrong name: the fact's appositions may sit outside the window
    # ("signed by Acme Corp, the buyer, …" before the sentence the claim aligns with).
    # The fact may also give the name another role and the claim's role to nobody
    # ("Anna Weber, the treasurer" against a claim "Anna Weber, the secretary").
    if (
        claim.roles
        and could_conflict(claim.roles, fact.keyset)
        and conflicting_roles(claim.roles, fact.roles())
    ) or (
        claim.appositions
        and could_conflict(claim.appositions, fact.keyset, own_role=True)
        and other_role(claim.appositions, fact.bindings(), fact.table.lang)
    ):
        score *= cfg.negation_veto
        covers *= cfg.negation_veto
    # Who did what to whom, by word order: "Globex bought Acme" against "Acme bought Globex".
    if claim.order and order_conflict(claim.order, fact, al.window, present):
        score *= cfg.negation_veto
        covers *= cfg.negation_veto
    return score, covers
