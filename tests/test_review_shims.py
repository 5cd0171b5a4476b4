"""Review of the old import paths of the offline checker (``streamcite.local.checker``,
``google_check``, ``live_claims``, ``grounding_engine``) and of docs/imports.md.

- ``from streamcite.local.checker import *`` imported none of the checker's names (the
  shim had no ``__all__``: three helper names came instead), silently, with no warning.
- A name the new module lacks was reported as missing from the new module, not from the
  path the caller wrote.
- Every name docs/imports.md lists imports from its documented path, with no warning.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

OLD = {
    "streamcite.local.checker": "streamcite.grounding.checker",
    "streamcite.local.google_check": "streamcite.grounding.google_check",
    "streamcite.local.live_claims": "streamcite.grounding.live_claims",
    "streamcite.local.grounding_engine": "streamcite.grounding",
}
DOC = Path(__file__).parent.parent / "docs" / "imports.md"


@pytest.mark.parametrize("old", sorted(OLD))
def test_import_star_from_an_old_path_gives_the_public_names(old: str) -> None:
    new = importlib.import_module(OLD[old])
    ns: dict[str, object] = {}
    with pytest.warns(DeprecationWarning, match=re.escape(OLD[old])):
        exec(f"from {old} import *", ns)  # the import statement under test
    got = {k for k in ns if not k.startswith("__")}
    assert got == set(new.__all__)
    assert all(ns[k] is getattr(new, k) for k in got)


@pytest.mark.parametrize("old", sorted(OLD))
def test_a_missing_name_is_reported_on_the_path_the_caller_wrote(old: str) -> None:
    module = importlib.import_module(old)
    with pytest.raises(AttributeError, match=re.escape(repr(old))):
        module.no_such_name  # noqa: B018
    assert not hasattr(module, "__path__")  # tools probing dunders: no warning, no value


def _documented() -> list[tuple[str, str]]:
    rows = re.findall(r"^\| `([\w.]+)` \| (.+) \|$", DOC.read_text(encoding="utf-8"), re.M)
    out = []
    for module, names in rows:
        listed = re.findall(r"`(\w+)`", names)
        if "rest of its `__all__`" in names:
            listed += list(importlib.import_module(module).__all__)
        out += [(module, n) for n in dict.fromkeys(listed) if n != "__all__"]
    return out


def test_every_name_of_docs_imports_imports_from_its_documented_path() -> None:
    pairs = _documented()
    assert len(pairs) > 100
    missing = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a documented path gives no warning
        for module, name in pairs:
            try:
                getattr(importlib.import_module(module), name)
            except Exception as exc:  # collected: every failure at once
                missing.append(f"{module}.{name}: {type(exc).__name__}")
    assert missing == []
