"""After-the-stream enrichers: Wikit quoted sources, grounding checks (Google, Azure),
and the claim channel (:mod:`streamcite.enrich.claims`).

>>> from streamcite.enrich import AzureGroundedness, GoogleGrounding, LocalGrounding, WikitSources

The enrichers load on first use (their HTTP clients with them). Wikit's helpers
(``by_document``, ``match_refs``, ``page_label``…) are in :mod:`streamcite.enrich.wikit`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from streamcite.enrich.base import EnrichContext, Enricher

if TYPE_CHECKING:
    from streamcite.enrich.azure import AzureGroundedness
    from streamcite.enrich.google import GoogleGrounding
    from streamcite.enrich.wikit import WikitSources
    from streamcite.grounding.checker import LocalGrounding

__all__ = [
    "AzureGroundedness",
    "EnrichContext",
    "Enricher",
    "GoogleGrounding",
    "LocalGrounding",
    "WikitSources",
]

_LAZY = {
    "AzureGroundedness": "streamcite.enrich.azure",
    "GoogleGrounding": "streamcite.enrich.google",
    "LocalGrounding": "streamcite.grounding.checker",
    "WikitSources": "streamcite.enrich.wikit",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streamcite.enrich' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
