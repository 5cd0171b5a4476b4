"""The wire codec both ways: ``event_from_dict(e.to_dict()) == e`` for every event kind.

Events come from real streams: every provider fixture through the sans-I/O parser, and
one answer with Wikit sources and a grounding check from the embedded backend over
loopback HTTP, so nested parts (citations, spans, claims, chunks, sources) round-trip.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from streamcite import iter_events, stream_chat
from streamcite.apps._enrichers import LOCAL_GOOGLE_CONFIG, LOCAL_WIKIT_APP, LOCAL_WIKIT_ORG
from streamcite.core.errors import MalformedResponse
from streamcite.core.events import (
    DoneEvent,
    Event,
    answer_from_dict,
    event_from_dict,
    event_from_json,
    event_to_json,
)
from streamcite.enrich.google import GoogleGrounding
from streamcite.enrich.wikit import WikitSources
from streamcite.local.server import BackendConfig, LocalBackend

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "providers").glob("*.sse"))


def _round_trips(events: list[Event]) -> set[str]:
    for e in events:
        assert event_from_dict(e.to_dict()) == e, e.type
        assert event_from_json(event_to_json(e)) == e, e.type
    return {e.type for e in events}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_provider_event_round_trips(path: Path) -> None:
    events = list(iter_events([path.read_bytes()]))
    assert events[-1].type == "done"
    _round_trips(events)


def test_the_fixtures_cover_every_streamed_kind() -> None:
    kinds: set[str] = set()
    for path in FIXTURES:
        kinds |= _round_trips(list(iter_events([path.read_bytes()])))
    assert {"meta", "token", "finish", "citations", "usage", "reasoning", "tool_call"} <= kinds
    assert {"refusal", "error", "done"} <= kinds


async def test_an_enriched_answer_round_trips_over_loopback() -> None:
    async with LocalBackend(BackendConfig()) as backend:
        enrichers = [
            WikitSources(LOCAL_WIKIT_APP, LOCAL_WIKIT_ORG, base_url=backend.root_url),
            GoogleGrounding(LOCAL_GOOGLE_CONFIG, token="local", endpoint=backend.root_url),
        ]
        request = {
            "model": "streamcite-local",
            "messages": [{"role": "user", "content": "How many days of remote work per week?"}],
            "stream": True,
        }
        async with stream_chat(request, base_url=backend.base_url, after=enrichers) as s:
            events = [e async for e in s]
    kinds = _round_trips(events)
    assert {"sources", "grounding", "citation_ref", "done"} <= kinds
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.answer.sources and done.answer.grounding and done.answer.grounding.claims
    assert answer_from_dict(orjson.loads(orjson.dumps(done.answer))) == done.answer


@pytest.mark.parametrize(
    "wire",
    [b"not json", b"[1]", b'{"type":"nope"}', b"{}", b'{"type":"sources","sources":[1]}'],
)
def test_what_is_not_an_event_is_a_typed_error(wire: bytes) -> None:
    with pytest.raises(MalformedResponse):
        event_from_json(wire)


def test_unknown_fields_are_ignored_so_old_clients_read_new_streams() -> None:
    e = event_from_json(b'{"type":"token","index":1,"text":"a","display":"a","future":1}')
    assert e.to_dict() == {"type": "token", "index": 1, "text": "a", "display": "a"}
