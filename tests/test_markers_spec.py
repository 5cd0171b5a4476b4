"""Live footnote detection and marker display modes through iter_events (spec-driven).

Expected refs and display text come from a reference detector written from issue 2's
rules (tests/_streams.expected_refs / strip_markers / render_markers): a marker is ``[n]``,
``[n, m]`` or ``[n][m]`` with one-based numbers, a ``]`` followed by ``(`` is a markdown
link, and ``[a]``, ``[]``, ``[0]`` and an unfinished ``[1`` are not markers.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    import _streams as S
except ImportError:  # tests/ imported as a package
    from tests import _streams as S

from streamcite import iter_events
from streamcite.core import markers
from streamcite.events import CitationRefEvent, DoneEvent, FinishEvent, TokenEvent
from streamcite.models import CitationRef


def stream_of(deltas: Sequence[str], *, citations: bool = True, index: int = 0) -> bytes:
    """A Magisterium-style stream whose choice ``index`` carries the given deltas."""
    out = [S.frame(S.chunk(role="assistant", content="", index=index))]
    out += [S.frame(S.chunk(d, index=index)) for d in deltas]
    extra = {"citations": S.MAGISTERIUM_CITATIONS} if citations else None
    out.append(S.frame(S.chunk(index=index, finish_reason="stop", extra=extra)))
    out.append(S.done_frame())
    return b"".join(out)


def run(deltas: Sequence[str], mode: Any = "keep", **kw: Any) -> list[Any]:
    """Events for the deltas; reading the bytes whole, per SSE block or per byte must agree."""
    raw = stream_of(deltas, **kw)
    results = [list(iter_events(f, marker_mode=mode)) for f in S.read_patterns(raw).values()]
    for other in results[1:]:
        assert S.normalise(other) == S.normalise(results[0])
    return results[0]


def refs(events: list[Any], index: int = 0) -> list[tuple[int, int]]:
    return [
        (r.number, r.offset) for r in events if isinstance(r, CitationRefEvent) and r.index == index
    ]


def tokens(events: list[Any], index: int = 0) -> list[TokenEvent]:
    return [e for e in events if isinstance(e, TokenEvent) and e.index == index]


# ------------------------------------------------------------------------------------------
# What is and is not a marker
# ------------------------------------------------------------------------------------------

CASES: list[tuple[list[str], list[tuple[int, int]]]] = [
    (["See [1]."], [(1, 4)]),
    (["See [", "1", "]", "."], [(1, 4)]),
    (["See [1", "]"], [(1, 4)]),
    (["See ", "[1]"], [(1, 4)]),  # marker at the very end of the text
    (["[1, 2] x"], [(1, 0), (2, 0)]),
    (["[1", ",", " ", "2", "]", " x"], [(1, 0), (2, 0)]),
    (["[1][2]"], [(1, 0), (2, 3)]),
    (["[1]", "[2]"], [(1, 0), (2, 3)]),
    (["[", "1", "]", "[", "2", "]", "."], [(1, 0), (2, 3)]),
    (["text[12] more"], [(12, 4)]),
    (["[1] [2]"], [(1, 0), (2, 4)]),
    (["[1]\n[2]\n"], [(1, 0), (2, 4)]),
    (["[[1]]"], [(1, 1)]),
    (["[a] [] [0] [1"], []),
    (["[a]"], []),
    (["[]"], []),
    (["[0]"], []),
    (["[1"], []),
    (["[1,"], []),
    (["[1, 2"], []),
    (["x [1a] y"], []),
    (["[1](http://example.com) y"], []),
    (["[1]", "(http://example.com)"], []),
    (["[1]", "(", "http://x)"], []),
    (["[1, 2](u)"], []),
    (["[1][2](u)"], [(1, 0)]),
    (["[0][1]"], [(1, 3)]),
    (["😀 [3]"], [(3, 2)]),  # code points: the emoji is one character
    (["é", "[12]"], [(12, 1)]),
    (["信仰 [1]", " 😀😀 [2]"], [(1, 3), (2, 10)]),
]


@pytest.mark.parametrize(("deltas", "expected"), CASES)
def test_markers(deltas: list[str], expected: list[tuple[int, int]]) -> None:
    events = run(deltas)
    assert refs(events) == expected
    # the reference detector agrees (checks the oracle itself)
    text = "".join(deltas)
    assert [(r.number, r.offset) for r in S.expected_refs(text)] == expected
    for r in events:
        if isinstance(r, CitationRefEvent):
            assert r.document_index == r.number - 1
    ans = events[-1].answer
    assert [(r.number, r.offset) for r in ans.citation_refs if r.index == 0] == expected
    assert all(isinstance(r, CitationRef) for r in ans.citation_refs)


# ------------------------------------------------------------------------------------------
# Timing of citation_ref events
# ------------------------------------------------------------------------------------------


def _positions(events: list[Any]) -> tuple[list[int], list[int]]:
    tok = [i for i, e in enumerate(events) if isinstance(e, TokenEvent)]
    ref = [i for i, e in enumerate(events) if isinstance(e, CitationRefEvent)]
    return tok, ref


def test_ref_is_emitted_right_after_the_token_that_confirms_it() -> None:
    events = run(["See [", "1", "]", " and", " more"])
    tok, ref = _positions(events)
    assert len(ref) == 1
    # "]" alone cannot confirm (a "(" could follow); " and" confirms it.
    assert tok[3] < ref[0] < tok[4]


def test_ref_with_following_char_in_same_token_comes_right_after_it() -> None:
    events = run(["See [1] a", "nd", " more"])
    tok, ref = _positions(events)
    assert tok[0] < ref[0] < tok[1]


def test_ref_at_end_of_text_is_emitted_before_done() -> None:
    events = run(["See [1]"])
    _tok, ref = _positions(events)
    assert len(ref) == 1
    assert isinstance(events[-1], DoneEvent)
    assert ref[0] < len(events) - 1


def test_unfinished_marker_at_end_gives_no_ref_and_done_is_last() -> None:
    events = run(["See [1"])
    assert refs(events) == []
    assert isinstance(events[-1], DoneEvent)


# ------------------------------------------------------------------------------------------
# Per-choice refs
# ------------------------------------------------------------------------------------------


def test_refs_are_per_choice_with_offsets_in_each_choice_text() -> None:
    stream = b"".join(
        [
            S.frame(S.chunk("Zero [", index=0)),
            S.frame(S.chunk("Uno lungo [", index=1)),
            S.frame(S.chunk("2", index=0)),
            S.frame(S.chunk("1] x", index=1)),
            S.frame(S.chunk("] y", index=0)),
            S.frame(S.chunk(index=0, finish_reason="stop")),
            S.frame(S.chunk(index=1, finish_reason="stop")),
            S.done_frame(),
        ]
    )
    events = list(iter_events([stream]))
    assert refs(events, 0) == [(2, 5)]
    assert refs(events, 1) == [(1, 10)]
    ans = events[-1].answer
    assert ans.text == "Zero [2] y"
    assert [(r.number, r.offset) for r in ans.citation_refs if r.index == 0] == [(2, 5)]


# ------------------------------------------------------------------------------------------
# Display modes
# ------------------------------------------------------------------------------------------


def test_keep_mode_display_is_text() -> None:
    deltas = ["Testo [", "1", "] e [2, 3]", " fine [4"]
    events = run(deltas)
    assert [(t.text, t.display) for t in tokens(events)] == [(d, d) for d in deltas]
    ans = events[-1].answer
    assert ans.display_text == ans.text == "".join(deltas)


def test_strip_mode_removes_markers_and_keeps_raw_text() -> None:
    deltas = ["Testo [", "1", "] e [2, 3]", " [4][5].", " Link [6](http://x)", " fine [7"]
    events = run(deltas, "strip")
    toks = tokens(events)
    assert [t.text for t in toks if t.text] == deltas  # text is raw, always
    ans = events[-1].answer
    assert ans.text == "".join(deltas)
    assert ans.display_text == "Testo e. Link [6](http://x) fine [7"
    assert "".join(t.display for t in toks) == ans.display_text
    assert refs(events) == [(1, 6), (2, 12), (3, 12), (4, 19), (5, 22)]


def test_strip_mode_holds_back_only_a_possible_marker() -> None:
    events = run(["Hello [", "1", "]", " world [x", "]"], "strip")
    disp = [t.display for t in tokens(events)]
    assert disp[0] == "Hello"  # " [" held back: it may start a marker (spaces go with it)
    assert disp[1] == ""  # "[1" still may be a marker
    # "[1]" complete; it is a marker unless "(" follows, so it is still held here
    assert disp[2] == ""
    # " " confirms (and strips) the marker; "[x" can no longer be one, so it is shown.
    assert disp[3] == " world [x"
    assert "".join(disp) == "Hello world [x]"


def test_strip_mode_releases_a_non_marker_as_soon_as_it_cannot_be_one() -> None:
    events = run(["a [", "b", "c"], "strip")
    disp = [t.display for t in tokens(events)]
    assert disp == ["a", " [b", "c"]


def test_strip_mode_releases_markdown_link_on_paren() -> None:
    events = run(["see [1]", "(http://x)", " ok"], "strip")
    disp = [t.display for t in tokens(events)]
    assert disp[0] == "see"
    assert disp[1] == " [1](http://x)"
    assert "".join(disp) == "see [1](http://x) ok"
    assert refs(events) == []


def test_strip_mode_releases_partial_marker_at_end() -> None:
    events = run(["fine [1", ", 2"], "strip")
    assert events[-1].answer.display_text == "fine [1, 2"
    assert "".join(t.display for t in tokens(events)) == "fine [1, 2"


def test_render_mode_callable() -> None:
    sup = {1: "¹", 2: "²", 3: "³"}
    events = run(["Vero [", "1", "] e [2][3]", "."], lambda n: sup[n])
    ans = events[-1].answer
    assert ans.display_text == "Vero¹ e²³."
    assert ans.text == "Vero [1] e [2][3]."
    assert "".join(t.display for t in tokens(events)) == ans.display_text
    assert refs(events) == [(1, 5), (2, 11), (3, 14)]


@pytest.mark.parametrize(
    ("deltas", "strip", "render"),
    [
        (["Cameron [1]."], "Cameron.", "Cameron¹."),
        (["Cameron \t [1]."], "Cameron.", "Cameron¹."),
        (["a [1] [2] b"], "a b", "a¹² b"),
        (["a [1]\n[2] b"], "a\n b", "a¹\n² b"),  # only spaces/tabs go with a marker
        (["a ", " ", "[", "1]", " b"], "a b", "a¹ b"),
        (["a  [x] b"], "a  [x] b", "a  [x] b"),  # not a marker: spaces stay
        (["trailing  "], "trailing  ", "trailing  "),  # held spaces released at the end
    ],
)
def test_display_convention_spaces_before_a_marker_go_with_it(
    deltas: list[str], strip: str, render: str
) -> None:
    sup = {1: "¹", 2: "²"}
    for mode, expected in (("strip", strip), (lambda n: sup[n], render)):
        events = run(deltas, mode)
        assert events[-1].answer.display_text == expected
        assert "".join(t.display for t in tokens(events)) == expected
        assert events[-1].answer.text == "".join(deltas)


def test_flush_token_only_at_the_end_and_only_when_something_was_held() -> None:
    events = run(["fine [1", ", 2"], "strip")
    toks = tokens(events)
    assert [t.text for t in toks[:2]] == ["fine [1", ", 2"]
    # The held partial marker must be released somewhere: after the last real token.
    tail = toks[2:]
    assert all(t.text == "" for t in tail)
    assert "".join(t.display for t in tail) == " [1, 2"
    # Nothing held: no empty-text token at all.
    assert all(t.text for t in tokens(run(["no markers here."], "strip")))
    assert all(t.text for t in tokens(run(["no markers here [1]"], "keep")))


def test_display_text_is_choice_zero_only() -> None:
    stream = b"".join(
        [
            S.frame(S.chunk("A [1]", index=0)),
            S.frame(S.chunk("B [2]", index=1)),
            S.frame(S.chunk(" end", index=0, finish_reason="stop")),
            S.frame(S.chunk(index=1, finish_reason="stop")),
            S.done_frame(),
        ]
    )
    events = list(iter_events([stream], marker_mode="strip"))
    ans = events[-1].answer
    assert ans.text == "A [1] end"
    assert ans.display_text == "A end"


# ------------------------------------------------------------------------------------------
# Dangling refs and uncited documents
# ------------------------------------------------------------------------------------------


def test_dangling_and_uncited_against_citations() -> None:
    events = run(["Uno [1]", " cinque [5]", " tre [3][5]."])
    ans = events[-1].answer
    assert set(ans.dangling_refs) == {5}
    assert set(ans.uncited_documents) == {1}
    assert {(r.number, r.document_index) for r in ans.citation_refs} == {(1, 0), (5, 4), (3, 2)}


def test_links_and_non_markers_do_not_count_as_refs() -> None:
    events = run(["[9](http://x) [a] [0] testo [2]."])
    ans = events[-1].answer
    assert list(ans.dangling_refs) == []
    assert set(ans.uncited_documents) == {0, 2}


# ------------------------------------------------------------------------------------------
# Properties: any delta split and any byte split, every marker mode, against the oracle
# ------------------------------------------------------------------------------------------

_word = st.text(alphabet=st.sampled_from(list("ab XY.,;!()]07\n\té信😀")), min_size=1, max_size=6)
_marker = st.one_of(
    st.builds(lambda n: f"[{n}]", st.integers(1, 30)),
    st.builds(lambda n, m: f"[{n}, {m}]", st.integers(1, 30), st.integers(1, 30)),
    st.builds(lambda n, m: f"[{n}][{m}]", st.integers(1, 30), st.integers(1, 30)),
)
_junk = st.sampled_from(["[a]", "[]", "[0]", "[1a]", "[2](http://e.x/p)", "[see](u)"])
_piece = st.one_of(_word, _word, _marker, _junk)

MODES: dict[str, Any] = {
    "keep": "keep",
    "strip": "strip",
    "render": lambda n: f"<{n}>",
}


def _oracle_display(text: str, mode: str) -> str:
    if mode == "keep":
        return text
    if mode == "strip":
        return S.strip_markers(text)
    render: Callable[[int], str] = MODES["render"]
    return S.render_markers(text, render)


@st.composite
def marked_streams(draw: st.DrawFn) -> tuple[list[str], bytes, list[int]]:
    text = "".join(draw(st.lists(_piece, min_size=1, max_size=12)))
    # Cut anywhere, and often right at the edges of brackets and spaces, where a
    # detector's hold-back decisions are made.
    edges = sorted({j for i, c in enumerate(text) if c in "[], (\t" for j in (i, i + 1)})
    edges = [j for j in edges if 0 < j < len(text)] or [max(1, len(text) - 1)]
    cut_pos = st.one_of(st.integers(1, max(1, len(text) - 1)), st.sampled_from(edges))
    cuts = sorted(set(draw(st.lists(cut_pos, max_size=12))))
    deltas = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    deltas = [d for d in deltas if d]
    parts = [S.frame(S.chunk(role="assistant", content=""))]
    for d in deltas:
        if draw(st.integers(0, 4)) == 0:
            parts.append(S.frame(S.chunk("")))  # empty content: no token, no effect
        parts.append(S.frame(S.chunk(d)))
    parts.append(
        S.frame(S.chunk(finish_reason="stop", extra={"citations": S.MAGISTERIUM_CITATIONS}))
    )
    parts.append(S.done_frame())
    raw = b"".join(parts)
    if draw(st.integers(0, 7)) == 0:
        cuts_b = [-1]  # one-byte reads
    else:
        cuts_b = draw(st.lists(st.integers(0, len(raw)), max_size=25))
    return deltas, raw, cuts_b


def _feeds(raw: bytes, cuts: list[int]) -> list[bytes]:
    if cuts == [-1]:
        return [raw[i : i + 1] for i in range(len(raw))]
    return S.split_at(raw, cuts)


_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(case=marked_streams(), mode=st.sampled_from(sorted(MODES)))
def test_footnotes_and_display_match_the_oracle_under_any_split(
    case: tuple[list[str], bytes, list[int]], mode: str
) -> None:
    deltas, raw, cuts = case
    text = "".join(deltas)
    events = list(iter_events(_feeds(raw, cuts), marker_mode=MODES[mode]))

    # Byte-split invariance: identical to the single-read run.
    whole = list(iter_events([raw], marker_mode=MODES[mode]))
    assert S.normalise(events) == S.normalise(whole)

    assert isinstance(events[-1], DoneEvent)
    ans = events[-1].answer
    toks = tokens(events)
    assert [t.text for t in toks if t.text] == deltas
    # A token with empty text may only release held-back display at the end of the choice.
    empties = [i for i, t in enumerate(toks) if not t.text]
    assert len(empties) <= 1
    if empties:
        assert mode != "keep"
        assert empties[0] == len(toks) - 1 and toks[-1].display
    assert ans.text == text

    # Refs: exactly the oracle's, in order, with document_index = number - 1.
    exp = S.expected_refs(text)
    got = [e for e in events if isinstance(e, CitationRefEvent)]
    assert [(r.number, r.offset) for r in got] == [(r.number, r.offset) for r in exp]
    assert all(r.document_index == r.number - 1 and r.index == 0 for r in got)
    assert [(r.number, r.offset) for r in ans.citation_refs if r.index == 0] == [
        (r.number, r.offset) for r in exp
    ]

    # Dangling / uncited against the three Magisterium citations (footnotes 1..3).
    numbers = {r.number for r in exp}
    assert set(ans.dangling_refs) == {n for n in numbers if n not in (1, 2, 3)}
    assert set(ans.uncited_documents) == {0, 1, 2} - {n - 1 for n in numbers}

    # Display: the oracle's text for the mode, token by token.
    expected_display = _oracle_display(text, mode)
    assert ans.display_text == expected_display
    assert "".join(t.display for t in toks) == expected_display
    if mode == "keep":
        assert all(t.display == t.text for t in toks)

    # Liveness: after each token, everything that can no longer be part of a marker has
    # been shown, and nothing shown is ever taken back.
    so_far = ""
    shown = ""
    for t in toks:
        so_far += t.text
        shown += t.display
        assert expected_display.startswith(shown)
        must_show = _oracle_display(S.releasable_prefix(so_far), mode)
        assert shown.startswith(must_show), (so_far, shown, must_show)

    # Timing: each ref comes after the token holding the character that confirms it
    # (the one after "]"), and before the next token; a ref confirmed by the end of text
    # comes before done.
    starts = []
    pos = 0
    for d in deltas:
        starts.append(pos)
        pos += len(d)
    tok_pos = [i for i, e in enumerate(events) if isinstance(e, TokenEvent)]
    ref_pos = [i for i, e in enumerate(events) if isinstance(e, CitationRefEvent)]
    ends = {start: end for start, end, _n in S._markers(text)}
    for r, at in zip(exp, ref_pos, strict=True):
        confirm = ends[r.offset]  # index of the char after "]"
        if confirm >= len(text):
            assert at > tok_pos[-1]
            continue
        k = max(i for i, s in enumerate(starts) if s <= confirm)
        assert at > tok_pos[k]
        if k + 1 < len(tok_pos):
            assert at < tok_pos[k + 1]


@_SETTINGS
@given(case=marked_streams())
def test_finish_and_citations_survive_any_split(
    case: tuple[list[str], bytes, list[int]],
) -> None:
    _deltas, raw, cuts = case
    events = list(iter_events(_feeds(raw, cuts)))
    assert [(f.index, f.reason) for f in events if isinstance(f, FinishEvent)] == [(0, "stop")]
    assert len(events[-1].answer.citations) == 3
    assert events[-1].answer.complete is True
    assert events[-1].answer.errors == []


# -- one grammar: the whole-text functions agree with the streaming detector -----------

from streamcite.core.markers import (  # noqa: E402
    FootnoteDetector,
    find_markers,
    footnote_numbers,
    render_markers,
    strip_markers,
)

_marker_text = st.lists(
    st.one_of(
        st.sampled_from(["[", "]", "(", ",", " ", "\t", "0", "1", "12", "12345", ", ", "x"]),
        st.text(alphabet="ab []1(,0\t", max_size=6),
    ),
    max_size=30,
).map("".join)


@settings(max_examples=400)
@given(_marker_text, st.lists(st.integers(0, 60), max_size=6))
def test_whole_text_grammar_is_the_detectors(text: str, cuts: list[int]) -> None:
    """find_markers / strip_markers / render_markers say what the detector streams."""
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    for mode in ("keep", "strip", "superscript"):
        det = FootnoteDetector(mode)
        shown: list[str] = []
        found: list[tuple[int, int]] = []
        for piece in pieces:
            if not piece:
                continue
            out, refs = det.feed(piece)
            shown.append(out)
            found += refs or []
        out, refs = det.flush()
        shown.append(out)
        found += refs or []
        assert found == [(n, start) for start, _end, ns in find_markers(text) for n in ns]
        assert "".join(shown) == render_markers(text, mode)
    assert footnote_numbers(text) == [n for n, _ in found]
    assert strip_markers(text)[0] == render_markers(text, "strip")


@pytest.mark.parametrize(
    "text",
    ["See [1](http://x)", "[0] [12345] [1,\t2]", "[01]", "[1 ,2]", "[]", "[a]"],
)
def test_not_footnotes_anywhere(text: str) -> None:
    """The cases on which the five old copies disagreed: none is a footnote, everywhere."""
    assert find_markers(text) == [] and footnote_numbers(text) == []
    assert render_markers(text, "superscript") == text == strip_markers(text)[0]


# -- a long run of blanks before a "[" that is no marker: linear, same matches -----------

_PLAIN_SPACED = re.compile(r"[ \t]*\[(" + markers._NUMBERS + r")\](?!\()")
"""The spaced-marker pattern as it was: tried from every blank of a run."""


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=" \t[]1209,(a", max_size=60))
def test_spaced_markers_match_as_the_plain_pattern(text: str) -> None:
    def spans(p: re.Pattern[str]) -> list[tuple[tuple[int, int], str]]:
        return [(m.span(), m.group(1)) for m in p.finditer(text)]

    assert spans(markers._SPACED_MARKER) == spans(_PLAIN_SPACED)


@pytest.mark.timeout(30)
def test_strip_markers_is_linear_in_a_run_of_blanks() -> None:
    # 400,000 blanks then a "[" that opens no marker: quadratic was minutes here.
    text = "x" + " " * 400_000 + "[y [1]"
    assert markers.strip_markers(text)[0] == "x" + " " * 400_000 + "[y"
