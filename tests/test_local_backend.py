"""The embedded local backend over real loopback HTTP: every endpoint, both clients."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest

from streamcite.local.answerer import NO_ANSWER, Answerer, token_pieces
from streamcite.local.corpus import load_corpus, sentence_spans
from streamcite.local.retrieval import tokenize
from streamcite.local.server import MODEL, BackendConfig, LocalBackend
from streamcite.local.store import AnswerStore, StoredAnswer

DEMO_Q = (
    "How many days a week can I work from home, and which security rules apply outside the office?"
)
NO_ANSWER_Q = "Who won the football world cup in 1998?"
CITATION_FIELDS = [
    "cited_text",
    "cited_text_heading",
    "document_title",
    "document_index",
    "document_author",
    "document_year",
    "document_reference",
    "source_url",
]
# Field names of the Wikit documentation's examples (shared/seeds/003_*.txt).
V2_KEYS = {"quoted_as", "document", "chunk", "data_source", "score", "retriever_type"}
V2_DOCUMENT_KEYS = {
    "id", "name", "title", "url", "public_link", "storage_name", "data_source_id", "organization_id",
}  # fmt: skip
V2_CHUNK_KEYS = {
    "id", "data", "document_id", "data_source_id", "llm_app_id", "user_id", "flags", "position",
    "page_start", "page_end",
}  # fmt: skip
V1_KEYS = {
    "_id", "created_at", "query_execution_id", "total_count", "reply_sentence", "source_sentence",
    "chunk_data_snapshot", "start_char_idx", "end_char_idx", "chunk_id", "chunk_page_start",
    "chunk_page_end", "chunk_position", "document_id", "document_name", "document_title",
    "document_url", "organization_id", "threshold",
}  # fmt: skip


def chat_body(question: str, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": question}], **extra}


def sse_payloads(raw: bytes) -> list[str]:
    """The ``data:`` payloads of a raw SSE body, in order."""
    out = []
    for block in raw.decode("utf-8").split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data: "):
                out.append(line[len("data: ") :])
    return out


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend(BackendConfig()) as b:
        yield b


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as c:
        yield c


# --------------------------------------------------------------------------- corpus, retrieval


def test_builtin_corpus_has_documents_in_four_languages() -> None:
    corpus = load_corpus()
    assert len(corpus.documents) >= 10
    assert {d.language for d in corpus.documents} == {"en", "fr", "it", "he"}
    for doc in corpus.documents:
        assert doc.title and doc.author and doc.year and doc.reference
        assert len(doc.id) == 24
    for chunk in corpus.chunks:
        doc = corpus.document(chunk.document_id)
        assert doc is not None
        assert doc.body[chunk.start : chunk.end] == chunk.text
        assert chunk.heading
    # Ids are stable from one load to the next (URLs keep working).
    assert [d.id for d in load_corpus().documents] == [d.id for d in corpus.documents]


def test_chunks_keep_pages_when_the_document_marks_them() -> None:
    corpus = load_corpus()
    security = next(d for d in corpus.documents if d.name == "information-security-policy.md")
    pages = {
        c.heading: (c.page_start, c.page_end) for c in corpus.chunks if c.document_id == security.id
    }
    assert pages["Devices"] == (1, 1)
    assert pages["Working outside the office"] == (2, 2)
    remote = next(d for d in corpus.documents if d.name == "remote-work-policy.md")
    assert all(c.page_start is None for c in corpus.chunks if c.document_id == remote.id)


def test_tokenize_folds_accents_stems_and_strips_hebrew_prefixes() -> None:
    assert tokenize("Télétravail") == tokenize("teletravail")
    assert tokenize("giorni") == tokenize("giorno")
    assert tokenize("policies") == tokenize("policy")
    assert "the" not in tokenize("the policy")
    hebrew = tokenize("מהבית")
    assert "בית" in hebrew and "מהבית" in hebrew
    assert tokenize("שָׁלוֹם") == tokenize("שלום")  # points removed


def test_sentence_spans_respect_abbreviations() -> None:
    text = (
        "Art. 1 dice così. Vedi e.g. il p. 3 di J. Smith. Costa 0.35 euro!\n- voce uno\n- voce due."
    )
    sentences = [text[s:e] for s, e in sentence_spans(text)]
    assert sentences == [
        "Art. 1 dice così.",
        "Vedi e.g. il p. 3 di J. Smith.",
        "Costa 0.35 euro!",
        "voce uno",
        "voce due.",
    ]


@pytest.mark.parametrize(
    ("question", "document"),
    [
        (DEMO_Q, "remote-work-policy.md"),
        ("Combien de jours de télétravail par semaine ?", "charte-teletravail.md"),
        ("Quanti giorni di ferie ho all'anno?", "regolamento-del-personale.md"),
        ("כמה ימים בשבוע מותר לעבוד מהבית?", "avoda-merachok.md"),
        ("Quelles sont les couleurs de la charte graphique ?", "charte-graphique.md"),
        ("How long must passwords be?", "information-security-policy.md"),
    ],
)
def test_answers_quote_the_right_document(question: str, document: str) -> None:
    answer = Answerer(load_corpus()).answer(question)
    assert answer.found
    assert answer.passages[0].document.name == document or any(
        p.document.name == document for p in answer.passages
    )
    # Every sentence is quoted verbatim from its passage, and footnoted.
    for s in answer.sentences:
        passage = answer.passages[s.number - 1]
        assert passage.chunk.text[s.chunk_start : s.chunk_end] == s.text
        written = answer.text[s.answer_start : s.answer_end]
        assert f"[{s.number}]" in written
        assert written.replace(f" [{s.number}]", "") == s.text


@pytest.mark.parametrize("question", [NO_ANSWER_Q, "What is the capital of Mongolia?", "hello", ""])
def test_questions_outside_the_corpus_get_no_answer(question: str) -> None:
    answer = Answerer(load_corpus()).answer(question)
    assert not answer.found
    assert answer.text in NO_ANSWER.values()
    assert answer.citations("http://x") == []


def test_token_pieces_concatenate_to_the_text_and_split_markers() -> None:
    text = "Employees may work remotely [1]. Outside [2][3], use the VPN [4]."
    pieces = token_pieces(text)
    assert "".join(pieces) == text
    assert " [" in pieces and "1]." in pieces
    assert all(p.strip() for p in pieces)


def test_store_is_bounded_and_expires() -> None:
    now = [0.0]
    store = AnswerStore(max_size=2, ttl=10.0, clock=lambda: now[0])
    answer = Answerer(load_corpus()).answer(DEMO_Q)
    for i in range(3):
        store.put(StoredAnswer(f"id{i}", 0, answer))
    assert store.get("id0") is None  # the oldest went first
    assert store.get("id1") is not None and store.get("id2") is not None
    now[0] = 9.9
    assert "id2" in store
    now[0] = 10.0
    assert store.get("id2") is None and len(store) == 0


# --------------------------------------------------------------------------- chat completions


async def test_healthz_and_models(backend: LocalBackend, client: httpx.AsyncClient) -> None:
    health = (await client.get(backend.root_url + "/healthz")).json()
    assert health["status"] == "ok" and health["documents"] >= 10
    models = (await client.get(backend.base_url + "/models")).json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == [MODEL]


async def test_non_streaming_answer_with_citations(
    backend: LocalBackend, client: httpx.AsyncClient
) -> None:
    r = await client.post(backend.base_url + "/chat/completions", json=chat_body(DEMO_Q))
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "chat.completion" and body["model"] == MODEL
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{24}", body["id"])
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["message"]["role"] == "assistant"
    text = choice["message"]["content"]
    citations = body["citations"]
    assert len(citations) >= 2
    assert len({c["document_title"] for c in citations}) >= 2
    for i, c in enumerate(citations):
        assert list(c) == CITATION_FIELDS
        assert c["document_index"] == i
        assert f"[{i + 1}]" in text
        assert c["cited_text_heading"] and c["cited_text"]
        assert c["source_url"].startswith(backend.root_url + "/documents/")
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
    assert numbers == set(range(1, len(citations) + 1))
    assert body["usage"]["completion_tokens"] == len(token_pieces(text))
    assert (
        body["usage"]["total_tokens"]
        == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )


async def test_source_urls_serve_the_documents(
    backend: LocalBackend, client: httpx.AsyncClient
) -> None:
    body = (
        await client.post(backend.base_url + "/chat/completions", json=chat_body(DEMO_Q))
    ).json()
    for c in body["citations"]:
        r = await client.get(c["source_url"])
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/markdown")
        assert c["document_title"] in r.text and c["cited_text"] in r.text
        page = await client.get(c["source_url"], headers={"Accept": "text/html"})
        assert page.headers["content-type"].startswith("text/html")
        assert "<h1>" in page.text
    missing = await client.get(backend.root_url + "/documents/nope")
    assert missing.status_code == 404 and "detail" in missing.json()


async def test_stream_chunks_are_proper_openai_chunks(
    backend: LocalBackend, client: httpx.AsyncClient
) -> None:
    r = await client.post(
        backend.base_url + "/chat/completions",
        json=chat_body(DEMO_Q, stream=True, stream_options={"include_usage": True}),
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    payloads = sse_payloads(r.content)
    assert payloads[-1] == "[DONE]"
    chunks = [orjson.loads(p) for p in payloads[:-1]]
    ids = {c["id"] for c in chunks}
    assert len(ids) == 1 and ids.pop().startswith("chatcmpl-")
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == MODEL for c in chunks)
    assert len({c["created"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    usage_chunk, finish = chunks[-1], chunks[-2]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["completion_tokens"] > 0
    assert finish["choices"][0]["finish_reason"] == "stop" and finish["choices"][0]["delta"] == {}
    # citations ride on the finish chunk only; usage is null on every other chunk.
    assert [("citations" in c) for c in chunks].count(True) == 1 and "citations" in finish
    assert all(c["usage"] is None for c in chunks[:-1])
    contents = [c["choices"][0]["delta"]["content"] for c in chunks[1:-2]]
    assert all(contents) and all(len(x.split()) <= 1 for x in contents)
    assert usage_chunk["usage"]["completion_tokens"] == len(contents)
    text = "".join(contents)
    assert " [" in contents  # markers arrive split across deltas
    # Same question, same answer, with or without streaming.
    plain = (
        await client.post(backend.base_url + "/chat/completions", json=chat_body(DEMO_Q))
    ).json()
    assert text == plain["choices"][0]["message"]["content"]
    assert finish["citations"] == plain["citations"]


async def test_stream_without_include_usage_has_no_usage(
    backend: LocalBackend, client: httpx.AsyncClient
) -> None:
    r = await client.post(
        backend.base_url + "/chat/completions", json=chat_body(DEMO_Q, stream=True)
    )
    chunks = [orjson.loads(p) for p in sse_payloads(r.content)[:-1]]
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def test_no_answer_has_no_citations(backend: LocalBackend, client: httpx.AsyncClient) -> None:
    body = (
        await client.post(backend.base_url + "/chat/completions", json=chat_body(NO_ANSWER_Q))
    ).json()
    assert body["citations"] == []
    assert body["choices"][0]["message"]["content"] == NO_ANSWER["en"]
    r = await client.post(
        backend.base_url + "/chat/completions", json=chat_body(NO_ANSWER_Q, stream=True)
    )
    finish = orjson.loads(sse_payloads(r.content)[-2])
    assert finish["citations"] == [] and finish["choices"][0]["finish_reason"] == "stop"


async def test_max_tokens_cuts_the_answer(backend: LocalBackend, client: httpx.AsyncClient) -> None:
    body = (
        await client.post(
            backend.base_url + "/chat/completions", json=chat_body(DEMO_Q, max_tokens=3)
        )
    ).json()
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 3


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": MODEL}, "messages"),
        ({"model": MODEL, "messages": []}, "messages"),
        (
            {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "stream": "yes"},
            "stream",
        ),
        (
            {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_tokens": 0},
            "max_tokens",
        ),
    ],
)
async def test_invalid_requests_get_openai_errors(
    backend: LocalBackend, client: httpx.AsyncClient, body: dict[str, Any], param: str
) -> None:
    r = await client.post(backend.base_url + "/chat/completions", json=body)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param and err["message"]
    r = await client.post(backend.base_url + "/chat/completions", content=b"{not json")
    assert r.status_code == 400


async def test_openai_sdk_streaming(backend: LocalBackend) -> None:
    async with openai.AsyncOpenAI(base_url=backend.base_url, api_key="x", max_retries=0) as sdk:
        stream = await sdk.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": DEMO_Q}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    assert finish.choices[0].finish_reason == "stop"
    citations = (finish.model_extra or {})["citations"]
    assert citations == finish.model_dump()["citations"]
    assert len(citations) >= 2 and list(citations[0]) == CITATION_FIELDS
    assert "[1]" in text and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


async def test_openai_sdk_non_streaming(backend: LocalBackend) -> None:
    async with openai.AsyncOpenAI(base_url=backend.base_url, api_key="x", max_retries=0) as sdk:
        completion = await sdk.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Quanti giorni di ferie ho all'anno?"}],
        )
    assert completion.choices[0].message.content and "[1]" in completion.choices[0].message.content
    citations = completion.model_dump()["citations"]
    assert citations[0]["document_title"] == "Regolamento del personale"
    assert citations[0]["cited_text_heading"] == "Art. 2 – Ferie"
    assert completion.usage is not None and completion.usage.total_tokens > 0


# --------------------------------------------------------------------------- Wikit


async def _answer_id(
    backend: LocalBackend, client: httpx.AsyncClient, question: str = DEMO_Q
) -> dict[str, Any]:
    r = await client.post(backend.base_url + "/chat/completions", json=chat_body(question))
    body: dict[str, Any] = r.json()
    return body


async def test_wikit_v2_sources_for_an_earlier_answer(
    backend: LocalBackend, client: httpx.AsyncClient
) -> None:
    answer = await _answer_id(backend, client)
    r = await client.get(
        f"{backend.root_url}/semantics/apps/my-app/query-execution-sources/{answer['id']}/get-quoted-sources",
        headers={"accept": "application/json", "X-Wikit-Organization-Id": "any"},
    )
    assert r.status_code == 200
    sources = r.json()
    assert [s["quoted_as"] for s in sources] == [
        str(i + 1) for i in range(len(answer["citations"]))
    ]
    for s, c in zip(sources, answer["citations"], strict=True):
        assert set(s) == V2_KEYS
        assert set(s["document"]) == V2_DOCUMENT_KEYS and set(s["chunk"]) == V2_CHUNK_KEYS
        assert set(s["data_source"]) == {"id", "name"}
        assert (
            s["document"]["url"] == c["source_url"]
            and s["document"]["title"] == c["document_title"]
        )
        assert s["chunk"]["document_id"] == s["document"]["id"]
        assert s["chunk"]["data"].startswith("## ") and c["cited_text"] in s["chunk"]["data"]
        assert isinstance(s["chunk"]["position"], int)
        assert 0.0 < s["score"] < 1.0 and s["retriever_type"]
    # The Information Security Policy marks its pages: Wikit counts them from 0.
    security = next(s for s in sources if s["document"]["name"] == "information-security-policy.md")
    assert security["chunk"]["page_start"] == 1 and security["chunk"]["page_end"] == 1
    # Repeated documents are possible, as the Wikit documentation warns.
    names = [s["document"]["name"] for s in sources]
    assert len(names) > len(set(names))


async def test_wikit_v1_citations_for_an_earlier_answer(
    backend: LocalBackend, client: httpx.AsyncClient
) -> None:
    answer = await _answer_id(backend, client)
    r = await client.post(
        f"{backend.root_url}/semantics/apps/my-app/query-executions/{answer['id']}/citations",
        headers={"Authorization": "Bearer t", "X-Wikit-Response-Format": "json"},
        json={},
    )
    assert r.status_code == 200
    items = r.json()
    assert items
    sources = (
        await client.get(
            f"{backend.root_url}/semantics/apps/my-app/query-execution-sources/{answer['id']}/get-quoted-sources"
        )
    ).json()
    chunks = {s["chunk"]["id"]: s["chunk"]["data"] for s in sources}
    plain_text = re.sub(r" \[\d+\]", "", answer["choices"][0]["message"]["content"])
    for item in items:
        assert set(item) == V1_KEYS
        assert item["query_execution_id"] == answer["id"] and item["total_count"] == len(items)
        assert item["reply_sentence"] in plain_text
        data = chunks[item["chunk_id"]]
        assert data[item["start_char_idx"] : item["end_char_idx"]] == item["source_sentence"]
        assert "{{source_sentence}}" in item["chunk_data_snapshot"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", item["created_at"])
        assert item["threshold"] == 50


async def test_wikit_unknown_ids_are_404(backend: LocalBackend, client: httpx.AsyncClient) -> None:
    r = await client.get(
        f"{backend.root_url}/semantics/apps/a/query-execution-sources/chatcmpl-unknown/get-quoted-sources"
    )
    assert r.status_code == 404 and r.json()["detail"]
    r = await client.post(
        f"{backend.root_url}/semantics/apps/a/query-executions/nope/citations", json={}
    )
    assert r.status_code == 404 and r.json()["detail"]


async def test_wikit_sources_of_a_no_answer_are_empty(
    backend: LocalBackend, client: httpx.AsyncClient
) -> None:
    answer = await _answer_id(backend, client, NO_ANSWER_Q)
    r = await client.get(
        f"{backend.root_url}/semantics/apps/a/query-execution-sources/{answer['id']}/get-quoted-sources"
    )
    assert r.status_code == 200 and r.json() == []


async def test_wikit_credentials_are_checked_when_configured(client: httpx.AsyncClient) -> None:
    config = BackendConfig(wikit_org_id="org-1", wikit_api_key="key-1")
    async with LocalBackend(config) as backend:
        answer = await _answer_id(backend, client)
        v2 = f"{backend.root_url}/semantics/apps/a/query-execution-sources/{answer['id']}/get-quoted-sources"
        v1 = f"{backend.root_url}/semantics/apps/a/query-executions/{answer['id']}/citations"
        good_v2 = {"X-Wikit-Organization-Id": "org-1", "Wikit-Semantics-API-Key": "key-1"}
        for headers in (
            {},
            {"X-Wikit-Organization-Id": "org-1"},
            {"X-Wikit-Organization-Id": "org-2", "Wikit-Semantics-API-Key": "key-1"},
            {"X-Wikit-Organization-Id": "org-1", "Wikit-Semantics-API-Key": "wrong"},
        ):
            r = await client.get(v2, headers=headers)
            assert r.status_code == 401 and r.json()["detail"]
            assert "key-1" not in r.text
        assert (await client.get(v2, headers=good_v2)).status_code == 200
        good_v1 = {"X-Wikit-Organization-Id": "org-1", "Authorization": "Bearer key-1"}
        assert (await client.post(v1, headers=good_v1, json={})).status_code == 200
        bad_v1 = {"X-Wikit-Organization-Id": "org-1", "Authorization": "Bearer nope"}
        assert (await client.post(v1, headers=bad_v1, json={})).status_code == 401
        sources = (await client.get(v2, headers=good_v2)).json()
        assert sources[0]["document"]["organization_id"] == "org-1"
    assert "key-1" not in repr(config)


# --------------------------------------------------------------------------- own corpus


async def test_own_corpus_folder(tmp_path: Path, client: httpx.AsyncClient) -> None:
    (tmp_path / "garden.md").write_text(
        "---\ntitle: Garden Rules\nauthor: Allotment Society\nyear: 2021\nreference: GR-9\n---\n\n"
        "# Garden Rules\n\n## Watering\n\nPlots are watered before eight in the morning. "
        "Hoses longer than twenty metres are forbidden.\n\n<!-- page: 3 -->\n\n## Compost\n\n"
        "Compost bins are emptied every second Saturday.\n",
        encoding="utf-8",
    )
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "bees.txt").write_text(
        "Beekeeping notes\n\nThe hives are inspected weekly in spring.\fSwarms are reported to the warden.\n",
        encoding="utf-8",
    )
    async with LocalBackend(BackendConfig(corpus_dir=tmp_path)) as backend:
        health = (await client.get(backend.root_url + "/healthz")).json()
        assert health["documents"] == 2
        body = await _answer_id(backend, client, "When are compost bins emptied?")
        c = body["citations"][0]
        assert c["document_title"] == "Garden Rules" and c["document_author"] == "Allotment Society"
        assert c["document_year"] == "2021" and c["document_reference"] == "GR-9"
        assert c["cited_text_heading"] == "Compost"
        sources = (
            await client.get(
                f"{backend.root_url}/semantics/apps/a/query-execution-sources/{body['id']}/get-quoted-sources"
            )
        ).json()
        assert sources[0]["chunk"]["page_start"] == 2  # page 3, counted from 0
        bees = await _answer_id(backend, client, "Who do I report swarms to?")
        c = bees["citations"][0]
        assert (
            c["document_title"] == "bees"
            and c["cited_text"] == "Swarms are reported to the warden."
        )
        sources = (
            await client.get(
                f"{backend.root_url}/semantics/apps/a/query-execution-sources/{bees['id']}/get-quoted-sources"
            )
        ).json()
        assert sources[0]["chunk"]["page_start"] == 1  # after the form feed: page 2
        assert (await client.get(c["source_url"])).headers["content-type"].startswith("text/plain")
        nothing = await _answer_id(backend, client, DEMO_Q)
        assert nothing["citations"] == []


def test_corpus_errors_are_clear(tmp_path: Path) -> None:
    from streamcite.local.corpus import CorpusError

    with pytest.raises(CorpusError, match="not found"):
        load_corpus(tmp_path / "missing")
    with pytest.raises(CorpusError, match=r"no \.md or \.txt"):
        load_corpus(tmp_path)
    (tmp_path / "bad.md").write_text(
        "---\ntitle: x\nthis line is wrong\n---\nbody\n", encoding="utf-8"
    )
    with pytest.raises(CorpusError, match=r"bad.md:3"):
        load_corpus(tmp_path)


# --------------------------------------------------------------------------- Google grounding check


async def test_grounding_check_endpoint(backend: LocalBackend, client: httpx.AsyncClient) -> None:
    pytest.importorskip("streamcite.grounding.checker")
    url = f"{backend.root_url}/v1/projects/p/locations/global/groundingConfigs/default_grounding_config:check"
    request = {
        "answerCandidate": "Titanic was directed by James Cameron. It starred Brad Pitt and Kate Winslet.",
        "facts": [
            {
                "factText": "Titanic is a 1997 film directed by James Cameron.",
                "attributes": {"author": "x"},
            },
            {"factText": "Titanic stars Leonardo DiCaprio and Kate Winslet."},
        ],
        "groundingSpec": {"citationThreshold": 0.6},
    }
    r = await client.post(url, json=request)
    assert r.status_code == 200
    body = r.json()
    assert "supportScore" in body and body["claims"]
    assert body["claims"][0]["claimText"].startswith("Titanic was directed")
    bad = await client.post(
        url, json={"answerCandidate": "x", "facts": [], "groundingSpec": {"citationThreshold": 7}}
    )
    assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    junk = await client.post(url, content=b"[1, 2")
    assert junk.status_code == 400
