"""After-the-stream enrichers: Wikit quoted sources, grounding checks (Google, Azure),
and the claim channel (:mod:`streamcite.enrich.claims`)."""

from streamcite.enrich.base import EnrichContext, Enricher

__all__ = ["EnrichContext", "Enricher"]
