"""A provider tool's summary (streamcite/core/dialects/provider_tools.py): the search
results' fast rendering (a list of flat objects in a few C-level steps) gives exactly
what the key-by-key walk gives, whatever the list holds; and a search result list is
taken that way (not walked key by key)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import streamcite.core.dialects.provider_tools as pt
from streamcite.core.dialects.provider_tool_shapes import anthropic_result

_BULK = frozenset({"data", "result", "b64_json", "image_url"})


def _reference(v: Any, depth: int, left: list[int], text_cap: int, summary: bool) -> Any:
    """The walk as it was before the fast paths: one call per value, every key clipped."""
    if left[0] <= 0:
        left[0] -= 1
        return "…"
    kind = type(v)
    if kind is str:
        s = pt.clip(v, max(1, min(text_cap, left[0])))
        left[0] -= len(s) + 2
        return s
    if v is None or kind is bool or kind is float:
        left[0] -= 5
        return v
    if kind is int:
        left[0] -= 5
        return v if -(2**63) <= v < 2**64 else str(v)[:40]
    if kind is dict:
        if depth >= pt.MAX_DEPTH:
            left[0] -= 3
            return "{…}"
        out: dict[str, Any] = {}
        for i, (k, x) in enumerate(v.items()):
            if i >= pt.MAX_TOOL_ITEMS or left[0] <= 0:
                out["…"] = f"{len(v) - i} more"
                break
            key = pt.clip(str(k), 100)
            left[0] -= len(key) + 3
            if summary and key.startswith("encrypted_"):
                continue
            if summary and key in _BULK and type(x) is str:
                out[f"{key}_chars"] = len(x)
                continue
            out[key] = _reference(x, depth + 1, left, text_cap, summary)
        return out
    if kind is list:
        if depth >= pt.MAX_DEPTH:
            left[0] -= 3
            return "[…]"
        items: list[Any] = []
        for i, x in enumerate(v):
            if i >= pt.MAX_TOOL_ITEMS or left[0] <= 0:
                items.append(f"… {len(v) - i} more")
                break
            left[0] -= 1
            items.append(_reference(x, depth + 1, left, text_cap, summary))
        return items
    left[0] -= 10
    return pt.clip(str(kind.__name__), 40)


def reference(value: Any, limit: int, summary: bool) -> Any:
    return _reference(value, 0, [limit], pt.MAX_TOOL_TEXT_CHARS if summary else limit, summary)


_keys = st.sampled_from(
    ["type", "url", "title", "page_age", "encrypted_content", "encrypted_index", "data", "k" * 101]
)
_scalars = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.text(min_size=990, max_size=1010),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.booleans(),
)
_rows = st.lists(st.dictionaries(_keys, _scalars, max_size=6), max_size=23)
_values = st.recursive(
    st.one_of(_scalars, _rows),
    lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.dictionaries(_keys, kids, max_size=4), _rows
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_values, st.integers(min_value=-5, max_value=9000), st.booleans())
def test_rows_render_as_the_walk_does(value: Any, limit: int, summary: bool) -> None:
    got = pt.bounded_value(value, limit, summary=summary)
    assert got == reference(value, limit, summary)
    assert repr(got) == repr(reference(value, limit, summary))  # the same key order


def _search_block(n: int) -> dict[str, Any]:
    rows = [
        {
            "type": "web_search_result",
            "title": f"Result {i}",
            "url": f"https://example.org/{i}",
            "encrypted_content": "Eq" * 500,
            "page_age": None if i % 3 else "June 1, 2025",
        }
        for i in range(n)
    ]
    return {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": rows}


def test_search_results_take_the_fast_rows(monkeypatch: Any) -> None:
    """A web search result list is rendered by ``_rows`` (the walk never visits its
    entries one by one), with the same summary as the walk."""
    taken: list[int] = []
    rows = pt._rows

    def counting(v: list[Any], left: list[int], text_cap: int) -> Any:
        got = rows(v, left, text_cap)
        taken.append(got is not None)
        return got

    walked: list[Any] = []
    walk = pt._walk

    def spy(v: Any, *args: Any) -> Any:
        walked.append(v)
        return walk(v, *args)

    monkeypatch.setattr(pt, "_rows", counting)
    monkeypatch.setattr(pt, "_walk", spy)
    block = _search_block(10)
    summary = anthropic_result(block)[3]
    assert taken == [True]
    assert len(walked) == 1  # the list itself: no call per result
    assert summary == {"count": 10, "results": reference(block["content"], 8192, True)}
    assert "encrypted_content" not in summary["results"][0]


@settings(max_examples=300, deadline=None)
@given(_rows, st.integers(min_value=-3, max_value=3), st.booleans())
def test_rows_at_the_edge_of_the_budget(rows: list[Any], shift: int, nested: bool) -> None:
    """Limits around what a list of rows spends exactly: where the walk starts to cut."""
    value: Any = {"results": rows} if nested else rows
    left = [10**6]
    _reference(value, 0, left, pt.MAX_TOOL_TEXT_CHARS, True)
    limit = 10**6 - left[0] + shift
    assert repr(pt.bounded_value(value, limit, summary=True)) == repr(reference(value, limit, True))
