"""A newcomer's mistakes end in one line and a fix, never a traceback (issue 17 §1)."""

from __future__ import annotations

import http.server
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from streamcite.cli import main


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamcite.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.fixture
def busy_port() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


@pytest.mark.parametrize("command", ["serve-local", "relay"])
def test_port_in_use_is_one_line_exit_2(command: str, busy_port: int) -> None:
    r = cli(command, "--port", str(busy_port))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert f"127.0.0.1:{busy_port}" in r.stderr
    assert "already in use" in r.stderr and "--port" in r.stderr


@pytest.mark.parametrize("command", ["serve-local", "relay"])
def test_foreign_host_is_one_line_exit_2(command: str) -> None:
    r = cli(command, "--host", "10.1.2.3", "--port", "0")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "10.1.2.3" in r.stderr and "--host 127.0.0.1" in r.stderr


@pytest.mark.parametrize("command", ["parse", "sse"])
def test_missing_file_is_a_click_error(command: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [command, str(tmp_path / "nope.sse")])
    assert result.exit_code == 2
    assert not isinstance(result.exception, FileNotFoundError)
    assert "does not exist" in result.output


@pytest.mark.parametrize("command", ["ask", "relay"])
def test_base_url_without_scheme_is_a_usage_error(command: str) -> None:
    args = [command, "--base-url", "localhost:8000/v1", "--model", "m"]
    if command == "ask":
        args.append("hello?")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "scheme" in result.output and "http://localhost:8000/v1" in result.output


class _Status(http.server.BaseHTTPRequestHandler):
    status = 404

    def do_POST(self) -> None:
        body = b'{"error": {"message": "nope"}}'
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def status_server() -> Iterator[http.server.HTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _url(server: http.server.HTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_404_without_v1_gets_a_hint(status_server: http.server.HTTPServer) -> None:
    status_server.status = 404  # type: ignore[attr-defined]
    env = {**os.environ, "SC_TEST_KEY": "k"}
    r = cli("ask", "hi?", "--base-url", _url(status_server), "--model", "m",
            "--api-key-env", "SC_TEST_KEY", env=env)  # fmt: skip
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert f"--base-url {_url(status_server)}/v1" in r.stdout


def test_unset_api_key_warns_and_401_hints(status_server: http.server.HTTPServer) -> None:
    status_server.status = 401  # type: ignore[attr-defined]
    env = {k: v for k, v in os.environ.items() if k != "SC_UNSET_KEY"}
    r = cli("ask", "hi?", "--base-url", _url(status_server) + "/v1", "--model", "m",
            "--api-key-env", "SC_UNSET_KEY", env=env)  # fmt: skip
    assert r.returncode == 1
    assert "SC_UNSET_KEY is not set" in r.stderr
    assert "hint: the API key" in r.stdout


def _interrupt_after_first_line(*args: str) -> tuple[str, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamcite.cli", "ask", "--token-delay", "0.3", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    return first + rest, err


def test_ctrl_c_in_json_ends_with_cancelled_then_done() -> None:
    out, _ = _interrupt_after_first_line("--json", "How many remote days can I take?")
    events = [orjson.loads(line) for line in out.splitlines()]
    assert events[-1]["type"] == "done"
    assert events[-2]["type"] == "error" and events[-2]["code"] == "cancelled"
    assert any(e["code"] == "cancelled" for e in events[-1]["answer"]["errors"])


def test_ctrl_c_in_text_ends_with_a_newline() -> None:
    out, _ = _interrupt_after_first_line("How many remote days can I take?")
    assert out.endswith("\n")
    assert "cancelled" in out


@pytest.fixture
def mixed_corpus(tmp_path: Path) -> Path:
    (tmp_path / "good.md").write_text("# Bikes\n\nThe company pays 300 euros for a bicycle.\n")
    (tmp_path / "latin1.txt").write_bytes("Café crème à 2 €".encode("latin-1", "replace"))
    return tmp_path


def test_latin1_file_is_skipped_with_its_full_path(mixed_corpus: Path) -> None:
    r = cli("ask", "How much for a bicycle?", "--json", "--corpus", str(mixed_corpus))
    assert r.returncode == 0, r.stderr
    assert f"warning: skipped {(mixed_corpus / 'latin1.txt').resolve()}: not UTF-8" in r.stderr
    assert "300 euros" in r.stdout


def test_latin1_file_fails_with_strict(mixed_corpus: Path) -> None:
    r = cli("ask", "How much for a bicycle?", "--json", "--strict", "--corpus", str(mixed_corpus))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert str((mixed_corpus / "latin1.txt").resolve()) in r.stderr


def test_redis_url_without_the_package_gives_an_install_hint(tmp_path: Path) -> None:
    fake = tmp_path / "redis"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('No module named redis')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = cli("relay", "--port", "0", "--redis-url", "redis://127.0.0.1:1/0", env=env)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert "pip install 'streamcite[redis]'" in r.stderr


def run_example(script: str) -> subprocess.CompletedProcess[str]:
    """One offline example, run as a user runs it; it must succeed."""
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run(
        [sys.executable, str(root / "examples" / script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r


@pytest.mark.parametrize("script", ["wikit_sources.py", "local_grounding.py"])
def test_examples_print_numbers_for_people(script: str) -> None:
    r = run_example(script)
    scores = re.findall(r"score:? (\S+)", r.stdout)
    assert scores and all(re.fullmatch(r"\d\.\d\d:?", v) for v in scores), scores  # 0.83
    assert not re.search(r"pages \[", r.stdout), r.stdout  # no Python lists


@pytest.mark.parametrize("script", ["parse_recorded.py", "local_backend.py", "wikit_sources.py"])
def test_examples_print_no_python_reprs(script: str) -> None:
    r = run_example(script)
    # No lists, dicts or booleans as Python prints them, no float with a long tail.
    for pattern in (r"\[\]", r"\['", r"\{'", r"=True|=False", r"\d\.\d{4,}"):
        assert not re.search(pattern, r.stdout), (pattern, r.stdout)


async def test_cited_document_page_is_styled_and_anchored() -> None:
    import httpx

    from streamcite.local.server import BackendConfig, LocalBackend

    async with LocalBackend(BackendConfig()) as be, httpx.AsyncClient() as client:
        body = {
            "model": "streamcite-local",
            "messages": [{"role": "user", "content": "How many remote days?"}],
        }
        reply = (await client.post(be.base_url + "/chat/completions", json=body)).json()
        url = reply["citations"][0]["source_url"]
        assert "#chunk-" in url
        page = await client.get(url, headers={"Accept": "text/html"})
        anchor = url.split("#", 1)[1]
        assert page.text.count(f'id="{anchor}"') == 1
        assert "<style>" in page.text and ":target" in page.text
