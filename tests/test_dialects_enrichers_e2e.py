"""Every API × every enricher, end to end over the embedded backend (127.0.0.1).

``stream_chat(api=...)`` then Wikit sources, Google grounding, Azure groundedness or the
local checker, all against the backend's own endpoints (as ``ask --local`` wires them):
each enricher must run after each dialect's answer and report on it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from streamcite import stream_chat
from streamcite.apps._enrichers import (
    QUOTELESS_APIS,
    EnricherOptions,
    build_enrichers,
    default_facts,
)
from streamcite.core.events import ClaimEvent, ErrorEvent
from streamcite.core.grounding import NO_FACTS_REASON
from streamcite.local.server import LocalBackend
from streamcite.pipeline.apis import APIS, api_root
from streamcite.pipeline.bodies import chat_request_as
from streamcite.pipeline.timeouts import Timeouts

QUESTION = "How many days a week can I work from home?"
CHAT = {
    "model": "streamcite-local",
    "stream": True,
    "messages": [{"role": "user", "content": QUESTION}],
}
TIMEOUTS = Timeouts(connect=10.0, first_token=30.0, idle=30.0, total=60.0)
ENRICHERS = ("wikit", "google", "azure", "local")


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend() as b:
        yield b


def _enrichers(kind: str, api: str, root: str) -> list[Any]:
    # Responses' citations quote nothing: a check reads the Wikit sources too (as ``ask``
    # and ``relay`` decide by default_facts); the other APIs' citations are the facts.
    sources = kind == "wikit" or (api in QUOTELESS_APIS and kind in ("google", "azure"))
    facts = default_facts(api, sources)
    grounding = "none" if kind == "wikit" else kind
    return build_enrichers(
        EnricherOptions(sources=sources, grounding=grounding, grounding_facts=facts), root
    )


@pytest.mark.parametrize("kind", ENRICHERS)
@pytest.mark.parametrize("api", APIS)
async def test_each_enricher_runs_after_each_api(
    backend: LocalBackend, api: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONTENT_SAFETY_ENDPOINT", raising=False)
    monkeypatch.delenv("CONTENT_SAFETY_KEY", raising=False)
    root = backend.root_url
    after = _enrichers(kind, api, root)
    async with stream_chat(
        chat_request_as(api, CHAT),
        base_url=api_root(root, api),
        api=api,
        after=after,
        timeouts=TIMEOUTS,
    ) as s:
        events = [e async for e in s]
    answer = events[-1].answer
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert not errors, [(e.code, e.message) for e in errors]
    assert answer.complete and "remote" in answer.text.lower()
    assert answer.citations  # each API's native citations, read
    kinds = [e.type for e in events]
    if kind == "wikit":
        assert "sources" in kinds
        sources = next(e for e in events if e.type == "sources")
        assert sources.sources, "the backend's Wikit endpoint found the answer's sources"
    else:
        assert "grounding" in kinds
        grounding = next(e for e in events if e.type == "grounding")
        if api in QUOTELESS_APIS and kind == "local":
            # Its citations quote nothing and no Wikit source was asked for: no verdict,
            # not a false alarm on a correct answer.
            assert grounding.support_score is None and grounding.reason == NO_FACTS_REASON
            assert grounding.unsupported_claims == 0
            assert all(c.supported is None for c in events if isinstance(c, ClaimEvent))
            return
        assert grounding.support_score is not None, grounding.warnings
        if kind == "azure":  # claims are the ungrounded segments: none here
            assert grounding.nothing_to_check is False  # the whole answer was checked
        else:
            assert grounding.claims, f"{kind} checked no claim of the {api} answer"


@pytest.mark.parametrize("api", APIS)
async def test_azure_asks_its_qna_check_with_the_question_of_each_api(
    backend: LocalBackend, api: str, serve: Any
) -> None:
    # Azure's QnA task sends the question as qna.query. It was read from "messages" only:
    # a Responses ("input") or Gemini ("contents") request sent an empty query.
    from aiohttp import web

    from streamcite.enrich.azure import AzureGroundedness

    bodies: list[Any] = []

    async def detect(request: web.Request) -> web.Response:
        bodies.append(await request.json())
        return web.json_response({"ungroundedDetected": False, "ungroundedPercentage": 0})

    app = web.Application()
    app.router.add_post("/{tail:.*}", detect)
    facts = ["Employees may work remotely up to three days per week."]
    azure = AzureGroundedness(await serve(app), "k", facts=facts)
    root = backend.root_url
    async with stream_chat(
        chat_request_as(api, CHAT), base_url=api_root(root, api), api=api, after=[azure]
    ) as s:
        answer = await s.until_done()
    assert not answer.errors and len(bodies) == 1
    assert bodies[0]["qna"] == {"query": QUESTION}
