"""Every relative link in README.md and docs/*.md resolves: the file exists, and its
``#anchor`` is a heading of that file (GitHub's slugs) or an explicit ``id`` (issue 27 §6:
docs/relay.md's screenshot pointed at a path that does not exist)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
_EXPLICIT_ID = re.compile(r"""<[^>]+\b(?:id|name)=["']([^"']+)["']""")


def _prose(text: str) -> str:
    """The page without code blocks and inline code (links there are examples)."""
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed
    (``-`` and ``_`` kept), spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8")
    seen: dict[str, int] = {}
    out = set(_EXPLICIT_ID.findall(text))
    for m in _HEADING.finditer(_FENCE.sub("", text)):
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def links(path: Path) -> list[str]:
    text = _prose(path.read_text(encoding="utf-8"))
    return [*_LINK.findall(text), *_REF_DEF.findall(text)]


def _broken(page: Path, target: str) -> str | None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:, file:…
        return None
    where, _, anchor = target.partition("#")
    dest = (page.parent / unquote(where)).resolve() if where else page
    if not dest.exists():
        return f"{target}: {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest} does not exist"
    if anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
        return f"{target}: no heading or id '{anchor}' in {dest.name}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = [b for t in links(page) if (b := _broken(page, t)) is not None]
    assert not broken, "\n".join(broken)


def test_the_checker_catches_what_it_should(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(
        '# Title\n## Run `x` — fast!\n## Twice\n## Twice\n<a id="custom"></a>\n'
        "[ok](a.md#run-x--fast) [ok](#twice-1) [ok](#custom) [ok](https://x.example/y)\n"
        "[bad](missing.md) [bad](a.md#nope) ![bad](img/none.png)\n"
        "`[code](not-checked.md)`\n```\n[block](not-checked.md)\n```\n",
        encoding="utf-8",
    )
    page = tmp_path / "a.md"
    problems = [b for t in links(page) if (b := _broken(page, t)) is not None]
    assert len(problems) == 3, problems
    assert {p.split(":")[0] for p in problems} == {"missing.md", "a.md#nope", "img/none.png"}
