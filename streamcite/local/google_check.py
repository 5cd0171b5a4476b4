"""Deprecated home of :mod:`streamcite.grounding.google_check` (the offline checker is its own package now).

Importing names from here still works and warns once per name; import them from
``streamcite.grounding.google_check`` instead (docs/imports.md).
"""

from __future__ import annotations

from typing import Any

from streamcite._deprecated import forward


def __getattr__(name: str) -> Any:
    return forward(__name__, "streamcite.grounding.google_check", name)
