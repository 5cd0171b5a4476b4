"""The size rules (docs/architecture.md, "Rules"): a module of the package at most 500
lines, a function at most 80 (read with ``ast``: from its ``def`` to its last line,
nested functions counted in their parent too), a module of the relay page at most 400
lines, the README at most 300 (the rest goes in docs/)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "streamcite"
STATIC = PACKAGE / "relay" / "static"

MAX_MODULE = 500
MAX_FUNCTION = 80
MAX_JS_MODULE = 400
MAX_README = 300


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def long_functions(source: str, limit: int = MAX_FUNCTION) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function longer than ``limit`` lines."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                if length > limit:
                    found.append((name, length))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _python_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_is_at_most_500_lines() -> None:
    modules = _python_modules()
    assert len(modules) > 200
    over = [f"{p.relative_to(ROOT)}: {n}" for p in modules if (n := _lines(p)) > MAX_MODULE]
    assert over == []


def test_every_function_is_at_most_80_lines() -> None:
    over = [
        f"{p.relative_to(ROOT)}:{name}: {n}"
        for p in _python_modules()
        for name, n in long_functions(p.read_text(encoding="utf-8"))
    ]
    assert over == []


def test_every_module_of_the_relay_page_is_at_most_400_lines() -> None:
    scripts = sorted(STATIC.glob("*.js"))
    assert len(scripts) >= 8  # the page's script, split by concern
    over = [f"{p.name}: {n}" for p in scripts if (n := _lines(p)) > MAX_JS_MODULE]
    assert over == []


def test_the_readme_is_at_most_300_lines() -> None:
    assert _lines(ROOT / "README.md") <= MAX_README


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("pass\n" * 79, []),
        ("pass\n" * 80, [("f", 81)]),
    ],
)
def test_the_function_rule_counts_from_def_to_the_last_line(
    body: str, expected: list[tuple[str, int]]
) -> None:
    source = "def f():\n" + "".join("    " + line + "\n" for line in body.splitlines())
    assert long_functions(source) == expected


def test_the_function_rule_sees_methods_and_nested_functions() -> None:
    inner = "".join("        x = 1\n" for _ in range(85))
    source = f"class C:\n    async def m(self):\n{inner}\ndef g():\n    def h():\n{inner}"
    names = [name for name, _ in long_functions(source)]
    assert names == ["C.m", "g", "g.h"]
