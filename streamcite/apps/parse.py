"""``streamcite parse [FILE]``: a recorded SSE stream (any dialect) → events as JSON Lines."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import click
import orjson

from streamcite.apps._io import read_chunks
from streamcite.apps._terminal import console_text, json_for_terminal, terminal_safe
from streamcite.apps.options import marker_mode_option
from streamcite.core.api import iter_events
from streamcite.core.dialects import DIALECTS, Dialect
from streamcite.core.events import CitationRefEvent, ErrorEvent, Event, TokenEvent
from streamcite.core.markers import MarkerMode


@click.command("parse")
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
    Responses, Anthropic Messages, Gemini and Cohere v2 streams are read alike."""
    if jsonl is None:
        jsonl = not sys.stdout.isatty()
    mode: MarkerMode = marker_mode  # validated by click.Choice
    chosen: Dialect = dialect  # type: ignore[assignment]  # validated by click.Choice
    events = iter_events(read_chunks(file), marker_mode=mode, dialect=chosen)
    if jsonl:
        out = sys.stdout.buffer
        for ev in events:
            out.write(orjson.dumps(ev, option=orjson.OPT_APPEND_NEWLINE))
        out.flush()
        return
    _pretty(events)


def _pretty(events: Iterator[Event]) -> None:
    from rich.console import Console

    console = Console(highlight=False)
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
