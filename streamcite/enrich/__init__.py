"""After-the-stream enrichers: Wikit quoted sources, grounding checks."""

from streamcite.enrich.base import EnrichContext, Enricher

__all__ = ["EnrichContext", "Enricher"]
