"""The build backend: setuptools', plus mypyc when a compiled wheel is asked for.

``STREAMCITE_COMPILE=1 pip install .`` (or ``pip wheel .``) builds a wheel whose hot core
is compiled by mypyc (the modules ``[tool.streamcite.compiled]`` in ``pyproject.toml``
lists); without it the wheel is pure Python. Only the wheel needs mypy at build time,
so it is asked for only then. An editable install is never compiled: an extension
module beside its source wins the import, and an edit to the source would not count.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from setuptools import build_meta as _meta
from setuptools.build_meta import *  # noqa: F403  (the rest of the backend, unchanged)
from streamcite_compiled import typing_requires  # (build_support/ is the backend's path)

# mypyc ships with mypy; the version the project is typed with.
MYPYC = "mypy>=1.11"


def _compiling() -> bool:
    return os.environ.get("STREAMCITE_COMPILE") == "1"


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    if not _compiling():
        return _meta.get_requires_for_build_wheel(config_settings)
    # setuptools runs setup.py to list its own needs; mypyc is not there yet.
    os.environ["STREAMCITE_LISTING_REQUIRES"] = "1"
    try:
        return [
            *_meta.get_requires_for_build_wheel(config_settings),
            MYPYC,
            *typing_requires(Path()),
        ]
    finally:
        del os.environ["STREAMCITE_LISTING_REQUIRES"]


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    os.environ.pop("STREAMCITE_COMPILE", None)
    return _meta.build_editable(wheel_directory, config_settings, metadata_directory)
