"""Google grounding check against a real aiohttp server on 127.0.0.1 that speaks its API.

The default reply is computed like Google would from the request actually received:
the answer is cut into sentences, each claim reports UTF-8 BYTE offsets into the
``answerCandidate`` it was sent, and cites the facts sharing words with it. So the
tests check the client end to end: what it sends (markers stripped or not), and how
it maps byte offsets back to characters / UTF-16 units of the raw answer.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from streamcite.core.errors import MalformedResponse, UpstreamError
from streamcite.core.events import GroundingEvent, SourcesEvent
from streamcite.core.grounding import GroundingFact
from streamcite.core.models import Citation, CitationRef, CitedAnswer
from streamcite.core.sources import DataSource, QuotedSource, SourceChunk, SourceDocument
from streamcite.enrich._auth import ApplicationDefaultToken, AuthSetupError, ProviderToken
from streamcite.enrich.base import EnrichContext
from streamcite.enrich.google import (
    GoogleAuthError,
    GoogleGrounding,
    GoogleRequestError,
    GroundingInputError,
    GroundingLimitError,
    parse_check_response,
    prepare_facts,
)
from tests.conftest import ServeFn

CONFIG = "projects/my-proj/locations/global/groundingConfigs/default_grounding_config"
CHECK_PATH = f"/v1/{CONFIG}:check"
TOKEN = "ya29.SECRET-token-value"


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if len(w) > 2}


def google_like_check(body: dict[str, Any], *, omit_first_start: bool = True) -> dict[str, Any]:
    """What the grounding API would answer, from the request alone (a test oracle).

    Claims are sentences of ``answerCandidate`` with UTF-8 byte offsets; a claim
    cites every fact sharing at least two words (of 3+ letters) with it. Like proto3
    JSON, zero values are omitted (``startPos`` of the first claim).
    """
    answer: str = body["answerCandidate"]
    facts: list[dict[str, Any]] = body["facts"]
    claim_scores = body.get("groundingSpec", {}).get("enableClaimLevelScore", False)
    chunks: list[dict[str, Any]] = []
    chunk_of: dict[int, int] = {}
    claims: list[dict[str, Any]] = []
    for m in re.finditer(r"\S[^.!?]*[.!?]?", answer):
        sentence = m.group()
        start_b = len(answer[: m.start()].encode())
        end_b = start_b + len(sentence.encode())
        cites = []
        for fi, fact in enumerate(facts):
            if len(_words(sentence) & _words(fact["factText"])) >= 2:
                if fi not in chunk_of:
                    chunk_of[fi] = len(chunks)
                    chunks.append({"chunkText": fact["factText"], "source": str(fi)})
                cites.append(chunk_of[fi])
        claim: dict[str, Any] = {"claimText": sentence, "endPos": end_b}
        if start_b or not omit_first_start:
            claim["startPos"] = start_b
        if cites:
            claim["citationIndices"] = cites
        claim["groundingCheckRequired"] = True
        if claim_scores:
            claim["score"] = 0.9 if cites else 0.1
        claims.append(claim)
    supported = sum(1 for c in claims if "citationIndices" in c)
    out: dict[str, Any] = {"citedChunks": chunks, "claims": claims}
    if claims:
        out["supportScore"] = supported / len(claims)
    out["citedFacts"] = [{"chunkText": c["chunkText"]} for c in chunks]
    return out


@dataclass
class Reply:
    status: int = 200
    body: bytes | None = None
    """None: compute the answer from the request (google_like_check)."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    path: str
    headers: Any
    body: dict[str, Any] | None
    at: float


class FakeGoogle:
    def __init__(self) -> None:
        self.replies: list[Reply] = [Reply()]
        self.seen: list[Seen] = []
        self.url = ""

    def script(self, *replies: Reply) -> None:
        self.replies = list(replies)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        self.seen.append(Seen(request.path, request.headers.copy(), body, time.monotonic()))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if request.path != CHECK_PATH:
            return web.json_response({"error": {"code": 404, "message": "not found"}}, status=404)
        payload = reply.body if reply.body is not None else orjson.dumps(google_like_check(body))
        return web.Response(
            status=reply.status,
            body=payload,
            headers={"Content-Type": "application/json", **reply.headers},
        )


@pytest.fixture
async def google(serve: ServeFn) -> FakeGoogle:
    srv = FakeGoogle()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", srv.handle)
    srv.url = await serve(app)
    return srv


def grounding(srv: FakeGoogle, **kw: Any) -> GoogleGrounding:
    kw.setdefault("token", TOKEN)
    kw.setdefault("request_timeout", 2.0)
    kw.setdefault("deadline", 5.0)
    return GoogleGrounding(CONFIG, endpoint=srv.url, **kw)


CITATIONS = [
    Citation(
        cited_text="ירושלים היא בירת ישראל ומקום מושבה של הכנסת.",
        document_title="ספר העובדות",
        document_index=0,
        document_author="מחבר",
        document_year="2020",
        source_url="https://example.org/he",
    ),
    Citation(
        cited_text="La città di Roma è la capitale d'Italia, più antica della Repubblica.",
        cited_text_heading="Capitolo 1",
        document_title="Storia di Roma",
        document_index=1,
        document_reference="ISBN 1",
    ),
    Citation(
        cited_text="Le château de Versailles était la résidence des rois de France 🏰 avant 1789.",
        document_title="Versailles",
        document_index=2,
    ),
]

# Markers inside the sentence (before the period), one after a period, emoji, RTL.
PIECES = [
    "ירושלים היא בירת ישראל [1].",
    "La città di Roma è la capitale d'Italia [2].",
    "Le château de Versailles 🏰 était la résidence des rois [3][1].",
    "Les pingouins volent très haut.",
]
RAW = " ".join(PIECES)


def answer_of(text: str = RAW) -> CitedAnswer:
    refs = [
        CitationRef(0, int(m.group(1)), int(m.group(1)) - 1, m.start())
        for m in re.finditer(r"\[(\d+)\]", text)
    ]
    return CitedAnswer(text=text, id="chatcmpl-1", citations=list(CITATIONS), citation_refs=refs)


def utf16(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-16-le")) // 2


# -- the request -------------------------------------------------------------------


async def test_request_shape_and_headers(google: FakeGoogle) -> None:
    g = grounding(google, quota_project="billing-proj")
    await g.check(
        answer_of(),
        CITATIONS,
        citation_threshold="0.7",
        claim_level_scores=True,
        user_labels={"team": "search", "env": "", "ñandú": "café"},
    )
    (req,) = google.seen
    assert req.path == CHECK_PATH
    assert req.headers["Authorization"] == f"Bearer {TOKEN}"
    assert req.headers["X-Goog-User-Project"] == "billing-proj"
    assert req.headers["Content-Type"] == "application/json"
    body = req.body
    assert body is not None
    assert body["answerCandidate"] == (
        "ירושלים היא בירת ישראל. La città di Roma è la capitale d'Italia. "
        "Le château de Versailles 🏰 était la résidence des rois. Les pingouins volent très haut."
    )
    assert body["groundingSpec"] == {"citationThreshold": 0.7, "enableClaimLevelScore": True}
    assert body["userLabels"] == {"team": "search", "env": "", "ñandú": "café"}
    assert body["facts"][0] == {
        "factText": CITATIONS[0].cited_text,
        "attributes": {
            "title": "ספר העובדות",
            "author": "מחבר",
            "year": "2020",
            "url": "https://example.org/he",
            "document_index": "0",
        },
    }
    assert body["facts"][1]["attributes"]["heading"] == "Capitolo 1"
    assert body["facts"][1]["attributes"]["reference"] == "ISBN 1"


async def test_defaults_no_labels_no_quota_header(google: FakeGoogle) -> None:
    await grounding(google).check("Roma è la capitale d'Italia.", ["Roma è la capitale d'Italia."])
    (req,) = google.seen
    assert "X-Goog-User-Project" not in req.headers
    assert req.body is not None and "userLabels" not in req.body
    assert req.body["groundingSpec"] == {"citationThreshold": 0.6, "enableClaimLevelScore": False}


# -- offsets: Hebrew, accents, emoji; markers stripped and mapped back -------------------


async def test_claims_map_back_onto_the_raw_answer(google: FakeGoogle) -> None:
    result = await grounding(google).check(answer_of(), CITATIONS)
    assert result.provider == "google"
    assert [c.claim_text for c in result.claims] == [
        "ירושלים היא בירת ישראל.",
        "La città di Roma è la capitale d'Italia.",
        "Le château de Versailles 🏰 était la résidence des rois.",
        "Les pingouins volent très haut.",
    ]
    sent = google.seen[0].body["answerCandidate"]  # type: ignore[index]
    for claim, piece in zip(result.claims, PIECES, strict=True):
        start = RAW.index(piece)
        # Character offsets into the RAW text the user saw, markers included.
        assert (claim.start, claim.end) == (start, start + len(piece))
        assert RAW[claim.start : claim.end] == piece
        assert (claim.start_utf16, claim.end_utf16) == (
            utf16(RAW, start),
            utf16(RAW, start + len(piece)),
        )
        # Bytes exactly as received: they index the text that was SENT.
        assert sent.encode()[claim.start_byte : claim.end_byte].decode() == claim.claim_text
    emoji_claim = result.claims[2]
    assert emoji_claim.end_utf16 - emoji_claim.start_utf16 == len(PIECES[2]) + 1  # 🏰 is 2 units
    assert result.support_score == 0.75


async def test_raw_answer_sent_when_not_stripping(google: FakeGoogle) -> None:
    result = await grounding(google, strip_markers=False).check(answer_of(), CITATIONS)
    assert google.seen[0].body["answerCandidate"] == RAW  # type: ignore[index]
    for claim, piece in zip(result.claims, PIECES, strict=True):
        assert RAW[claim.start : claim.end] == piece
        assert (claim.start_byte, claim.end_byte) == (
            len(RAW[: claim.start].encode()),
            len(RAW[: claim.end].encode()),
        )


async def test_marker_after_the_period_stays_outside_the_claim(google: FakeGoogle) -> None:
    raw = "Roma è la capitale d'Italia. [2] Versailles était la résidence des rois. [3]"
    result = await grounding(google).check(answer_of(raw), CITATIONS)
    spans = [raw[c.start : c.end] for c in result.claims]
    assert spans == ["Roma è la capitale d'Italia.", "Versailles était la résidence des rois."]


async def test_claims_resolve_to_the_original_citations(google: FakeGoogle) -> None:
    answer = answer_of()
    result = await grounding(google).check(answer, answer.citations)
    he, it, fr, unsupported = result.claims
    assert result.origins_for(he, answer.citations) == [CITATIONS[0]]
    assert result.origins_for(it, answer.citations) == [CITATIONS[1]]
    assert result.origins_for(fr, answer.citations) == [CITATIONS[2]]
    assert unsupported.citation_indices == [] and not unsupported.supported
    assert result.origins_for(unsupported, answer.citations) == []
    # cited chunk → fact index → the fact that was sent
    for i, chunk in enumerate(result.cited_chunks):
        fact = result.fact_for_chunk(i)
        assert fact is not None and fact.text == chunk.chunk_text
        assert chunk.fact_index == int(chunk.source)  # type: ignore[arg-type]
    assert result.cited_facts == [c.chunk_text for c in result.cited_chunks]


async def test_claims_resolve_through_split_windows(google: FakeGoogle) -> None:
    filler = " ".join(f"parola{i}" for i in range(2500))  # ~22,000 characters
    long_citation = Citation(
        cited_text=filler + " Il Colosseo fu inaugurato nell'anno ottanta.",
        document_title="Lungo",
        document_index=0,
    )
    answer = CitedAnswer(
        text="Il Colosseo fu inaugurato nell'anno ottanta [1].", citations=[long_citation]
    )
    result = await grounding(google).check(answer, answer.citations)
    sent_facts = google.seen[0].body["facts"]  # type: ignore[index]
    assert len(sent_facts) >= 3
    assert all(len(f["factText"]) <= 10_000 for f in sent_facts)
    assert all(f["attributes"]["title"] == "Lungo" for f in sent_facts)
    assert any("split" in w for w in result.warnings)
    (claim,) = result.claims
    assert claim.supported
    assert result.origins_for(claim, answer.citations) == [long_citation]


# -- response parsing: strict, tolerant of omissions --------------------------------------


def test_parse_full_schema_and_omissions() -> None:
    body = {
        "citedChunks": [
            {
                "chunkText": "ירושלים היא בירת ישראל",
                "source": "1",
                "index": 3,
                "sourceMetadata": {"k": "v"},
                "uri": "https://x",
                "title": "T",
                "domain": "x",
            },
            {"chunkText": "other", "source": 0},
        ],
        "citedFacts": [{"chunkText": "ירושלים היא בירת ישראל"}, {}],
        "claims": [
            {"claimText": "שלום", "endPos": 8, "citationIndices": [0, 1], "score": "0.5"},
            {"claimText": " עולם", "startPos": 8, "endPos": 18, "groundingCheckRequired": False},
        ],
        "supportScore": 0.5,
    }
    facts = [GroundingFact("a"), GroundingFact("b")]
    r = parse_check_response(body, raw_answer="שלום עולם", facts=facts)
    c0, c1 = r.claims
    assert (c0.start, c0.end, c0.start_byte, c0.end_byte, c0.score) == (0, 4, 0, 8, 0.5)
    assert (c1.start, c1.end, c1.citation_indices, c1.score) == (4, 9, [], None)
    assert c1.grounding_check_required is False
    assert r.cited_chunks[0].fact_index == 1 and r.cited_chunks[1].fact_index == 0
    assert r.cited_chunks[1].source == "0"
    assert (r.cited_chunks[0].index, r.cited_chunks[0].source_metadata) == (3, {"k": "v"})
    assert (r.cited_chunks[0].uri, r.cited_chunks[0].title, r.cited_chunks[0].domain) == (
        "https://x",
        "T",
        "x",
    )
    assert r.cited_facts == ["ירושלים היא בירת ישראל", ""]
    empty = parse_check_response({}, raw_answer="x")
    assert (empty.support_score, empty.claims, empty.cited_chunks) == (None, [], [])


def test_parse_claim_without_positions_is_located_by_text() -> None:
    r = parse_check_response(
        {"claims": [{"claimText": "b."}, {"claimText": "nowhere"}]}, raw_answer="a. b."
    )
    assert (r.claims[0].start, r.claims[0].end, r.claims[0].start_byte) == (3, 5, 3)
    assert r.claims[1].start is None and any("not found" in w for w in r.warnings)


def test_parse_source_naming_no_sent_fact_is_a_warning() -> None:
    r = parse_check_response(
        {"citedChunks": [{"chunkText": "x", "source": "7"}, {"chunkText": "y", "source": "web"}]},
        raw_answer="x",
        facts=[GroundingFact("x")],
    )
    assert [c.fact_index for c in r.cited_chunks] == [None, None]
    assert any("'7'" in w for w in r.warnings)


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ([], "$: expected an object"),
        ({"claims": {}}, "$.claims"),
        ({"claims": [{"claimText": "a", "citationIndices": [0]}]}, "citationIndices[0] = 0"),
        ({"citedChunks": [{}], "claims": [{"citationIndices": ["x"]}]}, "citationIndices[0]"),
        ({"claims": [{"claimText": 5}]}, "$.claims[0].claimText"),
        ({"claims": [{"startPos": 5, "endPos": 2}]}, "bad byte range"),
        ({"claims": [{"startPos": -1, "endPos": 2}]}, "bad byte range"),
        ({"supportScore": "high"}, "supportScore"),
        ({"citedChunks": [{"chunkText": "x", "sourceMetadata": {"a": 1}}]}, "sourceMetadata.a"),
        ({"citedChunks": [{"chunkText": "x", "index": 1.5}]}, "index"),
    ],
)
def test_parse_wrong_shapes(body: Any, where: str) -> None:
    with pytest.raises(MalformedResponse) as info:
        parse_check_response(body, raw_answer="abc")
    assert where in info.value.message


async def test_malformed_json_from_the_server(google: FakeGoogle) -> None:
    google.script(Reply(body=b'{"claims": ['))
    with pytest.raises(MalformedResponse, match="not JSON"):
        await grounding(google).check("Roma è bella.", ["Roma è bella."])
    assert len(google.seen) == 1


async def test_wrong_shape_from_the_server(google: FakeGoogle) -> None:
    google.script(Reply(body=b'{"claims": [{"claimText": "x", "citationIndices": [4]}]}'))
    with pytest.raises(MalformedResponse, match="cited chunk"):
        await grounding(google).check("Roma è bella.", ["Roma è bella."])


# -- retries and errors ------------------------------------------------------------------


async def test_429_with_retry_after_then_200(google: FakeGoogle) -> None:
    google.script(
        Reply(429, b'{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}', {"Retry-After": "1"}),
        Reply(),
    )
    result = await grounding(google).check("Roma è la capitale.", ["Roma è la capitale d'Italia."])
    assert len(result.claims) == 1
    first, second = google.seen
    assert second.at - first.at >= 0.95  # the server asked for a second


async def test_503_with_retry_info_in_the_body(google: FakeGoogle) -> None:
    err = {
        "error": {
            "code": 503,
            "status": "UNAVAILABLE",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.5s"}
            ],
        }
    }
    google.script(Reply(503, orjson.dumps(err)), Reply())
    await grounding(google).check("Roma è la capitale.", ["Roma è la capitale d'Italia."])
    first, second = google.seen
    assert second.at - first.at >= 0.45


async def test_retries_are_bounded(google: FakeGoogle) -> None:
    google.script(Reply(503, b"{}"))
    g = grounding(google, retries=2)
    with pytest.raises(UpstreamError) as info:
        await g.check("Roma.", ["Roma."])
    assert info.value.status == 503 and info.value.code == "google_unavailable"
    assert "3 attempt" in info.value.message
    assert len(google.seen) == 3


async def test_slow_response_past_the_timeout(google: FakeGoogle) -> None:
    google.script(Reply(delay=2.0))
    g = grounding(google, request_timeout=0.2, retries=1)
    with pytest.raises(UpstreamError) as info:
        await g.check("Roma.", ["Roma."])
    assert info.value.code == "timeout" and len(google.seen) == 2


def _error(code: int, status: str, message: str, reason: str | None = None, **meta: str) -> bytes:
    details = []
    if reason:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "googleapis.com",
                "metadata": meta,
            }
        )
    return orjson.dumps(
        {"error": {"code": code, "message": message, "status": status, "details": details}}
    )


@pytest.mark.parametrize(
    ("status", "body", "cls", "code", "hint"),
    [
        (
            400,
            _error(400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
            GoogleRequestError,
            "google_invalid_argument",
            "invalid argument",
        ),
        (
            401,
            _error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
            GoogleAuthError,
            "google_unauthenticated",
            "application-default login",
        ),
        (
            403,
            _error(
                403,
                "PERMISSION_DENIED",
                "Discovery Engine API has not been used in project 123 before or it is disabled.",
                "SERVICE_DISABLED",
                consumer="projects/123",
            ),
            GoogleAuthError,
            "google_api_disabled",
            "gcloud services enable discoveryengine.googleapis.com --project 123",
        ),
        (
            403,
            _error(
                403,
                "PERMISSION_DENIED",
                "Your application is authenticating by using local Application Default Credentials. The discoveryengine.googleapis.com API requires a quota project, which is not set by default.",
            ),
            GoogleAuthError,
            "google_quota_project",
            "X-Goog-User-Project",
        ),
        (
            403,
            _error(
                403,
                "PERMISSION_DENIED",
                "Permission 'discoveryengine.groundingConfigs.check' denied on resource.",
                "IAM_PERMISSION_DENIED",
            ),
            GoogleAuthError,
            "google_permission_denied",
            "roles/discoveryengine.user",
        ),
        (
            403,
            _error(
                403,
                "PERMISSION_DENIED",
                "Request had insufficient authentication scopes.",
                "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
            ),
            GoogleAuthError,
            "google_scope",
            "https://www.googleapis.com/auth/cloud-platform",
        ),
        (
            404,
            _error(404, "NOT_FOUND", "Config not found."),
            GoogleRequestError,
            "google_not_found",
            "default_grounding_config",
        ),
        (409, b"conflict", GoogleRequestError, "google_http_error", "409"),
    ],
)
async def test_errors_say_what_to_fix(
    google: FakeGoogle, status: int, body: bytes, cls: type[Exception], code: str, hint: str
) -> None:
    google.script(Reply(status, body))
    with pytest.raises(cls) as info:
        await grounding(google).check("Roma.", ["Roma."])
    err = info.value
    assert err.code == code and err.status == status and not err.retryable  # type: ignore[attr-defined]
    assert hint in err.message  # type: ignore[attr-defined]
    assert len(google.seen) == 1


# -- limits, validated before sending ------------------------------------------------------


async def test_more_than_200_facts_keeps_cited_ones_first(google: FakeGoogle) -> None:
    citations = [
        Citation(cited_text=f"Fatto numero {i} sulla città di Roma.", document_index=i)
        for i in range(260)
    ]
    text = "Roma è antica [250]. Roma è grande [7][259]."
    answer = CitedAnswer(
        text=text,
        citations=citations,
        citation_refs=[
            CitationRef(0, 250, 249, 14),
            CitationRef(0, 7, 6, 35),
            CitationRef(0, 259, 258, 38),
        ],
    )
    result = await grounding(google).check(answer, citations)
    sent = google.seen[0].body["facts"]  # type: ignore[index]
    assert len(sent) == 200 and len(result.facts) == 200
    kept = [int(f["attributes"]["document_index"]) for f in sent]
    assert {249, 6, 258} <= set(kept)  # the cited ones survive although far down the list
    assert kept == sorted(kept)  # original order kept
    assert kept[:197] == list(range(197))
    assert any("260 facts exceed" in w and "dropped 60" in w for w in result.warnings)


def test_prepare_facts_policy_without_footnotes_keeps_the_first() -> None:
    prepared = prepare_facts([f"fact {i}" for i in range(205)])
    assert [f.text for f in prepared.facts] == [f"fact {i}" for i in range(200)]
    assert prepared.dropped == 5 and prepared.split == 0


def test_prepare_facts_skips_empty_and_keeps_origins() -> None:
    src = QuotedSource("2", SourceDocument("d"), SourceChunk("c", data="chunk text"))
    prepared = prepare_facts(
        ["", "  ", "a", GroundingFact("b", {"x": "y"}), src], cited_numbers=[2]
    )
    assert [f.text for f in prepared.facts] == ["a", "b", "chunk text"]
    assert [f.origin_kind for f in prepared.facts] == [None, None, "source"]
    assert prepared.facts[2].origin_index == 4


async def test_answer_over_4096_tokens_is_refused_before_sending(google: FakeGoogle) -> None:
    g = grounding(google)
    long_answer = " ".join(["parola"] * 4097)
    with pytest.raises(GroundingLimitError, match="4097 tokens"):
        await g.check(long_answer, ["x y z"])
    # Words and sentence-ending periods both count: 2048 × "w." = 4096 tokens passes.
    await g.check(" ".join(["w."] * 2048), ["w"])
    with pytest.raises(GroundingLimitError):
        await g.check(" ".join(["w."] * 2049), ["w"])
    assert len(google.seen) == 1


@pytest.mark.parametrize("threshold", [1.5, -0.1, "abc", float("nan"), True])
async def test_bad_threshold(google: FakeGoogle, threshold: Any) -> None:
    with pytest.raises(GroundingLimitError):
        await grounding(google).check("Roma.", ["Roma."], citation_threshold=threshold)
    with pytest.raises(GroundingLimitError):
        GoogleGrounding(CONFIG, token=TOKEN, citation_threshold=threshold)
    assert google.seen == []


@pytest.mark.parametrize("threshold", [0, 1, "1", "0.25"])
async def test_edge_thresholds_are_sent_as_numbers(google: FakeGoogle, threshold: Any) -> None:
    await grounding(google).check("Roma.", ["Roma."], citation_threshold=threshold)
    assert google.seen[0].body["groundingSpec"]["citationThreshold"] == float(threshold)  # type: ignore[index]


@pytest.mark.parametrize(
    "labels",
    [
        {"Team": "x"},
        {"1team": "x"},
        {"_team": "x"},
        {"": "x"},
        {"team": "Search"},
        {"team": "a b"},
        {"team.name": "x"},
        {"k" * 64: "x"},
        {"team": "v" * 64},
        {f"k{i}": "" for i in range(65)},
        {"team": 3},
    ],
)
async def test_bad_user_labels(google: FakeGoogle, labels: dict[str, Any]) -> None:
    with pytest.raises(GroundingLimitError):
        await grounding(google).check("Roma.", ["Roma."], user_labels=labels)
    assert google.seen == []


async def test_good_user_labels(google: FakeGoogle) -> None:
    labels = {f"k{i}": "" for i in range(64)} | {"k0": "v-_1", "k" * 63: "v" * 63}
    labels.pop("k63")
    labels.pop("k62")
    labels["שלום"] = "עולם"
    assert len(labels) == 64
    await grounding(google).check("Roma.", ["Roma."], user_labels=labels)
    assert google.seen[0].body["userLabels"] == labels  # type: ignore[index]


async def test_nothing_to_check(google: FakeGoogle) -> None:
    g = grounding(google)
    with pytest.raises(GroundingInputError, match="empty"):
        await g.check("   ", ["x"])
    with pytest.raises(GroundingInputError, match="no facts"):
        await g.check("Roma.", ["", Citation(cited_text=None)])
    assert google.seen == []


def test_bad_config_name() -> None:
    with pytest.raises(ValueError, match="projects/PROJECT"):
        GoogleGrounding("default_grounding_config", token=TOKEN)
    with pytest.raises(ValueError, match="not both"):
        GoogleGrounding(CONFIG, token=TOKEN, token_provider=lambda: "x")


# -- credentials ---------------------------------------------------------------------------


async def test_sync_provider_runs_off_the_loop_each_request(google: FakeGoogle) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def provider() -> str:
        threads.append(threading.get_ident())
        return f"tok-{len(threads)}"

    g = grounding(google, token=None, token_provider=provider)
    await g.check("Roma.", ["Roma."])
    await g.check("Roma.", ["Roma."])
    assert [s.headers["Authorization"] for s in google.seen] == ["Bearer tok-1", "Bearer tok-2"]
    assert threads and loop_thread not in threads


async def test_async_provider(google: FakeGoogle) -> None:
    async def provider() -> str:
        await asyncio.sleep(0)
        return "async-tok"

    await grounding(google, token=None, token_provider=provider).check("Roma.", ["Roma."])
    assert google.seen[0].headers["Authorization"] == "Bearer async-tok"


async def test_failing_provider_hides_its_message(google: FakeGoogle) -> None:
    def provider() -> str:
        raise RuntimeError("vault said: password=hunter2")

    with pytest.raises(AuthSetupError) as info:
        await grounding(google, token=None, token_provider=provider).check("Roma.", ["Roma."])
    assert "hunter2" not in str(info.value) and "RuntimeError" in str(info.value)
    with pytest.raises(AuthSetupError, match="non-empty"):
        await ProviderToken(lambda: "").token()


class FakeCredentials:
    """The google-auth Credentials surface the client uses."""

    def __init__(self, tokens: list[str], quota_project_id: str | None = "quota-from-adc") -> None:
        self._tokens = tokens
        self.token: str | None = None
        self.valid = False
        self.quota_project_id = quota_project_id
        self.refresh_threads: list[int] = []

    def refresh(self, request: Any) -> None:
        time.sleep(0.05)  # blocking, like google-auth's HTTP refresh
        self.refresh_threads.append(threading.get_ident())
        self.token = self._tokens.pop(0)
        self.valid = True


async def test_adc_refreshes_in_a_thread_once_and_sets_the_quota_project(
    google: FakeGoogle,
) -> None:
    creds = FakeCredentials(["adc-1"])
    g = grounding(google, token=None, credentials=creds)
    g._tokens._request_factory = object  # type: ignore[union-attr]  # no HTTP for the fake
    await asyncio.gather(*(g.check("Roma.", ["Roma."]) for _ in range(4)))
    assert len(creds.refresh_threads) == 1  # one refresh for four concurrent checks
    assert threading.get_ident() not in creds.refresh_threads
    assert {s.headers["Authorization"] for s in google.seen} == {"Bearer adc-1"}
    assert {s.headers["X-Goog-User-Project"] for s in google.seen} == {"quota-from-adc"}


async def test_adc_token_rejected_is_refreshed_once(google: FakeGoogle) -> None:
    creds = FakeCredentials(["expired", "fresh"], quota_project_id=None)
    g = grounding(google, token=None, credentials=creds, quota_project="explicit")
    g._tokens._request_factory = object  # type: ignore[union-attr]
    google.script(Reply(401, _error(401, "UNAUTHENTICATED", "expired")), Reply())
    await g.check("Roma.", ["Roma."])
    assert [s.headers["Authorization"] for s in google.seen] == ["Bearer expired", "Bearer fresh"]
    assert google.seen[0].headers["X-Goog-User-Project"] == "explicit"


async def test_static_token_401_is_not_retried(google: FakeGoogle) -> None:
    google.script(Reply(401, b"{}"))
    with pytest.raises(GoogleAuthError):
        await grounding(google).check("Roma.", ["Roma."])
    assert len(google.seen) == 1


async def test_adc_with_google_auth_against_a_local_token_endpoint(
    google: FakeGoogle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real google-auth: a service-account key whose token_uri is a local server."""
    pytest.importorskip("google.auth")
    pytest.importorskip("requests")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    token_requests: list[dict[str, str]] = []

    async def token_endpoint(request: web.Request) -> web.Response:
        token_requests.append(dict(await request.post()))  # type: ignore[arg-type]
        return web.json_response(
            {"access_token": "sa-token", "expires_in": 3600, "token_type": "Bearer"}
        )

    app = web.Application()
    app.router.add_post("/token", token_endpoint)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        key_file = tmp_path / "sa.json"
        key_file.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": "my-proj",
                    "private_key_id": "k1",
                    "private_key": pem,
                    "client_email": "svc@my-proj.iam.gserviceaccount.com",
                    "client_id": "1",
                    "token_uri": f"http://127.0.0.1:{port}/token",
                }
            )
        )
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        g = grounding(google, token=None, quota_project="billing")
        # The token endpoint runs on this very loop: a refresh done ON the loop would
        # deadlock; it completes because it runs in a worker thread.
        await g.check("Roma.", ["Roma."])
        await g.check("Roma.", ["Roma."])
        assert len(token_requests) == 1 and token_requests[0]["grant_type"].endswith("jwt-bearer")
        assert [s.headers["Authorization"] for s in google.seen] == ["Bearer sa-token"] * 2
        assert isinstance(g._tokens, ApplicationDefaultToken) and g._tokens.project_id == "my-proj"
    finally:
        await runner.cleanup()


async def test_adc_missing_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("google.auth")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(AuthSetupError, match=r"application-default login|google-auth"):
        await ApplicationDefaultToken().token()


async def test_token_never_in_repr_logs_or_errors(
    google: FakeGoogle, captured_logs: list[dict[str, Any]]
) -> None:
    google.script(Reply(503, b"{}"), Reply(403, _error(403, "PERMISSION_DENIED", "denied")))
    logs = captured_logs
    g = grounding(google)
    with pytest.raises(GoogleAuthError) as info:
        await g.check("Roma.", ["Roma."])
    assert google.seen[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert any(e.get("event") == "retrying" for e in logs)
    for text in (repr(g), str(info.value), repr(info.value), repr(logs), repr(g._tokens)):
        assert TOKEN not in text


# -- as an enricher -----------------------------------------------------------------------


def _source(n: str, text: str) -> QuotedSource:
    return QuotedSource(
        n,
        SourceDocument(f"doc{n}", name=f"doc{n}.pdf"),
        SourceChunk(f"c{n}", data=text, page_start=1),
        DataSource("ds", "Ressources Humaines"),
        0.8,
        "SEMANTIC_SEARCH",
    )


WIKIT_SOURCES = [
    _source("1", "Le télétravail est autorisé deux jours par semaine."),
    _source("2", "Les frais de repas sont remboursés sur justificatif."),
]


def ctx_with(
    answer: CitedAnswer, sources_event: SourcesEvent | None, asked: list[str]
) -> EnrichContext:
    async def wait_for(kind: str) -> Any:
        asked.append(kind)
        return sources_event

    return EnrichContext(answer=answer, wait_for=wait_for)


async def test_enricher_from_citations(google: FakeGoogle) -> None:
    g = grounding(google)
    assert (g.kind, g.needs, g.timeout) == ("grounding", (), 6.0)
    asked: list[str] = []
    event = await g.enrich(ctx_with(answer_of(), None, asked))
    assert isinstance(event, GroundingEvent) and event.provider == "google"
    assert asked == []  # does not wait for the sources
    assert event.support_score == 0.75 and len(event.claims) == 4
    assert orjson.loads(event.to_json())["type"] == "grounding"
    result = event.to_result()
    assert result.origins_for(result.claims[1], CITATIONS) == [CITATIONS[1]]


async def test_enricher_from_wikit_sources(google: FakeGoogle) -> None:
    g = grounding(google, facts_from="sources")
    assert g.needs == ("sources",)
    text = "Le télétravail est autorisé deux jours [1]. Les frais de repas sont remboursés [2]."
    answer = CitedAnswer(text=text)
    asked: list[str] = []
    sources_event = SourcesEvent(query_id="q", sources=WIKIT_SOURCES)
    event = await g.enrich(ctx_with(answer, sources_event, asked))
    assert asked == ["sources"]
    facts = google.seen[0].body["facts"]  # type: ignore[index]
    assert facts[0]["attributes"] == {
        "quoted_as": "1",
        "document": "doc1.pdf",
        "data_source": "Ressources Humaines",
        "page": "2",
    }
    result = event.to_result()
    assert [result.origins_for(c, [], WIKIT_SOURCES) for c in result.claims] == [
        [WIKIT_SOURCES[0]],
        [WIKIT_SOURCES[1]],
    ]
    assert (
        text[result.claims[1].start : result.claims[1].end]
        == "Les frais de repas sont remboursés [2]."
    )


async def test_enricher_sources_missing(google: FakeGoogle) -> None:
    only_sources = grounding(google, facts_from="sources")
    with pytest.raises(GroundingInputError, match="Wikit sources"):
        await only_sources.enrich(ctx_with(answer_of(), None, []))
    both = grounding(google, facts_from="both")
    assert both.needs == ("sources",)
    event = await both.enrich(ctx_with(answer_of(), None, []))
    assert event.warnings[0].startswith("Wikit sources unavailable")
    assert len(google.seen) == 1


async def test_enricher_both_keeps_separate_origins(google: FakeGoogle) -> None:
    g = grounding(google, facts_from="both")
    answer = answer_of(
        "Le télétravail est autorisé deux jours [1]. La città di Roma è la capitale [2]."
    )
    event = await g.enrich(ctx_with(answer, SourcesEvent(sources=WIKIT_SOURCES), []))
    result = event.to_result()
    kinds = [(f.origin_kind, f.origin_index) for f in result.facts]
    assert kinds == [
        ("citation", 0),
        ("citation", 1),
        ("citation", 2),
        ("source", 0),
        ("source", 1),
    ]
    first, second = result.claims
    assert result.origins_for(first, answer.citations, WIKIT_SOURCES) == [WIKIT_SOURCES[0]]
    assert result.origins_for(second, answer.citations, WIKIT_SOURCES) == [CITATIONS[1]]


async def test_enricher_with_fixed_facts(google: FakeGoogle) -> None:
    g = grounding(google, facts=["Les pingouins ne volent pas haut."], facts_from="sources")
    assert g.needs == ()
    event = await g.enrich(ctx_with(answer_of(), None, []))
    assert google.seen[0].body["facts"] == [{"factText": "Les pingouins ne volent pas haut."}]  # type: ignore[index]
    assert event.claims[3].supported


@pytest.mark.parametrize(
    "body",
    [
        {"supportScore": 0.5, "citedChunks": [{"chunkText": "a", "source": "²"}], "claims": []},
        {"supportScore": 0.5, "citedChunks": [{"chunkText": "a", "source": "9" * 5000}]},
        {"supportScore": 0.5, "citedChunks": [{"chunkText": "a", "source": "0"}],
         "claims": [{"claimText": "x", "citationIndices": ["①"]}]},
    ],
)  # fmt: skip
def test_unicode_digits_in_a_check_response_are_typed_never_value_error(body: Any) -> None:
    """'²' and '①' passed str.isdigit() and then int() raised ValueError out of the parser."""
    from streamcite.core.errors import MalformedResponse
    from streamcite.enrich.google import parse_check_response

    try:
        result = parse_check_response(body, raw_answer="x")
    except MalformedResponse as exc:
        assert "citationIndices" in str(exc)  # the claim names a chunk it cannot name
        return
    assert [c.fact_index for c in result.cited_chunks] == [None]  # "²" names no fact
