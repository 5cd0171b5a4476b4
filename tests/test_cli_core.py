"""`streamcite sse` and `streamcite parse` as users run them: a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "examples" / "data" / "magisterium_stream.sse"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "streamcite.cli", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        cwd=ROOT,
    )


def test_sse_file_and_stdin_agree() -> None:
    stream = b"\xef\xbb\xbfid: 7\r\nretry: 1500\r\ndata: a\r\ndata: b\r\n\r\nevent: x\ndata\n\n: c\n\ndata: tail"
    p = tmp = ROOT / "test-artifacts"
    tmp.mkdir(exist_ok=True)
    f = p / "sse-input.txt"
    f.write_bytes(stream)
    from_file = run("sse", str(f))
    from_stdin = run("sse", stdin=stream)
    assert from_file.returncode == from_stdin.returncode == 0
    assert from_file.stdout == from_stdin.stdout
    lines = [orjson.loads(x) for x in from_file.stdout.splitlines()]
    assert lines == [
        {"event": "message", "data": "a\nb", "id": "7", "retry": 1500},
        {"event": "x", "data": "", "id": "7", "retry": 1500},
    ]
    assert b"ended inside an event" in from_file.stderr


def test_parse_jsonl_events() -> None:
    p = run("parse", str(RECORDED))
    assert p.returncode == 0, p.stderr
    events = [orjson.loads(x) for x in p.stdout.splitlines()]
    assert events[0]["type"] == "meta" and events[-1]["type"] == "done"
    assert list(events[1]) == ["type", "index", "text", "display"]  # type first, stable order
    answer = events[-1]["answer"]
    tokens = "".join(e["text"] for e in events if e["type"] == "token")
    assert answer["text"] == tokens
    assert [c["document_index"] for c in answer["citations"]] == [0, 1, 2]
    assert {e["type"] for e in events} >= {"citation_ref", "citations", "finish", "usage"}
    assert b"stream." not in p.stdout  # logs never on stdout


def test_parse_marker_mode_and_stdin() -> None:
    p = run("parse", "--marker-mode", "strip", stdin=RECORDED.read_bytes())
    answer = orjson.loads(p.stdout.splitlines()[-1])["answer"]
    assert "[" not in answer["display_text"] and "[1]" in answer["text"]


def test_parse_recorded_example_runs() -> None:
    p = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "parse_recorded.py")],
        capture_output=True,
        timeout=60,
    )
    assert p.returncode == 0 and "Cherishing Life" in p.stdout.decode()


def test_parse_dialects() -> None:
    """`parse --dialect D` (default auto) reads the four other dialects' streams."""
    fixtures = ROOT / "tests" / "fixtures" / "dialects"
    for name in ("anthropic__citations_nonascii.sse", "gemini__grounding_split_nonascii.sse"):
        data = (fixtures / name).read_bytes()
        auto = run("parse", str(fixtures / name))
        named = run("parse", "--dialect", name.split("__")[0], stdin=data)
        assert auto.returncode == named.returncode == 0, auto.stderr
        events = [orjson.loads(x) for x in auto.stdout.splitlines()]
        assert [orjson.loads(x)["type"] for x in named.stdout.splitlines()] == [
            e["type"] for e in events
        ]
        answer = events[-1]["answer"]
        for sp in answer["citation_spans"]:
            assert sp["start_utf16"] >= sp["start"]
        assert answer["complete"] and answer["citations"]
    # Read as the wrong dialect: typed errors, never a crash.
    wrong = run("parse", "--dialect", "cohere", str(fixtures / "anthropic__tool_use.sse"))
    events = [orjson.loads(x) for x in wrong.stdout.splitlines()]
    assert wrong.returncode == 0 and events[-1]["type"] == "done"
    assert any(e["type"] == "error" for e in events)
    bad = run("parse", "--dialect", "bard", str(fixtures / "anthropic__tool_use.sse"))
    assert bad.returncode == 2
