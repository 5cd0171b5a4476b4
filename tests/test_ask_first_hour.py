"""``streamcite ask`` pointed at a server the way people already do it: the one model the
server lists, no key asked for on this machine, the question on stdin, ``-m``, and
``--provider`` presets with the vendor SDK's API, base URL and key variable."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import orjson
import pytest
from click.testing import CliRunner, Result

from streamcite.apps import ask as ask_module
from streamcite.apps._providers import PRESETS, is_loopback
from streamcite.cli import main
from streamcite.pipeline.apis import api_root
from tests._serve_local import free_port, serve_local

KEY_VARIABLES = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "CO_API_KEY",
    "COHERE_API_KEY", "PERPLEXITY_API_KEY", "OPENROUTER_API_KEY",
)  # fmt: skip


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with serve_local() as url:
        yield url


def ask(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, ["ask", *args], input=stdin, catch_exceptions=False)


def done_answer(result: Result) -> dict[str, Any]:
    last = result.stdout.strip().splitlines()[-1]
    answer: dict[str, Any] = orjson.loads(last)["answer"]
    return answer


# -- the one model the server lists ---------------------------------------------------


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini", "cohere"])
def test_base_url_without_model_uses_the_one_listed(served: str, api: str) -> None:
    r = ask("--api", api, "--base-url", api_root(served, api), "--json", "--grounding", "none",
            "How many remote days?")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "remotely" in done_answer(r)["text"]
    assert "warning" not in r.stderr  # loopback: no key asked for


class _Models(http.server.BaseHTTPRequestHandler):
    status = 200
    body = b""
    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        type(self).seen.append({"path": self.path, **dict(self.headers)})
        self._answer()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        type(self).seen.append({"path": self.path, **dict(self.headers)})
        self.status, saved = 401, self.status
        self._answer(b'{"error": {"message": "bad key", "type": "authentication_error"}}')
        self.status = saved

    def _answer(self, body: bytes | None = None) -> None:
        data = self.body if body is None else body
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def models_server() -> Iterator[tuple[str, type[_Models]]]:
    handler = type("Handler", (_Models,), {"seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def _list(*names: str) -> bytes:
    return orjson.dumps({"object": "list", "data": [{"id": n} for n in names]})


def test_several_models_are_listed_and_the_command_stops(
    models_server: tuple[str, type[_Models]],
) -> None:
    url, handler = models_server
    handler.body = _list("alpha", "beta\x1b]52;c;x\x07", "gamma")
    r = ask("--base-url", url + "/v1", "q")
    assert r.exit_code == 2, r.output
    assert "lists 3 models: alpha, beta, gamma; pick one with -m NAME" in r.stderr
    assert "\x1b" not in r.stderr
    handler.body = _list(*(f"m{i}" for i in range(25)))
    r = ask("--base-url", url + "/v1", "q")
    assert r.exit_code == 2 and "lists 25 models" in r.stderr and "(and 5 more)" in r.stderr
    assert handler.seen[0]["path"] == "/v1/models"


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (404, b"{}", "answered HTTP 404; OpenAI-compatible APIs live under /v1; try --base-url"),
        (200, b'{"data": []}', "lists no model"),
        (200, b"<html>", "lists no model"),
    ],
)
def test_no_model_to_use_is_one_line_and_exit_1(
    models_server: tuple[str, type[_Models]], status: int, body: bytes, said: str
) -> None:
    url, handler = models_server
    handler.status, handler.body = status, body
    r = ask("--base-url", url + ("" if status == 404 else "/v1"), "q")
    assert r.exit_code == 1, r.output
    line = r.stderr.strip().removeprefix("Error: ")
    assert "\n" not in line and said in line and line.endswith("give the model with -m NAME")


def test_nothing_listening_says_what_to_start() -> None:
    port = free_port()
    r = ask("--base-url", f"http://127.0.0.1:{port}/v1", "q")
    assert r.exit_code == 1
    assert f"is the server on port {port} running?" in r.stderr
    assert r.stderr.strip().endswith("or give the model with -m NAME")


def test_dash_m_is_model(served: str) -> None:
    r = ask("-m", "streamcite-local", "--base-url", served + "/v1", "--json",
            "--grounding", "none", "How many remote days?")  # fmt: skip
    assert r.exit_code == 0, r.output
    r = ask("-m", "gpt-4o", "--base-url", served + "/v1", "--json", "q")
    assert r.exit_code == 1 and "model_not_found" in r.stdout


# -- no key asked for on this machine ------------------------------------------------


def test_loopback_hosts() -> None:
    for url in ("http://127.0.0.1:8765/v1", "http://localhost:1/v1", "http://[::1]:5/v1",
                "http://127.3.2.1/v1", "http://app.localhost/v1"):  # fmt: skip
        assert is_loopback(url), url
    for url in ("https://api.openai.com/v1", "http://10.0.0.1/v1", "http://127.0.0.1.evil.example"):
        assert not is_loopback(url), url


def test_a_remote_url_without_its_key_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    async def fake_ask(opts: Any) -> int:
        seen.append(opts)
        return 0

    monkeypatch.setattr(ask_module, "_ask", fake_ask)
    r = ask("--provider", "anthropic", "-m", "claude-sonnet-4-5", "q")
    assert r.exit_code == 0
    assert "ANTHROPIC_API_KEY is not set" in r.stderr
    r = ask("--provider", "gemini", "-m", "gemini-2.5-flash", "q")
    assert "GOOGLE_API_KEY or GEMINI_API_KEY is not set" in r.stderr
    r = ask("--provider", "local", "-m", "m", "q")  # serve-local's address: no key, no warning
    assert "warning" not in r.stderr and seen[-1].base_url == "http://127.0.0.1:8765/v1"


# -- presets ---------------------------------------------------------------------------


EXPECTED = {
    "openai": ("chat", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": ("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "gemini": ("gemini", "https://generativelanguage.googleapis.com", "GEMINI_API_KEY"),
    "cohere": ("cohere", "https://api.cohere.com", "CO_API_KEY"),
    "perplexity": ("chat", "https://api.perplexity.ai", "PERPLEXITY_API_KEY"),
    "openrouter": ("chat", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
}


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []

    async def fake_ask(opts: Any) -> int:
        seen.append((opts, ask_module._api_key(opts)))
        return 0

    monkeypatch.setattr(ask_module, "_ask", fake_ask)
    return seen


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_preset_sets_api_base_url_and_key(
    name: str, captured: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, base_url, variable = EXPECTED[name]
    monkeypatch.setenv(variable, f"key-of-{name}")
    r = ask("--provider", name, "-m", "m", "q")
    assert r.exit_code == 0, r.output
    opts, key = captured[-1]
    assert (opts.api, opts.base_url, key) == (api, base_url, f"key-of-{name}")
    assert "warning" not in r.stderr


def test_explicit_options_win_over_a_preset(
    captured: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "mine")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "theirs")
    r = ask("--provider", "anthropic", "--base-url", "https://proxy.example/v1",
            "--api-key-env", "MY_KEY", "-m", "m", "q")  # fmt: skip
    assert r.exit_code == 0, r.output
    opts, key = captured[-1]
    assert (opts.api, opts.base_url, key) == ("anthropic", "https://proxy.example/v1", "mine")
    ask("--provider", "local", "--api", "cohere", "-m", "m", "q")
    assert captured[-1][0].base_url == "http://127.0.0.1:8765/v2"  # serve-local's endpoint


def test_gemini_key_order_is_the_sdks(captured: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gemini")
    ask("--provider", "gemini", "-m", "m", "q")
    assert captured[-1][1] == "gemini"
    monkeypatch.setenv("GOOGLE_API_KEY", "google")  # google-genai prefers it when both are set
    ask("--provider", "gemini", "-m", "m", "q")
    assert captured[-1][1] == "google"
    monkeypatch.delenv("GOOGLE_API_KEY")
    monkeypatch.setenv("COHERE_API_KEY", "co")  # the Cohere SDK's second name
    ask("--provider", "cohere", "-m", "m", "q")
    assert captured[-1][1] == "co"


@pytest.mark.parametrize(
    ("name", "header", "value", "path"),
    [
        ("anthropic", "x-api-key", "k-a", "/v1/messages"),
        ("cohere", "Authorization", "Bearer k-c", "/v2/chat"),
        ("openrouter", "Authorization", "Bearer k-o", "/v1/chat/completions"),
    ],
)
def test_a_preset_sends_its_key_the_vendors_way(
    models_server: tuple[str, type[_Models]],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    header: str,
    value: str,
    path: str,
) -> None:
    url, handler = models_server
    variable = EXPECTED[name][2]
    monkeypatch.setenv(variable, value.removeprefix("Bearer "))
    base = url + ("/v2" if name == "cohere" else "/v1")
    r = ask("--provider", name, "--base-url", base, "-m", "m", "--grounding", "none", "q")
    assert r.exit_code == 1  # the server refuses every key
    sent = handler.seen[-1]
    assert sent["path"] == path and sent[header] == value


def test_help_shows_the_presets_and_their_variables() -> None:
    r = CliRunner(env={"COLUMNS": "60"}).invoke(main, ["ask", "--help"])
    lines = [line.strip() for line in r.output.splitlines()]
    text = " ".join(r.output.split())
    for name, preset in PRESETS.items():
        start = lines.index("Providers (--provider NAME): API, key variable(s), base URL")
        at = next(i for i, line in enumerate(lines) if i > start and line.startswith(f"{name} "))
        assert lines[at].split()[1:3] == [preset.api, "API,"], lines[at]
        assert lines[at + 1] == preset.base_url  # whole, on its own line, at any width
    for variable in ("ANTHROPIC_API_KEY", "GOOGLE_API_KEY or GEMINI_API_KEY", "CO_API_KEY",
                     "PERPLEXITY_API_KEY", "OPENROUTER_API_KEY"):  # fmt: skip
        assert variable in text
    assert "-m, --model" in text


# -- the question on stdin -------------------------------------------------------------


def test_question_from_stdin() -> None:
    r = ask("--json", "--grounding", "none", stdin="How many remote-work days are allowed?\n")
    assert r.exit_code == 0, r.output
    assert "three days per week" in done_answer(r)["text"]


@pytest.mark.parametrize("stdin", ["", "   \n"])
def test_empty_stdin_is_a_usage_error(stdin: str) -> None:
    r = ask(stdin=stdin)
    assert r.exit_code == 2 and "give a QUESTION" in r.stderr


def test_an_overlong_stdin_question_is_a_usage_error() -> None:
    r = ask(stdin="x" * (ask_module.MAX_STDIN_QUESTION + 1))
    assert r.exit_code == 2 and "over 65,536 characters" in r.stderr


def test_stdin_is_not_read_when_a_question_is_given() -> None:
    r = ask("--json", "--grounding", "none", "How many remote-work days are allowed?",
            stdin="What about travel?")  # fmt: skip
    assert r.exit_code == 0 and "three days per week" in done_answer(r)["text"]


def test_piped_question_in_a_real_shell() -> None:
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "streamcite.cli", "ask", "--json", "--grounding", "none"],
        input="How many remote-work days are allowed?",
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k not in KEY_VARIABLES},
    )
    assert r.returncode == 0, r.stderr
    assert "three days per week" in orjson.loads(r.stdout.splitlines()[-1])["answer"]["text"]
