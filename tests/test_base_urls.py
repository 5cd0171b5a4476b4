"""Base URLs as each SDK takes them: every API accepts its SDK's root and its versioned
root (against the embedded backend over loopback), and a 404's hint names the form the
API in use takes (never ``…/v1/v2`` or ``…/v2/v1``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from click.testing import CliRunner

from streamcite import stream_chat
from streamcite.apps._usage import base_url_hint
from streamcite.cli import main
from streamcite.core.events import ErrorEvent
from streamcite.local.server import LocalBackend
from streamcite.pipeline.apis import api_base, check_api, prepare_request, version_segment
from tests.test_dialects_e2e import request_for

QUESTION = "How many days a week can I work from home?"

# api -> the base URLs (relative to the server's root) it must accept
FORMS = {
    "chat": ["/v1", "/v1/"],
    "responses": ["/v1"],
    "anthropic": ["", "/", "/v1", "/v1/"],  # anthropic.Anthropic(base_url=root), or …/v1
    "gemini": ["", "/v1beta", "/v1"],  # google-genai's root + api_version, or either version
    "cohere": ["", "/v2", "/v2/"],  # cohere.ClientV2(base_url=root), or …/v2
}
CASES = [(api, form) for api, forms in FORMS.items() for form in forms]


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend() as be:
        yield be


@pytest.mark.parametrize(("api", "form"), CASES, ids=[f"{a}-{f or 'root'}" for a, f in CASES])
async def test_each_api_answers_at_each_root_form(
    backend: LocalBackend, api: str, form: str
) -> None:
    base = backend.root_url.rstrip("/") + form
    req = request_for(api, QUESTION)
    async with stream_chat(req, base_url=base, api=check_api(api)) as s:
        answer = await s.until_done()
    assert answer.complete and answer.errors == [], (api, form, answer.errors)
    assert answer.text and answer.citations


@pytest.mark.parametrize(
    ("base", "api", "url"),
    [
        ("https://api.anthropic.com", "anthropic", "https://api.anthropic.com/v1/messages"),
        ("https://api.anthropic.com/v1/", "anthropic", "https://api.anthropic.com/v1/messages"),
        ("https://api.cohere.com", "cohere", "https://api.cohere.com/v2/chat"),
        ("https://api.cohere.com/v2", "cohere", "https://api.cohere.com/v2/chat"),
        (
            "https://generativelanguage.googleapis.com",
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse",
        ),
        (
            "https://generativelanguage.googleapis.com/v1",
            "gemini",
            "https://generativelanguage.googleapis.com/v1/models/g:streamGenerateContent?alt=sse",
        ),
        (  # a Vertex AI root is whole
            "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google",
            "gemini",
            "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google"
            "/models/g:streamGenerateContent?alt=sse",
        ),
        (  # a gateway path before the SDK's root: the SDK adds /v1, so does streamcite
            "https://gw.example/v1/acct/gw/anthropic",
            "anthropic",
            "https://gw.example/v1/acct/gw/anthropic/v1/messages",
        ),
        ("https://api.openai.com/v1", "chat", "https://api.openai.com/v1/chat/completions"),
        ("https://api.perplexity.ai", "chat", "https://api.perplexity.ai/chat/completions"),
        ("https://openrouter.ai/api/v1", "responses", "https://openrouter.ai/api/v1/responses"),
    ],
)
def test_request_urls(base: str, api: str, url: str) -> None:
    req = {"model": "g", "messages": [], "contents": []}
    assert prepare_request(api, req, base_url=base).url == url


def test_version_segments() -> None:
    assert [version_segment(u) for u in ("h/v1", "h/v1beta", "h/v1beta1", "h/v2/", "h/api")] == [
        "v1",
        "v1beta",
        "v1beta1",
        "v2",
        None,
    ]
    assert api_base("http://h/vista", "cohere") == "http://h/vista/v2"  # not a version


# -- hints ---------------------------------------------------------------------------

HINTS = [
    # (base URL, api, the suggestion it must make, what it must never say)
    ("http://h:1/v1", "cohere", "try --base-url http://h:1/v2 (or http://h:1,", "/v1/v2"),
    ("http://h:1/v2", "chat", "try --base-url http://h:1/v1", "/v2/v1"),
    ("http://h:1/v2", "responses", "try --base-url http://h:1/v1", "/v2/v1"),
    ("http://h:1/v2", "anthropic", "try --base-url http://h:1/v1 (or http://h:1,", "/v2/v1"),
    ("http://h:1/v2", "gemini", "try --base-url http://h:1/v1beta", "/v2/v1"),
    ("http://h:1/v1beta", "cohere", "try --base-url http://h:1/v2", "/v1beta/v2"),
    ("http://h:1", "chat", "try --base-url http://h:1/v1", "//"),
    ("http://h:1/", "cohere", "the server's root (streamcite adds /v2)", "try"),
]


@pytest.mark.parametrize(("base", "api", "says", "never"), HINTS)
def test_hint_names_the_form_of_the_api_in_use(base: str, api: str, says: str, never: str) -> None:
    hint = base_url_hint(base, 404, api)
    assert hint is not None and says in hint, hint
    assert never not in hint.removeprefix("hint: ").replace("http://", ""), hint


@pytest.mark.parametrize(
    ("api", "form"), [("chat", "/v1"), ("gemini", "/v1"), ("gemini", "/v1beta"), ("cohere", "/v2")]
)
def test_no_hint_when_the_form_is_right(api: str, form: str) -> None:
    assert base_url_hint("http://h" + form, 404, api) is None


@pytest.mark.parametrize(
    ("api", "form", "good", "bad"),
    [
        ("cohere", "/v1", "/v2", "/v1/v2"),
        ("chat", "/v2", "/v1", "/v2/v1"),
        ("anthropic", "/v2", "/v1", "/v2/v1"),
    ],
)
async def test_ask_hint_against_the_backend(
    backend: LocalBackend, api: str, form: str, good: str, bad: str
) -> None:
    import asyncio

    root = backend.root_url.rstrip("/")
    args = ["ask", "--api", api, "--base-url", root + form, "--model", "streamcite-local"]

    def run() -> str:
        result = CliRunner().invoke(main, [*args, QUESTION], terminal_width=400)
        return result.output

    out = await asyncio.to_thread(run)
    assert f"try --base-url {root}{good}" in out, out
    assert root + bad not in out, out


async def test_a_wrong_version_is_a_404_not_a_silent_fix(backend: LocalBackend) -> None:
    """``--api cohere`` with ``…/v1`` is kept as given (a version the user wrote), so
    the answer is the server's 404 and the hint names ``/v2``: nothing guessed."""
    base = backend.root_url.rstrip("/") + "/v1"
    async with stream_chat(request_for("cohere", QUESTION), base_url=base, api="cohere") as s:
        events = [ev async for ev in s]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.status for e in errors] == [404]
