"""Roles bound to the wrong name, and numbers bound to the wrong word across a year word
(issue 14 §2: "swapped roles pass at 0.96")."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.grounding import roles as roles_module
from streamcite.grounding.checker import LocalGrounding
from streamcite.grounding.facts import Facts
from streamcite.grounding.roles import (
    claim_roles,
    conflicting_roles,
    could_conflict,
    fact_bindings,
    fact_roles,
    other_role,
    role_conflict,
)
from streamcite.grounding.tokens import raw_tokens, token_table

CONTRACT = {
    "en": "The contract was signed by Acme Corp, the buyer, and Globex, the seller, on 12 March 2021.",
    "fr": "Le contrat a été signé par Acme, l'acheteur, et Globex, le vendeur, le 12 mars 2021.",
    "it": "Il contratto è stato firmato da Acme, l'acquirente, e Globex, il venditore, il 12 marzo 2021.",
    "he": "החוזה נחתם על ידי אקמה, הקונה, וגלובקס, המוכר, ב-12 במרץ 2021.",
}

ROLE_CLAIMS = [
    ("en", "Globex was the buyer in the contract.", True),
    ("en", "The buyer was Globex.", True),
    ("en", "Globex was the seller.", False),
    ("en", "Acme Corp was the buyer.", False),
    ("en", "Globex was a company.", False),
    ("fr", "Globex était l'acheteur du contrat.", True),
    ("fr", "Globex était le vendeur du contrat.", False),
    ("it", "Globex era l'acquirente del contratto.", True),
    ("it", "Acme era l'acquirente del contratto.", False),
    ("he", "גלובקס הייתה הקונה בחוזה.", True),
    ("he", "גלובקס הייתה המוכר בחוזה.", False),
]


@pytest.mark.parametrize(("lang", "claim", "conflict"), ROLE_CLAIMS)
def test_role_conflict(lang: str, claim: str, conflict: bool) -> None:
    pairs = claim_roles(raw_tokens(claim), lang)
    assert role_conflict(pairs, raw_tokens(CONTRACT[lang]), lang) is conflict


def test_a_list_without_articles_binds_no_role() -> None:
    assert fact_roles(raw_tokens("We met Acme, Globex, and Initech, in Paris."), "en") == {}


def test_a_role_the_fact_gives_nobody_vetoes_nothing() -> None:
    pairs = claim_roles(raw_tokens("Initech was the buyer."), "en")
    assert pairs == [("initech", "buyer")]
    assert not role_conflict(pairs, raw_tokens(CONTRACT["en"]), "en")


@pytest.mark.parametrize("lang", sorted(CONTRACT))
def test_swapped_roles_are_not_supported_by_the_checker(lang: str) -> None:
    swapped = next(c for la, c, conflict in ROLE_CLAIMS if la == lang and conflict)
    right = next(c for la, c, conflict in ROLE_CLAIMS if la == lang and not conflict)
    grounding = LocalGrounding()
    assert grounding.check_sync(right, [CONTRACT[lang]]).support_score >= 0.6  # type: ignore[operator]
    assert grounding.check_sync(swapped, [CONTRACT[lang]]).support_score < 0.6  # type: ignore[operator]


NOBEL = {
    "en": (
        "Marie Curie won the Nobel Prize in Physics in the year 1903 and the Nobel Prize in "
        "Chemistry in the year 1911.",
        "Marie Curie won the Nobel Prize in Chemistry in the year 1911.",
        "Marie Curie won the Nobel Prize in Physics in the year 1911.",
    ),
    "he": (
        "מארי קירי זכתה בפרס נובל לפיזיקה בשנת 1903 ובפרס נובל לכימיה בשנת 1911.",
        "מארי קירי זכתה בפרס נובל לכימיה בשנת 1911.",
        "מארי קירי זכתה בפרס נובל לפיזיקה בשנת 1911.",
    ),
}


@pytest.mark.parametrize("lang", sorted(NOBEL))
def test_a_year_word_does_not_hide_a_number_bound_to_the_wrong_word(lang: str) -> None:
    fact, right, swapped = NOBEL[lang]
    grounding = LocalGrounding()
    assert grounding.check_sync(right, [fact]).support_score >= 0.6  # type: ignore[operator]
    assert grounding.check_sync(swapped, [fact]).support_score < 0.6  # type: ignore[operator]


@given(st.text(max_size=200), st.text(max_size=200))
def test_roles_never_raise(claim: str, fact: str) -> None:
    for lang in ("en", "fr", "it", "he", "und"):
        role_conflict(claim_roles(raw_tokens(claim), lang), raw_tokens(fact), lang)


# The fast paths of roles.py (memoised folded words, comma and copula positions found in
# C-level passes, a fact's roles read once per check) against the plain per-token loops.
_ROLE_WORDS = [
    "Acme", "Acme,", "Globex", "Globex,", "the", "The", "buyer", "buyer,", "seller.", "was",
    "Was", "est", "était", "l'acheteur,", "l’acheteur", "le", "vendeur", "è", "era", "il",
    "venditore,", "(the", "main", "הייתה", "הקונה,", "וגלובקס,", "המוכר", "בחוזה", "1997,",
    "Corp", "a", "and", "«Acme»,",
]  # fmt: skip
_NAMES = st.sampled_from(["Acme", "Globex", "Initech", "Acme Corp"])
_ROLES = st.sampled_from(["buyer", "seller", "main buyer", "agent"])
role_texts = (
    st.lists(st.sampled_from(_ROLE_WORDS), max_size=30).map(" ".join)
    | st.text(max_size=80)
    | st.tuples(_NAMES, _ROLES).map(lambda t: f"{t[0]} was the {t[1]}.")
    | st.tuples(_NAMES, _ROLES, _NAMES, _ROLES).map(
        lambda t: f"Signed by {t[0]}, the {t[1]}, and {t[2]}, the {t[3]}, in May."
    )
)


def _plain_fact_roles(tokens: list[bytes], lang: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for i in range(len(tokens) - 1):
        if not tokens[i].endswith(b","):
            continue
        name = roles_module._key(tokens[i], lang)
        if not name:
            continue
        role, end = roles_module._role_after(tokens, i + 1, lang)
        if role and (end == len(tokens) or tokens[end - 1].endswith(roles_module._CLOSERS)):
            out.setdefault(name, role)
    return out


def _plain_claim_roles(tokens: list[bytes], lang: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for i, tok in enumerate(tokens):
        if i == 0 or roles_module._fold_word(tok) not in roles_module._COPULAS:
            continue
        name = roles_module._key(tokens[i - 1], lang)
        role, _ = roles_module._role_after(tokens, i + 1, lang)
        if name and role:
            out.append((name, role))
            continue
        if i >= 2 and i + 1 < len(tokens):
            role, end = roles_module._role_after(tokens, i - 2, lang)
            name = roles_module._key(tokens[i + 1], lang)
            if role and end == i and name:
                out.append((name, role))
    out.extend(_plain_fact_roles(tokens, lang).items())
    return out


@settings(max_examples=300, deadline=None)
@given(role_texts, role_texts, st.sampled_from(["en", "fr", "it", "he", "und"]))
def test_fast_role_reading_matches_the_plain_loops(claim: str, fact: str, lang: str) -> None:
    tokens, fact_tokens = raw_tokens(claim), raw_tokens(fact)
    assert roles_module._words(tokens) == [roles_module._fold_word(t) for t in tokens]
    assert claim_roles(tokens, lang) == _plain_claim_roles(tokens, lang)
    assert fact_roles(fact_tokens, lang) == _plain_fact_roles(fact_tokens, lang)
    pairs = _plain_claim_roles(tokens, lang)
    expected = role_conflict(pairs, fact_tokens, lang)
    for packed in (False, True):  # a fact read plain (few facts) or from its codes
        corpus = Facts([fact] * (Facts.FEW + 1 if packed else 1), token_table(lang))
        assert corpus.facts[0].roles() == fact_roles(fact_tokens, lang)
        assert corpus.facts[0].bindings() == fact_bindings(fact_tokens, lang)
        assert conflicting_roles(pairs, corpus.facts[0].roles()) is expected
        if expected:  # the cheap test never rules out a conflict that is there
            assert could_conflict(pairs, corpus.facts[0].keyset)
        if other_role(pairs, corpus.facts[0].bindings(), lang):  # another role, nobody's
            assert could_conflict(pairs, corpus.facts[0].keyset, own_role=True)
