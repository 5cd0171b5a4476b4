"""`ask` shows reasoning, tool calls and refusals that the embedded backend streams over
real loopback HTTP (its provider profiles)."""

from __future__ import annotations

import orjson
from click.testing import CliRunner

from streamcite.cli import main

Q = "How many remote-work days are allowed?"


def _ask(*args: str) -> str:
    result = CliRunner().invoke(main, ["ask", Q, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_reasoning_is_shown_before_the_answer_and_can_be_hidden() -> None:
    out = _ask("--fault", "profile=reasoning")
    assert "thinking…" in out
    assert out.index("Looking for the passages") < out.index("Employees may work remotely")
    hidden = _ask("--fault", "profile=reasoning", "--no-reasoning")
    assert "thinking…" not in hidden and "Looking for the passages" not in hidden
    assert "Employees may work remotely" in hidden


def test_refusal_is_shown_as_such() -> None:
    out = _ask("--fault", "profile=refusal")
    assert "The model refused to answer." in out
    assert "No sources: the answer cites nothing." not in out


def test_tool_calls_are_listed_with_their_arguments() -> None:
    out = _ask("--fault", "tool_call=get_weather")
    assert "tool call get_weather" in out
    assert '{"query":' in out


def test_json_form_carries_the_new_events_unchanged() -> None:
    out = _ask("--fault", "profile=reasoning", "--json", "--no-reasoning")
    types = [orjson.loads(line)["type"] for line in out.splitlines() if line.startswith("{")]
    assert "reasoning" in types and types[-1] == "done"
