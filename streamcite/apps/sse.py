"""``streamcite sse [FILE]``: raw WHATWG SSE decoding, one JSON line per event."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
import orjson

from streamcite.apps._io import read_chunks
from streamcite.apps._terminal import json_line_escaped
from streamcite.apps.options import ArgumentHintCommand
from streamcite.core.errors import EventTooLarge
from streamcite.core.sse import DEFAULT_MAX_EVENT_SIZE, SSEDecoder


def _json_line(event: dict[str, Any]) -> bytes:
    """One JSON line. A ``retry`` beyond 64 bits (the standard sets no bound; the decoder
    keeps it exactly) is beyond orjson: that line is written by the standard library."""
    try:
        return json_line_escaped(orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE))
    except TypeError:
        return json_line_escaped(json.dumps(event, ensure_ascii=False).encode() + b"\n")


@click.command("sse", cls=ArgumentHintCommand)
@click.argument(
    "file", required=False, type=click.Path(exists=True, dir_okay=False, allow_dash=True)
)
@click.option("--max-event-size", default=DEFAULT_MAX_EVENT_SIZE, show_default=True, help="Bytes.")
def command(file: str | None, max_event_size: int) -> None:
    """Decode a raw SSE stream (FILE or stdin) into JSON Lines:
    {"event", "data", "id", "retry"} per dispatched event."""
    decoder = SSEDecoder(max_event_size)
    out = sys.stdout.buffer
    dropped = 0
    for chunk in read_chunks(file):
        try:
            events = decoder.feed(chunk)
        except EventTooLarge as exc:
            events = exc.events  # the oversized event is dropped, the others kept
            dropped += 1
        for ev in events:
            out.write(_json_line(ev.to_dict()))
    decoder.close()
    out.flush()
    if decoder.truncated:
        click.echo("streamcite sse: input ended inside an event (discarded)", err=True)
    if dropped:
        click.echo(f"streamcite sse: {dropped} event(s) over --max-event-size dropped", err=True)
        raise SystemExit(1)
