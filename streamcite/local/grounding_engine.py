"""Deprecated home of :mod:`streamcite.grounding` (the offline checker's engine).

Importing names from here still works and warns once per name; import them from
``streamcite.grounding`` instead (docs/imports.md).
"""

from __future__ import annotations

from typing import Any

from streamcite._deprecated import forward


def __getattr__(name: str) -> Any:
    return forward(__name__, "streamcite.grounding", name)
