"""Provider content is never a fault: every documented Anthropic block type, a type no
version has yet, and Vertex AI's streamed function-call arguments.

The project's own fixtures (tests/fixtures/dialects/, written by make_provider_content.py,
provenance in SOURCES.md) run everywhere; the 52 holdout recordings of the workspace
(``/work/shared/dialects/holdout``, provenance in its SOURCES.md, not copied here) run
where they exist."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from streamcite import answer_from_response, iter_events, stream_chat
from streamcite.core.dialects.partial_args import StreamedArgs, parse_json_path
from streamcite.core.events import DoneEvent, ErrorEvent, ToolCallEvent
from streamcite.core.models import CitedAnswer
from tests.conftest import ServeFn

FIXTURES = Path(__file__).parent / "fixtures" / "dialects"
HOLDOUT = Path(os.environ.get("STREAMCITE_HOLDOUT_RECORDINGS", "/work/shared/dialects/holdout"))


def answer_of(events: list[Any]) -> CitedAnswer:
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done.answer


def read(path: Path) -> tuple[list[Any], CitedAnswer]:
    dialect = path.name.split("__")[0]
    if path.suffix == ".json":
        return [], answer_from_response(path.read_bytes(), dialect=dialect)  # type: ignore[arg-type]
    events = list(iter_events([path.read_bytes()], dialect=dialect))  # type: ignore[arg-type]
    return events, answer_of(events)


def assert_runnable_calls(a: CitedAnswer) -> None:
    """A complete answer's tool calls all have a name and a JSON object of arguments."""
    if not a.complete:
        return
    for tc in a.tool_calls:
        assert tc.name, tc
        assert isinstance(orjson.loads(tc.arguments), dict), tc


# -- the project's fixtures -----------------------------------------------------------


def test_every_server_tool_block_is_read_without_an_error() -> None:
    _, a = read(FIXTURES / "anthropic__server_tools.sse")
    assert a.errors == [] and a.complete and a.skipped_types == {}
    assert a.text == (
        "Je regarde le site du café.Le café ouvre à 8 h ☕ et ferme à 18 h (10 h d’ouverture)."
    )
    assert a.tool_calls == []  # the server ran them: nothing for the caller to run
    assert [c.source_url for c in a.citations] == ["https://example.org/cafe-tel-aviv"]
    (span,) = a.citation_spans
    assert a.text[span.start : span.end].startswith("Le café ouvre")
    assert a.finish_reason == "stop"


def test_compaction_is_a_documented_ignore() -> None:
    _, a = read(FIXTURES / "anthropic__compaction.sse")
    assert (a.errors, a.complete, a.skipped_types) == ([], True, {})
    assert a.text == "Oui : le café ouvre à 8 h ☕."
    assert "תל אביב" not in a.text + a.reasoning_text  # the summary is not the answer


def test_future_types_are_skipped_and_counted_not_errors() -> None:
    events, a = read(FIXTURES / "anthropic__future_types.sse")
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert a.complete and a.text == "Avant l’hologramme, après 🛸."
    assert a.skipped_types == {
        "content block hologram": 1,
        "message_annotation": 1,
        "delta sparkle_delta": 1,
    }  # the hologram block's own deltas go with it: counted once, as the block
    assert a.to_dict()["skipped_types"] == a.skipped_types


def test_skipped_types_are_bounded_and_inert() -> None:
    from streamcite.core.dialects.base import MAX_UNKNOWN, OTHER_TYPES

    lines = [b'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n']
    for i in range(MAX_UNKNOWN + 10):
        lines.append(b'data: {"type":"future_%d\\u0007"}\n\n' % i)
    lines.append(b'data: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}\n\n')
    lines.append(b'data: {"type":"message_stop"}\n\n')
    a = answer_of(list(iter_events(lines, dialect="anthropic")))
    assert a.errors == [] and a.complete
    assert len(a.skipped_types) == MAX_UNKNOWN + 1
    assert a.skipped_types[OTHER_TYPES] == 10
    assert all(k.isprintable() for k in a.skipped_types)


def test_a_tool_use_without_arguments_has_an_empty_object() -> None:
    body = {
        "type": "message",
        "id": "msg_1",
        "model": "claude",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}],
        "stop_reason": "tool_use",
    }
    a = answer_from_response(body, dialect="anthropic")
    assert [(t.name, t.arguments) for t in a.tool_calls] == [("now", "{}")]


def test_vertex_streamed_arguments_are_put_together() -> None:
    events, a = read(FIXTURES / "gemini__vertex_streamed_args.sse")
    assert a.errors == [] and a.complete and a.finish_reason == "tool_calls"
    got = [(t.name, orjson.loads(t.arguments)) for t in a.tool_calls]
    assert got == [
        ("lire_theme", {}),
        (
            "itineraire",
            {
                "depart": "Tel Aviv — תל אביב",
                "etapes": [{"ville": "Haïfa", "nuits": 2}, {"ville": "Akko 🏰"}],
                "train de nuit": False,
                "note": None,
            },
        ),
        ("meteo", {"ville": "Haïfa"}),
    ]
    assert a.reasoning_text == "Je lis le thème puis la route."
    # The call is announced by name at once, its arguments follow whole.
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.tool_index, c.name, bool(c.arguments)) for c in calls][1:3] == [
        (1, "itineraire", False),
        (1, None, True),
    ]


def test_vertex_call_without_its_last_part_is_an_error_not_a_runnable_call() -> None:
    _, a = read(FIXTURES / "gemini__vertex_streamed_args_cut.sse")
    assert a.complete is False
    assert [e.code for e in a.errors] == ["bad_tool_call"]
    assert "before its last part" in a.errors[0].message


def test_vertex_call_open_at_the_end_of_the_stream() -> None:
    raw = (FIXTURES / "gemini__vertex_streamed_args_cut.sse").read_bytes()
    first_two = b"\r\n\r\n".join(raw.split(b"\r\n\r\n")[:2]) + b"\r\n\r\n"
    a = answer_of(list(iter_events([first_two], dialect="gemini")))
    assert a.complete is False
    assert "bad_tool_call" in [e.code for e in a.errors]


@pytest.mark.parametrize(
    ("parts", "why"),
    [
        ([{"jsonPath": "$.a[1]", "stringValue": "x"}], "index not in order"),
        ([{"jsonPath": "a", "stringValue": "x"}], "path not understood"),
        ([{"jsonPath": "$..a", "stringValue": "x"}], "path not understood"),
        (
            [{"jsonPath": "$.a", "numberValue": 1}, {"jsonPath": "$.a.b", "numberValue": 2}],
            "crosses",
        ),
        ([{"jsonPath": "$.a", "numberValue": "1"}], "not a number"),
        ([{"jsonPath": "$.a", "stringValue": "x", "boolValue": True}], "2 values"),
        ("nope", "not an array"),
    ],
)
def test_partial_arguments_that_cannot_be_placed(parts: Any, why: str) -> None:
    args = StreamedArgs()
    args.add(parts)
    assert args.error is not None and why in args.error


def test_json_paths() -> None:
    assert parse_json_path("$.a.b[0]['c d'][\"e\"]") == ["a", "b", 0, "c d", "e"]
    assert parse_json_path("$." + ".a" * 70) is None  # deeper than MAX_PATH_DEPTH
    assert parse_json_path("$.a[-1]") is None


async def test_skipped_types_logged_once_per_type(serve: ServeFn) -> None:
    body = (FIXTURES / "anthropic__future_types.sse").read_bytes()

    async def messages(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(body)
        return resp

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    url = await serve(app)
    req = {"model": "claude", "max_tokens": 10, "messages": [], "stream": True}
    with capture_logs() as logs:
        async with stream_chat(req, base_url=url + "/v1", api="anthropic") as s:
            events = [ev async for ev in s]
    a = answer_of(events)
    assert a.complete and not a.errors
    warned = [e for e in logs if e["event"] == "stream.skipped_type"]
    assert sorted(e["type"] for e in warned) == sorted(a.skipped_types)
    assert all(e["log_level"] == "warning" and e["dialect"] == "anthropic" for e in warned)


# -- the holdout recordings -----------------------------------------------------------

# The recordings whose error is the provider's own (a correct reading reports it).
PROVIDER_ERRORS = {
    "gemini__error_api_key_invalid.json": ["INVALID_ARGUMENT"],
    "responses__error_event.sse": ["insufficient_quota"],
}
HOLDOUT_FILES = sorted(p.name for p in HOLDOUT.glob("*__*.*")) if HOLDOUT.is_dir() else []


@pytest.mark.skipif(not HOLDOUT.is_dir(), reason="holdout recordings not on this machine")
def test_all_holdout_recordings_are_there() -> None:
    assert len(HOLDOUT_FILES) == 52


@pytest.mark.skipif(not HOLDOUT.is_dir(), reason="holdout recordings not on this machine")
@pytest.mark.parametrize("name", HOLDOUT_FILES)
def test_holdout_recording_reads_without_a_spurious_error(name: str) -> None:
    _, a = read(HOLDOUT / name)
    assert [e.code for e in a.errors] == PROVIDER_ERRORS.get(name, [])
    assert a.complete is (name not in PROVIDER_ERRORS)
    assert a.skipped_types == {}  # every type in them is documented
    assert_runnable_calls(a)


@pytest.mark.skipif(not HOLDOUT.is_dir(), reason="holdout recordings not on this machine")
def test_holdout_vertex_arguments() -> None:
    _, a = read(HOLDOUT / "gemini__vertex_streamed_function_args.sse")
    assert [(t.name, t.arguments) for t in a.tool_calls] == [
        ("getWeather", '{"location":"Boston"}'),
        ("getWeather", '{"location":"San Francisco"}'),
    ]
    _, a = read(HOLDOUT / "gemini__vertex_streamed_args_after_thoughts.sse")
    assert [(t.name, t.arguments) for t in a.tool_calls] == [
        ("read_theme", "{}"),
        ("read_screen", '{"id":"A"}'),
        ("read_screen", '{"id":"B"}'),
        ("read_screen", '{"id":"C"}'),
    ]
