"""Properties: byte/char/UTF-16 offsets over random Unicode, marker stripping, fact splitting.

The oracles are Python's own codecs (``str.encode``) and plain slicing, never the
code under test.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.grounding import GroundingFact
from streamcite.core.models import Citation
from streamcite.core.offsets import OffsetMap, byte_to_char, char_to_byte, char_to_utf16
from streamcite.core.sources import QuotedSource, SourceChunk, SourceDocument
from streamcite.enrich.facts import build_facts, split_fact
from streamcite.enrich.google import (
    TextOffsets,
    parse_check_response,
    prepare_facts,
    strip_markers,
)

try:
    from _streams import strip_markers as reference_strip
except ImportError:  # tests/ imported as a package
    from tests._streams import strip_markers as reference_strip

# Any code point but lone surrogates (not valid in UTF-8 text from an API), with a bias
# towards the scripts the project must get right: Hebrew, accented Latin, emoji.
unicode_text = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=("Cs",)),
        st.sampled_from("שלום עולם àèéìòù çœ 🏰👍🏽 🇮🇹 e\u0301 ."),
    ),
    max_size=80,
)


def utf8_len(s: str) -> int:
    return len(s.encode("utf-8"))


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


@given(unicode_text)
def test_char_offsets_convert_to_bytes_and_utf16(text: str) -> None:
    m = OffsetMap(text)
    assert m.byte_length == utf8_len(text)
    for i in range(len(text) + 1):
        b = m.char_to_byte(i)
        assert b == utf8_len(text[:i]) == char_to_byte(text, i)
        assert m.char_to_utf16(i) == utf16_len(text[:i]) == char_to_utf16(text, i)
        assert m.byte_to_char(b) == i == byte_to_char(text, b)
        assert m.byte_to_char_end(b) == i


@given(unicode_text, st.data())
def test_byte_offsets_inside_a_character_round_outward(text: str, data: st.DataObject) -> None:
    m = OffsetMap(text)
    b = data.draw(st.integers(min_value=-3, max_value=m.byte_length + 3))
    start, end = m.byte_to_char(b), m.byte_to_char_end(b)
    assert 0 <= start <= end <= len(text)
    assert end - start <= 1
    clamped = max(0, min(b, m.byte_length))
    # The character span [start, end) contains the byte offset.
    assert utf8_len(text[:start]) <= clamped <= utf8_len(text[:end])
    if start != end:  # strictly inside one multi-byte character
        assert utf8_len(text[start]) > 1


@given(unicode_text, st.data())
def test_a_byte_range_decodes_to_the_char_slice(text: str, data: st.DataObject) -> None:
    m = OffsetMap(text)
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    raw = text.encode()
    sb, eb = m.char_to_byte(i), m.char_to_byte(j)
    assert raw[sb:eb].decode() == text[i:j]
    assert text[m.byte_to_char(sb) : m.byte_to_char_end(eb)] == text[i:j]


@given(unicode_text, st.data())
def test_offset_map_strategies_agree(text: str, data: st.DataObject) -> None:
    """Re-coding prefixes, per-character tables and the automatic switch give one answer."""
    recode, table, auto = (
        OffsetMap(text, tables=False),
        OffsetMap(text, tables=True),
        OffsetMap(text),
    )
    assert recode.byte_length == table.byte_length == auto.byte_length == utf8_len(text)
    for b in data.draw(st.lists(st.integers(-2, table.byte_length + 2), max_size=20)):
        assert recode.byte_to_char(b) == table.byte_to_char(b) == auto.byte_to_char(b)
        assert recode.byte_to_char_end(b) == table.byte_to_char_end(b) == auto.byte_to_char_end(b)
    for i in range(-1, len(text) + 2):
        assert recode.char_to_byte(i) == table.char_to_byte(i) == auto.char_to_byte(i)
        assert recode.char_to_utf16(i) == table.char_to_utf16(i) == auto.char_to_utf16(i)


def test_offset_map_builds_tables_only_when_used_a_lot() -> None:
    m = OffsetMap("é" * 100)
    for i in range(10):
        m.char_to_byte(i)
    assert m._byte_starts is None
    for i in range(10):
        m.char_to_byte(i)
    assert m._byte_starts is not None
    assert OffsetMap("ascii only")._utf8 == b""


def test_text_offsets_is_the_offset_map() -> None:
    assert TextOffsets is OffsetMap


# -- footnote markers out, offsets back ------------------------------------------------

marker = st.lists(st.integers(1, 9999), min_size=1, max_size=3).map(
    lambda ns: "[" + ", ".join(map(str, ns)) + "]"
)
piece = st.one_of(unicode_text.filter(lambda s: "[" not in s), marker, st.just(" "))
# "[1](" opens a Markdown link, not a footnote: a span cut before its "(" would read it
# as a marker out of context (hypothesis found raw="0…0[100, 100](").
answer_with_markers = st.lists(piece, max_size=12).map("".join).filter(lambda s: "](" not in s)


@given(answer_with_markers)
def test_strip_markers_maps_every_kept_character_back(raw: str) -> None:
    sent, char_map = strip_markers(raw)
    assert sent == reference_strip(raw)
    assert len(char_map) == len(sent) + 1 and char_map[-1] == len(raw)
    assert all(a < b for a, b in itertools.pairwise(char_map))
    for i, ch in enumerate(sent):
        assert raw[char_map[i]] == ch


@settings(max_examples=150)
@given(answer_with_markers, st.data())
def test_claim_byte_offsets_map_onto_the_raw_answer(raw: str, data: st.DataObject) -> None:
    sent, char_map = strip_markers(raw)
    i = data.draw(st.integers(0, len(sent)))
    j = data.draw(st.integers(i, len(sent)))
    sb, eb = utf8_len(sent[:i]), utf8_len(sent[:j])
    body = {"claims": [{"claimText": sent[i:j], "startPos": sb, "endPos": eb}]}
    result = parse_check_response(
        body, raw_answer=raw, sent_answer=sent, char_map=char_map, facts=[GroundingFact("f")]
    )
    (claim,) = result.claims
    assert (claim.start_byte, claim.end_byte) == (sb, eb)
    assert claim.start is not None and claim.end is not None
    span = raw[claim.start : claim.end]
    # The raw span is the claim plus only the markers that sat inside it.
    assert reference_strip(span) == sent[i:j]
    if j > i:
        assert span[0] == sent[i] and span[-1] == sent[j - 1]
    assert (claim.start_utf16, claim.end_utf16) == (
        utf16_len(raw[: claim.start]),
        utf16_len(raw[: claim.end]),
    )


# -- fact splitting ----------------------------------------------------------------------

fact_text = st.text(alphabet=st.sampled_from("ab שלום 🏰é     "), min_size=1, max_size=400)


def _placements(text: str, windows: list[str]) -> list[tuple[int, int]]:
    """Place the windows in order so that they cover ``text`` without a gap (or fail)."""
    covered, last = 0, -1
    out = []
    for w in windows:
        # The right-most start that leaves no gap gives the most coverage.
        candidates = [j for j in range(last + 1, covered + 1) if text.startswith(w, j)]
        assert candidates, f"window {w!r} leaves a gap at {covered}"
        j = max(candidates)
        out.append((j, j + len(w)))
        last, covered = j, max(covered, j + len(w))
    assert covered == len(text)
    return out


@settings(max_examples=200)
@given(fact_text, st.integers(8, 60))
def test_split_fact_windows_cover_the_text_and_keep_attributes(text: str, max_chars: int) -> None:
    fact = GroundingFact(text, {"title": "T", "url": "https://x"}, "citation", 3)
    windows = split_fact(fact, max_chars)
    if len(text) <= max_chars:
        assert windows == [fact]
        return
    assert all(1 <= len(w.text) <= max_chars for w in windows)
    assert all(
        w.attributes == fact.attributes and w.attributes is not fact.attributes for w in windows
    )
    assert all((w.origin_kind, w.origin_index) == ("citation", 3) for w in windows)
    spans = _placements(text, [w.text for w in windows])
    assert spans[0][0] == 0 and spans[-1][1] == len(text)


def test_split_fact_real_size_cuts_at_spaces() -> None:
    words = [f"mot{i}é" for i in range(5000)]
    text = " ".join(words)
    windows = split_fact(GroundingFact(text, {"a": "b"}), 10_000)
    assert len(windows) >= 3 and all(len(w.text) <= 10_000 for w in windows)
    # Cut at whitespace: every window is made of whole words.
    for w in windows:
        assert all(tok in set(words) for tok in w.text.split(" "))
    _placements(text, [w.text for w in windows])


def test_build_facts_origins_and_attributes() -> None:
    cit = Citation(
        cited_text="Testo citato.",
        cited_text_heading="Cap. 2",
        document_title="Titolo",
        document_index=4,
        document_author="Autore",
        document_year="1891",
        document_reference="RN 5",
        source_url="https://v.va/rn",
    )
    src = QuotedSource(
        "3",
        SourceDocument("d", name="f.pdf", url="https://w"),
        SourceChunk("c", data="Chunk.", page_start=0),
    )
    facts = build_facts(["", cit, Citation(cited_text=None), src, "libre"])
    assert [(f.origin_kind, f.origin_index) for f in facts] == [
        ("citation", 1),
        ("source", 3),
        (None, None),
    ]
    assert facts[0].attributes == {
        "title": "Titolo",
        "author": "Autore",
        "year": "1891",
        "reference": "RN 5",
        "heading": "Cap. 2",
        "url": "https://v.va/rn",
        "document_index": "4",
    }
    assert facts[1].attributes == {
        "quoted_as": "3",
        "document": "f.pdf",
        "url": "https://w",
        "page": "1",
    }


@given(
    st.integers(0, 260),
    st.sets(st.integers(1, 300), max_size=30),
    st.integers(1, 220),
)
def test_fact_cap_keeps_cited_first_in_original_order(n: int, cited: set[int], cap: int) -> None:
    citations = [Citation(cited_text=f"fact {i}", document_index=i) for i in range(n)]
    prepared = prepare_facts(citations, cited, max_facts=cap)
    kept = [f.origin_index for f in prepared.facts]
    assert len(kept) == min(n, cap) and prepared.dropped == max(0, n - cap)
    assert kept == sorted(kept)
    cited_present = [i for i in range(n) if i + 1 in cited]
    if len(cited_present) <= cap:
        assert set(cited_present) <= set(kept)
    else:
        assert kept == cited_present[:cap]
    assert bool(prepared.warnings) == (n > cap)
