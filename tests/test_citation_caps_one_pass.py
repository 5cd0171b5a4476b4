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
from streamcite.core.citation_caps import cap_citation
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
