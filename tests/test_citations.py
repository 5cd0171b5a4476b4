"""`streamcite.core.citations`: Magisterium objects, Perplexity URLs and search results,
validated item by item (one bad item is reported, the good ones kept)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamcite.core.citations import citations_from_chunk, parse_citation


def test_magisterium_object() -> None:
    c = parse_citation(
        {"cited_text": "Q", "document_title": "T", "document_index": 3, "document_year": 1965,
         "document_reference": 12, "source_url": "https://x/y", "extra": "ignored"},
        position=0,
    )  # fmt: skip
    assert (c.document_index, c.document_title, c.cited_text) == (3, "T", "Q")
    assert (c.document_year, c.document_reference) == ("1965", "12")  # numbers become strings


def test_document_index_defaults_to_the_position() -> None:
    assert parse_citation({"cited_text": "a"}, position=4).document_index == 4


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("text", "citations[2]: expected an object, got str"),
        ({"document_index": -1}, "citations[2].document_index: expected an integer >= 0"),
        ({"document_index": True}, "citations[2].document_index"),
        ({"document_index": 1.0}, "citations[2].document_index"),
        ({"document_title": ["a"]}, "citations[2].document_title: expected a string or null"),
        ({"cited_text": 5}, "citations[2].cited_text"),  # only year/reference may be numbers
        ({"document_year": True}, "citations[2].document_year"),
    ],
)
def test_bad_items_are_value_errors_naming_the_field(item: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_citation(item, position=2)


def test_one_bad_item_keeps_the_others() -> None:
    got = citations_from_chunk({"citations": [{"cited_text": "a"}, 7, {"cited_text": "c"}]})
    assert got is not None
    cits, problems = got
    assert [c.cited_text for c in cits] == ["a", "c"]
    assert [c.document_index for c in cits] == [0, 2]  # positions of the original items
    assert problems == ["citations[1]: expected an object, got int"]


def test_no_citations_and_wrong_container() -> None:
    assert citations_from_chunk({"choices": []}) is None
    assert citations_from_chunk({"citations": {"a": 1}}) == (
        [], ["citations: expected an array, got dict"]
    )  # fmt: skip
    assert citations_from_chunk({"citations": []}) == ([], [])


def test_perplexity_urls_and_search_results() -> None:
    urls = citations_from_chunk({"citations": ["https://a", "https://b"]})
    assert urls is not None
    assert [(c.source_url, c.document_index) for c in urls[0]] == [
        ("https://a", 0),
        ("https://b", 1),
    ]
    richer = citations_from_chunk(
        {"citations": ["https://a"],
         "search_results": [{"title": "A", "url": "https://a", "date": "2024-05-01", "snippet": "s"}]}
    )  # fmt: skip
    assert richer is not None
    (c,), problems = richer
    assert (c.document_title, c.source_url, c.document_year, c.cited_text) == (
        "A", "https://a", "2024", "s"
    )  # fmt: skip
    assert problems == []


@pytest.mark.parametrize("date", ["²⁰²⁴-01-01", "٢٠٢٤-01-01", "20x4", "", None])
def test_a_year_is_four_ascii_digits_or_nothing(date: str | None) -> None:
    got = citations_from_chunk({"search_results": [{"title": "A", "date": date}]})
    assert got is not None
    assert got[0][0].document_year is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(
    st.dictionaries(
        st.sampled_from(["citations", "search_results", "choices", "id"]), json_values, max_size=3
    )
)
def test_any_json_chunk_gives_citations_and_problems_never_an_exception(chunk: Any) -> None:
    got = citations_from_chunk(chunk)
    if got is not None:
        cits, problems = got
        assert all(isinstance(p, str) and p for p in problems)
        assert all(c.document_index is not None and c.document_index >= 0 for c in cits)
