"""The package's import graph, read from the source with ``ast`` (no module is imported).

Used by ``tests/test_architecture.py`` (no circle, layers point one way) and by
``tests/test_architecture_doc.py`` (docs/architecture.md's picture is the code's).

Every import counts, wherever it is written: at the top, in a function, or under
``if TYPE_CHECKING:`` (a circle in annotations is still two modules that cannot be
understood one without the other), and so does a string naming a module
(``"streamcite.grounding.checker"`` in a lazy loader's table, ``import_module``'s
argument; not a logger's name).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "streamcite"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("core", "events", "models", "_deprecated")),
    ("pipeline", ("pipeline", "web", "telemetry", "transports", "streamlog", "logs")),
    ("enrichers", ("enrich", "grounding")),
    ("apps", ("apps", "relay", "local", "bench", "ui", "cli")),
)
"""The floors, from the bottom (DESIGN.md, "Layers"): the first part of a module's name
under ``streamcite`` says its floor. An import may stay on its floor or go down, never up.
``streamcite`` itself (the package's lazy front door) sits above them all."""

_MODULE_STRING = re.compile(r"^streamcite(\.[A-Za-z_]\w*)+$")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module ``name`` refers to (itself, or the package it names a member of)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def floor(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s floor (``len(LAYERS)`` for the root)."""
    parts = module.split(".")
    if len(parts) == 1:
        return len(LAYERS)
    for i, (_, tops) in enumerate(LAYERS):
        if parts[1] in tops:
            return i
    raise AssertionError(f"{module}: no floor in tests/_imports.py LAYERS")


def _is_reexport_only(tree: ast.Module) -> bool:
    """A package ``__init__`` that only hands names on: imports, ``__all__``, a lazy
    table and its ``__getattr__``/``__dir__``, nothing defined of its own."""
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.If)):
            continue  # imports, ``if TYPE_CHECKING:`` imports
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if names and all(n.startswith("_") for n in names):
                continue  # __all__, a lazy table
            return False
        if isinstance(node, ast.FunctionDef) and node.name in {"__getattr__", "__dir__"}:
            continue
        return False
    return True


def _targets(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        # ``from pkg import mod`` imports the submodule ``pkg.mod``.
        return [f"{base}.{a.name}" for a in node.names] or [base]
    return [str(s.value) for s in _module_strings(node)]


_LOADERS = frozenset({"import_module", "forward"})
"""Calls whose string arguments name a module (``importlib.import_module``, the
deprecation shims' ``forward``); a logger's or a metric's name is not one."""


def _module_strings(node: ast.AST) -> list[ast.Constant]:
    """The strings naming a module that ``node`` holds: a lazy table's values (or their
    first item), a loader call's arguments."""
    if isinstance(node, ast.Dict):
        values = [v.elts[0] if isinstance(v, ast.Tuple) and v.elts else v for v in node.values]
    elif isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        values = list(node.args) if name in _LOADERS else []
    else:
        return []
    return [
        v
        for v in values
        if isinstance(v, ast.Constant)
        and isinstance(v.value, str)
        and _MODULE_STRING.match(v.value)
    ]


def _handed_on(path: Path, package: str) -> dict[str, str]:
    """Name → the module a re-exporting ``__init__`` takes it from (its imports, and its
    lazy table's ``"Name": "streamcite.x.y"`` entries)."""
    out: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            (base,) = _targets(ast.ImportFrom(node.module, [], node.level), package) or [""]
            for a in node.names:
                out[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(k, ast.Constant)
                    and isinstance(k.value, str)
                    and isinstance(v, ast.Constant)
                    and isinstance(v.value, str)
                    and _MODULE_STRING.match(v.value)
                ):
                    out[k.value] = f"{v.value}.{k.value}"
    return out


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """Module → the package's modules it imports (every import, every module string).

    A name imported from a package whose ``__init__`` only hands names on counts as an
    import of the module the name comes from (``from streamcite.streamlog import
    StreamLog`` imports ``streamcite.streamlog.protocol``)."""
    known = modules()
    handed = {mod: _handed_on(known[mod], mod) for mod in reexport_packages() if mod != ROOT.name}
    graph: dict[str, frozenset[str]] = {}
    for mod, path in known.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            strings = isinstance(node, (ast.Dict, ast.Call))
            for target in _targets(node, package):
                dep = resolve(target, known)
                if strings and dep == ROOT.name:
                    continue  # a metric's or an attribute's name under streamcite.*
                if dep in handed and mod != dep:
                    name = target[len(dep) + 1 :].partition(".")[0]
                    if name in handed[dep]:
                        dep = resolve(handed[dep][name], known)
                if dep is not None and dep != mod:
                    deps.add(dep)
        graph[mod] = frozenset(deps)
    return graph


@cache
def reexport_packages() -> frozenset[str]:
    """The package ``__init__`` modules that only hand names on."""
    out = set()
    for mod, path in modules().items():
        is_init = path.name == "__init__.py"
        if is_init and _is_reexport_only(ast.parse(path.read_text(encoding="utf-8"))):
            out.add(mod)
    return frozenset(out)


def cycle_graph() -> dict[str, set[str]]:
    """The graph the circle rule reads: a re-exporting ``__init__`` hands names on and
    is not a module of its own (its outgoing arrows do not count)."""
    skip = reexport_packages()
    return {m: (set() if m in skip else set(d)) for m, d in import_graph().items()}


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


def upward_imports() -> list[tuple[str, str]]:
    """Every import that runs up a floor: (importer, imported)."""
    return sorted(
        (mod, dep)
        for mod, deps in import_graph().items()
        for dep in deps
        if floor(dep) > floor(mod)
    )


def package_of(module: str) -> str:
    """``streamcite.relay.server`` → ``relay``; ``streamcite.cli`` → ``cli``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "streamcite"


def package_graph() -> dict[str, set[str]]:
    """Package → the packages it imports (the root excluded)."""
    out: dict[str, set[str]] = {}
    for mod, deps in import_graph().items():
        p = package_of(mod)
        if p == "streamcite":
            continue
        mine = out.setdefault(p, set())
        for d in deps:
            q = package_of(d)
            if q not in (p, "streamcite"):
                mine.add(q)
    return out


def _shown(top: str) -> str:
    """``relay/`` for a package, ``cli.py`` for a module of the package's root."""
    return f"{top}/" if (ROOT / top).is_dir() else f"{top}.py"


def _floor_of(top: str) -> int:
    return floor(f"{ROOT.name}.{top}")


def tops_by_floor() -> list[tuple[str, list[str]]]:
    """Each floor (top first) and the packages and root modules on it that exist."""
    present = set(package_graph())
    return [(name, sorted(t for t in tops if t in present)) for name, tops in reversed(LAYERS)]


def picture() -> str:
    """The layer picture of docs/architecture.md, from the code (``python -m tests._imports``)."""
    lines = ["streamcite/__init__.py   the front door: every public name, loaded on first use"]
    for name, tops in tops_by_floor():
        lines.append("            ↓")
        shown = " · ".join(_shown(t) for t in tops)
        lines.append(f"{name:<11} {shown}")
    return "\n".join(lines)


def dependency_table() -> str:
    """Each package and what it imports, from the code (docs/architecture.md)."""
    graph = package_graph()
    rows = ["| package | floor | imports (packages of the same floor or below) |", "|---|---|---|"]
    for name, tops in tops_by_floor():
        for top in tops:
            deps = sorted(graph[top], key=lambda d: (-_floor_of(d), d))
            shown = ", ".join(f"`{_shown(d)}`" for d in deps) or "—"
            rows.append(f"| `{_shown(top)}` | {name} | {shown} |")
    return "\n".join(rows)


def generated_section() -> str:
    return f"```text\n{picture()}\n```\n\n{dependency_table()}\n"


if __name__ == "__main__":
    print(generated_section(), end="")
