"""Replay a recorded Magisterium-style stream through the sans-I/O core.

No network, no asyncio: bytes in (here in 7-byte reads, to show that any split
gives the same events), typed events out, one CitedAnswer at the end.

Run: ``.venv/bin/python examples/parse_recorded.py``
"""

from __future__ import annotations

from pathlib import Path

from streamcite import iter_events
from streamcite.events import CitationRefEvent, DoneEvent, TokenEvent

data = (Path(__file__).parent / "data" / "magisterium_stream.sse").read_bytes()
reads = [data[i : i + 7] for i in range(0, len(data), 7)]

for event in iter_events(reads, marker_mode="superscript"):
    if isinstance(event, TokenEvent):
        print(event.display, end="", flush=True)
    elif isinstance(event, CitationRefEvent):
        pass  # event.number, event.document_index, event.offset: live footnotes
    elif isinstance(event, DoneEvent):
        answer = event.answer.raise_for_error()  # a broken recording raises
        print("\n")
        for ref in answer.citation_refs:
            c = answer.citation_for(ref.number)
            title = c.document_title if c else "(no citation)"
            print(f"[{ref.number}] at char {ref.offset}: {title}")
        dangling = ", ".join(f"[{n}]" for n in answer.dangling_refs) or "none"
        uncited = ", ".join(f"[{i + 1}]" for i in answer.uncited_documents) or "none"
        print(f"footnotes without a citation: {dangling}; citations never referenced: {uncited}")
