"""The streaming sentence splitter gives, piece by piece, what the checker's splitter
gives on the whole text (offsets, texts, headings), each sentence once it is complete."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamcite.grounding.sentence_stream import SentenceStream
from streamcite.grounding.sentences import split_sentences

# Pieces that exercise every rule of the splitter: terminators, decimals, titles,
# initials, acronyms, footnote markers (split too), superscripts, list items,
# headings, table rows, CJK and Hebrew punctuation, astral characters, quotes.
FRAGMENTS = [
    "Paris", " is", " in", " France", ".", " ", "It", " has", " 2", ".", "1", " million",
    "!", "?", "\n", "\n\n", "- ", "1. ", "# ", "| a |", "[1]", " [", "1", "]", "[^2]", "¹",
    "Dr", ". Smith", "e.g.", " the", "U.S.", " Army", "。", "好", "׃", "שלום", "…", "\"",
    "» ", "etc.", " Then", "Steps:", " a)", " ii.", " Sign", "p.", " 12", "😀", "é", ":",
    "J.", " R.", " Tolkien", "3.14", "l'art.", " 4", "?!", "”", "(", ")", "[1, 2]", "\t",
]  # fmt: skip


def _pieces(text: str, cuts: list[int]) -> list[str]:
    out, prev = [], 0
    for c in [*sorted(cuts), len(text)]:
        out.append(text[prev:c])
        prev = c
    return out


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60), st.data())
def test_streamed_sentences_are_the_whole_texts_sentences(
    parts: list[str], data: st.DataObject
) -> None:
    text = "".join(parts)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=20))
    stream = SentenceStream()
    got = []
    for piece in _pieces(text, cuts):
        got += stream.feed(piece)
    got += stream.close()
    want = split_sentences(text)
    assert [(g.start, g.end, g.text, g.heading) for g in got] == [
        (w.start, w.end, w.text, w.heading) for w in want
    ]
    for g in got:
        assert g.text == text[g.start : g.end]
        assert (g.start_utf16, g.end_utf16) == (_utf16(text[: g.start]), _utf16(text[: g.end]))


def test_a_sentence_is_returned_once_the_next_one_starts() -> None:
    s = SentenceStream()
    assert s.feed("Titanic was directed by James Cameron") == []
    assert s.feed(".") == []  # the end may still move ("Cameron.¹", "Cameron. [1]")
    assert s.feed(" ") == []
    [first] = s.feed("It")
    assert (first.start, first.end, first.text) == (0, 38, "Titanic was directed by James Cameron.")
    assert [x.text for x in s.close()] == ["It"]


def test_a_marker_after_a_space_stays_with_its_sentence() -> None:
    s = SentenceStream()
    out = []
    for piece in ["It sank in 1912.", " [", "1", "]", " Then", " more."]:
        out += s.feed(piece)
    assert [x.text for x in out] == ["It sank in 1912. [1]"]


def test_decimals_titles_and_lower_case_continuations_do_not_end_a_sentence() -> None:
    s = SentenceStream()
    out = []
    for piece in [
        "It costs 3",
        ".",
        "5 euros, says Dr",
        ". Smith",
        ", e.g",
        ". the",
        " fee. ",
        "Next",
    ]:
        out += s.feed(piece)
    assert [x.text for x in out] == ["It costs 3.5 euros, says Dr. Smith, e.g. the fee."]


def test_cjk_and_hebrew_punctuation() -> None:
    s = SentenceStream()
    out = s.feed("巴黎是法国的首都。") + s.feed("它很大。") + s.feed("שלום׃ עולם")
    out += s.close()
    assert [x.text for x in out] == ["巴黎是法国的首都。", "它很大。", "שלום׃", "עולם"]


def test_astral_characters_shift_the_utf16_offsets() -> None:
    s = SentenceStream()
    out = s.feed("Fun 😀 fact. ") + s.feed("Next one.")
    out += s.close()
    assert [(x.start, x.start_utf16) for x in out] == [(0, 0), (12, 13)]
    assert [(x.end, x.end_utf16) for x in out] == [(11, 12), (21, 22)]


def test_a_sentence_without_end_beyond_the_bound_waits_for_close() -> None:
    s = SentenceStream(max_open=100)
    text = "word. " + "3.1 " * 60 + "end. Next"
    out = []
    for i in range(0, len(text), 7):
        out += s.feed(text[i : i + 7])
    assert s.overflowed
    out += s.close()
    assert [x.text for x in out] == [x.text for x in split_sentences(text)]


def test_lines_already_returned_are_dropped() -> None:
    s = SentenceStream()
    for i in range(200):
        s.feed(f"Line {i} is here.\n")
    assert s.text_length == sum(len(f"Line {i} is here.\n") for i in range(200))
    assert len(s._open) < 40  # only the open line is kept


def test_a_long_paragraph_is_read_once_not_once_per_sentence(monkeypatch: Any) -> None:
    import streamcite.grounding.sentence_stream as mod

    seen: list[int] = []
    real = mod.split_sentences

    def counting(text: str) -> Any:
        seen.append(len(text))
        return real(text)

    monkeypatch.setattr(mod, "split_sentences", counting)
    para = " ".join(f"Sentence {i} says the value is {i}.{i} percent [1]." for i in range(300))
    s = SentenceStream()
    out = []
    for i, word in enumerate(para.split(" ")):
        out += s.feed(word if i == 0 else " " + word)
    out += s.close()
    assert len(out) == 300
    # Each split reads the open sentence or two, never the whole paragraph so far.
    assert max(seen) < 200 and sum(seen) < 60 * len(para)
