"""SSEDecoder against the HTML standard's event-stream parsing rules (spec-driven).

The expected values come from the standard's text and examples ("9.2.5 Parsing an event
stream", "9.2.6 Interpreting an event stream") and from a reference parser written from
that text (tests/_streams.reference_sse), never from the implementation.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    from _streams import reference_sse, split_at
except ImportError:  # tests/ imported as a package
    from tests._streams import reference_sse, split_at

from streamcite.core.errors import EventTooLarge, StreamciteError
from streamcite.core.sse import ServerSentEvent, SSEDecoder

Ev = tuple[str, str, str, int | None]


def tup(e: ServerSentEvent) -> Ev:
    return (e.event, e.data, e.id, e.retry)


def decode(*feeds: bytes, **kw: int) -> list[Ev]:
    """Feed each piece, then close; all dispatched events as tuples."""
    d = SSEDecoder(**kw)
    out: list[ServerSentEvent] = []
    for f in feeds:
        out.extend(d.feed(f))
    out.extend(d.close())
    return [tup(e) for e in out]


def datas(*feeds: bytes) -> list[str]:
    return [e[1] for e in decode(*feeds)]


# ------------------------------------------------------------------------------------------
# The standard's own examples
# ------------------------------------------------------------------------------------------


def test_stock_ticker_example_joins_data_lines_with_lf() -> None:
    stream = b"data: YHOO\ndata: +2\ndata: 10\n\n"
    assert decode(stream) == [("message", "YHOO\n+2\n10", "", None)]


def test_comment_and_id_example() -> None:
    stream = (
        b": test stream\n"
        b"\n"
        b"data: first event\n"
        b"id: 1\n"
        b"\n"
        b"data:second event\n"
        b"id\n"
        b"\n"
        b"data:  third event\n"
        b"\n"
    )
    assert decode(stream) == [
        ("message", "first event", "1", None),
        # "id" with no colon: value is "", which resets the last event id.
        ("message", "second event", "", None),
        # Only ONE leading space is removed.
        ("message", " third event", "", None),
    ]


def test_data_without_colon_example() -> None:
    # "The first block fires events with the data set to the empty string, as would the
    # last block if it was followed by a blank line. The middle block fires an event with
    # the data set to a single newline character. The last block is discarded because it
    # is not followed by a blank line."
    stream = b"data\n\ndata\ndata\n\ndata:"
    assert datas(stream) == ["", "\n"]


def test_data_colon_with_and_without_space_are_identical() -> None:
    stream = b"data:test\n\ndata: test\n\n"
    assert decode(stream) == [("message", "test", "", None), ("message", "test", "", None)]


def test_empty_data_field_dispatches_empty_string() -> None:
    # The data buffer is "\n" (non-empty) at dispatch time, so the event fires with "".
    assert decode(b"data:\n\n") == [("message", "", "", None)]


def test_event_field_sets_type() -> None:
    stream = b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\ndata: x\n\n"
    assert [(e[0], e[1]) for e in decode(stream)] == [
        ("add", "73857293"),
        ("remove", "2153"),
        ("message", "x"),
    ]


def test_empty_event_type_defaults_to_message() -> None:
    assert decode(b"event:\ndata: x\n\n")[0][0] == "message"
    assert decode(b"event\ndata: x\n\n")[0][0] == "message"


# ------------------------------------------------------------------------------------------
# Field rules
# ------------------------------------------------------------------------------------------


def test_field_names_are_case_sensitive_and_unknown_fields_ignored() -> None:
    stream = b"Data: a\nDATA: b\nfoo: c\ndata : d\n\ndata: real\n\n"
    # None of the first block's fields is "data" (note "data " with a space), so nothing
    # is dispatched for it.
    assert datas(stream) == ["real"]


def test_only_first_colon_splits_and_value_keeps_later_colons() -> None:
    assert datas(b"data: a: b :c\n\n") == ["a: b :c"]
    assert datas(b"data::x\n\n") == [":x"]


def test_field_name_without_colon_has_empty_value() -> None:
    # "data" alone appends "" + LF; two of them give a single "\n" after trailing LF removal.
    assert datas(b"data\ndata\ndata: z\n\n") == ["\n\nz"]


def test_comment_lines_are_ignored_even_between_data_lines() -> None:
    assert datas(b"data: a\n: this is a comment\ndata: b\n:\n\n") == ["a\nb"]


def test_comment_only_block_is_not_dispatched() -> None:
    assert decode(b": ping\n\n: ping\n\n") == []


def test_event_type_without_data_is_not_dispatched_and_is_reset() -> None:
    # The block with only "event: foo" is not dispatched, and the event type buffer is
    # reset at that blank line, so the next event is a plain "message".
    stream = b"event: foo\n\ndata: x\n\n"
    assert decode(stream) == [("message", "x", "", None)]


def test_id_is_sticky_across_events() -> None:
    stream = b"id: 42\ndata: a\n\ndata: b\n\nid: 43\ndata: c\n\n"
    assert [(e[1], e[2]) for e in decode(stream)] == [("a", "42"), ("b", "42"), ("c", "43")]


def test_id_in_block_without_data_still_counts() -> None:
    stream = b"data: a\n\nid: 7\n\ndata: b\n\n"
    assert [(e[1], e[2]) for e in decode(stream)] == [("a", ""), ("b", "7")]


def test_id_applies_to_the_event_of_its_own_block_even_after_data() -> None:
    assert decode(b"data: a\nid: 5\n\n") == [("message", "a", "5", None)]


def test_empty_id_resets_last_event_id() -> None:
    stream = b"id: 1\ndata: a\n\nid:\ndata: b\n\n"
    assert [e[2] for e in decode(stream)] == ["1", ""]


def test_id_containing_nul_is_ignored() -> None:
    stream = b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n"
    assert [e[2] for e in decode(stream)] == ["1", "1"]


def test_nul_in_data_is_kept() -> None:
    assert datas(b"data: a\x00b\n\n") == ["a\x00b"]


def test_retry_is_last_valid_value_and_sticky() -> None:
    stream = b"retry: 1000\ndata: a\n\ndata: b\n\nretry: 2500\ndata: c\n\n"
    assert [e[3] for e in decode(stream)] == [1000, 1000, 2500]


def test_retry_defaults_to_none() -> None:
    assert decode(b"data: a\n\n")[0][3] is None


def test_retry_in_block_without_data_counts() -> None:
    assert decode(b"retry: 3000\n\ndata: a\n\n") == [("message", "a", "", 3000)]


@pytest.mark.parametrize(
    "value",
    [
        b"10a",
        b"-1",
        b"+5",
        b"1.5",
        b" 5",  # "retry:  5": the second space stays in the value
        b"5 ",
        b"1e3",
        "\uff11\uff12".encode(),  # full-width digits: not ASCII digits
        "\u0661\u0662".encode(),  # Arabic-Indic digits: str.isdigit() is True, still invalid
        "\u00b2".encode(),  # superscript two: isdigit() True, int() fails
        b"0x10",
    ],
)
def test_retry_with_non_ascii_digit_value_is_ignored(value: bytes) -> None:
    stream = b"retry: 700\ndata: a\n\nretry: " + value + b"\ndata: b\n\n"
    assert [e[3] for e in decode(stream)] == [700, 700]


def test_retry_accepts_leading_zeros_and_large_values() -> None:
    assert decode(b"retry: 0050\ndata: a\n\n")[0][3] == 50
    assert decode(b"retry: 99999999999999999999\ndata: a\n\n")[0][3] == 99999999999999999999


def test_retry_and_id_field_names_without_colon() -> None:
    # "id" alone (no colon) has the value "", which resets the id; retry stays sticky.
    stream = b"id: 9\nretry: 10\ndata: a\n\nid\ndata: b\n\n"
    got = decode(stream)
    assert [(e[1], e[2], e[3]) for e in got] == [("a", "9", 10), ("b", "", 10)]


def test_trailing_lf_of_data_removed_only_once() -> None:
    assert datas(b"data: a\ndata:\n\n") == ["a\n"]


# ------------------------------------------------------------------------------------------
# Line ends
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_each_line_end_kind(eol: bytes) -> None:
    stream = b"event: e" + eol + b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    assert decode(stream) == [("e", "a\nb", "", None), ("message", "c", "", None)]


def test_mixed_line_ends_in_one_stream() -> None:
    stream = b"data: a\rdata: b\ndata: c\r\n\r\ndata: d\n\r"
    assert datas(stream) == ["a\nb\nc", "d"]


def test_lf_cr_is_two_line_ends() -> None:
    # "\n\r" is LF then CR: a line end and then an empty line -> dispatch.
    assert datas(b"data: a\n\r") == ["a"]


def test_cr_at_end_of_feed_and_lf_at_start_of_next_is_one_line_end() -> None:
    # If the LF were taken as a second line end, "a" would be dispatched alone.
    assert datas(b"data: a\r", b"\ndata: b\r\n\r\n") == ["a\nb"]


def test_empty_read_between_cr_and_lf_does_not_split_the_crlf() -> None:
    # feed(b"") is a legal call (a transport may yield an empty read); it must not make
    # the decoder forget that the previous read ended with CR.
    assert datas(b"data: a\r", b"", b"\ndata: b\r\n\r\n") == ["a\nb"]


def test_cr_lf_split_after_blank_line() -> None:
    assert datas(b"data: a\r\n\r", b"\ndata: b\r\n\r\n") == ["a", "b"]


def test_cr_terminated_blank_line_dispatches_without_waiting_for_more_input() -> None:
    # A CR ends a line whatever follows, so the event is complete as soon as the second CR
    # arrives; a live stream must not be held back waiting for a possible LF.
    d = SSEDecoder()
    assert [e.data for e in d.feed(b"data: a\r\r")] == ["a"]
    # The LF that follows belongs to the CRLF and must not produce anything odd.
    assert [e.data for e in d.feed(b"\ndata: b\r\r")] == ["b"]
    assert d.close() == []


def test_lf_dispatches_immediately() -> None:
    d = SSEDecoder()
    assert [e.data for e in d.feed(b"data: a\n\n")] == ["a"]
    assert [e.data for e in d.feed(b"data: b\n")] == []
    assert [e.data for e in d.feed(b"\n")] == ["b"]


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c"])
def test_unicode_line_separators_are_not_line_ends(char: str) -> None:
    stream = f"data: a{char}b\n\n".encode()
    assert datas(stream) == [f"a{char}b"]


# ------------------------------------------------------------------------------------------
# BOM and UTF-8
# ------------------------------------------------------------------------------------------


def test_leading_bom_is_stripped() -> None:
    assert decode(b"\xef\xbb\xbfdata: a\n\n") == [("message", "a", "", None)]


def test_leading_bom_split_across_feeds_is_stripped() -> None:
    assert datas(b"\xef", b"\xbb", b"\xbfdata: a\n\n") == ["a"]


def test_partial_bom_is_not_a_bom() -> None:
    # EF BB followed by "d" is an invalid sequence (one U+FFFD), so the first field name
    # is "\ufffddata" and that block is ignored; nothing is swallowed beyond it.
    assert datas(b"\xef\xbbdata: a\n\ndata: b\n\n") == ["b"]
    assert datas(b"\xef", b"\xbb", b"data: a\n\ndata: b\n\n") == ["b"]
    # A stream shorter than a BOM that looks like its start, then data.
    assert datas(b"\xef", b"\n\ndata: c\n\n") == ["c"]


def test_only_one_bom_is_stripped() -> None:
    # The second BOM becomes part of the field name "\ufeffdata", an unknown field.
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n") == [("message", "b", "", None)]


def test_bom_is_only_stripped_at_stream_start() -> None:
    assert datas(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == ["a"]
    # Inside a value a BOM is ordinary data.
    assert datas(b"data: \xef\xbb\xbfx\n\n") == ["\ufeffx"]


def test_multibyte_utf8_split_across_feeds() -> None:
    text = "Città — 信仰 😀 é"
    raw = b"data: " + text.encode() + b"\n\n"
    for i in range(1, len(raw)):
        assert datas(raw[:i], raw[i:]) == [text], i


def test_one_byte_feeds_of_four_byte_characters() -> None:
    text = "😀🙏𝔉"
    raw = b"data: " + text.encode() + b"\n\n"
    assert datas(*[raw[i : i + 1] for i in range(len(raw))]) == [text]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert datas(b"data: a\xffb\n\n") == ["a\ufffdb"]
    # A truncated sequence cut off by the line end: one replacement character.
    assert datas(b"data: a\xe2\x82\n\n") == ["a\ufffd"]


def test_invalid_utf8_in_field_name_does_not_raise() -> None:
    assert datas(b"\xffdata: x\n\ndata: y\n\n") == ["y"]


# ------------------------------------------------------------------------------------------
# End of input, truncation, pending
# ------------------------------------------------------------------------------------------


def test_clean_end_is_not_pending() -> None:
    d = SSEDecoder()
    assert [e.data for e in d.feed(b"data: a\n\n")] == ["a"]
    assert d.close() == []
    assert d.pending is False


def test_unterminated_final_block_is_discarded_and_pending() -> None:
    d = SSEDecoder()
    assert [e.data for e in d.feed(b"data: a\n\ndata: b\n")] == ["a"]
    assert d.pending is True
    assert d.close() == []
    # The brief only fixes ``pending`` before close; the decoder may move the verdict to a
    # ``truncated`` attribute when it resets at close. Either way the truncation is visible.
    assert d.pending is True or getattr(d, "truncated", None) is True


def test_unterminated_final_line_is_discarded_and_pending() -> None:
    d = SSEDecoder()
    assert d.feed(b'data: {"choices": [') == []
    assert d.pending is True
    assert d.close() == []
    assert d.pending is True or getattr(d, "truncated", None) is True


def test_nothing_fed_is_not_pending() -> None:
    d = SSEDecoder()
    assert d.close() == []
    assert d.pending is False


def test_empty_feeds_are_harmless() -> None:
    assert datas(b"", b"data: a", b"", b"\n", b"", b"\n", b"") == ["a"]


def test_pending_clears_once_block_completes() -> None:
    d = SSEDecoder()
    d.feed(b"data: a")
    assert d.pending is True
    d.feed(b"\n\n")
    assert d.pending is False


# ------------------------------------------------------------------------------------------
# Size limit and big events
# ------------------------------------------------------------------------------------------


def test_event_too_large_is_typed() -> None:
    assert issubclass(EventTooLarge, StreamciteError)
    d = SSEDecoder(max_event_size=1024)
    with pytest.raises(EventTooLarge) as ei:
        d.feed(b"data: " + b"x" * 4096 + b"\n\n")
    assert ei.value.code == "event_too_large"


@pytest.mark.parametrize("cut", [0, 1, 6, 2000, 4100, 4102])
def test_single_line_event_over_limit_raises_however_it_is_split(cut: int) -> None:
    # The verdict must not depend on how the bytes were read (one read vs two).
    raw = b"data: " + b"x" * 4096 + b"\n\n"
    d = SSEDecoder(max_event_size=1024)
    with pytest.raises(EventTooLarge):
        d.feed(raw[:cut])
        d.feed(raw[cut:])


def test_unterminated_line_over_limit_raises_before_end_of_input() -> None:
    # Bounded memory: a line that never ends must not grow the buffer without bound.
    d = SSEDecoder(max_event_size=1024)
    with pytest.raises(EventTooLarge):
        for _ in range(64):
            d.feed(b"data: " + b"y" * 100)


def test_many_data_lines_over_limit_raise() -> None:
    d = SSEDecoder(max_event_size=1024)
    with pytest.raises(EventTooLarge):
        for _ in range(200):
            d.feed(b"data: " + b"z" * 20 + b"\n")


def test_limit_is_per_event_not_per_stream() -> None:
    d = SSEDecoder(max_event_size=1024)
    got: list[str] = []
    one = b"data: " + b"q" * 400 + b"\n\n"
    for _ in range(100):
        got.extend(e.data for e in d.feed(one))
    assert got == ["q" * 400] * 100
    assert d.close() == []


def test_event_under_limit_is_accepted_in_small_feeds() -> None:
    body = b"w" * 500
    raw = b"data: " + body + b"\n\n"
    d = SSEDecoder(max_event_size=1024)
    out = []
    for i in range(0, len(raw), 7):
        out.extend(d.feed(raw[i : i + 7]))
    assert [e.data for e in out] == ["w" * 500]


def test_default_limit_accepts_a_multi_megabyte_event() -> None:
    body = b"m" * (3 * 1024 * 1024)
    assert datas(b"data: " + body + b"\n\n") == [body.decode()]


def test_four_mib_event_in_one_kib_feeds() -> None:
    # Correctness of a big single-line event delivered in 1 KiB reads (a quadratic
    # re-scan would make this test run into the suite timeout).
    body = (b"0123456789abcdef" * 64) * 4096  # 4 MiB, single line
    raw = b"id: big\ndata: " + body + b"\n\ndata: after\n\n"
    d = SSEDecoder()
    out: list[ServerSentEvent] = []
    for i in range(0, len(raw), 1024):
        out.extend(d.feed(raw[i : i + 1024]))
    out.extend(d.close())
    assert len(out) == 2
    assert out[0].data == body.decode() and out[0].id == "big"
    assert out[1].data == "after" and out[1].id == "big"


def test_four_mib_event_of_many_lines_in_one_kib_feeds() -> None:
    line = b"data: " + b"L" * 1000 + b"\n"
    raw = line * 4096 + b"\n"
    d = SSEDecoder()
    out: list[ServerSentEvent] = []
    for i in range(0, len(raw), 1024):
        out.extend(d.feed(raw[i : i + 1024]))
    assert len(out) == 1
    assert out[0].data == "\n".join(["L" * 1000] * 4096)


# ------------------------------------------------------------------------------------------
# Properties: the reference parser, and invariance under any split of the bytes
# ------------------------------------------------------------------------------------------

_values = st.text(
    alphabet=st.sampled_from(list("ab :\x00é信😀\u2028\u0085\ufeff")),
    max_size=8,
)

_field_line = st.one_of(
    st.builds(lambda v: "data:" + v, _values),
    st.builds(lambda v: "data: " + v, _values),
    st.just("data"),
    st.builds(lambda v: "event: " + v, st.sampled_from(["", "add", "error", "message", "é"])),
    st.builds(lambda v: "id: " + v, st.sampled_from(["", "1", "42", "a\x00b", "é"])),
    st.just("id"),
    st.builds(
        lambda v: "retry: " + v, st.sampled_from(["0", "15", "3000", "1a", "-4", " 7", "١٢"])
    ),
    st.builds(lambda v: ":" + v, _values),
    st.builds(lambda v: "x-other: " + v, _values),
    st.just(""),  # blank line: dispatch
)

_eol = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def sse_streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.tuples(_field_line, _eol), max_size=14))
    text = "".join(a + b for a, b in lines)
    raw = text.encode("utf-8")
    if draw(st.booleans()):
        raw = b"\xef\xbb\xbf" + raw
    if draw(st.integers(0, 5)) == 0:
        # Sprinkle an invalid byte sequence somewhere.
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xe2\x82", b"\xc3"])) + raw[at:]
    if draw(st.booleans()):
        raw += draw(st.sampled_from([b"data: tail", b"data: tail\n", b"\r", b"data: x\r"]))
    return raw


_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(raw=sse_streams())
def test_matches_reference_parser(raw: bytes) -> None:
    assert decode(raw) == reference_sse(raw)


@_SETTINGS
@given(raw=sse_streams(), data=st.data())
def test_any_split_yields_the_same_events(raw: bytes, data: st.DataObject) -> None:
    cuts = data.draw(st.lists(st.integers(0, max(len(raw), 1)), max_size=12))
    assert decode(*split_at(raw, cuts)) == reference_sse(raw)


@_SETTINGS
@given(raw=sse_streams(), data=st.data())
def test_empty_reads_anywhere_change_nothing(raw: bytes, data: st.DataObject) -> None:
    feeds: list[bytes] = []
    if data.draw(st.booleans()):
        # one-byte reads with an empty read after each
        feeds = [x for i in range(len(raw)) for x in (raw[i : i + 1], b"")]
    else:
        cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
        prev = 0
        for c in cuts:  # duplicates in cuts give empty reads, on purpose
            feeds.append(raw[prev:c])
            prev = c
        feeds.append(raw[prev:])
    assert decode(*feeds) == reference_sse(raw)


@_SETTINGS
@given(raw=sse_streams())
def test_one_byte_feeds_yield_the_same_events(raw: bytes) -> None:
    assert decode(*[raw[i : i + 1] for i in range(len(raw))]) == reference_sse(raw)


@_SETTINGS
@given(raw=sse_streams(), data=st.data())
def test_events_are_returned_by_the_feed_that_completes_them(
    raw: bytes, data: st.DataObject
) -> None:
    # Liveness: after feeding a prefix, the decoder has returned exactly the events the
    # reference parser dispatches for that prefix (a CR at the end of the prefix already
    # ends its line, so no look-ahead is needed).
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    d = SSEDecoder()
    seen: list[Ev] = []
    prev = 0
    for c in [*cuts, len(raw)]:
        if c < prev:
            continue
        seen.extend(tup(e) for e in d.feed(raw[prev:c]))
        prev = c
        expected = reference_sse(raw[:c])
        # A prefix ending between CR and LF: the reference treats the CR as a complete line
        # end, exactly as a streaming decoder must.
        assert seen == expected
