"""Citation refs stored compactly (core/refs.py): the store and its views equal the list
of CitationRef they replace, the answer's ``citation_refs`` is still a plain list to
every reader, the snapshot's dangling/uncited passes agree with the per-ref rule, and
the memory of a footnote-dense answer stays within the bound (tracemalloc, no timing)."""

from __future__ import annotations

import copy
import gc
import pickle
import sys
import tracemalloc
from dataclasses import replace
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    from _streams import general_path_events, normalise
except ImportError:  # tests/ imported as a package
    from tests._streams import general_path_events, normalise

from streamcite.core.answer import AnswerBuilder
from streamcite.core.api import ChatStreamParser
from streamcite.core.chunks import ChunkInterpreter
from streamcite.core.events import (
    CitationRefEvent,
    CitationsEvent,
    answer_from_dict,
    event_to_json,
)
from streamcite.core.models import Citation, CitationRef, CitedAnswer
from streamcite.core.refs import MAX_PENDING, CitationRefs, RefStore
from streamcite.core.sse import SSEDecoder

_ints = st.one_of(
    st.integers(-3, 12),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, 9999, 2**16 - 1, 2**16, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1]),
)
_usual = st.tuples(st.just(0), st.integers(1, 9999), st.integers(0, 10**9)).map(
    lambda t: (t[0], t[1], t[1] - 1, t[2])
)
_refs = st.lists(st.one_of(_usual, st.tuples(_ints, _ints, _ints, _ints)), max_size=40)


def _filled(refs: list[tuple[int, int, int, int]]) -> RefStore:
    store = RefStore()
    for r in refs:
        store.add(*r)
    return store


@settings(max_examples=300, deadline=None)
@given(refs=_refs, i=st.integers(-50, 50), j=st.integers(-50, 50), step=st.sampled_from([1, 2, -1]))
def test_a_view_equals_the_list_of_citation_refs_it_replaces(
    refs: list[tuple[int, int, int, int]], i: int, j: int, step: int
) -> None:
    expected = [CitationRef(*r) for r in refs]
    view = _filled(refs).view()
    assert isinstance(view, CitationRefs)
    assert len(view) == len(expected)
    assert list(view) == expected and view.tolist() == expected
    assert view == expected and expected == view
    assert (view != expected) is False  # __ne__ follows __eq__
    assert view == _filled(refs).view()
    assert repr(view) == repr(expected)
    assert view[i:j:step] == expected[i:j:step]
    if -len(expected) <= i < len(expected):
        assert view[i] == expected[i]
    else:
        try:
            view[i]
        except IndexError:
            pass
        else:
            raise AssertionError("an index out of range must raise IndexError")
    assert pickle.loads(pickle.dumps(view)) == expected
    assert view != [*expected, CitationRef(0, 1, 0, 0)]
    assert view != tuple(expected)  # as a list: not equal to a tuple
    first = list(dict.fromkeys((r.number, r.document_index) for r in expected if r.index == 0))
    assert list(view.first_seen()) == first


@given(refs=_refs)
def test_a_view_never_changes_when_the_store_grows(refs: list[tuple[int, int, int, int]]) -> None:
    store = _filled(refs)
    view = store.view()
    store.add(0, 3, 2, 99)
    store.add(7, 3, 2, 99)
    assert view == [CitationRef(*r) for r in refs]
    assert len(store.view()) == len(refs) + 2


def test_a_view_is_unhashable_like_the_list_it_stands_for() -> None:
    view = _filled([(0, 1, 0, 5)]).view()
    try:
        hash(view)
    except TypeError:
        pass
    else:
        raise AssertionError("a CitationRefs view must be unhashable")


def _old_refs_of_choice0(
    refs: list[CitationRef], known: set[int | None]
) -> tuple[set[int], list[int]]:
    """The per-ref rule of the snapshot before this change (the reference)."""
    refs0 = [r for r in refs if r.index == 0]
    referenced = {r.document_index for r in refs0}
    dangling: list[int] = []
    for r in refs0:
        if r.document_index not in known and r.number not in dangling:
            dangling.append(r.number)
    return referenced, dangling


@settings(max_examples=300, deadline=None)
@given(
    refs=st.lists(
        st.one_of(
            _usual.map(lambda t: (t[0], t[1] % 8 + 1, t[1] % 8, t[3])),
            st.tuples(st.integers(0, 2), st.integers(0, 9), st.integers(-1, 9), st.integers(0, 9)),
        ),
        max_size=40,
    ),
    cited=st.lists(st.one_of(st.none(), st.integers(0, 9)), max_size=6),
    snapshot_at=st.lists(st.integers(0, 40), max_size=4),
)
def test_dangling_and_uncited_match_the_per_ref_rule_with_snapshots_between(
    refs: list[tuple[int, int, int, int]], cited: list[int | None], snapshot_at: list[int]
) -> None:
    b = AnswerBuilder()
    b.add(CitationsEvent(citations=[Citation(document_index=d) for d in cited]))
    for k, r in enumerate(refs):
        if k in snapshot_at:
            b.snapshot()  # the incremental pass must give the same as one pass at the end
        ev = CitationRefEvent(index=r[0], number=r[1], document_index=r[2], offset=r[3])
        b.add(ev)
    a = b.snapshot()
    expected = [CitationRef(*r) for r in refs]
    referenced, dangling = _old_refs_of_choice0(expected, set(cited))
    assert a.citation_refs == expected
    assert a.dangling_refs == dangling
    assert a.uncited_documents == sorted({d for d in cited if d is not None} - referenced)


# -- the answer's citation_refs is a plain list to every reader ---------------------------

_ENVELOPE = {"id": "c", "object": "chat.completion.chunk", "model": "m"}


def _frame(text: str) -> bytes:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    return b"data: " + orjson.dumps({**_ENVELOPE, "choices": [choice]}) + b"\n\n"


def _stream(words: list[str]) -> bytes:
    fin = {
        **_ENVELOPE,
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "citations": [{"document_index": 0, "cited_text": "x"}],
    }
    return b"".join(
        [*(_frame(w) for w in words), b"data: " + orjson.dumps(fin) + b"\n\ndata: [DONE]\n\n"]
    )


def test_the_answers_citation_refs_reads_as_a_plain_list() -> None:
    p = ChatStreamParser()
    events = p.feed(_stream(["a", "b", " x [1]", " y [2]", "[3]", "(z)", " w [1, 2]", "."]))
    events += p.close()
    refs = [
        CitationRef(e.index, e.number, e.document_index, e.offset)
        for e in events
        if isinstance(e, CitationRefEvent)
    ]
    assert refs  # the stream has markers
    done = p.done_event()
    a = done.answer
    assert type(a.citation_refs) is list and a.citation_refs == refs
    assert a.citation_refs is a.citation_refs  # made once, then kept
    assert all(type(r) is CitationRef for r in a.citation_refs)
    assert a.dangling_refs == [2]  # [3](z) is a link; [2] has no citation
    wire = orjson.loads(orjson.dumps(done))  # orjson serialises it natively
    assert wire["answer"]["citation_refs"] == [
        {
            "index": r.index,
            "number": r.number,
            "document_index": r.document_index,
            "offset": r.offset,
        }
        for r in refs
    ]
    assert orjson.loads(event_to_json(done)) == wire == done.to_dict()
    assert answer_from_dict(wire["answer"]) == a
    assert pickle.loads(pickle.dumps(a)) == a
    assert copy.deepcopy(a) == a and copy.copy(a) == a
    a.citation_refs.append(CitationRef(0, 9, 8, 0))  # a list: mutable as before
    assert len(a.citation_refs) == len(refs) + 1


def test_an_answer_read_before_its_refs_are_made_compares_and_prints_as_lists() -> None:
    p = ChatStreamParser()
    p.feed(_stream(["a", "b", " x [1]", " y [2]"]))
    p.close()
    one, two = p.builder.snapshot(), p.builder.snapshot()
    assert one == two  # each made into its list by the comparison
    assert repr(one) == repr(two) and "CitationRef(index=0, number=1" in repr(one)
    three = p.builder.snapshot()
    assert replace(three) == one  # dataclasses.replace reads it as a list too
    assert three.to_dict()["citation_refs"][1]["number"] == 2


def test_snapshots_taken_mid_stream_keep_their_refs() -> None:
    p = ChatStreamParser()
    data = _stream(["a", "b", " x [1]", " y", " z [1]", " w"])
    half = data.index(b" z [1]")
    p.feed(data[:half])
    early = p.builder.snapshot()
    p.feed(data[half:])
    p.close()
    late = p.builder.snapshot()
    assert [r.offset for r in early.citation_refs] == [5]
    assert [r.offset for r in late.citation_refs] == [5, 13]


# -- the fast path keeps the same refs as the general path -------------------------------

_MARKERY = [
    " [1]",
    "[2]",
    " see [12]",
    "[1, 2]",
    "[3](x)",
    "(",
    "[",
    "[4",
    "a [5] b [6]",
    " x",
    " Rome [1].",  # a marker inside a token, confirmed by its next character
    "[2], ",
    "[199]x",
    "[200].",
    "[7](",
    "[0].",
    "[01].",
]


def _general_answer(stream: bytes) -> CitedAnswer:
    b = AnswerBuilder()
    ip = ChunkInterpreter(b)
    dec = SSEDecoder()
    for item in dec.feed_raw(stream):
        assert isinstance(item, bytes)
        ip.feed(item, b"", [])
    ip.close()
    return b.snapshot()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(st.one_of(st.sampled_from(_MARKERY), st.text(max_size=4)), max_size=30),
    cuts=st.lists(st.integers(0, 5_000), max_size=5),
)
def test_fast_path_refs_equal_the_general_paths(words: list[str], cuts: list[int]) -> None:
    stream = _stream(["a", "b", "c", *words])
    bounds = sorted({c % (len(stream) + 1) for c in cuts})
    p = ChatStreamParser()
    events = []
    for lo, hi in zip([0, *bounds], [*bounds, len(stream)], strict=True):
        events += p.feed(stream[lo:hi])
    events += p.close()
    assert normalise(events) == normalise(general_path_events(stream))
    fast, general = p.builder.snapshot(), _general_answer(stream)
    assert fast.citation_refs == general.citation_refs
    assert fast.dangling_refs == general.dangling_refs
    assert fast.uncited_documents == general.uncited_documents


# -- memory ---------------------------------------------------------------------------------

_VARIED = ["L'insegnamento", ' "della"', " Chiesa", " è", " שלום", " naïve", " 🙏", " São", "."]


def _dense_stream(n: int) -> list[bytes]:
    words = [
        _VARIED[i % len(_VARIED)] + (f" [{i % 5 + 1}]" if i % 3 == 0 else "") for i in range(n)
    ]
    data = _stream(words)
    return [data[i : i + 4096] for i in range(0, len(data), 4096)]


def _peak_beyond_text(reads: list[bytes]) -> tuple[float, Any]:
    gc.collect()
    tracemalloc.start()
    try:
        p = ChatStreamParser()
        for r in reads:
            p.feed(r)
        p.close()
        answer = p.builder.snapshot()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (peak - sys.getsizeof(answer.text)) / len(answer.text), answer


def test_a_footnote_dense_answer_costs_a_few_bytes_per_character_beyond_its_text() -> None:
    reads = _dense_stream(20_000)  # a marker every 3 tokens: ~6,700 refs
    _peak_beyond_text(reads)  # warm-up: first-run caches are not the answer's
    per_char, answer = _peak_beyond_text(reads)
    # Measured about 0.9 (10.7 before the refs were stored compactly); the bound is 3.
    assert per_char <= 3.0, f"{per_char:.2f} bytes per character beyond the text"
    assert len(answer.citation_refs) == 6_667


def test_pending_refs_stay_bounded_without_a_parser_compacting() -> None:
    """Refs wait in two plain lists until a compaction, a view or MAX_PENDING of them:
    a ChunkInterpreter fed directly (no ChatStreamParser compacting) stays bounded."""
    store = RefStore()
    for k in range(3 * MAX_PENDING):
        store.add(0, k % 9 + 1, k % 9, k)
        assert len(store.pending_numbers) <= MAX_PENDING
    ip = ChunkInterpreter(AnswerBuilder())
    dec = SSEDecoder()
    stream = _stream(["a", "b", *([" x [1]", " y"] * (2 * MAX_PENDING))])
    for at in range(0, len(stream), 4096):
        ip.feed_raw(dec.feed_raw(stream[at : at + 4096]), [])
        assert len(ip.builder.refs.pending_numbers) <= MAX_PENDING + 64  # + one read's
    ip.close()
    assert len(ip.builder.snapshot().citation_refs) == 2 * MAX_PENDING
    assert store.view() == [CitationRef(0, k % 9 + 1, k % 9, k) for k in range(3 * MAX_PENDING)]
