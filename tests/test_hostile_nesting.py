"""Events nested a thousand deep, in every dialect: a typed error and a ``done`` event,
never a ``RecursionError`` (or orjson's ``TypeError``) out of the parser, the body
reader or ``streamcite parse`` (docs/security.md, "Nested, oversized and flooding
upstream events")."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamcite.core.api import answer_from_response, iter_events
from tests._dialect_sse import sse

DEPTH = 1000  # orjson parses up to 1,024 levels; repr() of ~1,000 levels overflows
LIST = "[" * DEPTH + "]" * DEPTH
OBJ = '{"a":' * DEPTH + "1" + "}" * DEPTH


def _raw(text: str, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


STREAMS: dict[str, list[bytes]] = {
    "chat": [
        sse({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}),
        _raw('{"choices":' + LIST + "}"),
        _raw('{"choices":[{"index":0,"delta":{"content":' + OBJ + "}}]}"),
        _raw(
            '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
            '{"name":"f","arguments":' + OBJ + "}}]}}]}"
        ),
        b"data: [DONE]\n\n",
    ],
    "anthropic": [
        sse({"type": "message_start", "message": {"id": "m", "model": "c"}}, "message_start"),
        _raw(
            '{"type":"content_block_start","index":0,"content_block":' + LIST + "}",
            "content_block_start",
        ),
        _raw(
            '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use",'
            '"id":"t","name":"n","input":' + OBJ + "}}",
            "content_block_start",
        ),
        _raw('{"type":' + OBJ + "}", "x"),
        _raw('{"type":"error","error":' + LIST + "}", "error"),
    ],
    "gemini": [
        sse({"candidates": [{"content": {"parts": [{"text": "Hi"}]}}], "responseId": "r"}),
        _raw(
            '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":'
            + OBJ
            + "}}]}}]}"
        ),
        _raw(
            '{"candidates":[{"groundingMetadata":{"groundingChunks":['
            + OBJ
            + '],"groundingSupports":[{"segment":'
            + OBJ
            + "}]}}]}"
        ),
        _raw('{"candidates":' + OBJ + "}"),
        _raw('{"error":' + LIST + "}"),
    ],
    "cohere": [
        sse({"type": "message-start", "id": "x"}, "message-start"),
        _raw(
            '{"type":"content-delta","index":0,"delta":{"message":{"content":' + OBJ + "}}}",
            "content-delta",
        ),
        _raw(
            '{"type":"citation-start","delta":{"message":{"citations":{"start":0,"end":1,'
            '"sources":[' + OBJ + "]}}}}",
            "citation-start",
        ),
    ],
    "responses": [
        _raw('{"type":"response.created","response":' + LIST + "}", "response.created"),
        _raw(
            '{"type":"response.output_text.delta","delta":' + OBJ + "}",
            "response.output_text.delta",
        ),
        _raw('{"type":"response.completed","response":' + OBJ + "}", "response.completed"),
    ],
}

BODIES = {
    "chat": '{"choices":[{"message":{"content":' + OBJ + "}}]}",
    "anthropic": '{"type":"message","content":' + LIST + "}",
    "gemini": '{"candidates":' + LIST + "}",
    "cohere": '{"message":{"content":' + LIST + "}}",
    "responses": '{"object":"response","output":' + LIST + "}",
}


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_deep_event_is_a_typed_error_and_the_stream_ends_with_done(dialect: str) -> None:
    events = list(iter_events(STREAMS[dialect], dialect=dialect))  # type: ignore[arg-type]
    assert events[-1].type == "done"
    errors = [e for e in events if e.type == "error"]
    assert errors
    for e in errors:
        assert len(e.message) < 2000


@pytest.mark.parametrize("dialect", sorted(BODIES))
def test_deep_body_is_a_typed_error_not_an_exception(dialect: str) -> None:
    answer = answer_from_response(BODIES[dialect], dialect=dialect)  # type: ignore[arg-type]
    assert answer.errors and all(len(e.message) < 2000 for e in answer.errors)


def test_parse_command_reads_a_deep_stream_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "deep.sse"
    path.write_bytes(b"".join(STREAMS["anthropic"]))
    run = subprocess.run(
        [sys.executable, "-m", "streamcite.cli", "parse", "--dialect", "anthropic", str(path)],
        capture_output=True,
        timeout=60,
    )
    assert b"Traceback" not in run.stderr, run.stderr[-2000:]
    assert run.returncode == 0, run.stderr[-2000:]
    assert b'"done"' in run.stdout
    assert len(run.stdout) + len(run.stderr) < 64 * 1024


def test_quote_is_bounded_in_time_and_length_whatever_the_value() -> None:
    from streamcite.core.quote import quote

    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    wide = {"k": list(range(1_000_000)), "s": "x" * 10_000_000}
    t0 = time.process_time()  # CPU time: what a loaded machine does not stretch
    texts = [quote(deep), quote(wide), quote("\x1b[31m\u202e" * 1000)]
    assert time.process_time() - t0 < 0.05  # repr(wide) alone takes ~0.1 s; repr(deep) raises
    assert all(len(t) <= 121 for t in texts)
    assert "\x1b" not in texts[2] and "\u202e" not in texts[2]
