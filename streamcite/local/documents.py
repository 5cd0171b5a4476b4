"""The documents pages of the local backend: ``GET /documents/{id}``, where citations point.

The source text by default; an HTML page (``?format=html`` or a browser's ``Accept``)
with one ``#chunk-N`` anchor per chunk, the cited one highlighted.
"""

from __future__ import annotations

import html

from aiohttp import web

from streamcite.local.corpus import Corpus
from streamcite.local.replies import detail_error
from streamcite.local.state import STATE

__all__ = ["DOCUMENT_PATH", "document", "document_html"]

DOCUMENT_PATH = "/documents/{document_id}"


async def document(request: web.Request) -> web.Response:
    """The document's source text, or its HTML page; 404 for an unknown id."""
    corpus = request.app[STATE].corpus
    doc = corpus.document(request.match_info["document_id"])
    if doc is None:
        return detail_error(404, "document not found")
    wanted = request.query.get("format", "")
    accept = request.headers.get("Accept", "")
    if wanted == "html" or (not wanted and "text/html" in accept):
        return web.Response(
            text=document_html(corpus, doc.id), content_type="text/html", charset="utf-8"
        )
    return web.Response(text=doc.source_text, content_type=doc.media_type, charset="utf-8")


_DOC_CSS = (  # readable, and the cited chunk (the URL's #chunk-N) stands out
    "body{font:16px/1.6 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;"
    "color:#1f2328}h1{font-size:1.6rem}h2{font-size:1.15rem;margin-top:1.6rem}"
    "section{padding:.1rem .8rem;border-inline-start:3px solid transparent}"
    "section:target{background:#fff8c5;border-color:#d4a72c}"
)


def document_html(corpus: Corpus, document_id: str) -> str:
    """A plain HTML page: title, metadata and the chunks, each with an ``#chunk-N`` anchor."""
    doc = corpus.document(document_id)
    if doc is None:
        raise KeyError(document_id)
    meta = " · ".join(html.escape(x) for x in (doc.author, doc.year, doc.reference) if x)
    rtl = ' dir="rtl"' if doc.language == "he" else ""
    parts = [
        f'<!doctype html><html lang="{html.escape(doc.language or "")}"{rtl}><head><meta charset="utf-8">',
        f"<title>{html.escape(doc.title)}</title><style>{_DOC_CSS}</style></head><body>",
        f"<h1>{html.escape(doc.title)}</h1><p><small>{meta}</small></p>",
    ]
    heading: str | None = None
    for chunk in (c for c in corpus.chunks if c.document_id == document_id):
        if chunk.heading and chunk.heading != heading and chunk.heading != doc.title:
            parts.append(f"<h2>{html.escape(chunk.heading)}</h2>")
        heading = chunk.heading
        paras = "".join(f"<p>{html.escape(p)}</p>" for p in chunk.text.split("\n\n"))
        parts.append(f'<section id="chunk-{chunk.position}">{paras}</section>')
    parts.append("</body></html>")
    return "\n".join(parts)
