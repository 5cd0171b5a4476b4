"""Rules of the offline checker that lexical overlap alone cannot provide (issue 14 §2)."""

from __future__ import annotations

import pytest

from streamcite.grounding.checker import LocalGrounding
from streamcite.grounding.sentences import split_sentences

WESTLIFE = (
    "Westlife: According to the BPI, Westlife has been certified for 13 million albums and "
    "9.8 million singles, with a total of more than 24 million combined sales in the UK."
)


def _score(answer: str, facts: list[str]) -> float:
    result = LocalGrounding().check_sync(answer, facts)
    assert result.support_score is not None
    return result.support_score


@pytest.mark.parametrize(
    ("claim", "supported"),
    [
        ("Westlife made more than 20 million sales in the UK.", True),
        ("Westlife made under 23.5 million sales in the UK.", False),
        ("Westlife made at least 22 million sales in the UK.", True),
    ],
)
def test_comparators_are_read_against_the_facts_value(claim: str, supported: bool) -> None:
    assert (_score(claim, [WESTLIFE]) >= 0.6) is supported


def test_a_changed_event_status_is_not_supported() -> None:
    fact = "The new library will open in September; construction started in 2022."
    assert _score("The new library will open in September.", [fact]) >= 0.6
    assert _score("The new library has already opened.", [fact]) < 0.6


def test_a_number_bound_to_the_wrong_word_is_not_supported() -> None:
    fact = "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911."
    assert _score("Marie Curie won the Nobel Prize in Chemistry in 1911.", [fact]) >= 0.6
    assert _score("Marie Curie won the Nobel Prize in Physics in 1911.", [fact]) < 0.6


def test_a_name_found_in_no_fact_vetoes_the_claim() -> None:
    fact = "Prithviraj Kapoor as Emperor Akbar, Mason Plumlee as Salim, Madhubala as Anarkali."
    assert _score("Who played Salim in the movie: Mason Plumlee.", [fact]) >= 0.6
    assert _score("Who played Salim in the movie: Dilip Kumar.", [fact]) < 0.6


def test_italian_number_words_and_a_negation_in_another_clause() -> None:
    fact = "Le ferie annuali sono di cinque settimane; i giorni non goduti scadono il 31 marzo."
    assert _score("Le ferie annuali sono di cinque settimane.", [fact]) >= 0.6
    assert _score("Le ferie annuali sono di 5 settimane.", [fact]) >= 0.6
    assert _score("Le ferie annuali sono di quattro settimane.", [fact]) < 0.6


def test_a_table_row_with_a_wrong_number_is_checked() -> None:
    fact = "Meals are reimbursed up to 25 euros per day."
    answer = "| Item | Amount |\n|---|---|\n| Meals | 40 euros |"
    result = LocalGrounding().check_sync(answer, [fact])
    assert [c.grounding_check_required for c in result.claims] == [False, False, True]
    assert result.support_score is not None and result.support_score < 0.6
    assert result.unsupported_claims == 1


def test_a_superscript_marker_ends_a_claim() -> None:
    text = "You get three days a week.¹ Badges are required.²"
    assert [s.text for s in split_sentences(text)] == [
        "You get three days a week.¹",
        "Badges are required.²",
    ]


def test_an_inline_numbered_list_yields_no_claim_made_of_its_number() -> None:
    text = "Steps: 1. Open the app. 2. Click save."
    assert [s.text for s in split_sentences(text)] == [
        "Steps:",
        "1. Open the app.",
        "2. Click save.",
    ]
