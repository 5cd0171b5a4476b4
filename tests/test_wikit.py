"""Wikit quoted sources (v2) and citations (v1) against a real aiohttp server on 127.0.0.1.

The server plays a script of replies per path (status, body, headers, delay) and
records every request, so retries, headers and connection reuse are observed from
the server's side, the way Wikit would see them.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from streamcite.core.errors import MalformedResponse, UpstreamError
from streamcite.core.events import SourcesEvent
from streamcite.core.models import CitationRef, CitedAnswer
from streamcite.core.sources import DataSource, QuotedSource, SourceChunk, SourceDocument
from streamcite.enrich._http import RetryPolicy, parse_retry_after
from streamcite.enrich.base import EnrichContext
from streamcite.enrich.wikit import (
    SourcesNotReady,
    WikitAuthError,
    WikitCitationV1,
    WikitSources,
    by_document,
    match_refs,
    page_label,
    sources_without_url,
)
from tests.conftest import ServeFn

APP = "app-42"
ORG = "686d3ceb18a3087351f0fa35"
QID = "chatcmpl-abc123"
SECRET_KEY = "wk-SECRET-0123456789abcdef"

# The v2 response example of the Wikit documentation, verbatim.
SEED_V2 = b"""[
  {
    "quoted_as": "1",
    "document": {
      "id": "686e90dd2ff687c57806d107",
      "name": "Charte_Teletravail_01_08_2023.pdf",
      "title": null,
      "url": null,
      "public_link": false,
      "storage_name": "lien_du_stockage",
      "data_source_id": "686d402ce52bbbf7116f55f8",
      "organization_id": "686d3ceb18a3087351f0fa35"
    },
    "chunk": {
      "id": "686e90e725e88b90bdd50eb2",
      "data": "## le contenu du chunk...",
      "document_id": "686e90dd2ff687c57806d107",
      "data_source_id": "686d402ce52bbbf7116f55f8",
      "llm_app_id": null,
      "user_id": null,
      "flags": null,
      "position": 29,
      "page_start": null,
      "page_end": null
    },
    "data_source": {
      "id": "686d402ce52bbbf7116f55f8",
      "name": "Ressources Humaines"
    },
    "score": 0.88380575,
    "retriever_type": "SEMANTIC_SEARCH"
  }
]"""

# The v1 response example of the Wikit documentation, verbatim.
SEED_V1 = b"""[
    {
        "_id": "668e9bf39bd4493d2557a6ea",
        "created_at": "2024-07-10T14:34:26Z",
        "query_execution_id": "668e9bf09bd4493d2557a6e6",
        "total_count": 1,
        "reply_sentence": "Les couleurs de la charte graphique de Wikit sont : Bleu ciel, Bleu nuit et Violet.",
        "source_sentence": "Les couleurs de la charte graphique de Wikit sont : - Bleu ciel ; - Bleu nuit ; - Violet.",
        "chunk_data_snapshot": " [...]  {{source_sentence}}  [...] ",
        "start_char_idx": 0,
        "end_char_idx": 89,
        "chunk_id": "668e9b94ca8d43490c14ede3",
        "chunk_page_start": 2,
        "chunk_page_end": 2,
        "chunk_position": null,
        "document_id": "668e9b94ca8d43490c14ede0",
        "document_name": "wikit-visual-identity.pdf",
        "document_title": null,
        "document_url": "https://semantics-files.wikit.ai/v1/viewer/NjVkNWIzNDRhMDUxZWEyOGI3ZjU0ZDc2LzY2OGU5YjgzY2E4ZDQzNDkwYzE0ZWRkZi8xNzIwNjIxOTcxLjkwNzU3N193aWtpdF9kb2N1bWVudF9zYW1wbGUucGRm",
        "organization_id": "65d5b344a051ea28b7f54d76",
        "threshold": 50
    }
]"""

V2_PATH = f"/semantics/apps/{APP}/query-execution-sources/{QID}/get-quoted-sources"
V1_PATH = f"/semantics/apps/{APP}/query-executions/668e9bf09bd4493d2557a6e6/citations"


@dataclass
class Reply:
    status: int = 200
    body: bytes = SEED_V2
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    method: str
    path: str
    headers: Any
    body: bytes
    at: float
    peer: Any
    raw_path: str = ""


class ScriptServer:
    """Replies to each path from a script; the last reply repeats once the script is used up."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Reply]] = {}
        self.seen: list[Seen] = []
        self.url = ""

    def script(self, path: str, *replies: Reply) -> None:
        self.scripts[path] = list(replies)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append(
            Seen(
                request.method,
                request.path,
                request.headers.copy(),  # case-insensitive, like HTTP
                body,
                time.monotonic(),
                request.transport.get_extra_info("peername") if request.transport else None,
                request.raw_path,
            )
        )
        replies = self.scripts.get(request.path)
        if not replies:
            return web.Response(status=599, text="no script for " + request.path)
        reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if reply.delay:
            await asyncio.sleep(reply.delay)
        return web.Response(
            status=reply.status,
            body=reply.body,
            headers={"Content-Type": "application/json", **reply.headers},
        )


@pytest.fixture
async def server(serve: ServeFn) -> ScriptServer:
    srv = ScriptServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", srv.handle)
    srv.url = await serve(app)
    return srv


def client(srv: ScriptServer, **kw: Any) -> WikitSources:
    kw.setdefault("retry", RetryPolicy(deadline=3.0, request_timeout=2.0, backoff_base=0.01))
    return WikitSources(APP, ORG, kw.pop("api_key", None), srv.url, **kw)


# -- v2: the documented example --------------------------------------------------


async def test_seed_example_parses_every_field(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=SEED_V2))
    sources = await client(server, api_key=SECRET_KEY).fetch(QID)
    assert sources == [
        QuotedSource(
            quoted_as="1",
            document=SourceDocument(
                id="686e90dd2ff687c57806d107",
                name="Charte_Teletravail_01_08_2023.pdf",
                title=None,
                url=None,
                public_link=False,
                storage_name="lien_du_stockage",
                data_source_id="686d402ce52bbbf7116f55f8",
                organization_id="686d3ceb18a3087351f0fa35",
            ),
            chunk=SourceChunk(
                id="686e90e725e88b90bdd50eb2",
                data="## le contenu du chunk...",
                document_id="686e90dd2ff687c57806d107",
                data_source_id="686d402ce52bbbf7116f55f8",
                position=29,
            ),
            data_source=DataSource(id="686d402ce52bbbf7116f55f8", name="Ressources Humaines"),
            score=0.88380575,
            retriever_type="SEMANTIC_SEARCH",
        )
    ]
    (req,) = server.seen
    assert (req.method, req.path) == ("GET", V2_PATH)
    assert req.headers["X-Wikit-Organization-Id"] == ORG
    assert req.headers["Wikit-Semantics-API-Key"] == SECRET_KEY
    assert req.headers["accept"] == "application/json"


async def test_public_app_sends_no_api_key_header(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=b"[]"))
    assert await client(server).fetch(QID) == []
    assert "Wikit-Semantics-API-Key" not in server.seen[0].headers


async def test_ids_are_escaped_in_the_path(server: ScriptServer) -> None:
    odd = "q id/with?chars"
    raw = f"/semantics/apps/{APP}/query-execution-sources/q%20id%2Fwith%3Fchars/get-quoted-sources"
    server.script(
        f"/semantics/apps/{APP}/query-execution-sources/{odd}/get-quoted-sources", Reply(body=b"[]")
    )
    assert await client(server).fetch(odd) == []
    assert server.seen[0].raw_path == raw


# -- retries ---------------------------------------------------------------------


async def test_404_means_not_there_yet_then_200(server: ScriptServer) -> None:
    server.script(
        V2_PATH, Reply(404, b'{"message":"Not Found"}'), Reply(404, b"{}"), Reply(body=SEED_V2)
    )
    sources = await client(server).fetch(QID)
    assert [s.quoted_as for s in sources] == ["1"]
    assert len(server.seen) == 3


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_server_errors_are_retried(server: ScriptServer, status: int) -> None:
    server.script(V2_PATH, Reply(status, b"oops"), Reply(body=SEED_V2))
    sources = await client(server).fetch(QID)
    assert len(sources) == 1
    assert len(server.seen) == 2


async def test_404_until_the_deadline_is_a_typed_error(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(404, b"{}"))
    # Each attempt (the last included) has a second or more: a 404 on a loaded machine
    # must not turn into a timeout. The 404s go on until the deadline.
    policy = RetryPolicy(deadline=2.0, request_timeout=2.0, backoff_base=0.02, min_attempt=1.0)
    wikit = client(server, retry=policy)
    with pytest.raises(SourcesNotReady) as info:
        await wikit.fetch(QID)
    err = info.value
    assert err.status == 404 and err.code == "wikit_not_found" and err.retryable
    assert "gave up after" in err.message and QID in err.message
    assert len(server.seen) >= 2


async def test_429_retry_after_is_honoured(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(429, b"{}", {"Retry-After": "1"}), Reply(body=SEED_V2))
    wikit = client(server, retry=RetryPolicy(deadline=5, request_timeout=2, backoff_base=0.01))
    assert len(await wikit.fetch(QID)) == 1
    first, second = server.seen
    # Backoff alone would be ~10 ms; the server asked for a second.
    assert second.at - first.at >= 0.95


async def test_retry_after_is_capped(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(503, b"{}", {"Retry-After": "3600"}), Reply(body=SEED_V2))
    policy = RetryPolicy(deadline=3, request_timeout=1, backoff_base=0.01, retry_after_cap=0.05)
    assert len(await client(server, retry=policy).fetch(QID)) == 1
    assert len(server.seen) == 2


async def test_retry_after_beyond_the_deadline_stops_with_it(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(429, b"{}", {"Retry-After": "30"}), Reply(body=SEED_V2))
    policy = RetryPolicy(deadline=5, request_timeout=5, backoff_base=0.01, retry_after_cap=60)
    with pytest.raises(UpstreamError) as info:
        await client(server, retry=policy).fetch(QID)
    assert info.value.status == 429 and info.value.retry_after == 30.0
    assert info.value.code == "wikit_rate_limited"
    assert len(server.seen) == 1


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


async def test_slow_response_past_the_timeout(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=SEED_V2, delay=2.0))
    policy = RetryPolicy(deadline=0.5, request_timeout=0.2, backoff_base=0.01)
    with pytest.raises(UpstreamError) as info:
        await client(server, retry=policy).fetch(QID)
    assert info.value.code == "timeout" and info.value.retryable


async def test_one_slow_attempt_is_retried(server: ScriptServer) -> None:
    # The slow reply outlasts the attempt's timeout by far; the next one has a second.
    server.script(V2_PATH, Reply(body=SEED_V2, delay=10.0), Reply(body=SEED_V2))
    policy = RetryPolicy(deadline=10, request_timeout=1.0, backoff_base=0.01)
    assert len(await client(server, retry=policy).fetch(QID)) == 1
    assert len(server.seen) == 2


async def test_connection_refused_is_a_typed_error() -> None:
    # A port that was just free: nothing listens there.
    probe = web.AppRunner(web.Application())
    await probe.setup()
    site = web.TCPSite(probe, "127.0.0.1", 0)
    await site.start()
    port = probe.addresses[0][1]
    await probe.cleanup()
    wikit = WikitSources(
        APP,
        ORG,
        base_url=f"http://127.0.0.1:{port}",
        retry=RetryPolicy(deadline=0.3, backoff_base=0.05),
    )
    with pytest.raises(UpstreamError) as info:
        await wikit.fetch(QID)
    assert info.value.code == "connect"


# -- errors that stop at once ------------------------------------------------------


async def test_401_without_key_says_the_app_may_be_private(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(401, b'{"detail":"Unauthorized"}'))
    with pytest.raises(WikitAuthError) as info:
        await client(server).fetch(QID)
    err = info.value
    assert err.status == 401 and not err.retryable and err.code == "wikit_auth"
    assert "private" in err.message and "api_key" in err.message and ORG in err.message
    assert len(server.seen) == 1


async def test_401_with_key_names_key_and_organization(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(401, b"{}"))
    with pytest.raises(WikitAuthError) as info:
        await client(server, api_key=SECRET_KEY).fetch(QID)
    assert "API key" in info.value.message and "organization id" in info.value.message
    assert len(server.seen) == 1


async def test_403_names_organization_and_app(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(403, b"{}"))
    with pytest.raises(WikitAuthError) as info:
        await client(server, api_key=SECRET_KEY).fetch(QID)
    assert info.value.status == 403 and ORG in info.value.message and APP in info.value.message
    assert len(server.seen) == 1


async def test_unexpected_status_is_not_retried(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(418, b"teapot"))
    with pytest.raises(UpstreamError) as info:
        await client(server).fetch(QID)
    assert info.value.status == 418 and info.value.code == "wikit_http_error"
    assert len(server.seen) == 1


async def test_malformed_json_is_a_typed_error(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=b'[{"quoted_as": "1", "document": '))
    with pytest.raises(MalformedResponse, match="not JSON"):
        await client(server).fetch(QID)
    assert len(server.seen) == 1


def _seed_with(**changes: Any) -> bytes:
    item = orjson.loads(SEED_V2)[0]
    for dotted, value in changes.items():
        target = item
        *parents, leaf = dotted.split("__")
        for p in parents:
            target = target[p]
        if value is KeyError:
            del target[leaf]
        else:
            target[leaf] = value
    return orjson.dumps([item])


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (b'{"quoted_as": "1"}', "$: expected an array"),
        (b"[1]", "$[0]: expected an object"),
        (_seed_with(quoted_as=KeyError), "$[0].quoted_as"),
        (_seed_with(document=KeyError), "$[0].document"),
        (_seed_with(document__id=7), "$[0].document.id"),
        (_seed_with(chunk__page_start="three"), "$[0].chunk.page_start"),
        (_seed_with(score="high"), "$[0].score"),
        (_seed_with(document__public_link="yes"), "$[0].document.public_link"),
        (_seed_with(data_source=[]), "$[0].data_source"),
    ],
)
async def test_wrong_shapes_are_malformed_response(
    server: ScriptServer, body: bytes, where: str
) -> None:
    server.script(V2_PATH, Reply(body=body))
    with pytest.raises(MalformedResponse) as info:
        await client(server).fetch(QID)
    assert where in info.value.message


async def test_tolerated_variants(server: ScriptServer) -> None:
    body = _seed_with(
        quoted_as=2, data_source=None, score=KeyError, chunk__page_start=0, chunk__page_end=1
    )
    server.script(V2_PATH, Reply(body=body))
    (s,) = await client(server).fetch(QID)
    assert s.quoted_as == "2" and s.number == 2 and s.data_source is None and s.score is None
    assert (s.chunk.display_page_start, s.chunk.display_page_end) == (1, 2)


# -- secrets ------------------------------------------------------------------------


async def test_api_key_never_in_repr_logs_or_errors(
    server: ScriptServer, captured_logs: list[dict[str, Any]]
) -> None:
    server.script(V2_PATH, Reply(500, b"{}"), Reply(404, b"{}"), Reply(401, b"{}"))
    logs = captured_logs
    wikit = client(server, api_key=SECRET_KEY)
    with pytest.raises(WikitAuthError) as info:
        await wikit.fetch(QID)
    assert len(server.seen) == 3  # the key was sent each time...
    assert all(s.headers["Wikit-Semantics-API-Key"] == SECRET_KEY for s in server.seen)
    assert any(entry.get("event") == "retrying" for entry in logs)
    # ... and shows nowhere else.
    for text in (repr(wikit), str(wikit), str(info.value), repr(info.value), repr(logs)):
        assert SECRET_KEY not in text
    assert "***" in repr(wikit)


# -- connections ---------------------------------------------------------------------


async def test_async_with_reuses_one_connection(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=b"[]"))
    async with client(server) as wikit:
        for _ in range(3):
            await wikit.fetch(QID)
    assert len({s.peer for s in server.seen}) == 1


async def test_without_async_with_each_call_has_its_own_connection(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=b"[]"))
    wikit = client(server)
    for _ in range(2):
        await wikit.fetch(QID)
    assert len({s.peer for s in server.seen}) == 2


async def test_callers_session_is_used_and_left_open(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=b"[]"))
    async with aiohttp.ClientSession() as session:
        wikit = client(server, session=session)
        await wikit.fetch(QID)
        await wikit.fetch(QID)
        await wikit.aclose()
        assert not session.closed
    assert len({s.peer for s in server.seen}) == 1


# -- as an enricher -------------------------------------------------------------------


def ctx(answer_id: str | None = QID, headers: dict[str, str] | None = None) -> EnrichContext:
    return EnrichContext(
        answer=CitedAnswer(text="Oui [1].", id=answer_id), response_headers=headers or {}
    )


async def test_enricher_takes_the_completion_id(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=SEED_V2))
    wikit = client(server)
    assert (wikit.kind, wikit.needs, wikit.timeout) == ("sources", (), 4.0)
    event = await wikit.enrich(ctx())
    assert isinstance(event, SourcesEvent)
    assert (event.provider, event.query_id, len(event.sources)) == ("wikit", QID, 1)
    assert orjson.loads(event.to_json())["type"] == "sources"


async def test_enricher_query_id_from_a_header_or_explicit(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=SEED_V2))
    by_header = client(server, query_id_header="X-Wikit-Query-Id")
    event = await by_header.enrich(ctx(answer_id="other", headers={"x-wikit-query-id": QID}))
    assert event.query_id == QID
    with pytest.raises(UpstreamError, match="X-Wikit-Query-Id"):
        await by_header.enrich(ctx())
    explicit = client(server, query_id=QID)
    assert (await explicit.enrich(ctx(answer_id="other"))).query_id == QID


async def test_enricher_query_id_from_a_stream_field(server: ScriptServer) -> None:
    server.script(V2_PATH, Reply(body=SEED_V2))
    wikit = client(server, query_id_field="query_id")
    with pytest.raises(UpstreamError, match="query_id"):
        await wikit.enrich(ctx(answer_id="other"))
    # A context that exposes the stream's top-level chunk fields (see the report).
    rich = SimpleNamespace(answer=CitedAnswer(id="other"), chunk_fields={"query_id": QID})
    assert wikit.resolve_query_id(rich) == QID  # type: ignore[arg-type]


async def test_enricher_without_any_id_fails_clearly(server: ScriptServer) -> None:
    with pytest.raises(UpstreamError, match="query_id="):
        await client(server).enrich(ctx(answer_id=None))
    assert server.seen == []


# -- v1 (deprecated) --------------------------------------------------------------------


async def test_v1_seed_example_and_request_shape(server: ScriptServer) -> None:
    server.script(V1_PATH, Reply(body=SEED_V1))
    wikit = client(server)
    with pytest.warns(DeprecationWarning, match="v1"):
        (c,) = await wikit.fetch_v1("668e9bf09bd4493d2557a6e6", token="tok-v1")
    assert c == WikitCitationV1(
        id="668e9bf39bd4493d2557a6ea",
        query_execution_id="668e9bf09bd4493d2557a6e6",
        created_at="2024-07-10T14:34:26Z",
        total_count=1,
        reply_sentence="Les couleurs de la charte graphique de Wikit sont : Bleu ciel, Bleu nuit et Violet.",
        source_sentence="Les couleurs de la charte graphique de Wikit sont : - Bleu ciel ; - Bleu nuit ; - Violet.",
        chunk_data_snapshot=" [...]  {{source_sentence}}  [...] ",
        start_char_idx=0,
        end_char_idx=89,
        chunk_id="668e9b94ca8d43490c14ede3",
        chunk_page_start=2,
        chunk_page_end=2,
        chunk_position=None,
        document_id="668e9b94ca8d43490c14ede0",
        document_name="wikit-visual-identity.pdf",
        document_title=None,
        document_url="https://semantics-files.wikit.ai/v1/viewer/NjVkNWIzNDRhMDUxZWEyOGI3ZjU0ZDc2LzY2OGU5YjgzY2E4ZDQzNDkwYzE0ZWRkZi8xNzIwNjIxOTcxLjkwNzU3N193aWtpdF9kb2N1bWVudF9zYW1wbGUucGRm",
        organization_id="65d5b344a051ea28b7f54d76",
        threshold=50.0,
    )
    # "the fragment associated with page 3": indexes start at 0.
    assert (c.display_page_start, c.display_page_end) == (3, 3)
    (req,) = server.seen
    assert (req.method, req.path, req.body) == ("POST", V1_PATH, b"{}")
    assert req.headers["Authorization"] == "Bearer tok-v1"
    assert req.headers["X-Wikit-Organization-Id"] == ORG
    assert req.headers["X-Wikit-Response-Format"] == "json"
    assert req.headers["Content-Type"] == "application/json"


async def test_v1_uses_the_api_key_as_bearer_and_retries(server: ScriptServer) -> None:
    server.script(V1_PATH, Reply(500, b""), Reply(body=SEED_V1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out = await client(server, api_key=SECRET_KEY).fetch_v1("668e9bf09bd4493d2557a6e6")
        with pytest.raises(ValueError, match="Bearer"):
            await client(server).fetch_v1("x")
    assert len(out) == 1 and server.seen[-1].headers["Authorization"] == f"Bearer {SECRET_KEY}"


async def test_v1_wrong_shape(server: ScriptServer) -> None:
    server.script(V1_PATH, Reply(body=b'[{"reply_sentence": "x"}]'))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(MalformedResponse, match=r"\$\[0\]\._id"):
            await client(server).fetch_v1("668e9bf09bd4493d2557a6e6", token="t")


# -- helpers --------------------------------------------------------------------------------


def src(
    n: str,
    doc: str,
    *,
    url: str | None = None,
    pages: tuple[int | None, int | None] = (None, None),
    score: float | None = None,
) -> QuotedSource:
    return QuotedSource(
        quoted_as=n,
        document=SourceDocument(id=doc, name=f"{doc}.pdf", url=url),
        chunk=SourceChunk(
            id=f"{doc}-{n}", data=f"chunk {n}", page_start=pages[0], page_end=pages[1]
        ),
        score=score,
    )


def test_by_document_groups_repeats_in_order() -> None:
    sources = [
        src("1", "b", pages=(4, 5), score=0.5),
        src("2", "a", url="https://a"),
        src("3", "b", pages=(0, 0), score=0.9),
        src("4", "c"),
    ]
    groups = by_document(sources)
    assert [g.document.id for g in groups] == ["b", "a", "c"]
    assert groups[0].quoted_as == ["1", "3"]
    assert groups[0].pages == [1, 5, 6]
    assert groups[0].best_score == 0.9 and groups[1].best_score is None
    assert groups[1].url == "https://a"
    assert by_document([]) == []


def test_sources_without_url() -> None:
    sources = [src("1", "a", url="https://a"), src("2", "b"), src("3", "c", url="")]
    assert [s.quoted_as for s in sources_without_url(sources)] == ["2", "3"]


def test_page_label_is_one_based() -> None:
    assert page_label(src("1", "a")) is None
    assert page_label(src("1", "a", pages=(0, None))) == "p. 1"
    assert page_label(src("1", "a", pages=(2, 2))) == "p. 3"
    assert page_label(src("1", "a", pages=(2, 4))) == "pp. 3–5"


def test_match_refs_from_text_numbers_and_answer() -> None:
    sources = [src("1", "a"), src("2", "b"), src("2", "c"), src("4", "d"), src("x", "e")]
    text = "Le télétravail [1] est encadré [2, 3]. Voir [1][10] et [lien](http://x) [0]."
    m = match_refs(text, sources)
    assert sorted(m.matched) == [1, 2]
    assert [s.document.id for s in m.matched[2]] == ["b", "c"]
    assert m.refs_without_source == [3, 10]
    assert [s.quoted_as for s in m.sources_never_referenced] == ["4", "x"]
    assert not m.ok
    assert match_refs([1, 2, 4], sources[:4]).ok
    refs = [
        CitationRef(0, 4, 3, 0),
        CitationRef(0, 1, 0, 5),
        CitationRef(1, 9, 8, 0),
    ]  # choice 1 ignored
    by_answer = match_refs(CitedAnswer(text="ignored [2]", citation_refs=refs), sources[:4])
    assert by_answer.refs_without_source == []
    assert sorted(by_answer.matched) == [1, 4] and [
        s.quoted_as for s in by_answer.sources_never_referenced
    ] == ["2", "2"]
    assert match_refs(CitedAnswer(text="only [2]"), sources[:3]).refs_without_source == []
