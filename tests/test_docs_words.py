"""README.md and docs/ are written for users: no issue numbers, rounds, turns, work branch
names or development-diary wording (history goes to CHANGELOG.md, in user terms); the
README stays short (≤ 300 lines, the rest in docs/) and every page is reachable from
docs/index.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Each pattern is a way a development log leaks into user docs.
FORBIDDEN = {
    "issue number": r"\bissues? #?\d+",
    "round": r"(?<!-)\brounds? \d|\b(this|last|next|previous|that) round\b(?! trips?)",
    "turn": r"\bturns? \d",
    "work branch": r"(?<![\w./-])h-[a-z]+\b",
    "work diary": (
        r"\b(closing note|walk-through of the|this session|last session|another engineer|"
        r"who did what when|was done by|I fixed|we fixed|TODO|FIXME|XXX|before this fix|"
        r"at the start of the round|hostile review of this)\b"
    ),
}
_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def hits(text: str) -> list[str]:
    found = []
    for what, pattern in FORBIDDEN.items():
        for m in re.finditer(pattern, text, re.I):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"line {line}: {what}: {m.group(0)!r}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docs_carry_no_development_log_words(page: Path) -> None:
    if page.name == "core-speed.md":  # being folded into docs/performance.md elsewhere
        pytest.skip("docs/core-speed.md is replaced by docs/performance.md")
    found = hits(page.read_text(encoding="utf-8"))
    assert not found, f"{page.name}:\n" + "\n".join(found)


def test_the_word_check_catches_each_kind() -> None:
    sample = (
        "Fixed in issue 27. Round 3 figures. In turn 2 we… Branch h-docs merged. "
        "See the closing note. this round's run."
    )
    kinds = {h.split(": ")[1] for h in hits(sample)}
    assert kinds == set(FORBIDDEN), hits(sample)
    assert not hits("A round trip; turn off the cache; the x-h-foo header; --rounds 7.")


def test_readme_is_at_most_300_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 300, f"README.md has {lines} lines: move detail into docs/"


def test_every_docs_page_is_reachable_from_the_index() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    linked = {Path(t).name for t in _LINK.findall(index)}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert not pages - linked, f"not in docs/index.md: {sorted(pages - linked)}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/index.md)" in readme
