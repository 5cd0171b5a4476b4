"""docs/architecture.md's layer picture and dependency table are the code's: the section
between its ``generated`` markers is what ``python -m tests._imports`` prints from the
imports, and every package it names exists on the floor it is drawn on."""

from __future__ import annotations

import re
from pathlib import Path

from tests._imports import LAYERS, floor, generated_section, package_graph, tops_by_floor

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
_SECTION = re.compile(
    r"<!-- generated: python -m tests._imports -->\n(.*?)<!-- end generated -->", re.S
)


def _section() -> str:
    m = _SECTION.search(DOC.read_text(encoding="utf-8"))
    assert m, "docs/architecture.md has no generated section"
    return m.group(1)


def test_the_picture_and_table_are_generated_from_the_imports() -> None:
    assert _section() == generated_section(), "run: python -m tests._imports"


def test_every_package_is_drawn_once_on_its_floor() -> None:
    drawn = [top for _, tops in tops_by_floor() for top in tops]
    assert sorted(drawn) == sorted(package_graph())
    for name, tops in tops_by_floor():
        index = [n for n, _ in LAYERS].index(name)
        assert all(floor(f"streamcite.{t}") == index for t in tops)


def test_the_table_lists_what_each_package_imports() -> None:
    rows = re.findall(r"^\| `([\w.]+?)(?:/|\.py)` \| (\w+) \| (.+) \|$", _section(), re.M)
    graph = package_graph()
    assert {top for top, _, _ in rows} == set(graph)
    for top, _, deps in rows:
        assert set(re.findall(r"`([\w.]+?)(?:/|\.py)`", deps)) == graph[top], top


def test_the_check_sees_a_stale_picture() -> None:
    stale = generated_section().replace("`streamlog/`, ", "", 1)
    assert stale != generated_section()
