"""How `ask` shows what a provider streams besides answer text: reasoning (dim, before the
answer), tool calls (listed with their arguments once the stream ends), the tools the
provider ran itself (one line each as its result arrives) and a refusal."""

from __future__ import annotations

from typing import Any

import orjson

from streamcite.apps._terminal import console_text, terminal_safe
from streamcite.core.events import ProviderToolEvent, ReasoningEvent, RefusalEvent, ToolCallEvent
from streamcite.core.models import CitedAnswer
from streamcite.core.terminal import one_line

ProviderEvent = ReasoningEvent | ToolCallEvent | RefusalEvent


class ProviderRender:
    """Renders the non-answer deltas of choice 0 on a rich console; upstream text is made
    terminal-safe and printed with ``markup=False`` (or escaped) so it can never style,
    hide or overwrite the rest of the output."""

    def __init__(self, console: Any, *, show_reasoning: bool) -> None:
        self.console = console
        self.show_reasoning = show_reasoning
        self.in_reasoning = False
        self._tool_inputs: dict[int, str | None] = {}  # tool_index -> its call's input

    def provider_tool(self, event: ProviderToolEvent) -> None:
        """One line per tool the provider ran, when its result arrives:
        ``🔎 web_search: "query" → 5 results`` (terminal-safe, at most ~160 characters)."""
        if event.index != 0:
            return
        if event.phase != "result":
            if len(self._tool_inputs) < 1024:
                self._tool_inputs[event.tool_index] = event.input
            return
        tool_input = event.input or self._tool_inputs.pop(event.tool_index, None)
        line = f"🔎 {event.name or 'tool'}"
        if server := event.server:
            line = f"{line} ({server})"
        what = _input_line(tool_input)
        line = f"{line}: {what}" if what else line
        line = f"{line} → {_result_line(event)}"
        self.console.print(_clip(one_line(line), 160), markup=False, style="dim")

    def event(self, event: ProviderEvent) -> bool:
        """Render one event; True when a line is left open (the caller ends it)."""
        if event.index != 0:
            return False
        if isinstance(event, ReasoningEvent):
            if not self.show_reasoning or not event.text:
                return False
            if not self.in_reasoning:
                self.console.print("[dim]thinking…[/dim]")
                self.in_reasoning = True
            self.console.print(terminal_safe(event.text), end="", markup=False, style="dim")
            self.console.file.flush()
            return True
        if isinstance(event, RefusalEvent):
            self.console.print(terminal_safe(event.text), end="", markup=False, style="bold yellow")
            self.console.file.flush()
            return True
        return False  # tool calls are listed whole at the end (fragments are unreadable)

    def end_reasoning(self) -> None:
        """The answer starts: close the reasoning block with a blank line."""
        if self.in_reasoning:
            self.console.print("\n")
            self.in_reasoning = False

    def finish(self, answer: CitedAnswer) -> None:
        c = self.console
        if answer.refusal:
            c.print("[bold yellow]The model refused to answer.[/bold yellow]")
        for call in answer.tool_calls:
            name, call_id = console_text(call.name or "?"), console_text(call.id or "no id")
            c.print(f"[bold]tool call[/bold] {name} ({call_id})")
            c.print(f"  {terminal_safe(call.arguments)}", markup=False, style="cyan")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _input_line(tool_input: str | None) -> str:
    """The telling part of a tool's input: its query, URL, command or code's first line."""
    if not tool_input:
        return ""
    try:
        value = orjson.loads(tool_input)
    except orjson.JSONDecodeError:
        return _clip(tool_input, 80)
    if isinstance(value, dict):
        for key in ("query", "queries", "url", "command", "code", "path"):
            v = value.get(key)
            if isinstance(v, list) and v:
                v = v[0]
            if isinstance(v, str) and v.strip():
                return '"' + _clip(v.strip().splitlines()[0], 80) + '"'
    return _clip(tool_input, 80)


def _result_line(event: ProviderToolEvent) -> str:
    """``5 results``, ``exit 0``, ``error (max_uses_exceeded)`` or the status."""
    s = event.summary or {}
    if event.status in ("error", "failed"):
        code = s.get("error_code")
        return f"{event.status} ({code})" if isinstance(code, str) else str(event.status)
    if isinstance(s.get("count"), int):
        n = s["count"]
        return f"{n} result" + ("" if n == 1 else "s")
    if isinstance(s.get("return_code"), int):
        return f"exit {s['return_code']}"
    return str(event.status or "done")
