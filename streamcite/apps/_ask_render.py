"""The two outputs of ``streamcite ask``: live in the terminal (rich) or JSON Lines.

Both end cleanly after Ctrl-C (:meth:`Renderer.cancelled`): the terminal says
``cancelled``; JSON Lines gets the promised ``error`` (``cancelled``) and ``done``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

import orjson

from streamcite.apps._answer_summary import (
    passage_lines,
    print_claims,
    source_links,
    sources_table,
)
from streamcite.apps._local_links import LIVE_PAGES_HINT
from streamcite.apps._provider_render import ProviderRender
from streamcite.apps._terminal import (
    console_text,
    json_line_escaped,
    pipe_console,
    terminal_safe,
)
from streamcite.apps._usage import base_url_hint
from streamcite.core.events import (
    CitationRefEvent,
    ClaimEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    GroundingEvent,
    MetaEvent,
    ProviderToolEvent,
    ReasoningEvent,
    RefusalEvent,
    SourcesEvent,
    TokenEvent,
    ToolCallEvent,
)
from streamcite.core.models import CitedAnswer

__all__ = ["JsonRenderer", "RenderSettings", "Renderer", "RichRenderer"]


@dataclass(slots=True, frozen=True)
class RenderSettings:
    """What the terminal rendering shows, from the command line."""

    question: str
    base_url: str | None
    """The provider asked (None: the local backend)."""
    local_root: str | None
    """The local backend's root URL when it answers."""
    fault: str | None
    marker_mode: str
    show_reasoning: bool = True
    link: Callable[[str], str] | None = None
    """Rewrites a citation link for after the command (the local backend's pages become
    corpus files, see :mod:`streamcite.apps._local_links`); None keeps links as sent."""
    api: str = "chat"
    """``--api``: which API's conventions a hint names."""
    live_claims: bool = True
    """Claims may come while the answer streams (a grounding check is on): the chunk
    after a sentence's end waits, briefly, for that sentence's mark."""


class Renderer:
    """What the ask command calls: once at the start, per event, at the end or on Ctrl-C."""

    def start(self) -> None: ...

    def event(self, event: Event) -> None: ...

    def finish(self, answer: CitedAnswer) -> None: ...

    def cancelled(self, answer: CitedAnswer) -> None: ...


class JsonRenderer(Renderer):
    """One JSON object per event, flushed as it happens."""

    def __init__(self, out: TextIO):
        self._out = out.buffer if hasattr(out, "buffer") else None
        self._text = out

    def event(self, event: Event) -> None:
        # C1 controls and bidi overrides escaped (orjson writes them raw).
        line = json_line_escaped(orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE))
        if self._out is not None:
            self._out.write(line)
            self._out.flush()
        else:
            self._text.write(line.decode())
            self._text.flush()

    def cancelled(self, answer: CitedAnswer) -> None:
        """The promised ending after Ctrl-C: a ``cancelled`` error, then ``done``."""
        error = next((e for e in answer.errors if e.code == "cancelled"), None)
        if error is None:
            error = ErrorEvent(code="cancelled", message="cancelled by the user", stage="cancelled")
            answer.errors.append(error)
        self.event(error)
        self.event(DoneEvent(answer=answer))


HOLD_S = 0.25
"""Seconds the chunk that follows a sentence's end waits for that sentence's mark (the
check runs once that chunk shows the sentence is complete; it takes a few ms)."""

_TAIL = 512  # characters of the printed raw text kept to place marks
_SENTENCE_END = re.compile(r"""[.!?…。！？]["'”’)\]]*(?:\s*\[\d+(?:\s*,\s*\d+)*\])*$""")
_AFTER_END = re.compile(r"(?:\s|\[\d+(?:\s*,\s*\d+)*\])*")
"""What may follow a sentence's end before its mark: spaces and footnote markers."""


class RichRenderer(Renderer):
    """Tokens as they arrive, then the sources table and the claims coloured by support."""

    def __init__(self, settings: RenderSettings):
        self.opts = settings
        self.local_root = settings.local_root
        self.console = pipe_console(highlight=False, soft_wrap=True)
        self.err = pipe_console(stderr=True, highlight=False)
        self._streaming = False
        self._provider = ProviderRender(self.console, show_reasoning=settings.show_reasoning)
        self._text_len = 0  # characters of choice 0's raw text printed so far
        self._tail = ""  # the last characters of it (a mark goes after its sentence)
        self._held: list[TokenEvent] = []  # the chunk(s) after a sentence's end, waiting
        self._hold_timer: asyncio.TimerHandle | None = None
        self._late: list[str] = []  # marks of claims that came after the text moved on

    def start(self) -> None:
        c = self.console
        c.print(f"[bold]?[/bold] {console_text(self.opts.question)}")
        where = (
            f"local backend {self.local_root}" if self.local_root else (self.opts.base_url or "")
        )
        if self.opts.api != "chat":
            where += f" · {self.opts.api} API"
        c.print(f"[dim]{console_text(where)}[/dim]")
        if self.opts.fault and "hallucinate" in self.opts.fault:
            c.print(
                "[dim]fault hallucinate=1: the backend changes one number of its answer on purpose, "
                "to show the grounding check catching it[/dim]"
            )
        c.print()

    def event(self, event: Event) -> None:
        if isinstance(event, ReasoningEvent | ToolCallEvent | RefusalEvent):
            self.flush()
            self._streaming = self._provider.event(event) or self._streaming
        elif isinstance(event, ProviderToolEvent):
            if self._streaming and event.phase == "result":
                self.console.print()  # the tool's line on a line of its own
                self._streaming = False
            self._provider.provider_tool(event)
        elif isinstance(event, TokenEvent):
            if event.index != 0:
                return
            if self._held and not "".join(t.text for t in self._held).strip():
                self._held.append(event)  # " " then "Tuesday": both wait for the mark
                return
            self.flush()
            if self._holds(event):
                self._hold(event)
            else:
                self._print_token(event)
        elif isinstance(event, ErrorEvent):
            self.flush()
            if self._streaming:
                self.console.print()
                self._streaming = False
            self.console.print(
                f"[red]✗ {event.stage} error[/red] [bold]{console_text(event.code)}[/bold]: {console_text(event.message)}"
            )
            hint = (
                base_url_hint(self.opts.base_url, event.status, self.opts.api)
                if self.opts.base_url
                else None
            )
            if hint:
                self.console.print(f"[yellow]{console_text(hint)}[/yellow]")
        elif isinstance(event, ClaimEvent):
            self._claim(event)
        elif isinstance(
            event, MetaEvent | CitationRefEvent | DoneEvent | SourcesEvent | GroundingEvent
        ):
            return

    def _print_token(self, event: TokenEvent) -> None:
        if event.display:
            self._provider.end_reasoning()
            self.console.print(terminal_safe(event.display), end="", markup=False)
            self.console.file.flush()
            self._streaming = True
        self._text_len += len(event.text)
        self._tail = (self._tail + event.text)[-_TAIL:]

    def _holds(self, event: TokenEvent) -> bool:
        """``event`` follows a sentence's end: it waits for that sentence's mark."""
        return (
            self.opts.live_claims
            and event.text[:1].isspace()
            and _SENTENCE_END.search(self._tail) is not None
        )

    def _hold(self, event: TokenEvent) -> None:
        self._held = [event]
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # driven without a loop: the next event releases it
            return
        self._hold_timer = loop.call_later(HOLD_S, self.flush)

    def flush(self) -> None:
        """Print the chunk held for a mark (its wait is over: the mark came, or another
        event, or :data:`HOLD_S` passed)."""
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        held, self._held = self._held, []
        for event in held:
            self._print_token(event)

    def _claim(self, event: ClaimEvent) -> None:
        """A claim checked while the answer streams: marked right after its sentence
        (``✓n`` supported, ``✗n`` not, n = the sentence's number) when nothing but
        spaces or footnotes was printed after that sentence — the chunk that showed the
        sentence complete waits for it (:meth:`_holds`); one that comes once the text
        has moved on (checked against citations of the finish chunk, say) is listed on
        a line of its own under the answer, never inside another sentence. The claims
        table at the end has the details."""
        if not self._streaming or event.supported is None:
            return
        mark = (
            f"[green]✓{event.index + 1}[/green]"
            if event.supported
            else f"[red]✗{event.index + 1}[/red]"
        )
        mark = f"[dim]‹[/dim]{mark}[dim]›[/dim]"
        after = self._text_len - event.end
        if (
            after < 0
            or after > len(self._tail)
            or not _AFTER_END.fullmatch(self._tail[len(self._tail) - after :])
        ):
            self._late.append(mark)
            return
        self.console.print(mark, end="")
        self.console.file.flush()
        self.flush()  # the chunk that waited for this mark

    def cancelled(self, answer: CitedAnswer) -> None:
        self.flush()
        if self._streaming:
            self.console.print()
            self._streaming = False
        self.console.print("[yellow]cancelled[/yellow]")

    def finish(self, answer: CitedAnswer) -> None:
        self.flush()
        c = self.console
        if self._streaming:
            c.print()
        if self._late:
            c.print(f"[dim]claims checked after their sentences:[/dim] {' '.join(self._late)}")
        if answer.timings.ttft_ms is not None:
            parts = [f"first token {answer.timings.ttft_ms:.0f} ms"]
            if answer.timings.stream_ms is not None:
                parts.append(f"stream {answer.timings.stream_ms:.0f} ms")
            if answer.timings.sources_ms is not None:
                parts.append(f"sources {answer.timings.sources_ms:.0f} ms")
            if answer.timings.grounding_ms is not None:
                parts.append(f"grounding {answer.timings.grounding_ms:.0f} ms")
            if answer.timings.first_claim_ms is not None:
                parts.append(f"first claim {answer.timings.first_claim_ms:.0f} ms")
            c.print(f"[dim]{' · '.join(parts)}[/dim]")
        c.print()
        self._provider.finish(answer)
        if answer.citations or answer.sources:
            self._sources(answer)
        elif answer.complete and not answer.refusal and not answer.tool_calls:
            c.print("[yellow]No sources: the answer cites nothing.[/yellow]")
        if answer.dangling_refs:
            refs = ", ".join(f"[{n}]" for n in answer.dangling_refs)
            c.print(f"[yellow]Footnotes without a citation: {refs}[/yellow]")
        if answer.grounding is not None:
            c.print()
            print_claims(c, answer, self.opts.marker_mode)

    def _sources(self, answer: CitedAnswer) -> None:
        """The sources table, the links, and each footnote's own quoted passage(s)."""
        c = self.console
        c.print(sources_table(answer))
        links = source_links(answer, self.opts.link)
        for line in links:
            # Never wrapped, folded or cut, whatever the width: a PATH:LINE or URL split
            # over two lines no longer opens (the terminal may still wrap it).
            c.print(line, soft_wrap=True)
        if links and self.opts.link is not None:
            for line in LIVE_PAGES_HINT.split("\n"):
                c.print(f"  [dim]{console_text(line)}[/dim]", soft_wrap=True)
        quotes = passage_lines(answer)
        if quotes:
            c.print("[dim]Quoted passages:[/dim]")
            for line in quotes:
                c.print(line, soft_wrap=True)
