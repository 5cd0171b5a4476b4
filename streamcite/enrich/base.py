"""The enricher interface (:class:`Enricher`, :class:`EnrichContext`), importable from
here as before; it lives in :mod:`streamcite.core.enricher`, below the pipeline that
runs enrichers and the enrichers themselves."""

from __future__ import annotations

from streamcite.core.enricher import EnrichContext, Enricher

__all__ = ["EnrichContext", "Enricher"]
