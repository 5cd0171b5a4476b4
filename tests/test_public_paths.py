"""One import path per public name (issue 27 §7): the table of docs/imports.md is what the
examples, the README and the docs use, every name imports from its path with no warning,
and the 0.1 top-level names still work with a DeprecationWarning naming that path."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import streamcite

ROOT = Path(__file__).resolve().parent.parent
_ROW = re.compile(r"^\| `(?P<module>streamcite[\w.]*)` \| (?P<names>.+) \|$", re.M)


def _table() -> tuple[dict[str, str], set[str]]:
    """name -> module, and the modules whose whole ``__all__`` the table admits."""
    text = (ROOT / "docs" / "imports.md").read_text(encoding="utf-8")
    names: dict[str, str] = {}
    whole: set[str] = set()
    for m in _ROW.finditer(text):
        listed = m["names"].split(", and the rest of its")[0]
        for name in re.findall(r"`(\w+)`", listed):
            assert name not in names, f"{name} has two paths in docs/imports.md"
            names[name] = m["module"]
        if "the rest of its `__all__`" in m["names"]:
            whole.add(m["module"])
    return names, whole


def _code_of(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return [text]
    return re.findall(r"```(?:python|py)(?: fragment)?\n(.*?)```", text, re.S)


def _imports(code: str) -> list[tuple[str, str]]:
    out = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("streamcite"):
            out.extend((node.module or "", a.name) for a in node.names)
    return out


_TAUGHT = sorted(
    [*ROOT.glob("examples/*.py"), ROOT / "README.md", *ROOT.glob("docs/*.md")],
    key=lambda p: p.as_posix(),
)


@pytest.mark.parametrize("path", _TAUGHT, ids=lambda p: p.name)
def test_examples_and_docs_import_each_name_from_its_documented_path(path: Path) -> None:
    names, whole = _table()
    wrong = []
    for code in _code_of(path):
        for module, name in _imports(code):
            if names.get(name) == module:
                continue
            if module in whole and name in importlib.import_module(module).__all__:
                continue
            wrong.append(f"from {module} import {name} (docs/imports.md: {names.get(name)})")
    assert not wrong, f"{path.name}: " + "; ".join(wrong)


def test_every_documented_name_imports_from_its_path_without_a_warning() -> None:
    names, _ = _table()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, module in names.items():
            assert getattr(importlib.import_module(module), name) is not None, (module, name)
    assert set(streamcite.__all__) == {n for n, m in names.items() if m == "streamcite"}


@pytest.mark.parametrize("name", sorted(streamcite._MOVED))
def test_a_top_level_name_of_0_1_still_works_and_names_its_path(name: str) -> None:
    names, _ = _table()
    path = names[name]
    assert path == streamcite._MOVED[name]
    with pytest.warns(DeprecationWarning, match=rf"use 'from {re.escape(path)} import {name}'"):
        old = getattr(streamcite, name)
    assert old is getattr(importlib.import_module(path), name)
    assert name not in dir(streamcite)


def test_the_warning_points_at_the_importing_line(tmp_path: Path) -> None:
    script = tmp_path / "old.py"
    script.write_text("from streamcite import TokenEvent\n", encoding="utf-8")
    r = subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0
    assert f"{script}:1: DeprecationWarning" in r.stderr, r.stderr
    assert r.stderr.count("DeprecationWarning") == 1, r.stderr  # not once more for importlib


def test_the_new_packages_stay_light() -> None:
    """``streamcite.enrich`` and ``streamcite.local`` load httpx / aiohttp only when a
    name that needs them is used."""
    probe = (
        "import sys, streamcite.enrich, streamcite.local, streamcite.models, "
        "streamcite.local.corpus; "
        "print(','.join(m for m in ('aiohttp', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
