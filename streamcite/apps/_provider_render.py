"""How `ask` shows what a provider streams besides answer text: reasoning (dim, before the
answer), tool calls (listed with their arguments once the stream ends) and a refusal."""

from __future__ import annotations

from typing import Any

from streamcite.apps._terminal import console_text, terminal_safe
from streamcite.core.events import ReasoningEvent, RefusalEvent, ToolCallEvent
from streamcite.core.models import CitedAnswer

ProviderEvent = ReasoningEvent | ToolCallEvent | RefusalEvent


class ProviderRender:
    """Renders the non-answer deltas of choice 0 on a rich console; upstream text is made
    terminal-safe and printed with ``markup=False`` (or escaped) so it can never style,
    hide or overwrite the rest of the output."""

    def __init__(self, console: Any, *, show_reasoning: bool) -> None:
        self.console = console
        self.show_reasoning = show_reasoning
        self.in_reasoning = False

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
