"""The core's import graph has no circle, and the dialects stay apart (DESIGN.md, "Dialects").

Every ``import`` in ``streamcite/core/**/*.py`` counts, wherever it is written: at the
top, in a function, or under ``if TYPE_CHECKING:`` (a circle in annotations is still two
modules that cannot be understood one without the other). The chat interpreter's helper
modules receive its state as ``core.chat_state.ChatState`` instead of importing
``core.chunks``; each dialect of ``core/dialects`` keeps its state in ``dialects.base``
and imports no other dialect, nor the chat modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "streamcite" / "core"
PACKAGE = "streamcite.core"

DIALECT_SHARED = frozenset(
    {"base", "protocol", "hotloop", "citing", "payloads", "partial_args", "provider_tools",
     "provider_tool_shapes"}
)  # fmt: skip
"""Modules of ``core/dialects`` that every dialect may use (its state, its protocol, its
citation registry and payload readers, the
byte-template reader of text deltas, the provider-run tools' events and shapes)."""
CHAT = frozenset(
    f"{PACKAGE}.{m}" for m in ("chunks", "deltas", "fastpath", "named_events", "chat_state")
)
"""The chat dialect's modules (the general ``errors_payload``, ``tool_placer``... are not)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(CORE.rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The core module ``name`` refers to (itself, or the package it names a member of)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, set[str]]:
    """Core module → the core modules it imports (every import statement in the file)."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in known.items():
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from pkg import mod`` imports the submodule ``pkg.mod``.
                targets = [f"{base}.{a.name}" for a in node.names] or [base]
            for t in targets:
                dep = _resolve(t, known)
                if dep is not None and dep != mod:
                    deps.add(dep)
        graph[mod] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


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
