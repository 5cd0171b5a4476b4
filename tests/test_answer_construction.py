"""The answer a snapshot builds without ``__init__`` (``models.answer_of``, one positional
call) is the answer ``__init__`` builds from the same fields: equal, same repr, same wire
JSON, picklable, its lists its own."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import orjson

from streamcite.core.events import ClaimEvent, ErrorEvent, ProviderToolEvent
from streamcite.core.grounding import GroundingResult
from streamcite.core.models import (
    Citation,
    CitationRef,
    CitationSpan,
    CitedAnswer,
    Timings,
    ToolCall,
    Usage,
    answer_of,
)
from streamcite.core.refs import RefStore
from streamcite.core.sources import QuotedSource, SourceChunk, SourceDocument


def _values() -> dict[str, object]:
    """A value unlike the default for every field of :class:`CitedAnswer`."""
    return {
        "text": "Paris [1].",
        "display_text": "Paris.",
        "finish_reason": "stop",
        "id": "m1",
        "model": "claude",
        "citations": [Citation(document_index=0, cited_text="c")],
        "citation_refs": [CitationRef(0, 1, 0, 6)],
        "dangling_refs": [3],
        "uncited_documents": [2],
        "sources": [QuotedSource("1", SourceDocument("d", title="t"), SourceChunk("c", "text"))],
        "grounding": GroundingResult(provider="local", support_score=0.5),
        "usage": Usage(1, 2, 3),
        "errors": [ErrorEvent(code="x", message="m")],
        "timings": Timings(ttft_ms=1.0, total_ms=2.0, first_claim_ms=3.0),
        "complete": True,
        "reasoning_text": "hmm",
        "tool_calls": [ToolCall(id="t1", name="f", arguments="{}")],
        "refusal": "no",
        "references": [{"type": "reference", "reference_ids": [1]}],
        "citation_spans": [CitationSpan(0, 0, 5, 0, 5)],
        "errors_dropped": 4,
        "enrichment_skipped": "refusal",
        "claims": [ClaimEvent(index=0, start=0, end=3, start_utf16=0, end_utf16=3, text="P")],
        "skipped_types": {"ping": 2},
        "provider_tools": [ProviderToolEvent(id="ws_1", name="web_search")],
    }


def test_answer_of_takes_every_field_in_order() -> None:
    names = [f.name for f in dataclasses.fields(CitedAnswer)]
    assert list(inspect.signature(answer_of).parameters) == names
    assert set(_values()) == set(names)  # the test itself covers every field


def test_answer_of_builds_what_init_builds() -> None:
    values = _values()
    built = answer_of(*values.values())  # type: ignore[arg-type]
    want = CitedAnswer(**values)  # type: ignore[arg-type]
    assert type(built) is CitedAnswer
    assert built == want
    assert repr(built) == repr(want)
    assert orjson.dumps(built) == orjson.dumps(want)
    assert built.to_dict() == want.to_dict()
    again = pickle.loads(pickle.dumps(built))
    assert again == want and repr(again) == repr(want)
    assert dataclasses.replace(built, text="x") == dataclasses.replace(want, text="x")


def test_answer_of_keeps_lazy_refs_lazy_until_read() -> None:
    store = RefStore()
    store.add(0, 2, 1, 7)
    values = _values()
    values["citation_refs"] = store.view()
    built = answer_of(*values.values())  # type: ignore[arg-type]
    assert built.citation_refs == [CitationRef(0, 2, 1, 7)]
    assert type(built.citation_refs) is list  # made into the list, and kept
    assert built.citation_refs is built.citation_refs


def test_answer_of_copies_the_timings_and_none_is_new_timings() -> None:
    values = _values()
    t = Timings(*(float(i) for i in range(len(dataclasses.fields(Timings)))))
    values["timings"] = t
    c = answer_of(*values.values()).timings  # type: ignore[arg-type]
    assert c == t and c is not t and repr(c) == repr(t)
    values["timings"] = None
    a, b = answer_of(*values.values()), answer_of(*values.values())  # type: ignore[arg-type]
    assert a.timings == Timings() and a.timings is not b.timings
