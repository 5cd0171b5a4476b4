"""The README's quick start: a streamed answer with its citations, its quoted sources
and a grounding check, from the embedded backend.

    streamcite serve-local &               # the embedded backend on 127.0.0.1:8765
    .venv/bin/python examples/quickstart.py

``python examples/quickstart.py http://127.0.0.1:PORT`` asks a backend on another port.
A failure (no backend listening, say) ends it with one line on stderr and exit status 1.
"""

import asyncio
import sys

from streamcite import StreamciteError, stream_chat
from streamcite.enrich import LocalGrounding, WikitSources

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8765"


async def main() -> None:
    request = {
        "model": "streamcite-local",
        "stream": True,
        "messages": [{"role": "user", "content": "How many remote-work days are allowed?"}],
    }
    async with stream_chat(
        request,
        base_url=f"{BACKEND}/v1",
        marker_mode="superscript",
        after=[WikitSources(base_url=BACKEND), LocalGrounding()],  # after the stream
    ) as stream:
        async for text in stream.text_stream:  # tokens as they arrive, footnotes as ¹ ²
            print(text, end="", flush=True)
    answer = stream.answer.raise_for_error()  # CitedAnswer; a failure raises StreamciteError
    print("\n\ncitations:")
    for c in answer.citations:
        print(f"  [{c.footnote}] {c.document_title} — {c.cited_text_heading}")
    print("sources:")
    for s in answer.sources:
        passage = " ".join(s.chunk.data.split("\n\n", 1)[-1].split())[:60]  # after its heading
        print(f"  [{s.quoted_as}] {s.document.display_name}: {passage}…")
    if answer.grounding is not None:
        print(f"grounding: support score {answer.grounding.support_score:.2f}")


try:
    asyncio.run(main())
except StreamciteError as exc:  # e.g. connect_failed: … is serve-local running? …
    sys.exit(f"error: {exc}")
