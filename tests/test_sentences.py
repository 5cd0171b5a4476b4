"""Claim splitting for the offline grounding checker: one sentence = one claim."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.grounding import sentences as sentences_module
from streamcite.grounding.sentences import (
    Sentence,
    needs_grounding,
    split_sentences,
    without_markers,
)
from streamcite.grounding.words import fold


def texts(source: str) -> list[str]:
    out = split_sentences(source)
    for s in out:
        assert source[s.start : s.end] == s.text  # offsets always slice the text
    return [s.text for s in out]


def test_google_titanic_answer_offsets() -> None:
    answer = "Titanic was directed by James Cameron. It starred Brad Pitt and Kate Winslet."
    assert split_sentences(answer) == [
        Sentence(0, 38, "Titanic was directed by James Cameron."),
        Sentence(39, 77, "It starred Brad Pitt and Kate Winslet."),
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "Dr. Smith met M. Dupont at 5 p.m. yesterday. He agreed.",
            ["Dr. Smith met M. Dupont at 5 p.m. yesterday.", "He agreed."],
        ),
        (
            "The U.S. Army has 10 divisions. It moved to the U.K. Later it left.",
            ["The U.S. Army has 10 divisions.", "It moved to the U.K. Later it left."],
        ),
        (
            "J. R. R. Tolkien wrote it. Mrs. Dalloway is a novel.",
            ["J. R. R. Tolkien wrote it.", "Mrs. Dalloway is a novel."],
        ),
        (
            "We sell apples, pears, etc. The shop opens at 9. See e.g. the map.",
            ["We sell apples, pears, etc.", "The shop opens at 9.", "See e.g. the map."],
        ),
        (
            "Vedi p. es. il cap. 3 del documento. Il Sig. Rossi e Mons. Bianchi hanno firmato.",
            [
                "Vedi p. es. il cap. 3 del documento.",
                "Il Sig. Rossi e Mons. Bianchi hanno firmato.",
            ],
        ),
        (
            "Le Dott. Verdi cita l'art. 4, p. 12. Fine.",
            ["Le Dott. Verdi cita l'art. 4, p. 12.", "Fine."],
        ),
        (
            "Mme. Martin l'a confirmé, cf. art. 4 du règlement. Voir p. ex. la charte. M. Durand aussi.",
            [
                "Mme. Martin l'a confirmé, cf. art. 4 du règlement.",
                "Voir p. ex. la charte.",
                "M. Durand aussi.",
            ],
        ),
        (
            "The rate is 3.14 per cent, see example.com. Prices rose in Jan. 2024 by 5%.",
            ["The rate is 3.14 per cent, see example.com.", "Prices rose in Jan. 2024 by 5%."],
        ),
        (
            "Wait... it was late. Really?! Yes! Ok… Then it ended.",
            ["Wait... it was late.", "Really?!", "Yes!", "Ok…", "Then it ended."],
        ),
    ],
)
def test_abbreviation_aware_splitting(source: str, expected: list[str]) -> None:
    assert texts(source) == expected


def test_hebrew_sentences_and_markers() -> None:
    answer = "העבודה מרחוק מותרת יומיים בשבוע.[2] המדיניות נכנסה לתוקף ב-2021! האם זה נכון? כן׃ סוף"
    assert texts(answer) == [
        "העבודה מרחוק מותרת יומיים בשבוע.[2]",
        "המדיניות נכנסה לתוקף ב-2021!",
        "האם זה נכון?",
        "כן׃",
        "סוף",
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Cameron directed it.[1] It won.", ["Cameron directed it.[1]", "It won."]),
        ("Cameron directed it [1]. It won [2][3].", ["Cameron directed it [1].", "It won [2][3]."]),
        ("Cameron directed it. [1, 2] It won.", ["Cameron directed it. [1, 2]", "It won."]),
        ('He said "it is done." Then he left.', ['He said "it is done."', "Then he left."]),
        ("**Cameron directed it.** It won.", ["**Cameron directed it.**", "It won."]),
    ],
)
def test_footnotes_and_closers_stay_with_their_sentence(source: str, expected: list[str]) -> None:
    assert texts(source) == expected


def test_offsets_exclude_the_whitespace_between_sentences() -> None:
    source = "  First one.   \n  Second one.\t Third one.  "
    out = split_sentences(source)
    assert [(s.start, s.end) for s in out] == [(2, 12), (18, 29), (31, 41)]
    for s in out:
        assert not s.text[0].isspace() and not s.text[-1].isspace()


def test_lists_headings_and_paragraphs() -> None:
    source = (
        "## Remote work\n"
        "Here are the rules:\n\n"
        "- Two days per week.\n"
        "- Manager approval\n  is required.\n"
        "1. Numbered item. Second sentence.\n"
        "| a | b |\n"
        "Para line one\nwrapped line two."
    )
    out = split_sentences(source)
    assert [(s.text, s.heading) for s in out] == [
        ("Remote work", True),
        ("Here are the rules:", False),
        ("Two days per week.", False),
        ("Manager approval\n  is required.", False),
        ("Numbered item.", False),
        ("Second sentence.", False),
        ("| a | b |", True),
        ("Para line one\nwrapped line two.", False),
    ]
    # The list marker is not part of the claim.
    item = out[2]
    assert source[item.start - 2 : item.start] == "- "


def test_non_ascii_text_keeps_character_offsets() -> None:
    source = "Il caffè è buono 😀. Ça va très bien! 🎉 Fin."
    out = split_sentences(source)
    assert [s.text for s in out] == ["Il caffè è buono 😀.", "Ça va très bien!", "🎉 Fin."]
    assert out[1].start == source.index("Ça")


def test_empty_and_blank() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\t ") == []
    assert texts("no terminal punctuation") == ["no terminal punctuation"]


_WORDS = st.sampled_from(
    [
        "titanic",
        "cameron",
        "directed",
        "film",
        "lavoro",
        "télétravail",
        "מדיניות",
        "עבודה",
        "2021",
        "😀",
    ]
)


@st.composite
def _sentence(draw: st.DrawFn) -> str:
    words = draw(st.lists(_WORDS, min_size=1, max_size=8))
    first = words[0]
    words[0] = first[0].upper() + first[1:]
    return " ".join(words) + draw(st.sampled_from([".", "!", "?", ".[1]", " [2].", "!\u201d"]))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_sentence(), min_size=1, max_size=8),
    st.lists(st.sampled_from([" ", "  ", "\n", "\n\n", " \t "]), min_size=8, max_size=8),
)
def test_joined_sentences_split_back_exactly(sentences: list[str], gaps: list[str]) -> None:
    source = sentences[0]
    for sentence, gap in zip(sentences[1:], gaps, strict=False):
        source += gap + sentence
    out = split_sentences(source)
    assert [s.text for s in out] == sentences
    for s in out:
        assert source[s.start : s.end] == s.text
    for a, b in itertools.pairwise(out):
        assert source[a.end : b.start].isspace()


@pytest.mark.parametrize(
    "sentence",
    [
        "Is there anything else I can help with?",
        "Quale documento lo dice?",
        "Pourquoi ?",
        "האם יש לך שאלות נוספות?",
        "Sure!",
        "Of course.",
        "Certo!",
        "Bien sûr.",
        "בשמחה!",
        "I hope this helps.",
        "Let me know if you need more details.",
        "Spero che questo ti sia utile!",
        "Fammi sapere se hai bisogno di altro.",
        "N'hésitez pas à me contacter.",
        "J'espère que cela vous aide.",
        "אל תהסס לפנות אליי.",
        "Here are the main points:",
        "I found no source in the documents that answers this question.",
        "---",
        "😀",
        "[1]",
    ],
)
def test_questions_and_filler_need_no_check(sentence: str) -> None:
    assert needs_grounding(sentence) is False


@pytest.mark.parametrize(
    "sentence",
    [
        "Titanic was directed by James Cameron.",
        "Il telelavoro è consentito per due giorni alla settimana [1].",
        "Le télétravail est autorisé deux jours par semaine.",
        "העבודה מרחוק מותרת יומיים בשבוע.",
        "Sure enough, the policy changed in 2021.",
        "Certo, il regolamento è cambiato nel 2021.",
    ],
)
def test_factual_sentences_need_a_check(sentence: str) -> None:
    assert needs_grounding(sentence) is True


def test_without_markers() -> None:
    assert without_markers("Cameron [1]. Won [2, 3].[4]") == "Cameron. Won."


def _plain_needs_grounding(sentence: str) -> bool:
    """needs_grounding as written before its fast paths (every filler opening compared,
    every word listed, the question regex always run)."""
    text = without_markers(sentence).strip().strip("*_`> ")
    if not sentences_module._HAS_WORD_RE.search(text):
        return False
    if sentences_module._QUESTION_END_RE.search(text):
        return False
    if text.rstrip("*_ ").endswith((":", "：")):
        return False
    folded = fold(text).lstrip("\"'«“([ ")
    if folded.startswith(sentences_module._FILLER_START):
        return False
    words = sentences_module._WORD_RE.findall(folded)
    return not all(w in sentences_module._PLEASANTRY_WORDS for w in words)


_OPENINGS = [
    "Sure", "sure!", "Thanks", "I hope this helps", "Hope that helps", "N'hésitez pas",
    "Fammi sapere", "אל תהסס", "Great question", "Titanic", "The film", "«Thanks", "(sure",
    "Sì", "Bien sûr", "ok", "Oui", "Let me know", "*Great", "> Sure", "1997", "", "[1]",
]  # fmt: skip
_TAILS = ["", ".", "!", "?", " ?", "?”", ":", " thank you.", " it was directed by Cameron.",
          " you're welcome!", " ok ok", "？", "؟", " merci [2].", " if you need more."]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    st.tuples(st.sampled_from(_OPENINGS), st.sampled_from(_TAILS)).map("".join)
    | st.text(max_size=40)
)
def test_needs_grounding_fast_paths_match_the_plain_rules(sentence: str) -> None:
    assert needs_grounding(sentence) is _plain_needs_grounding(sentence)
