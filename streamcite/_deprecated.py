"""Old import paths that still work, with a DeprecationWarning naming the new one."""

from __future__ import annotations

import importlib
import warnings
from typing import Any


def forward(old: str, new: str, name: str) -> Any:
    """Return ``name`` from module ``new`` for an access through the old module ``old``.

    Dunder lookups (``__path__``, ``__file__`` probes by import machinery and tools) are
    not forwarded, so they fail as for any module instead of warning.
    """
    if name.startswith("__"):
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(new), name)
    warnings.warn(
        f"{old}.{name} moved to {new}.{name}; import it from there",
        DeprecationWarning,
        stacklevel=3,
    )
    return value
