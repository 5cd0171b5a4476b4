"""``streamcite ask`` and ``streamcite serve-local`` end to end (real loopback HTTP)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from streamcite.apps.ask import DEMO_QUESTION
from streamcite.cli import main
from streamcite.local.answerer import NO_ANSWER


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["ask", *args], catch_exceptions=False)


def events_of(result: Result) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_demo_json_has_the_whole_pipeline() -> None:
    result = run("--demo", "--json")
    assert result.exit_code == 0, result.output
    events = events_of(result)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "meta" and kinds[-1] == "done"
    for kind in ("token", "citation_ref", "finish", "citations", "usage", "sources", "grounding"):
        assert kind in kinds, kind
    answer = events[-1]["answer"]
    assert answer["complete"] and answer["errors"] == []
    assert answer["text"] == "".join(e["text"] for e in events if e["type"] == "token")
    assert len(answer["citations"]) >= 3
    assert len({c["document_title"] for c in answer["citations"]}) >= 2
    # Wikit sources for the same answer: one per footnote, a document quoted twice.
    sources = answer["sources"]
    assert [s["quoted_as"] for s in sources] == [
        str(i + 1) for i in range(len(answer["citations"]))
    ]
    names = [s["document"]["name"] for s in sources]
    assert len(names) > len(set(names))
    # The demo changes one number on purpose: the local check flags that claim only.
    grounding = answer["grounding"]
    assert grounding["provider"] == "local"
    flagged = [
        c
        for c in grounding["claims"]
        if c["grounding_check_required"] and not c["citation_indices"]
    ]
    assert [c["claim_text"] for c in flagged] == [
        c["claim_text"] for c in grounding["claims"] if "five days" in c["claim_text"]
    ]
    assert len(flagged) == 1
    assert 0.5 < grounding["support_score"] < 1.0
    refs = [e for e in events if e["type"] == "citation_ref"]
    assert {r["number"] for r in refs} == {c["document_index"] + 1 for c in answer["citations"]}


def test_demo_renders_in_the_terminal() -> None:
    result = run("--demo")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert DEMO_QUESTION in out
    assert "Employees may work remotely up to five days per week" in out
    assert "manager¹." in out and "[1]" not in out  # footnotes as superscripts
    assert re.search(r"Sources — \d+ quoted from 2 documents", out)
    assert "Remote Work Policy" in out and "Information Security Policy" in out
    assert "¹ ²" in out or "¹ ³" in out or "² ³" in out  # a document cited twice is grouped
    assert "Grounding (local) — support score" in out
    assert "✓" in out and "✗" in out


def test_plain_question_without_sources_or_grounding() -> None:
    result = run(
        "Quanti giorni di ferie ho all'anno?", "--json", "--no-sources", "--grounding", "none"
    )
    assert result.exit_code == 0, result.output
    events = events_of(result)
    kinds = {e["type"] for e in events}
    assert "sources" not in kinds and "grounding" not in kinds
    answer = events[-1]["answer"]
    assert "26 giorni di ferie" in answer["text"]
    assert answer["citations"][0]["document_title"] == "Regolamento del personale"


def test_strip_mode_and_no_answer() -> None:
    result = run("Who won the football world cup?", "--marker-mode", "strip")
    assert result.exit_code == 0, result.output
    assert NO_ANSWER["en"] in result.stdout
    assert "No sources" in result.stdout


def test_google_grounding_through_the_local_endpoint() -> None:
    result = run("How long must passwords be?", "--json", "--grounding", "google", "--no-sources")
    assert result.exit_code == 0, result.output
    answer = events_of(result)[-1]["answer"]
    assert answer["grounding"]["provider"] == "google"
    assert answer["grounding"]["claims"][0]["citation_indices"] == [0]


def test_own_corpus(tmp_path: Path) -> None:
    (tmp_path / "kitchen.md").write_text(
        "---\ntitle: Kitchen Rules\nauthor: Office Manager\nyear: 2020\n---\n\n## Fridge\n\n"
        "The fridge is emptied every Friday at five o'clock.\n",
        encoding="utf-8",
    )
    result = run("When is the fridge emptied?", "--json", "--corpus", str(tmp_path))
    assert result.exit_code == 0, result.output
    answer = events_of(result)[-1]["answer"]
    assert answer["citations"][0]["document_title"] == "Kitchen Rules"
    assert answer["sources"][0]["document"]["name"] == "kitchen.md"


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["   "],
        ["q", "--grounding-facts", "sources", "--no-sources"],
    ],
)
def test_usage_errors(args: list[str]) -> None:
    result = CliRunner().invoke(main, ["ask", *args])
    assert result.exit_code == 2


@pytest.fixture
def served() -> Iterator[str]:
    """``streamcite serve-local --port 0`` in a subprocess; its root URL."""
    env = {**os.environ, "WIKIT_TEST_KEY": "k-123"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamcite.cli", "serve-local", "--port", "0",
         "--wikit-org", "org-7", "--wikit-api-key-env", "WIKIT_TEST_KEY"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        yield match.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_ask_a_remote_provider_with_wikit(served: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_WIKIT_KEY", "k-123")
    result = run(
        "How many days of annual leave do I get?", "--json",
        "--base-url", served + "/v1", "--model", "streamcite-local",
        "--wikit-app", "app-1", "--wikit-org", "org-7", "--wikit-base-url", served,
        "--wikit-api-key-env", "MY_WIKIT_KEY",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    answer = events_of(result)[-1]["answer"]
    assert "25 days of paid annual leave" in answer["text"]
    assert answer["sources"][0]["document"]["organization_id"] == "org-7"
    assert answer["grounding"]["support_score"] > 0.5
    # A wrong key is refused by the server, and ask says so and exits non-zero.
    monkeypatch.setenv("MY_WIKIT_KEY", "wrong")
    result = run(
        "How many days of annual leave do I get?", "--json",
        "--base-url", served + "/v1", "--model", "streamcite-local", "--grounding", "none",
        "--wikit-app", "app-1", "--wikit-org", "org-7", "--wikit-base-url", served,
        "--wikit-api-key-env", "MY_WIKIT_KEY",
    )  # fmt: skip
    assert result.exit_code == 1
    errors = [e for e in events_of(result) if e["type"] == "error"]
    assert errors and errors[0]["stage"] == "sources"
    assert "wrong" not in result.stdout


def test_demo_marks_claims_as_they_are_checked() -> None:
    result = run("--demo", "--json")
    assert result.exit_code == 0, result.output
    events = events_of(result)
    claims = [e for e in events if e["type"] == "claim"]
    kinds = [e["type"] for e in events]
    assert claims and all(c["checker"] == "local" for c in claims)
    # Checked as the finish chunk's citations arrive: before the grounding event.
    assert kinds.index("claim") < kinds.index("grounding")
    text = events[-1]["answer"]["text"]
    assert [c["text"] for c in claims if c["supported"] is False] == [
        c["text"] for c in claims if "five days" in c["text"]
    ]
    assert all(text[c["start"] : c["end"]] == c["text"] for c in claims)
    assert events[-1]["answer"]["claims"] == claims
    assert events[-1]["answer"]["timings"]["first_claim_ms"] > 0

    out = run("--demo").stdout
    assert "‹✗1›" in out and "‹✓2›" in out  # marked in the text as they come
    assert "first claim" in out


def test_azure_groundedness_through_the_local_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTENT_SAFETY_ENDPOINT", raising=False)
    monkeypatch.delenv("CONTENT_SAFETY_KEY", raising=False)
    result = run(
        "How many days of remote work per week?",
        *("--json", "--grounding", "azure", "--no-sources", "--fault", "hallucinate=1"),
    )
    assert result.exit_code == 0, result.output
    events = events_of(result)
    grounding = next(e for e in events if e["type"] == "grounding")
    assert grounding["provider"] == "azure" and 0 < grounding["support_score"] < 1
    [claim] = [e for e in events if e["type"] == "claim"]
    assert claim["checker"] == "azure" and claim["supported"] is False
    assert "five days" in claim["text"]
