"""The embedded backend's provider shapes (fault keys profile / tool_call / provider_error)
over real loopback HTTP with stream_chat, and the enrichment gate (refusal, incomplete)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from streamcite import ChatStream, stream_chat
from streamcite.core.events import Event, GroundingEvent
from streamcite.enrich.base import EnrichContext
from streamcite.grounding.checker import LocalGrounding
from streamcite.local.faults import FaultSpec, FaultSpecError
from streamcite.local.profiles import REASONING_TEXT, REFUSAL_TEXT
from streamcite.local.server import BackendConfig, LocalBackend

QUESTION = "How many days of remote work per week?"
REQUEST = {
    "model": "streamcite-local",
    "messages": [{"role": "user", "content": QUESTION}],
    "stream": True,
    "stream_options": {"include_usage": True},
}


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend(BackendConfig()) as b:
        yield b


@dataclass
class _Counting:
    """An enricher that records whether it ran."""

    kind: str = "counting"
    timeout: float = 5.0
    needs: tuple[str, ...] = ()
    runs: int = 0

    async def enrich(self, ctx: EnrichContext) -> Event | None:
        self.runs += 1
        return None


async def _run(
    backend: LocalBackend, fault: str, transport: str = "aiohttp", **kw: Any
) -> tuple[list[Event], Any]:
    s: ChatStream
    async with stream_chat(
        REQUEST,
        base_url=backend.base_url,
        headers={"X-Streamcite-Fault": fault},
        transport=transport,
        **kw,
    ) as s:
        events = [e async for e in s]
    return events, s.answer


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
async def test_reasoning_profile(backend: LocalBackend, transport: str) -> None:
    events, a = await _run(backend, "profile=reasoning", transport, after=[LocalGrounding()])
    reasoning = [e for e in events if e.type == "reasoning"]
    assert len(reasoning) > 3 and a.reasoning_text == REASONING_TEXT
    types = [e.type for e in events]
    assert types.index("reasoning") < types.index("token")  # thinking comes first
    assert a.text and a.citations and a.complete and a.errors == []
    assert any(isinstance(e, GroundingEvent) for e in events) and a.enrichment_skipped is None


async def test_tool_call_profile(backend: LocalBackend) -> None:
    events, a = await _run(backend, "tool_call=search_docs")
    frags = [e for e in events if e.type == "tool_call"]
    assert len(frags) == 4 and frags[0].name == "search_docs"  # type: ignore[union-attr]
    (tc,) = a.tool_calls
    assert tc.name == "search_docs" and tc.id and tc.type == "function"
    assert orjson.loads(tc.arguments)["query"]
    assert a.finish_reason == "tool_calls" and a.text == "" and a.errors == []
    assert sum(e.type == "usage" for e in events) == 1


async def test_refusal_profile_skips_enrichers(backend: LocalBackend) -> None:
    counting = _Counting()
    events, a = await _run(backend, "profile=refusal", after=[counting])
    assert a.refusal == REFUSAL_TEXT and a.text == ""
    assert "".join(e.text for e in events if e.type == "refusal") == REFUSAL_TEXT  # type: ignore[union-attr]
    assert counting.runs == 0 and a.enrichment_skipped == "refusal"
    assert a.errors == [] and a.complete


async def test_mistral_parts_profile(backend: LocalBackend) -> None:
    _, a = await _run(backend, "profile=mistral_parts")
    assert a.reasoning_text == REASONING_TEXT and a.text and a.errors == []
    assert a.citation_refs and a.citations
    assert a.references and a.references[0]["type"] == "reference"


@pytest.mark.parametrize("opt_in", [False, True])
async def test_provider_error_profile(backend: LocalBackend, opt_in: bool) -> None:
    counting = _Counting()
    events, a = await _run(
        backend, "provider_error=502", after=[counting], enrich_incomplete=opt_in
    )
    (err,) = [e for e in events if e.type == "error"]
    assert (err.code, err.status, err.retryable) == ("502", 502, True)  # type: ignore[union-attr]
    assert a.complete is False and a.finish_reason == "error" and a.text
    if opt_in:
        assert counting.runs == 1 and a.enrichment_skipped is None
    else:
        assert counting.runs == 0 and a.enrichment_skipped == "incomplete"


@pytest.mark.parametrize("opt_in", [False, True])
async def test_answer_cut_by_a_dropped_connection_is_gated(
    backend: LocalBackend, opt_in: bool
) -> None:
    # The connection drops before the finish chunk: no finish, no [DONE]. The answer is
    # incomplete; enrichers run on it only with enrich_incomplete, and the answer says so.
    counting = _Counting()
    events, a = await _run(backend, "drop_after=3", after=[counting], enrich_incomplete=opt_in)
    codes = [e.code for e in events if e.type == "error"]  # type: ignore[union-attr]
    assert "truncated" in codes and a.complete is False and a.finish_reason is None
    if opt_in:
        assert counting.runs == 1 and a.enrichment_skipped is None
    else:
        assert counting.runs == 0 and a.enrichment_skipped == "incomplete"


@pytest.mark.parametrize("opt_in", [False, True])
@pytest.mark.parametrize("fault", ["status=503", "drop_after=0"])
async def test_no_answer_at_all_is_never_enriched(
    backend: LocalBackend, opt_in: bool, fault: str
) -> None:
    # The request fails, or the stream is cut, before any answer: nothing to enrich, even
    # opted in (a remote check would be paid for an empty text).
    counting = _Counting()
    events, a = await _run(backend, fault, after=[counting], enrich_incomplete=opt_in)
    assert [e.type for e in events][-1] == "done" and "error" in [e.type for e in events]
    assert counting.runs == 0 and a.enrichment_skipped == "incomplete" and not a.text


async def test_enrichers_are_decided_once(backend: LocalBackend) -> None:
    # A refusal gates the enrichers out at its finish; the end of the stream does not
    # decide again (one decision, one log line, the first reason kept).
    counting = _Counting()
    _, a = await _run(backend, "profile=refusal", after=[counting], enrich_incomplete=True)
    assert counting.runs == 0 and a.enrichment_skipped == "refusal"


async def test_profile_with_other_faults(backend: LocalBackend) -> None:
    # The usual faults still apply to the body chunks of a profile.
    events, a = await _run(backend, "profile=reasoning;drop_after=2")
    assert "truncated" in [e.code for e in events if e.type == "error"]  # type: ignore[union-attr]
    assert a.reasoning_text and not a.complete


def test_profile_spec_validation() -> None:
    assert FaultSpec.parse("profile=reasoning").profile == "reasoning"
    assert FaultSpec.parse("tool_call=get_weather").tool_call == "get_weather"
    assert FaultSpec.parse("provider_error=502").provider_error == 502
    for bad in ("profile=nope", "tool_call=a b", "provider_error=200"):
        with pytest.raises(FaultSpecError):
            FaultSpec.parse(bad)
