"""Fault injection of the local backend, over real loopback HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamcite import Timeouts, stream_chat
from streamcite.events import DoneEvent, ErrorEvent, TokenEvent
from streamcite.local.answerer import token_pieces
from streamcite.local.faults import FaultSpec, FaultSpecError, request_faults
from streamcite.local.server import MODEL, BackendConfig, LocalBackend

QUESTION = (
    "How many days a week can I work from home, and which security rules apply outside the office?"
)
BODY = {"model": MODEL, "messages": [{"role": "user", "content": QUESTION}], "stream": True}
FAULT = "X-Streamcite-Fault"


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend(BackendConfig()) as b:
        yield b


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as c:
        yield c


def payloads(raw: bytes) -> list[str]:
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    return [
        line[len("data: ") :]
        for block in raw.decode("utf-8", "replace").split("\n\n")
        for line in block.split("\n")
        if line.startswith("data: ")
    ]


QUIET = 1.0
"""Seconds of silence that end a read which must stop short (faults of 60 s): room for
the chunks before them to arrive on a loaded machine (0.3 s left it little room)."""


async def read_events(
    client: httpx.AsyncClient,
    url: str,
    fault: str | None = None,
    *,
    read_timeout: float = 10.0,
    **kw: Any,
) -> tuple[httpx.Response, list[str], BaseException | None]:
    """Stream a completion; the data payloads received and how the read ended."""
    headers = {FAULT: fault} if fault else {}
    received = b""
    error: BaseException | None = None
    timeout = httpx.Timeout(10.0, read=read_timeout)
    async with client.stream("POST", url, json=BODY, headers=headers, timeout=timeout, **kw) as r:
        try:
            async for part in r.aiter_raw():
                received += part
        except (httpx.ReadTimeout, httpx.RemoteProtocolError, httpx.ReadError) as exc:
            error = exc
    return r, payloads(received), error


def contents(events: list[str]) -> list[str]:
    out = []
    for p in events:
        try:
            obj = orjson.loads(p)
        except orjson.JSONDecodeError:
            continue
        for choice in obj.get("choices") or ():
            text = choice.get("delta", {}).get("content")
            if text:
                out.append(text)
    return out


@pytest.fixture
def url(backend: LocalBackend) -> str:
    return backend.base_url + "/chat/completions"


# --------------------------------------------------------------------------- spec parsing


def test_parse_full_spec() -> None:
    spec = FaultSpec.parse(
        " first_token_delay=0.5; token_delay=0.02;drop_after=3;malformed_at=2;error_at=4;status=503;"
        "retry_after=2;stall_after=1;stall_for=9;sources_404_until=2;sources_delay=0.1;no_done=1;bom=true;"
    )
    assert spec == FaultSpec(0.5, 0.02, 3, 2, 4, 503, 2.0, 1, 9.0, 2, 0.1, True, True)
    assert FaultSpec.parse("") == FaultSpec() and not FaultSpec.parse(None)
    assert FaultSpec.parse("no_done=0") == FaultSpec(no_done=False) and not FaultSpec(no_done=False)


@pytest.mark.parametrize(
    "bad",
    ["nope=1", "drop_after", "drop_after=x", "drop_after=-1", "status=200", "status=abc",
     "token_delay=-1", "token_delay=nan", "token_delay=99999", "malformed_at=0", "bom=maybe"],
)  # fmt: skip
def test_parse_rejects_bad_specs(bad: str) -> None:
    with pytest.raises(FaultSpecError):
        FaultSpec.parse(bad)


_specs = st.builds(
    FaultSpec,
    first_token_delay=st.none() | st.floats(0, 100),
    token_delay=st.none() | st.floats(0, 100),
    drop_after=st.none() | st.integers(0, 1000),
    malformed_at=st.none() | st.integers(1, 1000),
    error_at=st.none() | st.integers(1, 1000),
    status=st.none() | st.integers(400, 599),
    retry_after=st.none() | st.floats(0, 100),
    stall_after=st.none() | st.integers(0, 1000),
    sources_404_until=st.none() | st.integers(0, 50),
    no_done=st.none() | st.booleans(),
    bom=st.none() | st.booleans(),
    hallucinate=st.none() | st.booleans(),
)


@given(_specs)
def test_spec_round_trips(spec: FaultSpec) -> None:
    assert FaultSpec.parse(spec.to_spec()) == spec


@given(_specs, _specs)
def test_layering_keeps_the_set_keys_of_the_top_spec(top: FaultSpec, base: FaultSpec) -> None:
    merged = top.over(base)
    for name in FaultSpec.__dataclass_fields__:
        mine = getattr(top, name)
        assert getattr(merged, name) == (getattr(base, name) if mine is None else mine)


def test_header_wins_over_query_wins_over_server() -> None:
    server = FaultSpec.parse("token_delay=1;no_done=1;bom=1")
    spec = request_faults(server, {FAULT: "token_delay=3"}, {"fault": "token_delay=2;bom=0"})
    assert spec == FaultSpec(token_delay=3.0, no_done=True, bom=False)


# --------------------------------------------------------------------------- stream faults


async def test_drop_after_closes_the_connection(client: httpx.AsyncClient, url: str) -> None:
    r, events, error = await read_events(client, url, "drop_after=3")
    assert r.status_code == 200
    assert isinstance(error, httpx.RemoteProtocolError)  # no chunked terminator
    assert len(contents(events)) == 3
    assert "[DONE]" not in events and not any('finish_reason":"stop' in e for e in events)


async def test_drop_after_past_the_end_drops_before_the_finish(
    client: httpx.AsyncClient, url: str
) -> None:
    _, events, error = await read_events(client, url, "drop_after=100000")
    assert error is not None
    assert "".join(contents(events)) and not any("citations" in e for e in events)


async def test_malformed_chunk(client: httpx.AsyncClient, url: str) -> None:
    _, clean, _ = await read_events(client, url)
    _, events, error = await read_events(client, url, "malformed_at=2")
    assert error is None and events[-1] == "[DONE]"
    bad = [e for e in events[:-1] if not _parses(e)]
    assert bad == [events[2]]  # role chunk, content 1, then the broken content 2
    good_contents = contents(clean)
    assert contents(events) == good_contents[:1] + good_contents[2:]


async def test_malformed_past_the_end_breaks_the_finish_chunk(
    client: httpx.AsyncClient, url: str
) -> None:
    _, events, _ = await read_events(client, url, "malformed_at=99999")
    assert not _parses(events[-2]) and events[-1] == "[DONE]"
    assert not any("citations" in e and _parses(e) for e in events)


def _parses(payload: str) -> bool:
    try:
        orjson.loads(payload)
    except orjson.JSONDecodeError:
        return False
    return True


async def test_error_payload_mid_stream(client: httpx.AsyncClient, url: str) -> None:
    r, events, error = await read_events(client, url, "error_at=3")
    assert r.status_code == 200 and error is None
    assert len(contents(events)) == 2
    last = orjson.loads(events[-1])
    assert last == {
        "error": {
            "message": last["error"]["message"],
            "type": "server_error",
            "code": "upstream_overloaded",
        }
    }
    assert "[DONE]" not in events


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_http_status(client: httpx.AsyncClient, url: str, status: int) -> None:
    r = await client.post(url, json=BODY, headers={FAULT: f"status={status};retry_after=2"})
    assert r.status_code == status
    assert r.headers["Retry-After"] == "2"
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]


async def test_status_by_query_parameter(client: httpx.AsyncClient, url: str) -> None:
    r = await client.post(url, params={"fault": "status=502"}, json=BODY)
    assert r.status_code == 502 and "Retry-After" not in r.headers


async def test_invalid_fault_spec_is_a_400(client: httpx.AsyncClient, url: str) -> None:
    r = await client.post(url, json=BODY, headers={FAULT: "explode=1"})
    assert r.status_code == 400 and "explode" in r.json()["error"]["message"]


async def test_no_done_and_bom(client: httpx.AsyncClient, url: str) -> None:
    async with client.stream("POST", url, json=BODY, headers={FAULT: "no_done=1;bom=1"}) as r:
        raw = await r.aread()
    assert raw.startswith(b"\xef\xbb\xbfdata: {")
    events = payloads(raw)
    assert "[DONE]" not in events and "citations" in events[-1]


async def test_first_token_delay_holds_back_the_content(
    client: httpx.AsyncClient, url: str
) -> None:
    # A 60 s delay against a 1 s read timeout: the role chunk comes, the content does not.
    _, events, error = await read_events(client, url, "first_token_delay=60", read_timeout=QUIET)
    assert isinstance(error, httpx.ReadTimeout)
    assert len(events) == 1 and '"role":"assistant"' in events[0]


async def test_token_delay_paces_the_content(client: httpx.AsyncClient, url: str) -> None:
    _, events, error = await read_events(client, url, "token_delay=60", read_timeout=QUIET)
    assert isinstance(error, httpx.ReadTimeout)
    assert len(contents(events)) == 1


async def test_server_wide_pacing_and_faults(client: httpx.AsyncClient) -> None:
    async with LocalBackend(BackendConfig(first_token_delay=60, faults="bom=1")) as backend:
        url = backend.base_url + "/chat/completions"
        _, events, error = await read_events(client, url, read_timeout=QUIET)
        assert isinstance(error, httpx.ReadTimeout) and len(events) == 1
        # The request's own spec overrides the server's, key by key.
        _, events, error = await read_events(client, url, "first_token_delay=0;bom=0")
        assert error is None and events[-1] == "[DONE]"


async def test_stall_keeps_the_connection_open(
    backend: LocalBackend, client: httpx.AsyncClient, url: str
) -> None:
    _, events, error = await read_events(client, url, "stall_after=2", read_timeout=QUIET)
    assert isinstance(error, httpx.ReadTimeout)
    assert len(contents(events)) == 2
    # A stalled stream does not hold up shutdown.
    headers = {FAULT: "stall_after=1"}
    async with client.stream("POST", url, json=BODY, headers=headers) as r:
        reader = r.aiter_raw()
        await reader.__anext__()
        await asyncio.wait_for(backend.stop(), 5)


async def test_stall_for_ends_the_stall_by_closing(client: httpx.AsyncClient, url: str) -> None:
    _, events, error = await read_events(client, url, "stall_after=1;stall_for=0.05")
    assert isinstance(error, httpx.RemoteProtocolError) and len(contents(events)) == 1


# --------------------------------------------------------------------------- sources faults


async def test_sources_404_until_n_calls(
    backend: LocalBackend, client: httpx.AsyncClient, url: str
) -> None:
    body = {**BODY, "stream": False}
    answer = (await client.post(url, json=body, headers={FAULT: "sources_404_until=2"})).json()
    v2 = f"{backend.root_url}/semantics/apps/a/query-execution-sources/{answer['id']}/get-quoted-sources"
    statuses = [(await client.get(v2)).status_code for _ in range(4)]
    assert statuses == [404, 404, 200, 200]
    # The spec may also ride on the sources request itself.
    other = (await client.post(url, json=body)).json()
    v2 = f"{backend.root_url}/semantics/apps/a/query-execution-sources/{other['id']}/get-quoted-sources"
    statuses = [
        (await client.get(v2, headers={FAULT: "sources_404_until=1"})).status_code for _ in range(2)
    ]
    assert statuses == [404, 200]


async def test_sources_status_fault(
    backend: LocalBackend, client: httpx.AsyncClient, url: str
) -> None:
    answer = (await client.post(url, json={**BODY, "stream": False})).json()
    v2 = f"{backend.root_url}/semantics/apps/a/query-execution-sources/{answer['id']}/get-quoted-sources"
    r = await client.get(v2, headers={FAULT: "status=500"})
    assert r.status_code == 500 and r.json()["detail"]


# --------------------------------------------------------------------------- through the pipeline


FAST = Timeouts(connect=2, first_token=2, idle=0.5, total=10)


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
async def test_pipeline_sees_a_dropped_stream(backend: LocalBackend, transport: str) -> None:
    async with stream_chat(
        BODY,
        base_url=backend.base_url,
        headers={FAULT: "drop_after=4"},
        transport=transport,
        timeouts=FAST,
    ) as stream:
        events = [e async for e in stream]
    assert [e.text for e in events if isinstance(e, TokenEvent)] == token_pieces(stream.answer.text)
    assert len([e for e in events if isinstance(e, TokenEvent)]) == 4
    assert any(isinstance(e, ErrorEvent) for e in events)
    assert isinstance(events[-1], DoneEvent) and not events[-1].answer.complete


async def test_pipeline_reads_the_whole_answer(backend: LocalBackend) -> None:
    async with stream_chat(BODY, base_url=backend.base_url, timeouts=FAST) as stream:
        answer = await stream.until_done()
    assert answer.complete and answer.finish_reason == "stop"
    assert (
        len(answer.citations) >= 2 and answer.dangling_refs == [] and answer.uncited_documents == []
    )
    assert answer.citation_for(1) is not None


async def test_hallucinate_changes_one_number_and_keeps_the_citations(
    backend: LocalBackend, client: httpx.AsyncClient, url: str
) -> None:
    body = {**BODY, "stream": False}
    clean = (await client.post(url, json=body)).json()
    wrong = (await client.post(url, json=body, headers={FAULT: "hallucinate=1"})).json()
    clean_text = clean["choices"][0]["message"]["content"]
    wrong_text = wrong["choices"][0]["message"]["content"]
    assert "three days" in clean_text and wrong_text == clean_text.replace(
        "three days", "five days"
    )
    assert wrong["citations"] == clean["citations"]
    # Wikit v1 shows the difference: the reply sentence no longer matches its source.
    v1 = f"{backend.root_url}/semantics/apps/a/query-executions/{wrong['id']}/citations"
    items = (await client.post(v1, json={})).json()
    differing = [i for i in items if i["reply_sentence"] != i["source_sentence"]]
    assert len(differing) == 1 and "five days" in differing[0]["reply_sentence"]
