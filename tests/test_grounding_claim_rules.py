"""What a claim is made of, and who did what to whom (issue 14 §2, round 4): superscript
footnote markers and list enumerators are not numbers of the claim; a claim whose two
sides are swapped around the fact's verb is not supported."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.grounding.checker import LocalGrounding
from streamcite.grounding.claims import without_enumerators
from streamcite.grounding.roles import claim_clauses
from streamcite.grounding.sentences import needs_grounding, split_sentences, without_markers
from streamcite.grounding.tokens import analyze, raw_tokens

POLICY = [
    "Parental leave lasts sixteen weeks for every employee.",
    "Night nurses rotate to day shifts every month.",
]


def _check(answer: str, facts: list[str]) -> tuple[float, list[float]]:
    result = LocalGrounding().check_sync(answer, facts, claim_level_scores=True)
    claims = [c.score or 0.0 for c in result.claims if c.grounding_check_required]
    return result.support_score, claims


# ------------------------------------------------------------------ superscripts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("lasts sixteen weeks.³ Nurses", "lasts sixteen weeks. Nurses"),
        ("every month⁴, and", "every month, and"),
        ("every month.⁽¹²⁾", "every month."),
        ("every month.^7 Then", "every month. Then"),
        ("every month[^note].", "every month."),
        ("every month.¹,² Then", "every month. Then"),
        ("נוהל החופשה.³ אחיות", "נוהל החופשה. אחיות"),
        # exponents and units stay numbers of the claim
        ("a flat of 60 m² and 10³ rooms", "a flat of 60 m² and 10³ rooms"),
        ("x^2 grows as 10^6", "x^2 grows as 10^6"),
    ],
)
def test_superscript_markers_are_not_words_of_the_claim(text: str, expected: str) -> None:
    assert without_markers(text) == expected


@pytest.mark.parametrize("marker", ["³", "⁽³⁾", "^3", "[^3]"])
def test_supported_claims_with_superscript_markers_are_supported(marker: str) -> None:
    answer = (
        f"Parental leave lasts sixteen weeks.{marker} "
        f"Night nurses rotate to day shifts every month.{marker}"
    )
    support, claims = _check(answer, POLICY)
    assert len(claims) == 2
    assert min(claims) >= 0.9
    assert support >= 0.9


def test_a_question_with_a_superscript_marker_needs_no_check() -> None:
    assert not needs_grounding("Is the parking free for visitors?²")
    assert not needs_grounding("Is the parking free for visitors?^2")


@settings(max_examples=25, deadline=None)
@given(
    numbers=st.lists(st.integers(1, 99), min_size=2, max_size=2),
    style=st.sampled_from(["unicode", "parenthesised", "caret"]),
)
def test_a_superscript_marker_scores_as_a_bracket_marker(numbers: list[int], style: str) -> None:
    sup = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")

    def mark(n: int) -> str:
        if style == "unicode":
            return str(n).translate(sup)
        if style == "parenthesised":
            return f"⁽{str(n).translate(sup)}⁾"
        return f"^{n}"

    a, b = numbers
    sentences = ["Parental leave lasts sixteen weeks.", "Night nurses rotate every month."]
    bracketed = f"{sentences[0]}[{a}] {sentences[1]}[{b}]"
    superscripted = f"{sentences[0]}{mark(a)} {sentences[1]}{mark(b)}"
    assert len(split_sentences(superscripted)) == 2
    assert _check(superscripted, POLICY) == _check(bracketed, POLICY)


def test_a_unit_exponent_is_still_a_number_of_the_claim() -> None:
    fact = ["The meeting room measures 45 m² and seats twelve people."]
    assert _check("The meeting room measures 45 m².", fact)[0] >= 0.6
    assert _check("The meeting room measures 60 m².", fact)[0] < 0.6


# ------------------------------------------------------------------ enumerators

CHECKLIST = ["Before leaving, lock the server room and sign the visitor log."]


@pytest.mark.parametrize(
    "answer",
    [
        "Checklist: 1. Lock the server room. 2. Sign the visitor log.",
        "Checklist: 1) Lock the server room. 2) Sign the visitor log.",
        "Checklist: (a) Lock the server room. (b) Sign the visitor log.",
        "Checklist: i. Lock the server room. ii. Sign the visitor log.",
        "Checklist: 1) lock the server room, 2) sign the visitor log.",
    ],
)
def test_an_inline_list_is_checked_without_its_enumerators(answer: str) -> None:
    _, claims = _check(answer, CHECKLIST)
    assert claims and min(claims) >= 0.6


def test_an_items_own_number_is_still_checked() -> None:
    fact = ["Expense reports are due within 10 days; receipts are scanned."]
    good = "Rules: 1. Submit expense reports within 10 days. 2. Scan the receipts."
    bad = "Rules: 1. Submit expense reports within 30 days. 2. Scan the receipts."
    assert min(_check(good, fact)[1]) >= 0.6
    assert _check(bad, fact)[1][0] < 0.6


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        ("2. Sign the visitor log.", "Sign the visitor log."),
        ("(b) Sign the visitor log.", "Sign the visitor log."),
        ("iv. Sign the visitor log.", "Sign the visitor log."),
        ("Steps: 1) lock the room, 2) sign the log.", "Steps: lock the room, sign the log."),
        ("1. Lock the room, 2.", "Lock the room,"),
        # not enumerators: a count after a comma, an initial, a decimal, a lone "5)"
        ("The twins are aged 7, 5.", "The twins are aged 7, 5."),
        ("A. Lovelace wrote the first program.", "A. Lovelace wrote the first program."),
        ("Growth was 3.5 percent.", "Growth was 3.5 percent."),
        ("The fee rose, 5) and fell.", "The fee rose, 5) and fell."),
    ],
)
def test_without_enumerators(claim: str, expected: str) -> None:
    assert without_enumerators(claim) == expected


# ------------------------------------------------------------------ word order

TAKEOVER = "Northwind Traders acquired Contoso in 2016 after a long bidding war."


@pytest.mark.parametrize(
    ("claim", "supported"),
    [
        ("Northwind Traders acquired Contoso.", True),
        ("Contoso acquired Northwind Traders.", False),
        # the passive says the same thing the other way round
        ("Contoso was acquired by Northwind Traders.", True),
        ("Northwind Traders was acquired by Contoso.", False),
        ("Contoso has acquired Northwind Traders.", False),
    ],
)
def test_swapped_sides_of_the_verb(claim: str, supported: bool) -> None:
    assert (_check(claim, [TAKEOVER])[0] >= 0.6) is supported


def test_a_passive_fact_against_an_active_claim() -> None:
    fact = ["Contoso was acquired by Northwind Traders in 2016."]
    assert _check("Northwind Traders acquired Contoso.", fact)[0] >= 0.6
    assert _check("Contoso acquired Northwind Traders.", fact)[0] < 0.6


@pytest.mark.parametrize(
    ("claim", "fact", "supported"),
    [
        ("Fabrikam a racheté Tailspin.", "Tailspin a racheté Fabrikam en 2016.", False),
        ("Tailspin a racheté Fabrikam.", "Tailspin a racheté Fabrikam en 2016.", True),
        ("Fabrikam ha acquistato Tailspin.", "Tailspin ha acquistato Fabrikam nel 2016.", False),
        ("Fabrikam è stata acquistata da Tailspin.", "Tailspin ha acquistato Fabrikam.", True),
        ("Tailspin è stata acquistata da Fabrikam.", "Tailspin ha acquistato Fabrikam.", False),
        ("פבריקם רכשה את טיילספין.", "טיילספין רכשה את פבריקם ב-2016.", False),
        ("טיילספין רכשה את פבריקם.", "טיילספין רכשה את פבריקם ב-2016.", True),
    ],
)
def test_swapped_sides_in_french_italian_hebrew(claim: str, fact: str, supported: bool) -> None:
    assert (_check(claim, [fact])[0] >= 0.6) is supported


@pytest.mark.parametrize(
    ("claim", "fact"),
    [
        # symmetric verbs and "with": the swap says the same
        ("Contoso merged with Northwind Traders.", "Northwind Traders merged with Contoso."),
        ("Portugal borders Spain.", "Spain borders Portugal to the west."),
        ("Arsenal versus Chelsea ended in a draw.", "Chelsea versus Arsenal ended in a draw."),
        # the fact says it both ways, in two sentences
        (
            "Contoso acquired Northwind Traders.",
            "Northwind Traders acquired Contoso in 1999. Contoso acquired Northwind Traders in 2016.",
        ),
        # a relative clause and an apposition are not read as a clause
        ("Contoso acquired Northwind Traders.", "Northwind Traders, which Contoso acquired, grew."),
        (
            "Contoso acquired Northwind Traders.",
            "Northwind Traders was acquired in 2016 by Contoso.",
        ),
    ],
)
def test_no_veto_where_the_order_does_not_swap_the_fact(claim: str, fact: str) -> None:
    assert _check(claim, [fact])[0] >= 0.6


@pytest.mark.parametrize(
    ("lang", "claim", "expected"),
    [
        ("en", "Contoso acquired Northwind Traders.", ("acquir", {"contoso"}, {"northwind", "trader"})),
        ("en", "Northwind Traders was acquired by Contoso.", ("acquir", {"contoso"}, {"northwind", "trader"})),
        ("en", "Yesterday Contoso then acquired Northwind.", None),  # an adverb between
        ("en", "Contoso acquired 40 percent of Northwind.", None),  # a number, not a phrase
        ("en", "Northwind was acquired in 2016.", None),  # a passive without its agent
    ],
)  # fmt: skip
def test_claim_clauses(
    lang: str, claim: str, expected: tuple[str, set[str], set[str]] | None
) -> None:
    feats = analyze(claim, lang, salience=True)
    names = {k for k in feats.salient if k[0] != "#"}
    clauses = claim_clauses(raw_tokens(claim), names, lang)
    if expected is None:
        assert clauses == []
    else:
        verb, agent, patient = expected
        assert [(c[0][: len(verb)], set(c[1]), set(c[2])) for c in clauses] == [
            (verb, agent, patient)
        ]


# -- review findings: numbers that look like enumerators, and a linear marker pattern ----


@pytest.mark.parametrize(
    ("claim", "fact"),
    [
        ("Chelsea won the final 2:1.", "Chelsea won the final 2:0."),
        ("The ratio of pupils to teachers is 20:1.", "The ratio of pupils to teachers is 20:3."),
        ("The final score was: 1.", "The final score was: 3."),
    ],
)
def test_a_number_after_a_colon_is_not_an_enumerator(claim: str, fact: str) -> None:
    # "2:1." is a score and "was: 1." the claim's number: both stay numbers of the claim
    # (read as enumerators, they were cut and the changed number scored 0.99).
    assert without_enumerators(claim) == claim
    support, claims = _check(claim, [fact])
    assert support < 0.6 and claims and max(claims) < 0.6


def test_an_enumerator_at_the_end_of_the_text_opens_no_list() -> None:
    # "… is: b." ends the answer: no list item follows, so no sentence ends at the colon.
    text = "The correct option is: b."
    assert [s.text for s in split_sentences(text)] == [text]


@pytest.mark.timeout(30)
def test_superscript_markers_take_linear_time_on_long_blank_runs() -> None:
    # The Markdown marker's leading blanks were matched from every blank of a run: a
    # 63,000-character answer took 9 s (quadratic). At this size quadratic is minutes.
    text = "x^" + " " * 400_000 + "[^1]"
    assert without_markers(text) == "x^"
    assert without_markers("Remote work" + " " * 300_000 + "\u00e9") == (
        "Remote work" + " " * 300_000 + "\u00e9"
    )
