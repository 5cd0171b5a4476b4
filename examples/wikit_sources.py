"""Wikit Semantics quoted sources after a streamed answer.

Offline (default): starts streamcite's embedded local backend, which speaks the chat
API and Wikit's ``get-quoted-sources`` endpoint, streams an answer and fetches the
sources of that answer as soon as its finish chunk arrives.

    .venv/bin/python examples/wikit_sources.py
    .venv/bin/python examples/wikit_sources.py "Combien de jours de télétravail ?"

Real Wikit: fetch the sources of a query you already executed (``queryId`` from the
``/query-executions`` response); the API key is needed for private apps only.

    WIKIT_APP_ID=... WIKIT_ORG_ID=... WIKIT_API_KEY=... \\
        .venv/bin/python examples/wikit_sources.py --query-id QUERY_ID
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from streamcite import CitedAnswer, StreamciteError, stream_chat
from streamcite.enrich import WikitSources
from streamcite.enrich.wikit import by_document, match_refs, page_label
from streamcite.logs import configure_logging
from streamcite.models import QuotedSource


def show_sources(sources: list[QuotedSource], answer: CitedAnswer | None = None) -> None:
    if not sources:
        print("(no sources)")  # Wikit's advice: show the section only when there are some
        return
    for group in by_document(sources):  # the API may repeat a document: list it once
        labels = ", ".join(f"[{q}]" for q in group.quoted_as)
        where = group.url or "(no URL)"  # some sources have none: plain text, not a link
        pages = f" pages {', '.join(str(p) for p in group.pages)}" if group.pages else ""
        print(f"  {labels} {group.document.display_name}{pages} — {where}")
        for s in group.sources:
            snippet = s.chunk.data.replace("\n", " ")[:90]
            print(
                f"      [{s.quoted_as}] {page_label(s) or ''} score {'n/a' if s.score is None else f'{s.score:.2f}'} {snippet}…"
            )
    if answer is not None:
        check = match_refs(answer, sources)
        if check.refs_without_source:
            print(
                "  footnotes with no source:",
                ", ".join(f"[{n}]" for n in check.refs_without_source),
            )
        if check.sources_never_referenced:
            never = ", ".join(f"[{s.quoted_as}]" for s in check.sources_never_referenced)
            print("  sources never cited:", never)


async def offline(question: str) -> None:
    from streamcite.local import BackendConfig, LocalBackend

    config = BackendConfig(wikit_org_id="org-demo", wikit_api_key="demo-key")
    async with LocalBackend(config) as backend:
        # The local backend keys sources by the completion id: the enricher's default.
        wikit = WikitSources("demo-app", "org-demo", "demo-key", base_url=backend.root_url)
        request = {
            "model": "streamcite-local",
            "messages": [{"role": "user", "content": question}],
            "stream": True,
        }
        async with stream_chat(request, base_url=backend.base_url, after=[wikit]) as stream:
            async for text in stream.text_stream:
                print(text, end="", flush=True)
            answer = (await stream.until_done()).raise_for_error()  # a failure raises
        print("\n")
        print(f"sources (fetched in {answer.timings.sources_ms or 0:.1f} ms):")
        show_sources(answer.sources, answer)


async def online(query_id: str) -> None:
    app, org = os.environ.get("WIKIT_APP_ID"), os.environ.get("WIKIT_ORG_ID")
    if not app or not org:
        sys.exit("error: set WIKIT_APP_ID and WIKIT_ORG_ID (and WIKIT_API_KEY for private apps)")
    async with WikitSources(
        app,
        org,
        os.environ.get("WIKIT_API_KEY"),
        base_url=os.environ.get("WIKIT_BASE_URL", "https://apis.wikit.ai"),
    ) as wikit:
        sources = await wikit.fetch(query_id)
    show_sources(sources)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "question", nargs="?", default="Combien de jours de télétravail par semaine ?"
    )
    parser.add_argument("--query-id", help="fetch this query's sources from the real Wikit API")
    args = parser.parse_args()
    configure_logging("WARNING")  # library logs on stderr, warnings and up
    try:
        asyncio.run(online(args.query_id) if args.query_id else offline(args.question))
    except StreamciteError as exc:  # one line and exit status 1, no traceback
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
