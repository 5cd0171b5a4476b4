"""The core's import graph has no circle, and the dialects stay apart (DESIGN.md, "Dialects").

Every ``import`` in ``streamcite/core/**/*.py`` counts, wherever it is written: at the
top, in a function, or under ``if TYPE_CHECKING:`` (a circle in annotations is still two
modules that cannot be understood one without the other). The chat interpreter's helper
modules receive its state as ``core.chat_state.ChatState`` instead of importing
``core.chunks``; each dialect of ``core/dialects`` keeps its state in ``dialects.base``
and imports no other dialect, nor the chat modules.
"""

from __future__ import annotations

import pytest

from tests import _imports
from tests._imports import cycles

PACKAGE = "streamcite.core"

DIALECT_SHARED = frozenset(
    {"base", "protocol", "hotloop", "sequenced", "citing", "payloads", "partial_args",
     "provider_tools", "provider_tool_shapes"}
)  # fmt: skip
"""Modules of ``core/dialects`` that every dialect may use (its state, its protocol, its
citation registry and payload readers, the
byte-template readers of text deltas (``sequenced``: Responses'), the provider-run tools' events and shapes)."""
CHAT = frozenset(
    f"{PACKAGE}.{m}" for m in ("chunks", "deltas", "fastpath", "named_events", "chat_state")
)
"""The chat dialect's modules (the general ``errors_payload``, ``tool_placer``... are not)."""


def _modules() -> list[str]:
    return [m for m in _imports.modules() if m == PACKAGE or m.startswith(PACKAGE + ".")]


def import_graph() -> dict[str, set[str]]:
    """Core module → the core modules it imports (every import statement in the file; the
    whole package's walk of :mod:`tests._imports`, kept to the core)."""
    core = set(_modules())
    return {m: set(d) & core for m, d in _imports.import_graph().items() if m in core}


def test_the_walk_sees_the_core() -> None:
    graph = import_graph()
    assert f"{PACKAGE}.chunks" in graph and f"{PACKAGE}.dialects.base" in graph
    # Imports under TYPE_CHECKING count: fastpath names RawEvent only in annotations.
    assert f"{PACKAGE}.sse" in graph[f"{PACKAGE}.fastpath"]
    assert f"{PACKAGE}.chat_state" in graph[f"{PACKAGE}.fastpath"]


def test_no_import_circle_among_core_modules() -> None:
    assert cycles(import_graph()) == []


def test_chat_helpers_do_not_import_the_interpreter() -> None:
    graph = import_graph()
    for helper in ("deltas", "fastpath", "named_events", "errors_payload", "chat_state"):
        assert f"{PACKAGE}.chunks" not in graph[f"{PACKAGE}.{helper}"], helper


def _dialects() -> list[str]:
    names = []
    for mod in _modules():
        head, _, last = mod.rpartition(".")
        if (
            head == f"{PACKAGE}.dialects"
            and last not in DIALECT_SHARED
            and not last.startswith("_")
        ):
            names.append(mod)
    return names


@pytest.mark.parametrize("dialect", _dialects())
def test_no_dialect_imports_another_or_the_chat_modules(dialect: str) -> None:
    graph = import_graph()
    others = set(_dialects()) - {dialect}
    assert not graph[dialect] & others, f"{dialect} imports another dialect"
    assert not graph[dialect] & CHAT, f"{dialect} imports the chat modules"
    assert f"{PACKAGE}.dialects" not in graph[dialect], f"{dialect} imports the registry"


def test_the_checks_catch_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
