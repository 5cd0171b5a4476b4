"""A chat stream's chunk-level fields: the completion's id and model (meta), the
citation lists (Perplexity's ``citations`` and ``search_results``), usage. Part of
:class:`~streamcite.core.chunks.ChunkInterpreter` (cold paths only). Sans-I/O.
"""

from __future__ import annotations

from typing import Any

from streamcite.core.bounds import TOO_MANY_CITATIONS, clip_message
from streamcite.core.chunk_faults import ChunkFaults
from streamcite.core.citation_caps import CITATION_TOO_LARGE, CitationBudget
from streamcite.core.citations import bounded_citations
from streamcite.core.events import CitationsEvent, Event, MetaEvent, UsageEvent
from streamcite.core.models import Citation, Usage
from streamcite.core.quote import quote

__all__ = ["ChunkFields"]


def _count(v: Any) -> int | None:
    """A token count: an integer (never a bool), else None."""
    return v if v.__class__ is int or (isinstance(v, int) and not isinstance(v, bool)) else None


class ChunkFields(ChunkFaults):
    """Meta, citations and usage of the chat interpreter (see :class:`ChunkInterpreter`)."""

    __slots__ = ()

    def _keep_fields(self, obj: dict[str, Any]) -> None:
        fields = self._builder.chunk_fields
        if not fields:  # the first chunk's: every field is the first value, in order
            fields.update(obj)
            fields.pop("choices", None)
            return
        for k, v in obj.items():
            if k != "choices" and k not in fields:
                fields[k] = v

    def _meta(self, obj: dict[str, Any], out: list[Event]) -> None:
        cid, model, created = obj.get("id"), obj.get("model"), obj.get("created")
        if not cid and not model:
            return  # e.g. Azure's preamble: empty id and model are not the completion's
        self._keep_fields(obj)
        self._meta_seen = True
        ev = MetaEvent(
            id=cid if isinstance(cid, str) else None,
            model=model if isinstance(model, str) else None,
            created=created if isinstance(created, int) and not isinstance(created, bool) else None,
        )
        self._builder.id = ev.id
        self._builder.model = ev.model
        out.append(ev)

    def _citations(self, obj: dict[str, Any], out: list[Event]) -> None:
        # Compared (and kept) up to one item beyond the caps: what is beyond them is
        # never used, and a 10^6-item list is neither kept alive nor compared whole.
        c, r = obj.get("citations"), obj.get("search_results")
        if (c, r) == self._last_citations:
            return  # Perplexity repeats the set on every chunk (lists of another length
            # than the kept ones compare unequal at once: never compared whole)
        b = self._builder.bounds
        cap = max(b.max_citations, b.max_search_results, b.max_citation_urls) + 1
        raw = (c[:cap] if type(c) is list else c, r[:cap] if type(r) is list else r)
        if raw == self._last_citations:
            return
        self._last_citations = raw
        parsed = bounded_citations(obj, b)
        if parsed is None:
            return
        citations, problems, over = parsed
        citations = self._capped(citations, out)
        if problems:
            self._fault(out, "bad_citations", clip_message("; ".join(problems[:5])))
        if over:
            if not self.citations_dropped:  # reported once per stream, then counted
                self._fault(out, TOO_MANY_CITATIONS, over)
            self.citations_dropped += 1
        if citations:
            self._builder.citations = citations
            out.append(CitationsEvent(citations=citations))

    def _capped(self, citations: list[Citation], out: list[Event]) -> list[Citation]:
        """A chunk's citations held to the byte caps (each field; the set in all): what
        was cut is reported once per chunk (``citation_too_large``)."""
        kept, problems = CitationBudget(self._builder.bounds).admit_all(citations)
        if problems:
            self._fault(out, CITATION_TOO_LARGE, "; ".join(problems))
        return kept

    def _usage(self, usage: Any, out: list[Event], *, final: bool = True) -> None:
        if type(usage) is not dict:
            self._fault(out, "bad_chunk", f"usage is not an object: {quote(usage)}")
            return
        p, c, t = (
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens")),
            _count(usage.get("total_tokens")),
        )
        self._builder.usage = Usage(p, c, t)
        ev = UsageEvent(p, c, t)
        if final:
            self._usage_pending = None
            out.append(ev)
        else:
            # Usage on a mid-stream chunk (providers that send it on every chunk): kept,
            # and reported once, at the finish / usage chunk or at the end of the stream.
            self._usage_pending = ev

    def _flush_usage(self, out: list[Event]) -> None:
        if self._usage_pending is not None:
            out.append(self._usage_pending)
            self._usage_pending = None
