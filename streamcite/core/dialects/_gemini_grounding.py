"""Gemini's grounding: ``groundingMetadata`` → citations and spans. Sans-I/O.

Candidate 0's ``groundingMetadata`` accumulates — it may come late or split across
chunks: each new ``groundingChunks`` source is a citation, each ``groundingSupports``
segment a span, its UTF-8 BYTE offsets into the candidate's text converted to
characters (a support whose text has not all arrived waits for it), with the passage of
each grounding chunk it names (``retrievedContext.text``; two chunks of one source keep
their own passages) and ``grounding_chunk_index`` in its metadata.
"""

from __future__ import annotations

from typing import Any

from streamcite.core.answer import AnswerBuilder
from streamcite.core.byte_offsets import ByteOffsets
from streamcite.core.citations import ANSWER_SEGMENT
from streamcite.core.dialects.base import MAX_SPANS, StreamState
from streamcite.core.events import Event
from streamcite.core.markers import MarkerMode
from streamcite.core.models import Citation
from streamcite.core.quote import quote
from streamcite.core.support_keys import support_key

__all__ = ["GroundingState"]

_NEVER = 1 << 62


def _known(ids: list[Any], ndocs: int) -> bool:
    """Every index of ``ids`` names one of the ``ndocs`` grounding chunks known."""
    for i in ids:  # noqa: SIM110 (a loop: no generator per support)
        if i.__class__ is not int or not 0 <= i < ndocs:
            return False
    return True


def _source(chunk: Any) -> tuple[Any, Citation] | None:
    """A ``groundingChunks`` entry → its key and citation (``None``: not understood)."""
    if type(chunk) is not dict:
        return None
    for kind in ("web", "retrievedContext", "maps"):
        src = chunk.get(kind)
        if type(src) is dict:
            uri, title, text = src.get("uri"), src.get("title"), src.get("text")
            if (
                (uri is not None and uri.__class__ is not str)
                or (title is not None and title.__class__ is not str)
                or (text is not None and text.__class__ is not str)
            ):
                return None
            meta = dict(src)  # (a copy less three keys: cheaper than a comprehension)
            for k in ("uri", "title", "text"):
                meta.pop(k, None)
            if kind != "web":
                meta["kind"] = kind
            key = ("uri", uri) if uri else (kind, title, text)
            cit = Citation(
                cited_text=text,
                document_title=title,
                source_url=uri,
                provider_metadata=meta or None,
            )
            return key, cit
    return None


class GroundingState(StreamState):
    """The grounding part of a Gemini stream's state (the interpreter subclasses it)."""

    __slots__ = (
        "_bytes",
        "_docs",
        "_pending",
        "_quotes",
        "_seen_supports",
        "_sources_seen",
        "_wait_docs",
        "_wait_end",
    )

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._docs: list[int | None] = []
        """Accumulated ``groundingChunks`` of candidate 0 → their ``document_index``."""
        self._quotes: list[tuple[str | None, dict[str, Any]]] = []
        """Per grounding chunk: its own passage and metadata (two chunks of one source
        keep their two passages)."""
        self._sources_seen: list[Any] = []
        self._pending: list[dict[str, Any]] = []
        """Supports whose segment has not all arrived, or whose sources have not."""
        self._seen_supports: set[tuple[str, str]] = set()
        self._bytes: ByteOffsets | None = None
        """Made at the first pass (most streams have no grounding)."""
        self._wait_end = _NEVER
        """The smallest ``endIndex`` a pending support waits for (bytes not arrived)."""
        self._wait_docs = 0
        """Grounding chunks known at the last pass (a support may wait for its sources)."""

    def _grounding(self, meta: dict[str, Any], out: list[Event]) -> None:
        chunks = meta.get("groundingChunks")
        added = False
        if type(chunks) is list:
            seen = self._sources_seen
            # Cumulative (the whole list again) or split (only the new ones): a list that
            # starts with what is known adds its tail; another adds all of itself.
            fresh = chunks[len(seen) :] if chunks[: len(seen)] == seen else chunks
            for ch in fresh:
                if len(self._docs) >= 4 * MAX_SPANS:
                    break
                seen.append(ch)
                got = _source(ch)
                if got is None:
                    self.fault(out, "bad_citations", f"grounding chunk: {quote(ch)}")
                    self._docs.append(None)
                    self._quotes.append((None, {}))
                    continue
                before = len(self.builder.citations)
                where = dict(got[1].provider_metadata or ())
                where["grounding_chunk_index"] = len(self._docs)
                self._quotes.append((got[1].cited_text, where))
                self._docs.append(self.cite(got[0], got[1], out))
                added = added or len(self.builder.citations) > before
        supports = meta.get("groundingSupports")
        if type(supports) is list:
            for sup in supports:
                if type(sup) is not dict:
                    self.fault(out, "bad_citations", f"grounding support: {quote(sup)}")
                    continue
                # The same support sent again (cumulative metadata) is the same span.
                key = support_key(sup)
                if key in self._seen_supports or len(self._seen_supports) >= MAX_SPANS:
                    continue
                self._seen_supports.add(key)
                self._pending.append(sup)
        if added:
            self.emit_citations(out)

    def _resolve(self, out: list[Event], *, final: bool) -> None:
        """Pending supports whose bytes and sources have arrived become spans. Linear:
        the answer's bytes are counted once, a chunk that brings neither the bytes nor
        the sources a support waits for costs nothing more, and the offsets of a pass
        are converted in one sorted walk (:mod:`streamcite.core.byte_offsets`)."""
        m = self._bytes
        if m is None:
            m = self._bytes = ByteOffsets()
        blen = m.grow(self.builder.text_so_far())
        try:
            if final or blen >= self._wait_end or len(self._docs) != self._wait_docs:
                self._resolve_pass(m, out, final=final)
        finally:
            m.release()

    def _resolve_pass(self, m: ByteOffsets, out: list[Event], *, final: bool) -> None:
        keep: list[dict[str, Any]] = []
        ready: list[tuple[dict[str, Any], list[Any], int, int]] = []
        wait_end, ndocs, blen = _NEVER, len(self._docs), m.byte_length
        max_sources = self.builder.bounds.max_citation_sources
        for sup in self._pending:
            seg, ids = sup.get("segment"), sup.get("groundingChunkIndices")
            if type(seg) is not dict or type(ids) is not list:  # (narrows: direct reads compiled)
                self.fault(out, "bad_citations", f"grounding support: {quote(sup)}")
                continue
            start, end = seg.get("startIndex", 0), seg.get("endIndex")
            if start.__class__ is not int or end.__class__ is not int or not 0 <= start <= end:
                self.fault(out, "bad_citation_span", f"segment offsets: {quote(seg)}")
                continue
            ids = ids[:max_sources]
            if end > blen or not _known(ids, ndocs):
                if final:
                    msg = f"grounding segment {start}-{end} (bytes)"
                    if (seg_text := seg.get("text")) is not None:
                        msg += f" of {quote(seg_text, 60)}"
                    msg += f" beyond the answer ({blen} bytes) or its sources"
                    self.fault(out, "bad_citation_span", msg)
                else:
                    keep.append(sup)
                    if end > blen and end < wait_end:
                        wait_end = end
                continue
            ready.append((seg, ids, start, end))
        self._pending, self._wait_end, self._wait_docs = keep, wait_end, ndocs
        if ready:
            self._spans(m, ready, out)

    def _spans(
        self,
        m: ByteOffsets,
        ready: list[tuple[dict[str, Any], list[Any], int, int]],
        out: list[Event],
    ) -> None:
        """The ready supports' spans: their offsets converted in one sorted walk."""
        points: set[tuple[int, bool]] = set()
        for _, _, start, end in ready:
            points.add((start, False))
            points.add((end, True))
        needed = sorted(points)
        chars: dict[tuple[int, bool], int] = {}
        got = m.to_chars(needed)  # (one per point)
        for i, point in enumerate(needed):
            chars[point] = got[i]
        added = False
        for seg, ids, start, end in ready:
            c0, c1 = chars[(start, False)], chars[(end, True)]
            text = seg.get("text")
            if text.__class__ is str and m.text[c0:c1] != text:
                msg = f"grounding segment {start}-{end} (bytes) does not hold its text {quote(text, 60)}"
                self.fault(out, "bad_citation_span", msg)
                continue
            added = self._anchor(ids, text, c0, c1, out) or added
        if added:
            self.emit_citations(out)

    def _anchor(self, ids: list[Any], text: Any, c0: int, c1: int, out: list[Event]) -> bool:
        added = False
        for i in ids:
            doc = self._docs[i]
            if doc is None:
                continue
            c = self.builder.citations[doc]
            if c.cited_text is None and type(text) is str:
                # A web source quotes nothing: its cited_text is the answer's own
                # segment, marked so that no check takes it for evidence.
                c.cited_text = text[: self.builder.bounds.max_citation_text_chars]
                c.provider_metadata = {**(c.provider_metadata or {}), ANSWER_SEGMENT: True}
            passage, where = self._quotes[i]
            added = self.span(doc, c0, c1, out, passage, where) or added
        return added

    def _resolve_final(self, out: list[Event]) -> None:
        """Candidate 0 finished (or the stream ended): the last pass, every support
        still waiting reported."""
        if self._pending:
            self._resolve(out, final=True)
        else:  # what a pass over nothing would leave
            self._wait_end, self._wait_docs = _NEVER, len(self._docs)
