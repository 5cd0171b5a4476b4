"""Whether post-stream enrichers run on an answer, importable from here as before; it
lives in :mod:`streamcite.core.enrich_gate`."""

from __future__ import annotations

from streamcite.core.enrich_gate import skip_reason

__all__ = ["skip_reason"]
