"""Azure AI Content Safety groundedness detection: request limits, offsets, errors and
retries against scripted servers on loopback, and the embedded backend's endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from streamcite.core.errors import MalformedResponse, UpstreamError
from streamcite.core.events import ClaimEvent, GroundingEvent
from streamcite.enrich.azure import (
    API_VERSION,
    MAX_SOURCES_CHARS,
    MAX_TEXT_CHARS,
    AzureGroundedness,
    build_detect_request,
    parse_detect_response,
)
from streamcite.pipeline import stream_chat

KEY = "azure-key-0123456789abcdef"


def _units(text: str, a: int, b: int) -> dict[str, Any]:
    def at(i: int) -> dict[str, int]:
        return {
            "utf8": len(text[:i].encode()),
            "utf16": len(text[:i].encode("utf-16-le")) // 2,
            "codePoint": i,
        }

    start, end = at(a), at(b)
    return {"offset": start, "length": {k: end[k] - start[k] for k in start}}


# ------------------------------------------------------------------ request and limits


def test_request_body_as_documented() -> None:
    req = build_detect_request("An answer.", ["fact one", ""], query="Why?")
    assert req.body == {
        "domain": "Generic",
        "task": "QnA",
        "qna": {"query": "Why?"},
        "text": "An answer.",
        "groundingSources": ["fact one"],
        "reasoning": False,
    }
    summ = build_detect_request("x", ["f"], task="Summarization", domain="Medical")
    assert "qna" not in summ.body and summ.body["domain"] == "Medical"
    with pytest.raises(ValueError):
        build_detect_request("x", ["f"], task="qa")
    with pytest.raises(ValueError):
        build_detect_request("x", ["f"], domain="Legal")
    with pytest.raises(ValueError):  # reasoning is explained by your own deployment
        build_detect_request("x", ["f"], reasoning=True)
    llm = {
        "resourceType": "AzureOpenAI",
        "azureOpenAIEndpoint": "https://o",
        "azureOpenAIDeploymentName": "d",
    }
    body = build_detect_request("x", ["f"], reasoning=True, llm_resource=llm).body
    assert body["reasoning"] is True and body["llmResource"] == llm


def test_limits_cut_the_text_and_the_sources_with_warnings() -> None:
    answer = "A sentence of words. " * 500  # 10,500 characters
    sources = ["s" * 30_000, "t" * 30_000, "u" * 10]
    req = build_detect_request(answer, sources, query="q" * 8000)
    assert len(req.body["text"]) <= MAX_TEXT_CHARS and answer.startswith(req.body["text"])
    assert req.body["text"].endswith(".")  # cut at a sentence end
    assert sum(map(len, req.body["groundingSources"])) == MAX_SOURCES_CHARS
    assert len(req.body["groundingSources"]) == 2 and len(req.body["qna"]["query"]) == 7500
    assert len(req.warnings) == 4  # text, source cut, source dropped, query


# ------------------------------------------------------------------ response and offsets


@pytest.mark.parametrize(
    "answer",
    [
        "Le café coûte 3 €. Il a été inventé en 1990 😀 à Paris. Fin.",
        "המחיר הוא 3 ₪. הקפה הומצא ב־1990 🎉 בפריז. סוף.",
        "Plain ASCII text. The bad part here. End.",
    ],
)
def test_ungrounded_segments_land_on_their_characters(answer: str) -> None:
    req = build_detect_request(answer, ["fact"])
    second = answer.split(". ")[1] + "."
    a = answer.index(second)
    b = a + len(second)
    data = {
        "ungroundedDetected": True,
        "ungroundedPercentage": 0.4,
        "ungroundedDetails": [{"text": second, **_units(answer, a, b), "reason": "no source"}],
    }
    result = parse_detect_response(data, req)
    [claim] = result.claims
    assert (claim.start, claim.end) == (a, b) and answer[a:b] == claim.claim_text
    assert claim.start_utf16 == len(answer[:a].encode("utf-16-le")) // 2
    assert claim.end_byte == len(answer[:b].encode())
    assert result.provider == "azure" and result.support_score == 0.6
    assert not claim.supported and claim.grounding_check_required
    assert claim.reason == "no source"  # kept (sent with reasoning on)


def test_each_offset_kind_is_used_when_it_is_the_only_one() -> None:
    answer = "Fun 😀 fact. Wrong 🎉 claim. End."
    req = build_detect_request(answer, ["fact"])
    a = answer.index("Wrong")
    b = answer.index(" End")
    units = _units(answer, a, b)
    for kind in ("codePoint", "utf16", "utf8"):
        detail = {
            "text": answer[a:b],
            "offset": {kind: units["offset"][kind]},
            "length": {kind: units["length"][kind]},
        }
        data = {"ungroundedPercentage": 0.5, "ungroundedDetails": [detail]}
        [claim] = parse_detect_response(data, req).claims
        assert (claim.start, claim.end) == (a, b), kind


def test_wrong_offsets_fall_back_to_the_text_or_a_warning() -> None:
    answer = "One. Two wrong. Three."
    req = build_detect_request(answer, ["fact"])
    bad = {"offset": {"codePoint": 0}, "length": {"codePoint": 3}}
    data = {
        "ungroundedPercentage": 0.5,
        "ungroundedDetails": [
            {"text": "Two wrong.", **bad},
            {"text": "not in the answer", **bad},
            "junk",
        ],
    }
    result = parse_detect_response(data, req)
    assert (result.claims[0].start, result.claims[0].end) == (5, 15)
    assert result.claims[1].start is None
    assert len(result.warnings) == 2


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"ungroundedPercentage": 2},
        {"ungroundedPercentage": "x"},
        {},
        {"ungroundedPercentage": 0.1, "ungroundedDetails": {}},
    ],
)
def test_malformed_responses_are_typed_errors(data: Any) -> None:
    with pytest.raises(MalformedResponse):
        parse_detect_response(data, build_detect_request("x", ["f"]))


# ------------------------------------------------------------------ HTTP: retries and errors


class Scripted:
    def __init__(self, replies: list[tuple[int, dict[str, str], bytes]]) -> None:
        self.replies = replies
        self.seen: list[tuple[str, dict[str, str], Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        self.seen.append((request.path_qs, dict(request.headers), body))
        status, headers, payload = self.replies[min(len(self.seen), len(self.replies)) - 1]
        return web.Response(
            status=status, headers=headers, body=payload, content_type="application/json"
        )


async def _serve(handler: Any) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/contentsafety/text:detectGroundedness", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


OK = orjson.dumps({"ungroundedDetected": False, "ungroundedPercentage": 0, "ungroundedDetails": []})


async def test_429_is_retried_after_retry_after_then_succeeds() -> None:
    busy = orjson.dumps({"error": {"code": "TooManyRequests", "message": "slow down"}})
    server = Scripted([(429, {"Retry-After": "0"}, busy), (200, {}, OK)])
    runner, url = await _serve(server.handle)
    try:
        azure = AzureGroundedness(url, api_key=KEY, retries=2)
        result = await azure.check("Paris is in France.", ["Paris is in France."], query="Where?")
    finally:
        await runner.cleanup()
    assert result.support_score == 1.0 and result.claims == []
    assert len(server.seen) == 2
    path, headers, body = server.seen[0]
    assert path == f"/contentsafety/text:detectGroundedness?api-version={API_VERSION}"
    assert headers["Ocp-Apim-Subscription-Key"] == KEY
    assert body["qna"] == {"query": "Where?"} and body["reasoning"] is False


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (401, "azure_unauthorized", False),
        (404, "azure_not_found", False),
        (400, "azure_bad_request", False),
        (503, "azure_unavailable", True),
    ],
)
async def test_errors_are_typed_and_never_show_the_key(
    status: int, code: str, retryable: bool
) -> None:
    # A hostile error body that echoes the key back.
    body = orjson.dumps({"error": {"code": "Denied", "message": f"bad key {KEY}"}})
    server = Scripted([(status, {}, body)])
    runner, url = await _serve(server.handle)
    try:
        azure = AzureGroundedness(url, api_key=KEY, retries=0)
        with pytest.raises(UpstreamError) as info:
            await azure.check("x", ["f"])
    finally:
        await runner.cleanup()
    err = info.value
    assert (err.code, err.status, err.retryable) == (code, status, retryable)
    assert "Denied" in err.message and KEY not in err.message and KEY[:10] not in err.message
    assert KEY not in repr(azure)


# ------------------------------------------------------------------ the embedded backend


@pytest.fixture
async def backend() -> AsyncIterator[Any]:
    from streamcite.local import server

    async with server.LocalBackend(server.BackendConfig()) as b:
        yield b


async def test_backend_serves_detection_with_offsets_in_all_three_units(backend: Any) -> None:
    azure = AzureGroundedness(backend.root_url, api_key=KEY, retries=0)
    answer = (
        "Le café 😀 coûte 3 €. Paris est la capitale de la France. Le café a été inventé en 1990."
    )
    facts = ["Paris est la capitale de la France.", "Le café 😀 coûte 3 €."]
    result = await azure.check(answer, facts)
    [claim] = result.claims
    assert answer[claim.start or 0 : claim.end] == "Le café a été inventé en 1990."
    assert claim.start_utf16 == (claim.start or 0) + 1  # one astral character before it
    assert result.support_score is not None and 0 < result.support_score < 1


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"reasoning": True}, 400),
        ({"text": "x" * 7501}, 400),
        ({"groundingSources": []}, 400),
        ({"groundingSources": ["", "  "]}, 400),  # nothing that can ground
        ({"task": "Chat"}, 400),
    ],
)
async def test_backend_refuses_what_azure_refuses(
    backend: Any, change: dict[str, Any], status: int
) -> None:
    import aiohttp

    body = {
        "domain": "Generic",
        "task": "QnA",
        "qna": {"query": "q"},
        "text": "A b.",
        "groundingSources": ["A b."],
        **change,
    }
    url = f"{backend.root_url}/contentsafety/text:detectGroundedness?api-version={API_VERSION}"
    async with aiohttp.ClientSession() as s:
        async with s.post(url, json=body, headers={"Ocp-Apim-Subscription-Key": "k"}) as r:
            assert r.status == status
            err = (await r.json())["error"]
        async with s.post(url, json=body) as r:
            assert r.status == 401 and "code" in (await r.json())["error"]
        async with s.post(
            url.replace(API_VERSION, "1999-01-01"),
            json=body,
            headers={"Ocp-Apim-Subscription-Key": "k"},
        ) as r:
            assert r.status == 404
    assert set(err) == {"code", "message"}


async def test_pipeline_delivers_azure_segments_as_claims(backend: Any) -> None:
    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": "How many days of remote work per week?"}],
        "stream": True,
    }
    azure = AzureGroundedness(backend.root_url, api_key=KEY, retries=0)
    headers = {"X-Streamcite-Fault": "hallucinate=1"}
    async with asyncio.timeout(20):
        async with stream_chat(
            request, base_url=backend.base_url, headers=headers, after=[azure]
        ) as s:
            events = [e async for e in s]
    grounding = next(e for e in events if isinstance(e, GroundingEvent))
    claims = [e for e in events if isinstance(e, ClaimEvent)]
    assert grounding.provider == "azure" and len(claims) == 1 == len(grounding.claims)
    [claim] = claims
    assert claim.checker == "azure" and claim.supported is False
    assert s.answer.text[claim.start : claim.end] == claim.text
    assert events.index(claim) < events.index(grounding)
    assert s.answer.timings.first_claim_ms is not None


def test_blank_grounding_sources_are_dropped_before_the_checker() -> None:
    """A million empty sources (0 characters, under the 55,000 limit) were a million
    facts for the checker (0.3 s on the loop); only non-blank ones reach it now."""
    from streamcite.local.apis.azure import _parse

    body = {
        "text": "Paris is the capital of France.",
        "groundingSources": [""] * 999_990 + [" "] * 10,
    }
    body["groundingSources"].append("Paris is the capital of France.")
    _, sources = _parse(body)
    assert sources == ["Paris is the capital of France."]
