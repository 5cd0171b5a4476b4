"""The chat-chunk interpreter through the public sans-I/O entry points (spec-driven).

Streams are built by hand in the shapes the providers document (tests/_streams.py);
expected values come from DESIGN.md's event table and issue 2, not from the code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamcite import Event
from streamcite.core.api import ChatStreamParser
from tests._upstream import chunk

try:
    import _streams as S
except ImportError:  # tests/ imported as a package
    from tests import _streams as S

from streamcite import CitedAnswer, aiter_events, iter_events
from streamcite.events import (
    CitationRefEvent,
    CitationsEvent,
    DoneEvent,
    ErrorEvent,
    FinishEvent,
    MetaEvent,
    TokenEvent,
    UsageEvent,
    event_to_json,
)
from streamcite.models import Citation, Usage


def run(data: bytes | Sequence[bytes], **kw: Any) -> list[Any]:
    """Events of the stream; given whole bytes, also checks that reading them whole, one
    SSE block per read and one byte per read all give the same events."""
    if not isinstance(data, bytes):
        return list(iter_events(list(data), **kw))
    results = {
        name: list(iter_events(feeds, **kw)) for name, feeds in S.read_patterns(data).items()
    }
    whole = S.normalise(results["whole"])
    for name, events in results.items():
        assert S.normalise(events) == whole, f"{name} reads differ from one whole read"
    return results["whole"]


def of(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def answer_of(events: list[Any]) -> CitedAnswer:
    assert isinstance(events[-1], DoneEvent)
    return events[-1].answer


def texts(events: list[Any], index: int = 0) -> list[str]:
    return [e.text for e in of(events, TokenEvent) if e.index == index]


def errors(events: list[Any]) -> list[ErrorEvent]:
    return of(events, ErrorEvent)


def assert_done_once_and_last(events: list[Any]) -> None:
    assert isinstance(events[-1], DoneEvent)
    assert len(of(events, DoneEvent)) == 1


MAG_DELTAS = [
    "L'insegnamento",
    " della Chiesa",
    " sulla fede e la morale è radicato nella Scrittura",
    " [",
    "1",
    "]",
    " e nella Tradizione",
    " [2][3].",
    " Così",
    " insegna",
    " il Concilio [3",
    ", 2].",
]
MAG_TEXT = "".join(MAG_DELTAS)


# ------------------------------------------------------------------------------------------
# Magisterium: citations on the finish chunk
# ------------------------------------------------------------------------------------------


def test_magisterium_stream_events() -> None:
    events = run(S.magisterium_stream(MAG_DELTAS, id="chatcmpl-mag-1", model="magisterium-1"))
    assert_done_once_and_last(events)
    assert errors(events) == []

    meta = of(events, MetaEvent)
    assert len(meta) == 1
    assert events[0] is meta[0]
    assert (meta[0].id, meta[0].model, meta[0].created) == (
        "chatcmpl-mag-1",
        "magisterium-1",
        S.CREATED,
    )

    # Every non-empty delta.content, as received, in order, never coalesced.
    assert texts(events) == MAG_DELTAS
    assert all(e.index == 0 for e in of(events, TokenEvent))

    assert [(f.index, f.reason) for f in of(events, FinishEvent)] == [(0, "stop")]

    cites = of(events, CitationsEvent)
    assert len(cites) == 1
    expected = [S.citation_dict(c) for c in S.MAGISTERIUM_CITATIONS]
    assert [c.to_dict() for c in cites[0].citations] == expected

    # citations/finish come after the last token and before done.
    last_token = max(i for i, e in enumerate(events) if isinstance(e, TokenEvent))
    assert events.index(cites[0]) > last_token
    assert events.index(of(events, FinishEvent)[0]) > last_token

    ans = answer_of(events)
    assert ans.text == MAG_TEXT
    assert ans.display_text == MAG_TEXT  # keep mode
    assert ans.finish_reason == "stop"
    assert ans.complete is True
    assert ans.id == "chatcmpl-mag-1" and ans.model == "magisterium-1"
    assert [c.to_dict() for c in ans.citations] == expected
    assert ans.errors == []


def test_magisterium_citation_absent_fields_are_none() -> None:
    events = run(S.magisterium_stream(["Testo [1]."]))
    first = of(events, CitationsEvent)[0].citations[0]
    assert isinstance(first, Citation)
    assert first.cited_text_heading is None
    assert first.document_year is None
    assert first.source_url is None
    assert first.document_index == 0
    assert first.document_reference == "34"
    assert answer_of(events).citation_for(1) == first


def test_magisterium_footnote_refs() -> None:
    events = run(S.magisterium_stream(MAG_DELTAS))
    refs = [(r.number, r.document_index, r.offset, r.index) for r in of(events, CitationRefEvent)]
    o1 = MAG_TEXT.index("[1]")
    o23 = MAG_TEXT.index("[2][3]")
    o32 = MAG_TEXT.index("[3, 2]")
    assert refs == [
        (1, 0, o1, 0),
        (2, 1, o23, 0),
        (3, 2, o23 + 3, 0),
        (3, 2, o32, 0),
        (2, 1, o32, 0),
    ]
    ans = answer_of(events)
    assert [(r.number, r.document_index, r.offset) for r in ans.citation_refs if r.index == 0] == [
        (n, d, o) for n, d, o, _ in refs
    ]
    assert list(ans.dangling_refs) == []
    assert list(ans.uncited_documents) == []


def test_dangling_refs_and_uncited_documents() -> None:
    deltas = ["Primo [1].", " Secondo [4].", " Terzo [4, 1]."]
    events = run(S.magisterium_stream(deltas))  # citations: document_index 0, 1, 2
    ans = answer_of(events)
    assert set(ans.dangling_refs) == {4}
    assert set(ans.uncited_documents) == {1, 2}


def test_citations_on_a_chunk_other_than_finish() -> None:
    cites = S.MAGISTERIUM_CITATIONS[:2]
    stream = b"".join(
        [
            S.frame(S.chunk("Uno [1]", extra={"citations": cites})),
            S.frame(S.chunk(" due [2].")),
            S.frame(S.chunk(finish_reason="stop")),
            S.done_frame(),
        ]
    )
    events = run(stream)
    assert errors(events) == []
    ev = of(events, CitationsEvent)
    assert len(ev) == 1
    assert [c.to_dict() for c in ev[0].citations] == [S.citation_dict(c) for c in cites]
    assert [c.document_index for c in answer_of(events).citations] == [0, 1]
    assert list(answer_of(events).dangling_refs) == []


def test_invalid_citation_items_are_reported_and_valid_ones_kept() -> None:
    good0, good1 = S.MAGISTERIUM_CITATIONS[0], S.MAGISTERIUM_CITATIONS[1]
    bad = [
        42,
        "not an object",
        {"cited_text": "x", "document_index": "zero"},
        {"cited_text": "y", "document_title": ["not", "a", "string"], "document_index": 5},
    ]
    cites = [good0, *bad, good1]
    events = run(S.magisterium_stream(["Uno [1] e [2]."], citations=cites))
    errs = [e for e in errors(events) if e.code == "bad_citations"]
    assert errs, errors(events)
    ans = answer_of(events)
    assert [c.to_dict() for c in ans.citations] == [S.citation_dict(good0), S.citation_dict(good1)]
    assert ans.text == "Uno [1] e [2]."
    assert ans.complete is True
    assert any(e.code == "bad_citations" for e in ans.errors)


def test_citations_field_of_the_wrong_type_is_an_error_not_a_crash() -> None:
    stream = b"".join(
        [
            S.frame(S.chunk("Testo.")),
            S.frame(S.chunk(finish_reason="stop", extra={"citations": {"0": "oops"}})),
            S.done_frame(),
        ]
    )
    events = run(stream)
    assert_done_once_and_last(events)
    assert [e.code for e in errors(events)] in (["bad_citations"], ["bad_chunk"])
    assert answer_of(events).text == "Testo."
    assert answer_of(events).citations == []


# ------------------------------------------------------------------------------------------
# OpenAI usage chunk, Azure preamble
# ------------------------------------------------------------------------------------------


def test_openai_usage_chunk() -> None:
    events = run(S.openai_stream(["Hello", ",", " world", "!"], usage=(21, 9, 30)))
    assert_done_once_and_last(events)
    assert errors(events) == []
    assert texts(events) == ["Hello", ",", " world", "!"]
    usage = of(events, UsageEvent)
    assert [(u.prompt_tokens, u.completion_tokens, u.total_tokens) for u in usage] == [(21, 9, 30)]
    ans = answer_of(events)
    assert ans.usage == Usage(21, 9, 30)
    assert ans.finish_reason == "stop"
    assert ans.complete is True


def test_openai_usage_null_on_every_chunk_until_the_usage_chunk() -> None:
    # With stream_options.include_usage, OpenAI puts "usage": null on every chunk.
    parts = [S.frame(S.chunk(d, extra={"usage": None})) for d in ["Hel", "lo"]]
    parts.append(S.frame(S.chunk(finish_reason="stop", extra={"usage": None})))
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    parts.append(S.frame({"id": "c", "choices": [], "usage": usage}))
    parts.append(S.done_frame())
    events = run(b"".join(parts))
    assert errors(events) == []
    assert [
        (u.prompt_tokens, u.completion_tokens, u.total_tokens) for u in of(events, UsageEvent)
    ] == [(5, 2, 7)]
    assert texts(events) == ["Hel", "lo"]


def test_ascii_escaped_json_with_spaces_gives_the_same_tokens() -> None:
    # Python servers send json.dumps output: \uXXXX escapes (surrogate pairs for emoji)
    # and ", " / ": " separators.
    import json

    deltas = ['é "q"', " 😀", " \\ back", "\nnew [1]", "\u2028"]
    parts = [b"data: " + json.dumps(S.chunk(d)).encode() + b"\n\n" for d in deltas]
    fin = S.chunk(finish_reason="stop", extra={"citations": S.MAGISTERIUM_CITATIONS})
    parts.append(b"data: " + json.dumps(fin).encode() + b"\n\n")
    parts.append(S.done_frame())
    raw = b"".join(parts)
    assert b"\\ud83d\\ude00" in raw and b"\\u00e9" in raw
    events = run(raw)
    assert errors(events) == []
    assert texts(events) == deltas
    assert (
        answer_of(events).citations[0].document_author
        == S.MAGISTERIUM_CITATIONS[0]["document_author"]
    )


def test_openai_without_usage_leaves_usage_none() -> None:
    events = run(S.openai_stream(["Hi"], usage=None))
    assert of(events, UsageEvent) == []
    assert answer_of(events).usage is None


def test_azure_preamble_with_empty_choices_is_handled() -> None:
    deltas = ["Azure", " says", " hi [1]"]
    events = run(S.azure_stream(deltas, id="chatcmpl-azure-9", model="gpt-4o-2024-05-13"))
    assert_done_once_and_last(events)
    assert errors(events) == []
    assert texts(events) == deltas
    ans = answer_of(events)
    # The preamble's empty id/model are not the completion's; the real ones are kept
    # (the completion id is e.g. Wikit's query id).
    assert ans.id == "chatcmpl-azure-9"
    assert ans.model == "gpt-4o-2024-05-13"
    assert ans.complete is True
    assert [(r.number, r.offset) for r in of(events, CitationRefEvent)] == [
        (1, len("Azure says hi "))
    ]


# ------------------------------------------------------------------------------------------
# Perplexity: top-level URL citations and search_results, repeated on every chunk
# ------------------------------------------------------------------------------------------

URLS = ["https://en.wikipedia.org/wiki/Rome", "https://www.britannica.com/place/Rome"]


def test_perplexity_url_citations_emitted_once() -> None:
    deltas = ["Rome", " is the capital", " of Italy [1]", " [2]."]
    events = run(S.perplexity_stream(deltas, URLS))
    assert_done_once_and_last(events)
    assert errors(events) == []
    ev = of(events, CitationsEvent)
    assert len(ev) == 1  # repeated on every chunk, but the set does not change
    expected = [
        Citation(source_url=URLS[0], document_index=0),
        Citation(source_url=URLS[1], document_index=1),
    ]
    assert ev[0].citations == expected
    ans = answer_of(events)
    assert ans.citations == expected
    assert texts(events) == deltas
    assert list(ans.dangling_refs) == [] and list(ans.uncited_documents) == []


def test_perplexity_search_results() -> None:
    results = [
        {"title": "Rome - Wikipedia", "url": URLS[0], "date": "2024-05-01", "last_updated": None},
        {"title": "Rome | Britannica", "url": URLS[1], "date": None},
    ]
    events = run(S.perplexity_stream(["Roma [2]."], [], search_results=results))
    ans = answer_of(events)
    assert [(c.document_title, c.source_url, c.document_index) for c in ans.citations] == [
        ("Rome - Wikipedia", URLS[0], 0),
        ("Rome | Britannica", URLS[1], 1),
    ]
    assert len(of(events, CitationsEvent)) == 1
    assert set(ans.uncited_documents) == {0}


def test_perplexity_citations_and_search_results_together() -> None:
    results = [{"title": "A", "url": URLS[0]}, {"title": "B", "url": URLS[1]}]
    events = run(S.perplexity_stream(["x [1]", " y [2]"], URLS, search_results=results))
    ans = answer_of(events)
    assert [c.source_url for c in ans.citations] == URLS
    assert [c.document_index for c in ans.citations] == [0, 1]
    assert len(of(events, CitationsEvent)) == 1
    assert errors(events) == []


def test_citation_set_change_emits_again_and_last_non_empty_set_is_kept() -> None:
    more = [*URLS, "https://www.vatican.va/"]
    stream = b"".join(
        [
            S.frame(S.chunk("a", extra={"citations": URLS[:1]})),
            S.frame(S.chunk("b", extra={"citations": URLS[:1]})),
            S.frame(S.chunk("c", extra={"citations": more})),
            S.frame(S.chunk("d", extra={"citations": more})),
            S.frame(S.chunk("e", extra={"citations": []})),
            S.frame(S.chunk(finish_reason="stop", extra={"citations": []})),
            S.done_frame(),
        ]
    )
    events = run(stream)
    ev = of(events, CitationsEvent)
    assert [[c.source_url for c in e.citations] for e in ev] == [URLS[:1], more]
    assert [c.source_url for c in answer_of(events).citations] == more


# ------------------------------------------------------------------------------------------
# Faults: provider error payloads, event: error frames, bad JSON, wrong shapes
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("err", "code"),
    [
        ({"type": "rate_limit_error", "code": "rate_limit_exceeded"}, "rate_limit_exceeded"),
        ({"type": "server_error", "code": None}, "server_error"),
        ({"type": None, "code": None}, "upstream_error"),
    ],
)
def test_mid_stream_provider_error_payload(err: dict[str, Any], code: str) -> None:
    payload = S.provider_error("The server had an error processing your request.", **err)
    stream = S.frame(S.chunk("Parziale")) + S.frame(S.chunk(" risposta")) + S.frame(payload)
    events = run(stream)
    assert_done_once_and_last(events)
    provider = [e for e in errors(events) if e.code == code]
    assert len(provider) == 1
    assert provider[0].stage == "chunk"
    assert provider[0].message == "The server had an error processing your request."
    ans = answer_of(events)
    assert ans.text == "Parziale risposta"  # faults never lose data
    assert provider[0] in ans.errors
    # The error comes after the tokens that preceded it.
    assert events.index(provider[0]) > max(
        i for i, e in enumerate(events) if isinstance(e, TokenEvent)
    )


def test_provider_error_with_only_message() -> None:
    stream = S.frame(S.chunk("a")) + S.frame({"error": {"message": "boom"}}) + S.done_frame()
    events = run(stream)
    errs = errors(events)
    assert [(e.code, e.stage, e.message) for e in errs] == [("upstream_error", "chunk", "boom")]


def test_provider_error_with_numeric_code_and_string_error() -> None:
    # OpenRouter sends {"error": {"code": 502, "message": ...}} mid-stream.
    events = run(S.frame(S.chunk("a")) + S.frame({"error": {"code": 502, "message": "Bad gw"}}))
    errs = [e for e in errors(events) if e.code != "truncated"]
    assert len(errs) == 1
    assert isinstance(errs[0].code, str) and errs[0].code
    assert errs[0].message == "Bad gw" and errs[0].stage == "chunk"
    events = run(S.frame(S.chunk("a")) + S.frame({"error": "rate limited"}) + S.done_frame())
    errs = errors(events)
    assert len(errs) == 1
    assert errs[0].stage == "chunk" and "rate limited" in errs[0].message
    assert answer_of(events).text == "a"


def test_error_key_null_is_not_an_error() -> None:
    events = run(S.frame(S.chunk("a", extra={"error": None})) + S.done_frame())
    assert errors(events) == []
    assert texts(events) == ["a"]


def test_event_error_frame() -> None:
    stream = (
        S.frame(S.chunk("Ciao"))
        + S.error_event_frame("Overloaded")
        + S.frame(S.chunk(" mondo", finish_reason="stop"))
        + S.done_frame()
    )
    events = run(stream)
    assert_done_once_and_last(events)
    errs = errors(events)
    assert len(errs) == 1
    assert errs[0].stage == "sse"
    assert "Overloaded" in errs[0].message
    # The error frame's data is not content, and the stream goes on.
    assert texts(events) == ["Ciao", " mondo"]
    assert answer_of(events).complete is True


def test_invalid_json_chunk_is_an_error_and_stream_goes_on() -> None:
    stream = (
        S.frame(S.chunk("Prima"))
        + S.frame(b'{"id": "x", "choices": [{"index": 0, "delta": {"content": "lost"')
        + S.frame(S.chunk(" dopo [1]"))
        + S.frame(S.chunk(finish_reason="stop", extra={"citations": S.MAGISTERIUM_CITATIONS}))
        + S.done_frame()
    )
    events = run(stream)
    assert_done_once_and_last(events)
    errs = errors(events)
    assert [(e.code, e.stage) for e in errs] == [("invalid_json", "chunk")]
    assert texts(events) == ["Prima", " dopo [1]"]
    ans = answer_of(events)
    assert ans.text == "Prima dopo [1]"
    assert len(ans.citations) == 3
    assert ans.complete is True
    assert [(r.number, r.offset) for r in of(events, CitationRefEvent)] == [(1, len("Prima dopo "))]


@pytest.mark.parametrize(
    "payload",
    [
        b"[1, 2, 3]",
        b'"a string"',
        b"42",
        b"null",
        b'{"choices": "not a list"}',
        b'{"choices": [5]}',
        b'{"choices": [{"index": 0, "delta": "text"}]}',
        b'{"choices": [{"index": 0, "delta": {"content": 5}}]}',
        b'{"choices": [{"index": "zero", "delta": {"content": "x"}}]}',
    ],
)
def test_chunk_of_the_wrong_shape_is_bad_chunk(payload: bytes) -> None:
    stream = (
        S.frame(S.chunk("ok"))
        + S.frame(payload)
        + S.frame(S.chunk(" still ok", finish_reason="stop"))
        + S.done_frame()
    )
    events = run(stream)
    assert_done_once_and_last(events)
    errs = errors(events)
    assert [(e.code, e.stage) for e in errs] == [("bad_chunk", "chunk")], errs
    assert answer_of(events).text == "ok still ok"


def test_errors_are_recorded_in_the_answer_in_order() -> None:
    stream = (
        S.frame(b"{broken")
        + S.frame(b"[]")
        + S.frame(S.provider_error("quota", code="insufficient_quota"))
    )
    events = run(stream)
    ans = answer_of(events)
    assert ans.errors == errors(events)
    assert [e.code for e in ans.errors][:3] == ["invalid_json", "bad_chunk", "insufficient_quota"]


# ------------------------------------------------------------------------------------------
# End of stream: [DONE], finish_reason, truncation
# ------------------------------------------------------------------------------------------


def _truncated(events: list[Any]) -> list[ErrorEvent]:
    return [e for e in errors(events) if e.code == "truncated"]


def test_truncated_mid_chunk() -> None:
    full = S.magisterium_stream(["Alpha", " beta", " gamma [1]"])
    cut = full.index(b" gamma") + 3  # inside the third content chunk's JSON
    events = run(full[:cut])
    assert_done_once_and_last(events)
    tr = _truncated(events)
    assert len(tr) == 1
    assert tr[0].stage == "sse" and tr[0].retryable is True
    ans = answer_of(events)
    assert ans.text == "Alpha beta"
    assert ans.complete is False
    assert tr[0] in ans.errors


def test_truncated_at_chunk_boundary() -> None:
    full = S.magisterium_stream(["Alpha", " beta"], with_finish=False, with_done=False)
    events = run(full)
    assert [e.stage for e in _truncated(events)] == ["sse"]
    assert answer_of(events).text == "Alpha beta"
    assert answer_of(events).complete is False


def test_truncated_before_final_blank_line() -> None:
    # The last chunk's block is never terminated: it is discarded, and that is truncation.
    full = S.frame(S.chunk("Alpha")) + b"data: " + orjson.dumps(S.chunk(" beta")) + b"\n"
    events = run(full)
    assert len(_truncated(events)) == 1
    assert answer_of(events).text == "Alpha"


def test_empty_body_is_truncated() -> None:
    events = run([])
    assert [type(e) for e in events] == [ErrorEvent, DoneEvent]
    assert events[0].code == "truncated"
    assert answer_of(events).complete is False


def test_finish_reason_without_done_is_complete() -> None:
    events = run(S.magisterium_stream(["Alpha [1]"], with_done=False))
    assert errors(events) == []
    assert answer_of(events).complete is True
    assert len(of(events, CitationsEvent)) == 1


def test_done_without_finish_reason_is_complete() -> None:
    events = run(S.magisterium_stream(["Alpha"], with_finish=False))
    assert errors(events) == []
    assert answer_of(events).complete is True
    assert answer_of(events).finish_reason is None


def test_cut_inside_the_final_done_after_finish_is_not_truncation() -> None:
    # finish_reason (and the citations) arrived; only the [DONE] sentinel was cut. The
    # brief defines "truncated" as EOF with neither [DONE] nor a finish_reason: a
    # retryable truncation error here would make a client retry a complete answer.
    full = S.magisterium_stream(["Alpha [1]"])
    assert full.endswith(b"data: [DONE]\n\n")
    for cut in (full[:-1], full[:-5], full[: -len(b"[DONE]\n\n")]):
        events = run(cut)
        assert _truncated(events) == [], cut[-20:]
        ans = answer_of(events)
        assert ans.complete is True
        assert len(ans.citations) == 3


def test_done_without_space_after_colon() -> None:
    stream = S.frame(S.chunk("a")) + b"data:[DONE]\n\n" + S.frame(S.chunk("b"))
    events = run(stream)
    assert texts(events) == ["a"]
    assert errors(events) == []
    assert answer_of(events).complete is True


def test_finish_reason_length() -> None:
    events = run(S.magisterium_stream(["Alpha"], finish_reason="length"))
    assert [(f.index, f.reason) for f in of(events, FinishEvent)] == [(0, "length")]
    assert answer_of(events).finish_reason == "length"
    assert errors(events) == []


def test_chunks_after_done_are_ignored() -> None:
    stream = S.frame(S.chunk("a")) + S.done_frame() + S.frame(S.chunk("b"))
    events = run(stream)
    assert texts(events) == ["a"]
    assert_done_once_and_last(events)


# ------------------------------------------------------------------------------------------
# Shape details that real providers send
# ------------------------------------------------------------------------------------------


def test_empty_and_null_content_give_no_token() -> None:
    stream = b"".join(
        [
            S.frame(S.chunk(role="assistant", content="")),
            S.frame(S.chunk(content=None)),
            S.frame({"id": "c", "choices": [{"index": 0, "delta": {"content": None}}]}),
            S.frame(S.chunk("x")),
            S.frame(S.chunk("")),
            S.frame(S.chunk("y")),
            S.frame(S.chunk(finish_reason="stop")),
            S.done_frame(),
        ]
    )
    events = run(stream)
    assert texts(events) == ["x", "y"]
    assert errors(events) == []


def test_tokens_are_never_coalesced_even_in_one_read() -> None:
    deltas = [" ", "a", " ", "b", "\n", "é", "😀"]
    events = run(S.openai_stream(deltas))  # one feed holding every chunk
    assert texts(events) == deltas


def test_whitespace_only_tokens_are_tokens() -> None:
    events = run(S.openai_stream(["\n\n", " ", "\t"]))
    assert texts(events) == ["\n\n", " ", "\t"]


def test_multi_line_data_payload_is_one_json_chunk() -> None:
    body = orjson.dumps(S.chunk("multi")).decode()
    mid = body.index('"choices"')
    stream = (
        f"data: {body[:mid]}\ndata: {body[mid:]}\n\n".encode()
        + S.frame(S.chunk(finish_reason="stop"))
        + S.done_frame()
    )
    events = run(stream)
    assert errors(events) == []
    assert texts(events) == ["multi"]


def test_comments_and_no_space_data_and_explicit_message_event() -> None:
    stream = (
        b": OPENROUTER PROCESSING\n\n"
        + b"data:"
        + orjson.dumps(S.chunk("one"))
        + b"\n\n"
        + b"event: message\nid: 17\ndata: "
        + orjson.dumps(S.chunk(" two"))
        + b"\n\n"
        + b": OPENROUTER PROCESSING\n\n"
        + S.frame(S.chunk(finish_reason="stop"))
        + S.done_frame()
    )
    events = run(stream)
    assert errors(events) == []
    assert texts(events) == ["one", " two"]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_end_kinds_give_identical_events(eol: bytes) -> None:
    ref = S.normalise(run(S.magisterium_stream(MAG_DELTAS)))
    assert S.normalise(run(S.magisterium_stream(MAG_DELTAS, eol=eol))) == ref


def test_bom_at_stream_start_is_ignored() -> None:
    ref = S.normalise(run(S.magisterium_stream(MAG_DELTAS)))
    assert S.normalise(run(b"\xef\xbb\xbf" + S.magisterium_stream(MAG_DELTAS))) == ref


def test_multiple_choices() -> None:
    stream = b"".join(
        [
            S.frame(S.chunk("A0", index=0)),
            S.frame(S.chunk("B0", index=1)),
            S.frame(S.chunk(" [1]", index=1)),
            S.frame(S.chunk(" A1 [2]", index=0)),
            S.frame(S.chunk(" B1", index=1, finish_reason="stop")),
            S.frame(S.chunk(index=0, finish_reason="length")),
            S.done_frame(),
        ]
    )
    events = run(stream)
    assert texts(events, 0) == ["A0", " A1 [2]"]
    assert texts(events, 1) == ["B0", " [1]", " B1"]
    assert {(f.index, f.reason) for f in of(events, FinishEvent)} == {(0, "length"), (1, "stop")}
    refs = {(r.index, r.number, r.offset) for r in of(events, CitationRefEvent)}
    assert refs == {(1, 1, 3), (0, 2, 6)}
    ans = answer_of(events)
    assert ans.text == "A0 A1 [2]"
    assert ans.finish_reason == "length"


# ------------------------------------------------------------------------------------------
# Wire form
# ------------------------------------------------------------------------------------------


def test_every_event_serialises_with_type_first() -> None:
    stream = S.frame(b"{bad") + S.magisterium_stream(MAG_DELTAS)
    events = run(S.openai_stream(["a"])) + run(stream)
    for e in events:
        wire = event_to_json(e)
        d = orjson.loads(wire)
        assert next(iter(d)) == "type"
        assert d["type"] == e.type
        assert d == e.to_dict()
    done = orjson.loads(event_to_json(events[-1]))
    assert done["answer"]["text"] == MAG_TEXT
    assert done["answer"]["citations"][0]["cited_text_heading"] is None  # null, not absent


# ------------------------------------------------------------------------------------------
# aiter_events and invariance under re-chunking of the bytes
# ------------------------------------------------------------------------------------------


async def _agen(feeds: list[bytes]) -> AsyncIterator[bytes]:
    for f in feeds:
        yield f


async def test_aiter_events_matches_iter_events() -> None:
    raw = S.magisterium_stream(MAG_DELTAS) + S.frame(b"{bad") + S.error_event_frame()
    feeds = S.split_at(raw, range(0, len(raw), 7))
    got = [e async for e in aiter_events(_agen(feeds), marker_mode="strip")]
    assert S.normalise(got) == S.normalise(run(raw, marker_mode="strip"))
    assert isinstance(got[-1], DoneEvent)


async def test_aiter_events_truncated() -> None:
    raw = S.magisterium_stream(["Alpha", " beta"])[:-40]
    got = [e async for e in aiter_events(_agen([raw]))]
    assert S.normalise(got) == S.normalise(run(raw))
    assert any(isinstance(e, ErrorEvent) and e.code == "truncated" for e in got)


_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_REALISTIC = [
    S.magisterium_stream(MAG_DELTAS),
    S.openai_stream(["Hello", " wörld", " 😀", "[1", "]"]),
    S.azure_stream(["Azure", " [", "2", "]", " è"]),
    S.perplexity_stream(["Roma [1]", " è [2]"], URLS),
    S.frame(S.chunk("a [1"))
    + S.frame(b"{bad")
    + S.error_event_frame()
    + S.frame(S.provider_error("x", code="c"))
    + S.frame(S.chunk("]")),
    S.frame(S.chunk("a"))
    + S.frame(S.chunk("b"))
    + S.frame(b"[1, 2]")
    + S.frame(b"null")
    + S.frame(b'{"choices": [7]}')
    + S.frame(S.chunk("c", finish_reason="stop"))
    + S.done_frame(),
]


@_SETTINGS
@given(
    which=st.sampled_from(range(len(_REALISTIC))),
    data=st.data(),
    mode=st.sampled_from(["keep", "strip"]),
)
def test_any_split_of_realistic_streams_yields_the_same_events(
    which: int, data: st.DataObject, mode: str
) -> None:
    raw = _REALISTIC[which]
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]  # truncated anywhere
    if data.draw(st.integers(0, 9)) == 0:
        feeds = [raw[i : i + 1] for i in range(len(raw))]
    else:
        feeds = S.split_at(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=20)))
    if data.draw(st.booleans()):
        # empty reads between the pieces (transports may yield them)
        feeds = [x for f in feeds for x in (f, b"")]
    assert S.normalise(run(feeds, marker_mode=mode)) == S.normalise(run(raw, marker_mode=mode))


# -- regressions found in review (each failed before its fix) ---------------------------


def _splits(data: bytes) -> list[list[bytes]]:
    """Whole, byte by byte, and cut at 7."""
    return [[data], [data[i : i + 1] for i in range(len(data))], [data[:7], data[7:]]]


def test_parser_reports_oversize_and_keeps_tokens_however_split() -> None:
    data = chunk("a") + b"data: " + b"x" * 300 + b"\n\n" + chunk("b", "stop") + b"data: [DONE]\n\n"
    for parts in _splits(data):
        p = ChatStreamParser(max_event_size=200)
        events: list[Event] = []
        for part in parts:
            events += p.feed(part)
        events += p.close()
        assert [e.type for e in events if e.type in ("token", "error")] == [
            "token",
            "error",
            "token",
        ]
        assert p.answer.text == "ab"


@pytest.mark.parametrize("index", [b"null", b"false", b"0.0", b'"0"'])
def test_choice_index_not_an_int_is_bad_chunk_however_split(index: bytes) -> None:
    bad = b'data: {"choices":[{"index":' + index + b',"delta":{"content":"X"}}]}\n\n'
    data = chunk("a") + chunk("b") + bad + chunk("c", "stop") + b"data: [DONE]\n\n"
    for parts in _splits(data):
        events = list(iter_events(parts))
        assert [e.code for e in events if isinstance(e, ErrorEvent)] == ["bad_chunk"]
        assert events[-1].answer.text == "abc"  # type: ignore[union-attr]


def test_anything_after_done_is_ignored_however_split() -> None:
    err = b'event: error\ndata: {"error": {"message": "late"}}\n\n'
    data = chunk("a") + chunk("b", "stop") + b"data: [DONE]\n\n" + err + chunk("zzz")
    for parts in _splits(data):
        events = list(iter_events(parts))
        assert not [e for e in events if isinstance(e, ErrorEvent)]
        assert events[-1].answer.text == "ab"  # type: ignore[union-attr]
