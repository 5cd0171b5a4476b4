"""The answer-level support score of an answer of several claims (grounding/answer.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamcite.enrich import LocalGrounding
from streamcite.grounding.answer import (
    DEFAULT_ANSWER_CONFIG,
    answer_support,
    calibrate_answer,
    rarity,
    rarity_weights,
)
from streamcite.grounding.engine import evaluate

FACTS = [
    "The city council approved the new transport budget on Monday after a long debate. "
    "The mayor said the budget would fund two tram lines and repair the northern bridge. "
    "Work on the bridge starts in spring."
]


def _support(answer: str) -> float:
    result = LocalGrounding().check_sync(answer, FACTS)
    assert result.support_score is not None
    return float(result.support_score)


def test_one_claim_answer_scores_its_claim_exactly() -> None:
    # The claim sets (VitaminC, conflicts, multilingual) calibrate claim scores: an
    # answer of one claim must keep its claim's score.
    result = LocalGrounding().check_sync(
        "The mayor said the budget would fund two tram lines.", FACTS, claim_level_scores=True
    )
    assert len(result.claims) == 1
    assert result.support_score == result.claims[0].score


def test_claims_weigh_by_their_content() -> None:
    # A long supported claim and a short filler-like unsupported one: most of the
    # answer's content is supported. A plain mean of the two claims' scores is < 0.5.
    answer = (
        "The city council approved the new transport budget on Monday after a long debate, "
        "and the mayor said it would fund two tram lines. It rained."
    )
    verdicts = [v for v in evaluate(answer, FACTS) if v.required]
    assert len(verdicts) == 2
    plain_mean = sum(v.score or 0.0 for v in verdicts) / 2
    assert plain_mean < 0.6
    assert _support(answer) >= 0.6


def test_fabricated_answer_is_unsupported() -> None:
    answer = (
        "The festival attracted spectacular crowds of enthusiastic visitors. "
        "Organisers celebrated a remarkable international success."
    )
    assert _support(answer) < 0.2


def test_summary_of_the_facts_is_supported() -> None:
    answer = (
        "City council approved transport budget on Monday. "
        "Mayor says budget funds two tram lines and bridge repair."
    )
    assert _support(answer) >= 0.9


def test_missing_rare_words_cost_more_than_missing_common_ones() -> None:
    # Two claims that each miss one word of the facts: a short common one ("big") or a
    # long rare one ("magnificent", a detail the facts do not give). Equal at the claim
    # level (one key each); the answer's coverage weighs the rare one more.
    answer = (
        "The mayor said the budget would fund two big tram lines. "
        "The mayor said the budget would fund two magnificent tram lines."
    )
    common, rare = (v for v in evaluate(answer, FACTS) if v.required)
    assert 0.0 < rare.coverage < common.coverage < 1.0
    assert common.weight == rare.weight


def test_rarity_grows_with_key_length() -> None:
    assert rarity("say") == rarity("#5") == DEFAULT_ANSWER_CONFIG.min_rarity < rarity("held")
    assert rarity("spectacular") > rarity("budget") > rarity("held")


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_answer_calibration_is_monotone_and_maps_the_cut_to_the_threshold(
    a: float, b: float
) -> None:
    assert calibrate_answer(DEFAULT_ANSWER_CONFIG.cut) == pytest.approx(0.6)
    assert calibrate_answer(0.0) == 0.0
    assert calibrate_answer(1.0) == pytest.approx(1.0)
    if a <= b:
        assert calibrate_answer(a) <= calibrate_answer(b)


def test_nothing_to_check_is_none() -> None:
    assert answer_support([]) is None


def test_a_word_in_no_fact_costs_more_than_one_found_elsewhere() -> None:
    # "wooden" is missing from the claim's best sentence either way; when no fact uses
    # it at all, it is a detail the sources do not give and weighs more.
    answer = "The mayor said the budget would fund two wooden tram lines. Work starts in spring."
    elsewhere = [*FACTS, "The old station still has its wooden benches."]
    nowhere = next(v for v in evaluate(answer, FACTS) if v.required)
    found = next(v for v in evaluate(answer, elsewhere) if v.required)
    assert 0.0 < nowhere.coverage < found.coverage < 1.0
    weights = rarity_weights(["wooden", "tram"], absent={"wooden"})
    assert weights["wooden"] == rarity("wooden") * DEFAULT_ANSWER_CONFIG.absent_weight
    assert weights["tram"] == rarity("tram")


def test_a_contradicted_claim_covers_nothing() -> None:
    # A failed comparison ("more than 40" against 35) or a changed status ("has already
    # opened" against "will open") contradicts the facts: the claim's words are all
    # there, but it covers nothing of the answer's content.
    facts = ["The new library will open in May. It has 35 reading rooms on four floors."]
    answer = "The new library has already opened. It has more than 40 reading rooms on four floors."
    status, comparison = (v for v in evaluate(answer, facts) if v.required)
    assert status.coverage < 0.2 and comparison.coverage < 0.2
    assert LocalGrounding().check_sync(answer, facts).support_score < 0.3


@dataclass
class _Verdict:
    required: bool
    score: float | None
    raw_score: float | None
    coverage: float
    weight: float


_unit = st.floats(0.0, 1.0)
_claims = st.lists(st.tuples(_unit, _unit, st.integers(1, 40)), min_size=2, max_size=8)


@given(_claims, st.integers(0, 7), _unit)
def test_answer_score_is_bounded_and_monotone_in_each_claims_support(
    claims: list[tuple[float, float, int]], which: int, more: float
) -> None:
    verdicts = [_Verdict(True, raw, raw, cov, float(n)) for raw, cov, n in claims]
    score = answer_support(verdicts)
    assert score is not None and 0.0 <= score <= 1.0 + 1e-9
    i = which % len(verdicts)
    verdicts[i].coverage = max(verdicts[i].coverage, more)
    verdicts[i].raw_score = max(verdicts[i].raw_score or 0.0, more)
    better = answer_support(verdicts)
    assert better is not None and better >= score - 1e-12
