"""Citation links that still work after ``streamcite ask`` exits.

With the embedded backend, a citation's ``source_url`` is
``http://127.0.0.1:PORT/documents/ID#chunk-N``: the backend stops with the command,
so that link is dead by the time anyone clicks it. The terminal shows the corpus
file instead, as ``PATH:LINE`` (the line where the cited chunk starts: editors and
terminals open it there), and one line says how to get the pages back
(``streamcite serve-local``). The events (``--json``) keep the URLs as sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from streamcite.local.corpus import BUILTIN_CORPUS, Chunk, Corpus, Document, stable_id

__all__ = ["LIVE_PAGES_HINT", "offline_links"]

LIVE_PAGES_HINT = (
    "links: corpus files (PATH:LINE); the local backend stopped with this command\n"
    "pages: run `streamcite serve-local`, then http://127.0.0.1:8765/documents/…"
)

_DOCUMENT_URL = re.compile(r"/documents/(?P<id>[0-9a-f]{24})(?:#chunk-(?P<chunk>\d+))?$")


def _line_of(doc: Document, chunk: Chunk | None) -> int:
    """One-based line of ``chunk`` (or of the document's first line) in its file."""
    if chunk is None:
        return 1
    body_at = len(doc.source_text) - len(doc.body)  # the front matter comes first
    return doc.source_text.count("\n", 0, body_at + chunk.start) + 1


def offline_links(corpus: Corpus, corpus_dir: Path | None, root_url: str) -> Callable[[str], str]:
    """A function that turns the backend's document URLs (under ``root_url``) into
    ``PATH:LINE`` of the corpus file; any other link is returned as it is.

    ``corpus_dir`` is the ``--corpus`` folder (None: the built-in corpus, whose files
    ship inside the package)."""
    if corpus_dir is None or str(corpus_dir) == BUILTIN_CORPUS:
        base = Path(str(resources.files("streamcite.local").joinpath("corpus")))
    else:
        base = corpus_dir
    wanted = {d.id for d in corpus.documents}
    paths: dict[str, Path] = {}
    for path in sorted(base.rglob("*")) if base.is_dir() else ():
        doc_id = stable_id("document", path.relative_to(base).as_posix())
        if doc_id in wanted:  # the ids the corpus gave its files
            paths.setdefault(doc_id, path.resolve())
    chunks = {(c.document_id, c.position): c for c in corpus.chunks}
    prefix = root_url.rstrip("/") + "/documents/"

    def link(url: str) -> str:
        if not url.startswith(prefix):
            return url
        m = _DOCUMENT_URL.search(url)
        doc = corpus.document(m["id"]) if m else None
        if m is None or doc is None:
            return url
        path = paths.get(doc.id)
        if path is None:
            return url
        chunk = chunks.get((doc.id, int(m["chunk"]))) if m["chunk"] is not None else None
        return f"{path}:{_line_of(doc, chunk)}"

    return link
