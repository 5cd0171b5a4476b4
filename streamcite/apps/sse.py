"""``streamcite sse [FILE]``: raw WHATWG SSE decoding, one JSON line per event."""

from __future__ import annotations

import sys

import click
import orjson

from streamcite.apps._io import read_chunks
from streamcite.core.errors import EventTooLarge
from streamcite.core.sse import DEFAULT_MAX_EVENT_SIZE, SSEDecoder


@click.command("sse")
@click.argument("file", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--max-event-size", default=DEFAULT_MAX_EVENT_SIZE, show_default=True, help="Bytes.")
def command(file: str | None, max_event_size: int) -> None:
    """Decode a raw SSE stream (FILE or stdin) into JSON Lines:
    {"event", "data", "id", "retry"} per dispatched event."""
    decoder = SSEDecoder(max_event_size)
    out = sys.stdout.buffer
    try:
        for chunk in read_chunks(file):
            for ev in decoder.feed(chunk):
                out.write(orjson.dumps(ev.to_dict(), option=orjson.OPT_APPEND_NEWLINE))
    except EventTooLarge as exc:
        raise click.ClickException(exc.message) from exc
    decoder.close()
    out.flush()
    if decoder.truncated:
        click.echo("streamcite sse: input ended inside an event (discarded)", err=True)
