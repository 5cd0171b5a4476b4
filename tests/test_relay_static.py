"""Static checks of the relay page's modules (no browser needed)."""

from __future__ import annotations

import re

from streamcite.relay.server import STATIC_DIR

# every way of turning a string into markup or code
_SINKS = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function")


def test_no_module_turns_upstream_text_into_markup() -> None:
    modules = sorted(STATIC_DIR.glob("*.js"))
    assert {p.name for p in modules} >= {"app.js", "dom.js", "kinds.js", "lang.js"}
    for path in modules:
        code = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("//")
        )
        assert not _SINKS.search(code), path.name


def test_every_module_the_page_imports_is_served_from_static() -> None:
    imports: set[str] = set()
    for path in STATIC_DIR.glob("*.js"):
        imports |= set(re.findall(r'from "\./([\w.-]+\.js)"', path.read_text()))
    assert imports and all((STATIC_DIR / name).is_file() for name in imports)
