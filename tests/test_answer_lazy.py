"""The answer builder makes what a stream may never use (the citation-ref store, the
timings, the lists of citations, sources, errors, claims…) at its first use, and its
snapshot builds the answer from the slots: invisible to every reader of the answer."""

from __future__ import annotations

import pickle

from streamcite.core.answer import AnswerBuilder
from streamcite.core.api import ChatStreamParser
from streamcite.core.events import ErrorEvent
from streamcite.core.models import Citation, CitedAnswer, Timings

LAZY = [
    "refs",
    "sources",
    "errors",
    "timings",
    "chunk_fields",
    "references",
    "claims",
    "provider_tools",
]


def test_a_new_builder_makes_none_of_its_lazy_fields() -> None:
    b = AnswerBuilder()
    assert all(getattr(b, "_" + name) is None for name in LAZY)
    b.snapshot()  # the snapshot reads the slots: still nothing made
    assert all(getattr(b, "_" + name) is None for name in LAZY)


def test_lazy_fields_read_as_empty_are_kept_and_assignable() -> None:
    b = AnswerBuilder()
    assert b.sources == [] and b.claims == [] and b.timings == Timings()
    assert b.claims is b.claims  # made once
    b.claims.append("x")  # type: ignore[arg-type]
    assert b.claims == ["x"]
    b.sources = []
    assert b.sources == [] and b._sources == []
    assert len(b.refs) == 0
    b.refs.add(0, 1, 0, 0)
    assert len(b.refs) == 1 and b._refs is b.refs


def _same(a: CitedAnswer, b: CitedAnswer) -> None:
    assert a == b
    assert repr(a) == repr(b)
    assert a.to_dict() == b.to_dict()
    assert pickle.loads(pickle.dumps(a)) == b


def test_the_snapshot_of_an_unused_builder_is_the_empty_answer() -> None:
    _same(AnswerBuilder().snapshot(), CitedAnswer())


def test_the_snapshot_owns_its_fields() -> None:
    b = AnswerBuilder()
    b.timings.ttft_ms = 1.5
    b.citations = [Citation(document_index=0)]
    b.error(ErrorEvent(code="x", message="m"))
    b.skipped_types["t"] = 1
    a = b.snapshot()
    want = CitedAnswer(
        citations=[Citation(document_index=0)],
        uncited_documents=[0],
        errors=[ErrorEvent(code="x", message="m")],
        timings=Timings(ttft_ms=1.5),
        skipped_types={"t": 1},
    )
    _same(a, want)
    assert a.timings is not b.timings and a.citations is not b.citations
    assert a.errors is not b.errors and a.skipped_types is not b.skipped_types
    b.timings.ttft_ms = 9.0
    b.error(ErrorEvent(code="y", message="m"))
    assert a.timings.ttft_ms == 1.5 and len(a.errors) == 1


def test_a_parsed_answer_equals_the_same_answer_built_eagerly() -> None:
    p = ChatStreamParser(dialect="anthropic")
    p.feed(
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m1",'
        b'"model":"claude","usage":{"input_tokens":3}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"Paris [1]."}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    p.close()
    a = p.done_event().answer
    fields = {f: getattr(a, f) for f in CitedAnswer.__dataclass_fields__}
    _same(a, CitedAnswer(**fields))
    assert a.dangling_refs == [1] and [r.number for r in a.citation_refs] == [1]
