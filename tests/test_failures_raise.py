"""Failures that raise, for scripts: ``CitedAnswer.raise_for_error()`` and its typed
exceptions; the quick start and the examples end with one line and a non-zero exit
status when the backend is not there, and succeed against a real ``serve-local``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamcite import CitedAnswer, StreamciteError, stream_chat
from streamcite.core.errors import (
    AnswerError,
    AnswerIncomplete,
    AnswerTimeout,
    ConnectFailed,
    EnrichmentFailed,
    UpstreamRefused,
)
from streamcite.events import ErrorEvent
from streamcite.pipeline.opening import connect_message
from tests._serve_local import free_port, serve_local

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run_script(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with serve_local() as url:
        yield url


# -- raise_for_error -----------------------------------------------------------------


def test_a_complete_answer_is_returned_as_it_is() -> None:
    answer = CitedAnswer(text="ok", complete=True)
    assert answer.raise_for_error() is answer


@pytest.mark.parametrize(
    ("stage", "kind"),
    [
        ("connect", ConnectFailed),
        ("http", UpstreamRefused),
        ("timeout", AnswerTimeout),
        ("chunk", AnswerIncomplete),
        ("sources", EnrichmentFailed),
        ("grounding", EnrichmentFailed),
    ],
)
def test_each_stage_raises_its_type_with_the_code(stage: str, kind: type[AnswerError]) -> None:
    first = ErrorEvent(code="x_code", message="what\nhappened", stage=stage, status=403)
    second = ErrorEvent(code="other", message="later")
    complete = stage in ("sources", "grounding")
    answer = CitedAnswer(text="t", errors=[first, second], complete=complete)
    with pytest.raises(kind) as caught:
        answer.raise_for_error()
    exc = caught.value
    assert isinstance(exc, StreamciteError) and type(exc) is kind
    assert (exc.code, exc.stage, exc.status) == ("x_code", stage, 403)
    assert exc.errors == [first, second] and exc.answer is answer
    # One line: the code, the message, how many more errors there are.
    assert str(exc) == "x_code: what happened (and 1 more error: answer.errors)"


def test_a_cut_answer_without_an_error_raises_incomplete() -> None:
    with pytest.raises(AnswerIncomplete) as caught:
        CitedAnswer(text="half", complete=False).raise_for_error()
    assert caught.value.code == "incomplete"


def test_a_complete_answer_with_an_error_raises() -> None:
    answer = CitedAnswer(text="t", complete=True, errors=[ErrorEvent(code="c", stage="chunk")])
    with pytest.raises(AnswerError) as caught:
        answer.raise_for_error()
    assert caught.value.code == "c"


# -- the connect failure says what to start --------------------------------------------


def test_connect_message_names_the_address_and_what_to_start() -> None:
    default = connect_message("cannot connect: refused", "http://127.0.0.1:8765/v1/x")
    assert default == (
        "cannot connect to 127.0.0.1:8765: refused; "
        "is serve-local running? start it with: streamcite serve-local"
    )
    other = connect_message("cannot connect: refused", "http://localhost:9000/v1/x")
    assert other.endswith("streamcite serve-local --port 9000)")
    assert connect_message("x", "http://[::1]:8765/v1").startswith("cannot connect to [::1]:8765")
    remote = connect_message("cannot connect: refused", "https://api.example/v1/x")
    assert remote == "cannot connect to api.example:443: refused"


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
async def test_stream_chat_to_nothing_raises_connect_failed(transport: str) -> None:
    port = free_port()
    request = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "q"}]}
    async with stream_chat(
        request, base_url=f"http://127.0.0.1:{port}/v1", transport=transport
    ) as stream:
        answer = await stream.until_done()
    with pytest.raises(ConnectFailed) as caught:
        answer.raise_for_error()
    assert caught.value.code == "connect_failed"
    assert f"cannot connect to 127.0.0.1:{port}" in str(caught.value)
    assert f"streamcite serve-local --port {port}" in str(caught.value)


# -- the examples, as a user runs them -------------------------------------------------


def test_quickstart_with_no_backend_exits_1_with_one_line() -> None:
    port = free_port()
    r = run_script(str(EXAMPLES / "quickstart.py"), f"http://127.0.0.1:{port}")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "citations:" not in r.stdout and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: connect_failed: cannot connect to 127.0.0.1:{port}")
    assert lines[0].endswith(f"(the embedded backend: streamcite serve-local --port {port})")


def test_quickstart_against_serve_local_exits_0(served: str) -> None:
    r = run_script(str(EXAMPLES / "quickstart.py"), served)
    assert r.returncode == 0, r.stderr
    assert "citations:" in r.stdout and "grounding: support score" in r.stdout
    assert r.stderr == ""


def test_relay_client_with_no_relay_exits_1_with_one_line() -> None:
    url = f"ws://127.0.0.1:{free_port()}/ws"
    r = run_script(str(EXAMPLES / "relay_client.py"), "How many remote days?", "--url", url)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == (
        f"error: cannot connect to {url}; is the relay running? "
        "start it with: streamcite relay --port 8770"
    )


def test_wikit_example_without_its_ids_exits_1_with_one_line() -> None:
    r = subprocess.run(
        [sys.executable, str(EXAMPLES / "wikit_sources.py"), "--query-id", "q-1"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in __import__("os").environ.items() if not k.startswith("WIKIT_")},
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().startswith("error: set WIKIT_APP_ID and WIKIT_ORG_ID")


def test_every_example_that_streams_raises_for_errors() -> None:
    """Each example that reads an answer either checks it with raise_for_error() and
    ends on StreamciteError with one line, or has a reason not to (listed here)."""
    exempt = {
        "bench_local.py": "measures; its summary counts errors by code",
        "fastapi_app.py": "a server: errors stream to the browser as events",
        "gradio_chat.py": "a chat UI: errors are shown in the chat",
        "chainlit_chat.py": "a chat UI: errors are shown in the chat",
        "streamlit_chat.py": "a chat UI: errors are shown in the chat",
        "make_recorded_stream.py": "writes a file, reads no answer",
    }
    for path in sorted(EXAMPLES.glob("*.py")):
        if path.name in exempt:
            continue
        code = path.read_text(encoding="utf-8")
        assert "raise_for_error()" in code, path.name
        if path.name != "parse_recorded.py":  # sans-I/O: its error propagates as is
            assert "except StreamciteError" in code and "sys.exit(" in code, path.name


def test_the_quick_starts_commands_work_in_a_fresh_shell() -> None:
    """No command of the quick start needs an activated venv: each is `make …` or a
    path under .venv/bin (``streamcite serve-local`` was ``command not found``)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [
        line[2:].split("#")[0].strip() for line in quick.splitlines() if line.startswith("$ ")
    ]
    assert commands and all(
        c.split()[0] in ("make",) or c.startswith(".venv/bin/") for c in commands
    )
    assert "$ .venv/bin/python examples/quickstart.py" in quick
    dry = subprocess.run(
        ["make", "-n", "serve", "ARGS=--port 0"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert dry.returncode == 0, dry.stderr
    assert ".venv/bin/streamcite serve-local --port 0" in dry.stdout
