"""Which build of the core is running: compiled by mypyc, or the pure-Python source.

A wheel built with ``STREAMCITE_COMPILE=1`` (or the copy ``scripts/build_compiled.py``
makes) has the hot core as C extensions beside the sources; both give the same events.

>>> core_build() in ("mypyc", "python")
True
"""

from __future__ import annotations

from typing import Literal

from streamcite.core import sse


def core_build() -> Literal["mypyc", "python"]:
    """``"mypyc"`` when the SSE decoder (compiled with the rest of the hot core) is an
    extension module, else ``"python"``."""
    return "python" if (sse.__file__ or "").endswith(".py") else "mypyc"
