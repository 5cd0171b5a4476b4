"""'Nothing to check' is not full support; the Google-shaped endpoint on every version."""

from __future__ import annotations

import io
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from streamcite.core.events import GroundingEvent
from streamcite.core.grounding import GroundingClaim, GroundingResult
from streamcite.core.models import CitedAnswer
from streamcite.enrich.limits import MAX_ANSWER_TOKENS, count_answer_tokens
from streamcite.grounding.checker import LocalGrounding

FACT = "Employees may work remotely up to three days per week."


# ----------------------------------------------------------------- nothing to check


async def test_an_answer_with_no_claim_to_check_is_marked_nothing_to_check() -> None:
    result = await LocalGrounding().check("I found no source for that. Any other question?", [FACT])
    assert result.support_score == 1.0  # Google's field is kept as Google reports it
    assert result.nothing_to_check is True
    assert result.checked_claims == 0 and result.unsupported_claims == 0
    event = GroundingEvent.from_result(result).to_dict()
    assert event["nothing_to_check"] is True and event["checked_claims"] == 0


async def test_checked_and_unsupported_claims_are_counted() -> None:
    answer = "Employees may work remotely three days per week. The office has a gym on the roof."
    result = await LocalGrounding().check(answer, [FACT])
    assert result.nothing_to_check is False
    assert result.checked_claims == 2 and result.unsupported_claims == 1


def test_counts_are_derived_for_results_built_elsewhere() -> None:
    claims = [
        GroundingClaim("A.", citation_indices=[0], grounding_check_required=True),
        GroundingClaim("B.", grounding_check_required=None),
        GroundingClaim("Thanks!", grounding_check_required=False),
    ]
    r = GroundingResult(provider="google", support_score=0.5, claims=claims)
    assert (r.checked_claims, r.unsupported_claims, r.nothing_to_check) == (2, 1, False)
    rebuilt = GroundingEvent(support_score=1.0, claims=[claims[2]])  # as the relay rebuilds it
    assert rebuilt.nothing_to_check is True


def _render(result: GroundingResult) -> str:
    from rich.console import Console

    from streamcite.apps import _answer_summary

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system="standard", width=200)
    _answer_summary.print_claims(console, CitedAnswer(text="x", grounding=result), "superscript")
    return buf.getvalue()


async def test_ask_renders_nothing_to_check_and_no_green_score_when_a_claim_fails() -> None:
    none = await LocalGrounding().check("I found no source for that.", [FACT])
    out = _render(none)
    assert "nothing to check" in out and "support score" not in out
    failing = await LocalGrounding().check(
        " ".join([FACT] * 5 + ["The office has a gym on the roof."]), [FACT]
    )
    assert failing.support_score is not None and failing.support_score >= 0.75  # green before
    head = _render(failing).splitlines()[0]
    assert "1 unsupported claim" in re.sub(r"\x1b\[[0-9;]*m", "", head)
    assert "\x1b[32m" not in head and "\x1b[1;32m" not in head  # never green when a claim fails


# ----------------------------------------------------------------- Google endpoint


@pytest.fixture
async def backend() -> AsyncIterator[Any]:
    from streamcite.local import server

    async with server.LocalBackend(server.BackendConfig()) as b:
        yield b


def _check_url(root: str, version: str) -> str:
    return f"{root}/{version}/projects/p/locations/global/groundingConfigs/default:check"


@pytest.mark.parametrize("version", ["v1", "v1alpha", "v1beta"])
async def test_every_api_version_answers_the_check(backend: Any, version: str) -> None:
    body = {
        "answerCandidate": "Employees may work remotely three days per week.",
        "facts": [{"factText": FACT}],
    }
    async with httpx.AsyncClient() as http:
        r = await http.post(_check_url(backend.root_url, version), json=body)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["claims"][0]["citationIndices"] == [0] and data["supportScore"] > 0.6


def _assert_google_error(r: httpx.Response, status: int, name: str) -> None:
    assert r.status_code == status
    assert r.headers["content-type"].startswith("application/json")
    err = r.json()["error"]
    assert err["code"] == status and err["status"] == name and isinstance(err["message"], str)


async def test_google_paths_answer_errors_as_google_json(backend: Any) -> None:
    root = backend.root_url
    async with httpx.AsyncClient() as http:
        _assert_google_error(
            await http.post(f"{root}/v1alpha/projects/p/locations/global/nope:check", json={}),
            404,
            "NOT_FOUND",
        )
        _assert_google_error(await http.get(_check_url(root, "v1beta")), 405, "UNIMPLEMENTED")
        _assert_google_error(
            await http.post(_check_url(root, "v1alpha"), content=b"{"), 400, "INVALID_ARGUMENT"
        )
        big = b'{"answerCandidate": "' + b"a" * (9 * 1024 * 1024) + b'"}'
        _assert_google_error(
            await http.post(_check_url(root, "v1"), content=big), 413, "INVALID_ARGUMENT"
        )
        # Other paths keep their own error shapes.
        r = await http.get(f"{root}/v1/nope")
        assert r.status_code == 404 and "error" not in (r.text[:20])


def test_scripts_without_spaces_count_a_token_per_character() -> None:
    japanese = "日本語の文章です" * 10
    assert count_answer_tokens(japanese) == 80
    assert count_answer_tokens("ภาษาไทย") == 7
    assert count_answer_tokens("Hello world. 東京") == 5  # 2 words, 1 period, 2 characters
    assert count_answer_tokens("Hello world. Bonjour à tous !") == 7  # unchanged


async def test_a_cjk_answer_the_service_refuses_is_refused_locally(backend: Any) -> None:
    answer = "東京は日本の首都です" * 500  # 5,000 characters: one "word" run before
    assert count_answer_tokens(answer) > MAX_ANSWER_TOKENS
    body = orjson.dumps({"answerCandidate": answer, "facts": [{"factText": "東京"}]})
    async with httpx.AsyncClient() as http:
        r = await http.post(_check_url(backend.root_url, "v1alpha"), content=body)
    _assert_google_error(r, 400, "INVALID_ARGUMENT")
    assert "tokens" in r.json()["error"]["message"]
