"""Old import paths that still work, with a DeprecationWarning naming the new one."""

from __future__ import annotations

import importlib
import warnings
from typing import Any


def forward(old: str, new: str, name: str) -> Any:
    """Return ``name`` from module ``new`` for an access through the old module ``old``.

    Dunder lookups (``__path__``, ``__file__`` probes by import machinery and tools) are
    not forwarded, so they fail as for any module instead of warning; ``__all__`` is the
    new module's, so ``from old import *`` still imports the public names.
    """
    module = (
        importlib.import_module(new) if name == "__all__" or not name.startswith("__") else None
    )
    if name == "__all__" and module is not None and hasattr(module, "__all__"):
        # ``from old import *`` imports the new module's public names (each warns).
        return list(module.__all__)
    if module is None or not hasattr(module, name):
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    value = getattr(module, name)
    warnings.warn(
        f"{old}.{name} moved to {new}.{name}; import it from there",
        DeprecationWarning,
        stacklevel=3,
    )
    return value
