"""The import-time guard of code that builds dataclasses by hand. Sans-I/O.

The hot paths build events and models field by field (``object.__new__`` and slot
stores, or positionally), with no ``__init__`` call: one guard per such class holds
that code to the class's fields, so adding or reordering a field fails at import,
never as a half-built object at run time.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

__all__ = ["expect_fields"]


def expect_fields(cls: Any, names: list[str], built_in: str) -> None:
    """Raise ``ImportError`` unless ``cls``'s dataclass fields are ``names``, in order."""
    got = [f.name for f in fields(cls)]
    if got != names:
        raise ImportError(
            f"{built_in} builds {cls.__name__} by hand for fields {names}, "
            f"but it has {got}: update {built_in}"
        )
