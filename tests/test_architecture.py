"""The package's layers point one way and no modules import each other in a circle
(DESIGN.md, "Layers"; docs/architecture.md).

Read from the source (``tests/_imports.py``): every import counts, at the top, in a
function or under ``if TYPE_CHECKING:``, and so does a module named in a string (a lazy
loader's table). A package ``__init__`` that only hands names on is not a module of its
own for the circle rule. ``tests/test_core_imports_acyclic.py`` keeps the core's own rules
(the dialects apart, the chat helpers below the interpreter).
"""

from __future__ import annotations

import pytest

from tests._imports import (
    LAYERS,
    cycle_graph,
    cycles,
    floor,
    import_graph,
    modules,
    package_of,
    reexport_packages,
    upward_imports,
)


def test_the_walk_sees_the_whole_package() -> None:
    graph = import_graph()
    assert len(graph) > 200
    # a top-level import, one in a function, one under TYPE_CHECKING, one in a lazy table
    assert "streamcite.core.answer" in graph["streamcite.core.chunks"]
    assert "streamcite.grounding.facts" in graph["streamcite.grounding.order"]
    assert "streamcite.streamlog.protocol" in graph["streamcite.relay.server"]
    assert "streamcite.grounding.checker" in graph["streamcite.enrich"]
    assert {"streamcite.enrich", "streamcite.local"} <= reexport_packages()
    assert "streamcite.core.chunks" not in reexport_packages()


def test_every_module_has_a_floor() -> None:
    for mod in modules():
        assert 0 <= floor(mod) <= len(LAYERS), mod


def test_no_import_circle_anywhere_in_the_package() -> None:
    assert cycles(cycle_graph()) == []


def test_no_import_runs_up_a_floor() -> None:
    names = [*(name for name, _ in LAYERS), "the package front door"]
    found = [
        f"{a} ({names[floor(a)]}) imports {b} ({names[floor(b)]})" for a, b in upward_imports()
    ]
    assert found == []


@pytest.mark.parametrize(
    ("importer", "forbidden"),
    [
        ("enrich", "local"),  # the enrichers use the offline checker, not the embedded backend
        ("bench", "apps"),  # the bench tool's tables are not the CLI's
        ("web", "relay"),  # the web adapters and the relay share the stream log, below both
        ("grounding", "local"),
    ],
)
def test_packages_on_one_floor_that_stay_apart(importer: str, forbidden: str) -> None:
    found = sorted(
        (a, b)
        for a, deps in import_graph().items()
        for b in deps
        if package_of(a) == importer and package_of(b) == forbidden
    )
    assert found == []


def test_the_core_imports_nothing_above_it() -> None:
    for mod, deps in import_graph().items():
        if package_of(mod) == "core":
            assert {package_of(d) for d in deps} <= {"core"}, mod


def test_the_checks_catch_a_circle_and_an_upward_import() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert floor("streamcite.core.chunks") < floor("streamcite.pipeline.stream")
    assert floor("streamcite.pipeline.stream") < floor("streamcite.enrich.wikit")
    assert floor("streamcite.enrich.wikit") == floor("streamcite.grounding.checker")
    assert floor("streamcite.grounding.checker") < floor("streamcite.relay.server")
    assert floor("streamcite") == len(LAYERS)
