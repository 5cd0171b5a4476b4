"""Hostile upstream error bodies against ``stream_chat(api=...)``, over loopback HTTP:
whatever the body, one typed, bounded ``ErrorEvent``, never an exception."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from streamcite.core.events import ErrorEvent
from streamcite.pipeline.apis import APIS
from streamcite.pipeline.opening import http_error
from tests.test_pipeline_apis import Recorder, _run

DEEP = b'{"error": {"message": ' + b"[" * 1000 + b"]" * 1000 + b', "status": "INTERNAL"}}'


@pytest.mark.parametrize(
    "body",
    [
        DEEP,
        b"[" + DEEP + b"]",  # Gemini's array form
        b'{"message": ' + b'{"a":' * 900 + b"1" + b"}" * 900 + b"}",  # Cohere's shape
        orjson.dumps({"error": {"message": "x" * 60_000}}),
        orjson.dumps({"error": {"message": {"nested": "object"}, "detail": "the detail"}}),
    ],
    ids=["deep", "deep-array", "deep-cohere", "huge", "non-string"],
)
def test_hostile_error_body_is_a_bounded_typed_error(body: bytes) -> None:
    err = http_error(500, body, {})
    assert (err.code, err.status, err.retryable) == ("upstream_unavailable", 500, True)
    assert len(err.message) <= 1100
    assert "nested" not in err.message  # a non-string message is not str()-ed


@pytest.mark.parametrize("api", APIS)
async def test_deeply_nested_error_body_over_http_is_an_error_event(serve: Any, api: str) -> None:
    up = Recorder(api, errors=[(400, DEEP, {})])
    url = await serve(up.app())
    events, answer = await _run(url, api, retries=0)
    assert [e.type for e in events] == ["error", "done"]
    err = events[0]
    assert isinstance(err, ErrorEvent) and (err.code, err.status) == ("bad_request", 400)
    assert answer.errors == [err]
