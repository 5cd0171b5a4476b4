"""The four non-chat dialects (tests/fixtures/dialects/, see SOURCES.md): every stream gives
the documented events, spans that slice the answer text exactly (characters and UTF-16),
citations as soon as they arrive, typed errors with the right ``retryable`` and the
answer cut, the chat vocabulary in ``finish`` with the provider's own value beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from streamcite import iter_events
from streamcite.core.api import ChatStreamParser, answer_from_response
from streamcite.core.dialects import DIALECTS, detect_body, detect_stream
from streamcite.core.events import (
    CitationsEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    FinishEvent,
    TokenEvent,
)
from streamcite.core.models import CitedAnswer

FIXTURES = Path(__file__).parent / "fixtures" / "dialects"
STREAMS = sorted(p.name for p in FIXTURES.glob("*.sse"))


def events_of(name: str, dialect: str = "auto") -> list[Event]:
    return list(iter_events([(FIXTURES / name).read_bytes()], dialect=dialect))  # type: ignore[arg-type]


def answer_of(events: list[Event]) -> CitedAnswer:
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done.answer


def utf16(text: str, char: int) -> int:
    return len(text[:char].encode("utf-16-le")) // 2


def assert_spans_exact(a: CitedAnswer) -> None:
    """Every span slices the text; its UTF-16 offsets are the same place in JavaScript."""
    js = a.text.encode("utf-16-le")
    for sp in a.citation_spans:
        assert sp.start is not None and sp.end is not None
        assert 0 <= sp.start <= sp.end <= len(a.text)
        assert sp.start_utf16 == utf16(a.text, sp.start)
        assert sp.end_utf16 == utf16(a.text, sp.end)
        assert (
            js[2 * sp.start_utf16 : 2 * sp.end_utf16].decode("utf-16-le")
            == (a.text[sp.start : sp.end])
        )
        assert sp.document_index is not None and 0 <= sp.document_index < len(a.citations)


def spans(a: CitedAnswer) -> list[tuple[int | None, str]]:
    return [(s.document_index, a.text[s.start : s.end]) for s in a.citation_spans]


def test_every_fixture_is_non_ascii_somewhere_and_detected() -> None:
    for name in STREAMS:
        data = (FIXTURES / name).read_bytes()
        dialect = name.split("__")[0]
        assert dialect in DIALECTS
        first = data.split(b"\n\n")[0]
        ev_name = b""
        payload = b""
        for line in first.splitlines():
            if line.startswith(b"event: "):
                ev_name = line[7:].strip()
            elif line.startswith(b"data: "):
                payload = line[6:].strip()
        assert detect_stream(ev_name, payload) == dialect, name
        p = ChatStreamParser()
        p.feed(data)
        assert p.dialect == dialect


@pytest.mark.parametrize("name", STREAMS)
def test_auto_equals_the_named_dialect(name: str) -> None:
    auto = events_of(name)
    named = events_of(name, name.split("__")[0])
    assert [e.to_dict() for e in auto[:-1]] == [e.to_dict() for e in named[:-1]]
    assert answer_of(auto).text == answer_of(named).text


@pytest.mark.parametrize("name", STREAMS)
def test_spans_slice_the_text_exactly(name: str) -> None:
    events = events_of(name)
    a = answer_of(events)
    assert_spans_exact(a)
    # The text is exactly the tokens joined; done is last, once.
    assert a.text == "".join(e.text for e in events if isinstance(e, TokenEvent) and e.index == 0)
    assert [e.type for e in events].count("done") == 1


def test_responses_web_search() -> None:
    events = events_of("responses__web_search_nonascii.sse")
    a = answer_of(events)
    assert (
        a.text
        == "Le café de Tel Aviv — תל אביב — ouvre à 8 h ☕ [1]. Les croissants 🥐 sont faits maison [1][2]."
    )
    assert (a.id, a.model, a.finish_reason, a.complete) == (
        "resp_dcore_1",
        "gpt-5-dcore",
        "stop",
        True,
    )
    url = "https://cafe.example/tel-aviv?utm_source=openai"
    # One citation per distinct source: the two url_citation annotations share a URL.
    assert [(c.document_index, c.source_url, c.document_title) for c in a.citations] == [
        (0, url, "Café Dizengoff — horaires"),
        (1, None, "menu.txt"),
    ]
    assert a.citations[1].provider_metadata == {
        "file_id": "file-dcore42",
        "index": 85,
        "type": "file_citation",
    }
    assert spans(a) == [
        (0, "Le café de Tel Aviv — תל אביב — ouvre à 8 h ☕"),
        (0, "Les croissants 🥐 sont faits maison"),
    ]
    # 🥐 is two UTF-16 units: the second span's UTF-16 end is one past its character end.
    assert (a.citation_spans[1].end, a.citation_spans[1].end_utf16) == (85, 86)
    second = a.text.index("[1][2]")
    assert [(r.number, r.offset) for r in a.citation_refs] == [
        (1, a.text.index("[1]")),
        (1, second),
        (2, second + 3),
    ]
    assert a.usage is not None and (a.usage.prompt_tokens, a.usage.total_tokens) == (31, 71)
    fin = [e for e in events if isinstance(e, FinishEvent)]
    assert [(f.reason, f.raw_reason) for f in fin] == [("stop", "completed")]
    assert not a.errors


def test_citations_arrive_mid_stream() -> None:
    """Live: a ``citations`` event before the text that follows the citation has streamed
    (Responses, Anthropic, Cohere: as the citation arrives; Gemini: as its grounding does)."""
    for name in (
        "responses__web_search_nonascii.sse",
        "anthropic__citations_nonascii.sse",
        "cohere__citations_nonascii.sse",
        "gemini__grounding_split_nonascii.sse",
    ):
        events = events_of(name)
        kinds = [e.type for e in events]
        first_cite = kinds.index("citations")
        last_token = len(kinds) - 1 - kinds[::-1].index("token")
        assert first_cite < last_token, name
        # Every citations event holds the whole list so far (consumers replace theirs).
        sizes = [len(e.citations) for e in events if isinstance(e, CitationsEvent)]
        assert sizes == sorted(sizes)


def test_responses_reasoning_and_function_call() -> None:
    a = answer_of(events_of("responses__reasoning_tool.sse"))
    assert a.reasoning_text == "**Météo** demandée: appeler l'outil ✓"
    assert [(t.id, t.name, t.arguments) for t in a.tool_calls] == [
        ("call_dcore_1", "météo", '{"ville":"Zürich","unités":"°C"}')
    ]
    assert (a.finish_reason, a.complete, a.text) == ("tool_calls", True, "")


def test_responses_refusal() -> None:
    events = events_of("responses__refusal.sse")
    a = answer_of(events)
    assert a.refusal == "Je ne peux pas aider à cela. 🙅"
    assert (a.finish_reason, a.complete) == ("refusal", True)


def test_responses_failed_mid_stream() -> None:
    events = events_of("responses__failed.sse")
    a = answer_of(events)
    errs = [e for e in events if isinstance(e, ErrorEvent)]
    # The error event and response.failed report one fault, once; retryable (server_error).
    assert [(e.code, e.retryable, e.stage) for e in errs] == [("server_error", True, "chunk")]
    assert (a.finish_reason, a.complete, a.text) == ("error", False, "Shalom שָׁלוֹם")
    fin = [e for e in events if isinstance(e, FinishEvent)]
    assert [(f.reason, f.raw_reason) for f in fin] == [("error", "failed")]


def test_anthropic_citations_thinking() -> None:
    events = events_of("anthropic__citations_nonascii.sse")
    a = answer_of(events)
    assert a.text == "Le mont Hermon (חרמון) culmine à 2 814 m 🏔️. Il est enneigé l'hiver [1]."
    assert a.reasoning_text == "L'utilisateur veut l'altitude… je cite la source."
    doc, web = a.citations
    assert (doc.document_index, doc.document_title, doc.cited_text, doc.source_url) == (
        0,
        "Géographie du Golan",
        "Le mont Hermon culmine à 2 814 mètres.",
        None,
    )
    assert doc.provider_metadata == {
        "type": "char_location",
        "document_index": 0,
        "start_char_index": 120,
        "end_char_index": 158,
        "file_id": None,
    }
    # Two citations_delta of one URL: one Citation (the first cited text; both on the spans).
    assert (web.document_index, web.source_url, web.document_title) == (
        1,
        "https://hermon.example/hiver",
        "Hermon en hiver",
    )
    assert web.cited_text == "En hiver, le sommet est couvert de neige ❄️."
    assert web.provider_metadata == {
        "type": "web_search_result_location",
        "encrypted_index": "EpMBCioIdcore",
    }
    # The span of each citation is the text block it belongs to, one per quoted passage:
    # the URL cited twice in one block keeps both of its passages.
    assert spans(a) == [
        (0, "Le mont Hermon (חרמון) culmine à 2 814 m 🏔️."),
        (1, " Il est enneigé l'hiver [1]."),
        (1, " Il est enneigé l'hiver [1]."),
    ]
    assert [s.cited_text for s in a.citation_spans] == [
        "Le mont Hermon culmine à 2 814 mètres.",
        "En hiver, le sommet est couvert de neige ❄️.",
        "Station de ski ouverte.",
    ]
    assert a.citation_spans[0].provider_metadata == doc.provider_metadata
    assert a.citation_spans[2].provider_metadata == {
        "type": "web_search_result_location",
        "encrypted_index": "EpMBCioIdcore2",
    }
    assert a.citation_spans[0].end_utf16 == a.citation_spans[0].end + 1  # 🏔 is astral
    assert a.usage is not None and (a.usage.prompt_tokens, a.usage.completion_tokens) == (412, 61)
    fin = [e for e in events if isinstance(e, FinishEvent)]
    assert [(f.reason, f.raw_reason) for f in fin] == [("stop", "end_turn")]
    assert [r.number for r in a.citation_refs] == [1]
    assert not a.errors and a.complete


def test_anthropic_tool_use() -> None:
    a = answer_of(events_of("anthropic__tool_use.sse"))
    assert [(t.id, t.name, t.arguments) for t in a.tool_calls] == [
        ("toolu_dcore_1", "météo", '{"ville": "Tel Aviv"}')
    ]
    assert (a.text, a.finish_reason, a.complete) == ("Je regarde 🔎", "tool_calls", True)


def test_anthropic_overloaded_mid_stream() -> None:
    events = events_of("anthropic__overloaded.sse")
    a = answer_of(events)
    errs = [e for e in events if isinstance(e, ErrorEvent)]
    assert [(e.code, e.status, e.retryable) for e in errs] == [("overloaded_error", 529, True)]
    assert (a.text, a.complete) == ("Voilà ce que", False)
    assert not [e for e in errs if e.code == "truncated"]


def test_anthropic_refusal() -> None:
    events = events_of("anthropic__refusal.sse")
    fin = [e for e in events if isinstance(e, FinishEvent)]
    assert [(f.reason, f.raw_reason) for f in fin] == [("refusal", "refusal")]
    assert answer_of(events).finish_reason == "refusal"


def test_gemini_grounding_split_and_bytes() -> None:
    events = events_of("gemini__grounding_split_nonascii.sse")
    a = answer_of(events)
    assert (
        a.text
        == "La tour Eiffel mesure 330 m 🗼. Elle a été construite en 1889 [1]. מגדל אייפל est à Paris."
    )
    assert [(c.document_index, c.source_url, c.document_title) for c in a.citations] == [
        (0, "https://tour.example/hauteur", "tour.example"),
        (1, "https://histoire.example/1889", "histoire.example"),
    ]
    # Byte offsets converted (🗼 is 4 bytes, é 2, Hebrew letters 2), startIndex 0 omitted.
    assert spans(a) == [
        (0, "La tour Eiffel mesure 330 m 🗼."),
        (1, "Elle a été construite en 1889 [1]."),
        (0, "Elle a été construite en 1889 [1]."),
        (1, "מגדל אייפל est à Paris."),
    ]
    assert a.citations[0].cited_text == "La tour Eiffel mesure 330 m 🗼."
    fin = [e for e in events if isinstance(e, FinishEvent)]
    assert [(f.reason, f.raw_reason) for f in fin] == [("stop", "STOP")]
    assert a.usage is not None and a.usage.total_tokens == 42
    assert [e.type for e in events].count("usage") == 1  # sent on every chunk, reported once
    assert not a.errors and a.complete


def test_gemini_thinking_and_function_call() -> None:
    a = answer_of(events_of("gemini__thinking_function.sse"))
    assert a.reasoning_text == "**Je dois** appeler météo… ville = Zürich"
    assert [(t.name, orjson.loads(t.arguments)) for t in a.tool_calls] == [
        ("météo", {"ville": "Zürich"})
    ]
    assert (a.finish_reason, a.complete) == ("tool_calls", True)


def test_gemini_error_object() -> None:
    events = events_of("gemini__error.sse")
    errs = [e for e in events if isinstance(e, ErrorEvent)]
    assert [(e.code, e.status, e.retryable) for e in errs] == [("RESOURCE_EXHAUSTED", 429, True)]
    assert not answer_of(events).complete


def test_gemini_blocked_prompt() -> None:
    events = events_of("gemini__blocked.sse")
    fin = [e for e in events if isinstance(e, FinishEvent)]
    assert [(f.reason, f.raw_reason) for f in fin] == [("content_filter", "SAFETY")]


def test_cohere_citations() -> None:
    events = events_of("cohere__citations_nonascii.sse")
    a = answer_of(events)
    assert a.reasoning_text == "Je cherche la vitesse… deux documents."
    assert [(c.document_index, c.document_title, c.cited_text) for c in a.citations] == [
        (0, "Manuel P-7", "La pompe P-7 tourne à 1 450 tr/min."),
        (1, "Bulletin ב-2026", "Contrôle obligatoire."),
    ]
    assert a.citations[0].provider_metadata == {
        "id": "doc-manuel",
        "source_type": "document",
        "source_id": "doc-manuel",
    }
    assert spans(a) == [
        (0, "la pompe P-7 tourne à 1 450 tr/min ⚙️"),
        (1, "Le bulletin « ב-2026 » exige un contrôle"),
        (0, "Le bulletin « ב-2026 » exige un contrôle"),
    ]
    assert a.usage is not None and (a.usage.prompt_tokens, a.usage.completion_tokens) == (700, 80)
    assert (a.finish_reason, a.complete) == ("stop", True)


def test_cohere_tool_call_and_error() -> None:
    a = answer_of(events_of("cohere__tool_call.sse"))
    assert a.reasoning_text == "J'utilise l'outil météo ☀️."
    assert [(t.id, t.name, t.arguments) for t in a.tool_calls] == [
        ("météo_dcore", "météo", '{"ville": "Zürich"}')
    ]
    events = events_of("cohere__error.sse")
    a = answer_of(events)
    errs = [e for e in events if isinstance(e, ErrorEvent)]
    assert [(e.code, e.retryable) for e in errs] == [("internal", True)]
    fin = [e for e in events if isinstance(e, FinishEvent)]
    assert [(f.reason, f.raw_reason) for f in fin] == [("error", "ERROR")]
    assert (a.complete, a.text) == (False, "Réponse coupée")


BODIES = [
    ("responses__body.json", "responses__web_search_nonascii.sse"),
    ("responses_tool__body.json", "responses__reasoning_tool.sse"),
    ("anthropic__body.json", "anthropic__citations_nonascii.sse"),
    ("gemini__body.json", "gemini__grounding_split_nonascii.sse"),
    ("cohere__body.json", "cohere__citations_nonascii.sse"),
]


@pytest.mark.parametrize(("body", "stream"), BODIES)
def test_body_gives_the_streams_answer(body: str, stream: str) -> None:
    raw = (FIXTURES / body).read_bytes()
    assert detect_body(orjson.loads(raw)) == stream.split("__")[0]
    got = answer_from_response(raw)
    want = answer_of(events_of(stream))
    assert got.text == want.text
    assert got.reasoning_text == want.reasoning_text
    assert [c.to_dict() for c in got.citations] == [c.to_dict() for c in want.citations]
    assert got.citation_spans == want.citation_spans
    assert [(t.id, t.name, t.arguments) for t in got.tool_calls] == [
        (t.id, t.name, t.arguments) for t in want.tool_calls
    ]
    assert (got.finish_reason, got.complete, got.usage) == (
        want.finish_reason,
        want.complete,
        want.usage,
    )
    assert got.errors == want.errors == []
    # Given as a dict or str, and with the dialect named, the same.
    assert answer_from_response(raw.decode()).text == want.text
    assert answer_from_response(orjson.loads(raw), dialect=stream.split("__")[0]).text == want.text  # type: ignore[arg-type]


def test_chat_body_still_read() -> None:
    body = {
        "id": "c1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": {"content": "Oui [1]."}, "finish_reason": "stop"}],
        "citations": [{"source_url": "https://x.example", "document_index": 0}],
    }
    a = answer_from_response(orjson.dumps(body))
    assert (a.text, a.finish_reason, len(a.citations)) == ("Oui [1].", "stop", 1)


def test_bad_body_is_an_error() -> None:
    a = answer_from_response(b"not json", dialect="anthropic")
    assert [e.code for e in a.errors] == ["invalid_json"]
    with pytest.raises(ValueError, match="unknown dialect"):
        ChatStreamParser(dialect="bard")  # type: ignore[arg-type]


def test_markers_in_every_dialect() -> None:
    """Footnote markers ``[n]`` are citation refs whatever the dialect."""
    for name, want in (
        ("responses__web_search_nonascii.sse", [1, 1, 2]),
        ("anthropic__citations_nonascii.sse", [1]),
        ("gemini__grounding_split_nonascii.sse", [1]),
        ("cohere__citations_nonascii.sse", [2]),
    ):
        a = answer_of(events_of(name))
        assert [r.number for r in a.citation_refs] == want, name
        for r in a.citation_refs:
            assert a.text[r.offset] == "["


def _sse(name: str, obj: Any) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


def test_unexpected_shapes_are_typed_errors() -> None:
    """Wrong shapes in each dialect: typed errors, the stream goes on, ``done`` last."""
    cases: dict[str, bytes] = {
        "anthropic": _sse("message_start", {"type": "message_start", "message": {"id": "m"}})
        + _sse("content_block_delta", {"type": "content_block_delta", "index": "x"})
        + _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        )
        + _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
        )
        + _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "citations_delta", "citation": {"type": "nope"}},
            },
        )
        + _sse("mystery", {"type": "mystery"})
        + _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ok"},
            },
        )
        + b"data: [1, 2]\n\ndata: {oops\n\n",
        "responses": _sse("response.created", {"type": "response.created", "response": 3})
        + _sse("response.output_text.delta", {"type": "response.output_text.delta", "delta": None})
        + _sse(
            "response.output_text.annotation.added",
            {
                "type": "response.output_text.annotation.added",
                "annotation": {
                    "type": "url_citation",
                    "url": "u",
                    "start_index": 0,
                    "end_index": 99,
                },
            },
        )
        + _sse("response.output_text.delta", {"type": "response.output_text.delta", "delta": "ok"}),
        "gemini": b'data: {"candidates": 5}\n\ndata: {"candidates": [{"index": -1}]}\n\n'
        + b'data: {"candidates": [{"content": {"parts": [{"text": "ok"}, 7, {"functionCall": {}}]}}]}\n\n'
        + b'data: {"candidates": [{"groundingMetadata": {"groundingChunks": [{"web": {"uri": 1}}], "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 50}, "groundingChunkIndices": [0]}]}}]}\n\n',
        "cohere": _sse("message-start", {"type": "message-start", "id": "c"})
        + _sse("content-delta", {"type": "content-delta", "delta": 4})
        + _sse(
            "citation-start",
            {"type": "citation-start", "delta": {"message": {"citations": {"start": "a"}}}},
        )
        + _sse(
            "tool-call-start",
            {
                "type": "tool-call-start",
                "index": 0,
                "delta": {"message": {"tool_calls": {"function": 3}}},
            },
        )
        + _sse(
            "content-delta",
            {
                "type": "content-delta",
                "index": 0,
                "delta": {"message": {"content": {"text": "ok"}}},
            },
        ),
    }
    for dialect, data in cases.items():
        events = list(iter_events([data], dialect=dialect))  # type: ignore[arg-type]
        a = answer_of(events)
        assert a.text == "ok", dialect
        errs = [e for e in events if isinstance(e, ErrorEvent)]
        assert len(errs) >= 3, (dialect, [e.code for e in errs])
        assert all(not e.retryable for e in errs if e.code != "truncated"), dialect
        assert errs[-1].code == "truncated" and not a.complete  # no end event: cut


def test_bounds_hold_in_every_dialect() -> None:
    """Cited sources and tool calls are bounded: the rest reported once and dropped."""
    from streamcite.core.bounds import MAX_CITATIONS, MAX_TOOL_CALLS

    n = MAX_CITATIONS + 40
    parts = [_sse("message_start", {"type": "message_start", "message": {"id": "m"}})]
    parts.append(
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
    )
    for i in range(n):
        cite = {
            "type": "web_search_result_location",
            "url": f"https://s{i}.example",
            "title": "t",
            "cited_text": "c",
        }
        parts.append(
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "citations_delta", "citation": cite},
                },
            )
        )
    parts.append(
        _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "x"},
            },
        )
    )
    parts.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events = list(iter_events([b"".join(parts)], dialect="anthropic"))
    a = answer_of(events)
    assert len(a.citations) == MAX_CITATIONS
    assert [e.code for e in a.errors].count("too_many_citations") == 1
    assert max(len(e.citations) for e in events if isinstance(e, CitationsEvent)) == MAX_CITATIONS

    calls = b"".join(
        b'data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}}]}\n\n'
        for _ in range(MAX_TOOL_CALLS + 3)
    )
    a = answer_of(list(iter_events([calls], dialect="gemini")))
    assert len(a.tool_calls) == MAX_TOOL_CALLS
    assert [e.code for e in a.errors].count("bad_tool_call") == 1  # reported once, then counted


def test_surrogate_pairs_split_across_deltas() -> None:
    """A character beyond the BMP sent as two escaped halves in two deltas is joined; a
    lone half becomes U+FFFD (``lone_surrogate``); nothing unencodable reaches an event."""

    def delta(text: bytes) -> bytes:
        return (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"' + text + b'"}}\n\n'
        )

    head = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n'
        b"event: content_block_start\ndata: "
        b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    )
    stream = head + delta(b"smile \\ud83d") + delta(b"\\ude00 ok") + delta(b" \\udc00!")
    events = list(iter_events([stream]))
    a = answer_of(events)
    assert a.text == "smile \U0001f600 ok \ufffd!"
    assert [e.code for e in a.errors] == ["lone_surrogate", "truncated"]
    for e in events:
        e.to_json()  # every event encodes (orjson refuses lone surrogates)
    gemini = (
        b'data: {"candidates":[{"content":{"parts":[{"text":"A \\ud83d"}]}}]}\n\n'
        b'data: {"candidates":[{"content":{"parts":[{"text":"\\udd25 B"}]},"finishReason":"STOP"}]}\n\n'
    )
    a = answer_of(list(iter_events([gemini])))
    assert (a.text, a.errors, a.complete) == ("A \U0001f525 B", [], True)


def test_answer_size_cap_in_a_dialect() -> None:
    """``bounds.max_answer_chars`` cuts a non-chat stream as it cuts a chat one."""
    from streamcite.core.bounds import StreamBounds

    delta = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"' + b"x" * 100 + b'"}}\n\n'
    )
    head = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n'
        b"event: content_block_start\ndata: "
        b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    )
    p = ChatStreamParser(bounds=StreamBounds(max_answer_chars=5_000), dialect="anthropic")
    events = p.feed(head)
    for _ in range(300):
        events += p.feed(delta)
    events += p.close()
    a = p.answer
    assert [e.code for e in a.errors] == ["answer_too_large"]
    assert 5_000 < len(a.text) < 5_000 + 100 * 200 and not a.complete
    assert p.done


def test_gemini_finish_beside_text() -> None:
    """A chunk whose candidate carries text and its finish reason (no index) finishes."""
    stream = (
        b'data: {"candidates":[{"content":{"parts":[{"text":"Un"}],"role":"model"}}],'
        b'"modelVersion":"g","responseId":"r"}\r\n\r\n'
        b'data: {"candidates":[{"content":{"parts":[{"text":" deux"}],"role":"model"},'
        b'"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":3,'
        b'"candidatesTokenCount":2,"totalTokenCount":5}}\r\n\r\n'
    )
    events = list(iter_events([stream]))
    a = answer_of(events)
    assert (a.text, a.finish_reason, a.complete) == ("Un deux", "length", True)
    assert a.usage is not None and a.usage.total_tokens == 5


def test_dialect_modules_import_no_other_dialect() -> None:
    """One module per dialect, none importing another (only the shared base), sans-I/O."""
    import ast

    root = Path(__file__).resolve().parent.parent / "streamcite" / "core" / "dialects"
    names = {"responses", "anthropic", "gemini", "cohere"}
    for name in names:
        tree = ast.parse((root / f"{name}.py").read_text())
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module is not None
        } | {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        assert not any(m.startswith(("asyncio", "aiohttp", "httpx")) for m in imported), name
        others = {f"streamcite.core.dialects.{n}" for n in names - {name}}
        assert not imported & others, name
        assert "streamcite.core.chunks" not in imported, name  # the chat dialect's own


def test_auto_waits_past_empty_and_error_events() -> None:
    """A chat stream that opens with a BOM, a comment, a data-less ``event: ping`` and an
    error in another API's shape is still read as chat: those events tell nothing."""
    chunk = b'data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
    err = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n'
    stream = b"\xef\xbb\xbf: comment\r\n\r\nevent: ping\ndata\n\n" + err + chunk
    p = ChatStreamParser()
    events = p.feed(stream) + p.close()
    assert p.dialect == "chat"
    assert [e.type for e in events][:3] == ["error", "meta", "token"]
    assert list(iter_events([stream]))[:-1] == events
