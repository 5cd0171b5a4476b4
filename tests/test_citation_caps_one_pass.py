"""``cap_citation`` costs a citation or span in one pass when nothing is clipped: the
same cost, problems and clipped object as the field-by-field way (``_cap_fields``) for
any strings (long, non-ASCII, lone surrogates, not strings at all) and metadata; and the
one pass is taken for what every dialect caps (a Perplexity URL, a Gemini source, a
span with its passage)."""

from __future__ import annotations

import copy
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core import citation_caps
from streamcite.core.bounds import StreamBounds
from streamcite.core.citation_caps import CitationBudget, cap_citation
from streamcite.core.models import Citation, CitationSpan

_STR: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.text(max_size=12),
    st.text(alphabet=st.sampled_from(["a", "é", "🙂", "\ud800", "\udc00"]), max_size=12),
    st.sampled_from([3, b"x", ""]),
)
_META: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.just({}),
    st.dictionaries(st.sampled_from(["page", "kind"]), st.text(max_size=40), max_size=2),
)
_BOUNDS = st.builds(
    lambda chars, meta: StreamBounds(max_citation_text_chars=chars, max_metadata_bytes=meta),
    st.integers(1, 30),
    st.integers(2, 60),
)


@st.composite
def _objects(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return CitationSpan(0, 0, 1, 0, 1, draw(_STR), draw(_META))
    fields: dict[str, Any] = {name: draw(_STR) for name in citation_caps.TEXT_FIELDS}
    return Citation(document_index=0, provider_metadata=draw(_META), **fields)


@settings(max_examples=400, deadline=None)
@given(obj=_objects(), bounds=_BOUNDS)
def test_one_pass_is_the_field_by_field_way(obj: Any, bounds: StreamBounds) -> None:
    other = copy.deepcopy(obj)
    assert cap_citation(obj, bounds) == citation_caps._cap_fields(other, bounds)
    assert obj == other


def test_the_one_pass_is_taken() -> None:
    objs = [
        Citation(source_url="https://a.example/page", document_index=0),
        Citation(document_title="Weather", source_url="https://b.example", provider_metadata={}),
        CitationSpan(0, 0, 9, 0, 9, "Il fait beau à Paris.", {"grounding_chunk_index": 0}),
    ]
    with mock.patch.object(citation_caps, "_cap_fields", side_effect=AssertionError):
        costs = [cap_citation(o, StreamBounds())[0] for o in objs]
    assert costs == [96 + 22, 96 + 7 + 17 + 2, 96 + 22 + 27]


def _one_by_one(budget: CitationBudget, items: list[Any]) -> tuple[list[Any], list[str]]:
    """A chunk's list admitted item by item (what ``admit_all`` stands for)."""
    kept: list[Any] = []
    problems: list[str] = []
    for c in items:
        ok, why = budget.admit(c)
        problems.extend(why[: 3 - len(problems)])
        if not ok:
            break
        kept.append(c)
    return kept, problems


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(_objects(), max_size=8),
    bounds=_BOUNDS,
    total=st.integers(0, 600),
    used=st.integers(0, 300),
)
def test_admit_all_is_admit_one_by_one(
    items: list[Any], bounds: StreamBounds, total: int, used: int
) -> None:
    bounds = StreamBounds(
        max_citation_text_chars=bounds.max_citation_text_chars,
        max_metadata_bytes=bounds.max_metadata_bytes,
        max_citation_bytes=total,
    )
    a, b = CitationBudget(bounds), CitationBudget(bounds)
    a.used = b.used = used
    others = copy.deepcopy(items)
    kept, problems = a.admit_all(items)
    kept_b, problems_b = _one_by_one(b, others)
    assert (kept, problems) == (kept_b, problems_b)
    assert (a.used, a.dropped) == (b.used, b.dropped)
    assert items == others
