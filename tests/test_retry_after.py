"""`streamcite.core.retry_after`: one strict parser; a hostile header is never a delay."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamcite.core.retry_after import parse_retry_after

NOW = 1445412470.0  # Wed, 21 Oct 2015 07:27:50 GMT


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0.0),
        ("120", 120.0),
        (" 7 ", 7.0),
        ("1.5", 1.5),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 10.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past: no wait, never negative
    ],
)
def test_valid_values(value: str, expected: float) -> None:
    assert parse_retry_after(value, now=NOW) == expected


@pytest.mark.parametrize(
    "value",
    [None, "", "soon", "-5", "+5", "inf", "nan", "1e3", "1_0", "²", "١٢", "0x10", "1.", ".5",
     "1.1234567", "9" * 13, "Wed, 21 Oct 2015 07:28:00", "x" * 100],
)  # fmt: skip
def test_what_is_no_delay(value: str | None) -> None:
    assert parse_retry_after(value, now=NOW) is None


@given(st.text(max_size=80))
def test_any_text_is_none_or_a_finite_delay(value: str) -> None:
    got = parse_retry_after(value, now=NOW)
    assert got is None or (math.isfinite(got) and got >= 0)


@given(st.integers(0, 10**12 - 1))
def test_delta_seconds_round_trip(n: int) -> None:
    assert parse_retry_after(str(n)) == float(n)
