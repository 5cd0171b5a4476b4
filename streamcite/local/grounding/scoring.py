"""Support of one claim by one fact: the best window, the blended recall, the vetoes."""

from __future__ import annotations

import math

from streamcite.local.grounding.claims import Claim
from streamcite.local.grounding.comparators import holds
from streamcite.local.grounding.config import DEFAULT_CONFIG, EngineConfig
from streamcite.local.grounding.facts import Fact
from streamcite.local.grounding.rules import status_conflict, swapped_number

__all__ = ["calibrate", "score_pair"]


def calibrate(raw: float, cfg: EngineConfig = DEFAULT_CONFIG) -> float:
    """Monotone piecewise-linear map of a raw score so that 0.6 is the right decision cut.

    ``cfg.cut`` goes to 0.6, 0 to 0 and 1 to 1; a single claim ranks as before.
    """
    if raw <= cfg.cut:
        return 0.6 * raw / cfg.cut
    return 0.6 + 0.4 * (raw - cfg.cut) / (1.0 - cfg.cut)


def _calibrate(recall: float, cfg: EngineConfig) -> float:
    return 1.0 / (1.0 + math.exp(-cfg.steepness * (recall - cfg.midpoint)))


def score_pair(claim: Claim, fact: Fact, cfg: EngineConfig) -> float:
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
