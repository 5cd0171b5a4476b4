"""`streamcite.core.sources`: Wikit quoted sources, strict, and never an exception that
is not a typed ``MalformedResponse`` — whatever upstream sends."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamcite.core.errors import MalformedResponse
from streamcite.core.sources import QuotedSource

GOOD = {
    "quoted_as": "1",
    "document": {"id": "d1", "name": "remote.md", "title": "Remote work", "url": "https://x/d1"},
    "chunk": {"id": "c1", "data": "Two days.", "page_start": 0, "page_end": "2", "position": 3},
    "data_source": {"id": "ds", "name": "HR"},
    "score": 0.8,
}


def test_a_full_source() -> None:
    (s,) = QuotedSource.list_from_json([GOOD])
    assert s.number == 1 and s.document.display_name == "Remote work"
    assert (s.chunk.display_page_start, s.chunk.display_page_end) == (1, 3)  # int64 as a string
    assert s.data_source is not None and s.data_source.name == "HR"


def test_display_name_falls_back_to_file_name_then_id() -> None:
    assert (
        QuotedSource.from_dict(
            {**GOOD, "document": {"id": "d", "name": "n.md"}}
        ).document.display_name
        == "n.md"
    )
    assert QuotedSource.from_dict({**GOOD, "document": {"id": "d"}}).document.display_name == "d"


@pytest.mark.parametrize(
    ("quoted_as", "number"),
    [("3", 3), (" 3 ", 3), (7, 7), ("a", None), ("²", None), ("①", None), ("١٢", None),
     ("-1", None), ("", None), ("9" * 5000, None)],
)  # fmt: skip
def test_number_is_ascii_digits_or_none_and_never_raises(
    quoted_as: Any, number: int | None
) -> None:
    """'²' made `number` raise ValueError (str.isdigit accepts it, int refuses): a Wikit
    answer quoting '[²]' crashed the answer's snapshot."""
    assert QuotedSource.from_dict({**GOOD, "quoted_as": quoted_as}).number == number


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"sources": []}, "$: expected an array"),
        ([{**GOOD, "quoted_as": None}], "$[0].quoted_as"),
        ([{**GOOD, "document": {"name": "x"}}], "$[0].document.id"),
        ([{**GOOD, "chunk": {"id": "c", "page_start": "²"}}], "$[0].chunk.page_start"),
        ([{**GOOD, "chunk": {"id": "c", "page_start": True}}], "$[0].chunk.page_start"),
        ([{**GOOD, "score": "high"}], "$[0].score"),
    ],
)
def test_bad_bodies_are_malformed_response_naming_the_path(body: Any, path: str) -> None:
    with pytest.raises(MalformedResponse, match=path.replace("[", r"\[").replace("$", r"\$")):
        QuotedSource.list_from_json(body)


def test_negative_int64_strings_are_ints() -> None:
    s = QuotedSource.from_dict({**GOOD, "chunk": {"id": "c", "position": "-4"}})
    assert s.chunk.position == -4


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
fields = st.fixed_dictionaries(
    {},
    optional={
        "quoted_as": json_values,
        "document": st.fixed_dictionaries({}, optional={"id": json_values, "title": json_values}),
        "chunk": st.fixed_dictionaries(
            {}, optional={"id": json_values, "page_start": json_values, "data": json_values}
        ),
        "score": json_values,
    },
)


@given(st.lists(fields, max_size=3) | json_values)
def test_any_body_gives_sources_or_a_typed_error(body: Any) -> None:
    try:
        sources = QuotedSource.list_from_json(body)
    except MalformedResponse:
        return
    for s in sources:
        assert s.number is None or s.number >= 0


@pytest.mark.parametrize(
    "score", ["nan", "inf", "-inf", "1_0", "١٫٥", " ", float("inf"), float("nan"), "1e999"]
)
def test_a_score_is_a_finite_number(score: Any) -> None:
    """float() takes "nan", "inf" and "1_0": a NaN score reached the answer before."""
    with pytest.raises(MalformedResponse, match=r"\$\[0\]\.score: expected a finite number"):
        QuotedSource.list_from_json([{**GOOD, "score": score}])


@pytest.mark.parametrize(
    ("score", "value"), [("0.8", 0.8), (" 1 ", 1.0), ("-2.5e-1", -0.25), (3, 3.0)]
)
def test_numeric_strings_are_numbers(score: Any, value: float) -> None:
    assert QuotedSource.from_dict({**GOOD, "score": score}).score == value
