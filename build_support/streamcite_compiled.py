"""What the compiled build is, read from ``[tool.streamcite.compiled]`` in ``pyproject.toml``:
its modules, what mypyc must see to type them, and the extensions mypyc makes of them.
One place for the wheel (``setup.py``, through the backend) and for the checkout's copy
(``scripts/build_compiled.py``)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

# The shared C library of the compiled modules is named after this group.
_MYPYC_OPTIONS: dict[str, Any] = {
    "opt_level": "3",
    "debug_level": "0",
    "group_name": "streamcite_core",
}


def _pyproject(root: Path) -> dict[str, Any]:
    with (root / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def compiled_modules(root: Path) -> list[str]:
    """The module paths (``streamcite/core/sse.py``, ...) mypyc compiles."""
    return list(_pyproject(root)["tool"]["streamcite"]["compiled"]["modules"])


def typing_requires(root: Path) -> list[str]:
    """What mypyc must see to type the compiled modules as the tests build them: the
    runtime dependencies, and the extras ``[tool.streamcite.compiled]`` names."""
    meta = _pyproject(root)
    project, extras = meta["project"], meta["tool"]["streamcite"]["compiled"]["extras"]
    return [
        *project["dependencies"],
        *(r for e in extras for r in project["optional-dependencies"][e]),
    ]


def mypyc_extensions(modules: list[str]) -> list[Any]:
    """The extension modules mypyc makes of ``modules`` (paths relative to the working
    directory), with the project's options."""
    from mypyc.build import mypycify  # (installed only where a compiled build is asked for)

    return list(mypycify(modules, **_MYPYC_OPTIONS))
