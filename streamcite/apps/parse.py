"""``streamcite parse [FILE]``: a recorded SSE stream (any dialect) → events as JSON Lines."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator

import click
import orjson

from streamcite.apps._io import read_chunks
from streamcite.apps._terminal import (
    console_text,
    json_for_terminal,
    json_line_escaped,
    pipe_console,
    terminal_safe,
)
from streamcite.apps.options import ArgumentHintCommand, marker_mode_option
from streamcite.core.api import iter_events
from streamcite.core.dialects import DIALECTS, Dialect
from streamcite.core.events import CitationRefEvent, ErrorEvent, Event, TokenEvent
from streamcite.core.markers import MarkerMode


@click.command("parse", cls=ArgumentHintCommand)
@click.argument(
    "file", required=False, type=click.Path(exists=True, dir_okay=False, allow_dash=True)
)
@marker_mode_option("keep", "How footnote markers appear in each token's `display`.")
@click.option(
    "--dialect",
    type=click.Choice(["auto", *DIALECTS]),
    default="auto",
    show_default=True,
    help="The stream's wire dialect; auto decides from its first event.",
)
@click.option(
    "--jsonl/--pretty",
    default=None,
    help="JSON Lines (default when stdout is not a terminal) or a readable rendering.",
)
def command(file: str | None, marker_mode: str, dialect: str, jsonl: bool | None) -> None:
    """Interpret a recorded SSE stream (FILE or stdin) and print its events (meta, token,
    citation_ref, finish, citations, usage, error, done). Chat Completions, OpenAI
    Responses, Anthropic Messages, Gemini and Cohere v2 streams are read alike.

    Exit codes: 0 the input was an SSE stream (its faults are error events), 1 it was
    not one at all (empty, or no data:/event:/id:/retry: line), 2 usage error."""
    if jsonl is None:
        jsonl = not sys.stdout.isatty()
    mode: MarkerMode = marker_mode  # validated by click.Choice
    chosen: Dialect = dialect  # type: ignore[assignment]  # validated by click.Choice
    sniff = SseSniffer(read_chunks(file))
    events = iter_events(sniff, marker_mode=mode, dialect=chosen)
    if jsonl:
        out = sys.stdout.buffer
        for ev in events:
            out.write(json_line_escaped(orjson.dumps(ev, option=orjson.OPT_APPEND_NEWLINE)))
        out.flush()
    else:
        _pretty(events)
    if not sniff.looks_like_sse:
        # The events above say what the decoder made of it; the exit code says the
        # input was not a stream at all (a README, an HTML error page, a JSON body).
        what = "is empty" if sniff.empty else "has no SSE field line (data:, event:, id:, retry:)"
        name = "stdin" if file in (None, "-") else click.format_filename(file)
        click.echo(f"streamcite: error: {name} {what}: not an SSE stream", err=True)
        sys.exit(1)


class SseSniffer:
    """The input's chunks, passed through, noting whether any line is an SSE field
    (``data:``, ``event:``, ``id:``, ``retry:``, or a ``:`` comment). Lines are looked at
    only until the first one is found, so a real stream pays one search."""

    _FIELD = re.compile(rb"(?:^|[\r\n])(?:(?:data|event|id|retry)(?::|[\r\n])|:)")

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks = chunks
        self.looks_like_sse = False
        self.empty = True

    def __iter__(self) -> Iterator[bytes]:
        tail = b""
        for chunk in self._chunks:
            if chunk:
                self.empty = False
            if not self.looks_like_sse:
                # The last partial line of the previous chunk goes with this one.
                window = tail + chunk
                self.looks_like_sse = self._FIELD.search(window) is not None
                tail = window[max(window.rfind(b"\n"), window.rfind(b"\r")) :][-64:]
            yield chunk


def _pretty(events: Iterator[Event]) -> None:
    console = pipe_console(highlight=False)
    for ev in events:
        if type(ev) is TokenEvent:
            console.print(terminal_safe(ev.display), end="", markup=False)
        elif type(ev) is CitationRefEvent:
            continue
        elif type(ev) is ErrorEvent:
            # Codes and messages quote upstream bytes: escaped, never read as markup.
            code, stage, message = (console_text(x) for x in (ev.code, ev.stage, ev.message))
            console.print(f"\n[red]error[/red] {code} ({stage}): {message}", markup=True)
        elif ev.type == "done":
            console.print()
            console.print_json(json_for_terminal(orjson.dumps(ev.to_dict()["answer"]).decode()))
        elif ev.type in ("citations", "usage", "finish"):
            console.print(f"\n[dim]{ev.type}[/dim]", markup=True)
