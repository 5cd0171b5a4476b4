"""The embedded local backend: offline chat completions, Wikit sources and grounding.

>>> from streamcite.local import MODEL, BackendConfig, LocalBackend

The server (and aiohttp) loads on first use of these names, so the corpus and the
checker modules import without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamcite.local.config import MODEL, BackendConfig
    from streamcite.local.server import LocalBackend

__all__ = ["MODEL", "BackendConfig", "LocalBackend"]

_LAZY = {
    "MODEL": "streamcite.local.config",
    "BackendConfig": "streamcite.local.config",
    "LocalBackend": "streamcite.local.server",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streamcite.local' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
