"""The per-word rules of the offline checker (``streamcite.grounding.words`` and the
token keys of ``grounding.tokens``)."""

from __future__ import annotations

import pytest

from streamcite.grounding import tokens as lexical
from streamcite.grounding.tokens import _analyse as word_key
from streamcite.grounding.tokens import _unquote as split_clitics
from streamcite.grounding.words import detect_language, fold, stem


@pytest.mark.parametrize(
    ("word", "lang", "expected"),
    [
        ("didn't", "en", ("", True)),
        ("it's", "en", ("it", False)),
        ("l'autorita", "it", ("autorita", False)),
        ("n'est", "fr", ("est", True)),
        ('צה"ל', "he", ("צהל", False)),
        ("plain", "en", ("plain", False)),
    ],
)
def test_split_clitics(word: str, lang: str, expected: tuple[str, bool]) -> None:
    assert split_clitics(fold(word), lang) == expected


@pytest.mark.parametrize(
    ("word", "lang", "expected"),
    [
        ("eleven", "en", ("#11", False)),
        ("janvier", "fr", ("#m1", False)),
        ("the", "en", ("", False)),
        ("never", "en", ("", True)),
        ("ולא", "he", ("", True)),
        ("employees", "en", (stem("employees", "en"), False)),
        ("b2b", "en", ("#b2b", False)),
    ],
)
def test_word_key(word: str, lang: str, expected: tuple[str, bool]) -> None:
    assert word_key(fold(word), lang) == expected


def test_token_keys_of_a_text() -> None:
    assert detect_language("Les salariés ont droit à des congés") == "fr"
    table = lexical.token_table("en")
    tokens = lexical.raw_tokens("Eleven employees didn't")
    assert table.keys(tokens) == ["#11", stem("employees", "en"), ""]
    assert table.negated(tokens)
