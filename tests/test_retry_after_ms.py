"""``retry-after-ms`` (OpenAI and Anthropic send it; their SDKs read it before
``Retry-After``) sets the error's ``retry_after``, parsed as strictly as ``Retry-After``
— before, it was ignored and a 429 fell back to jittered backoff."""

from __future__ import annotations

import pytest

from streamcite.pipeline.opening import http_error

BODY = b'{"error": {"type": "rate_limit_error", "message": "slow down"}}'


def test_retry_after_ms_alone_is_the_delay() -> None:
    assert http_error(429, BODY, {"retry-after-ms": "250"}).retry_after == 0.25


def test_retry_after_ms_is_finer_than_retry_after_and_wins() -> None:
    headers = {"retry-after-ms": "1500", "retry-after": "2"}
    assert http_error(429, BODY, headers).retry_after == 1.5


@pytest.mark.parametrize("value", ["-5", "inf", "nan", "1_0", "²", "1e3", " ", "9" * 13])
def test_a_bad_retry_after_ms_falls_back_to_retry_after(value: str) -> None:
    headers = {"retry-after-ms": value, "retry-after": "2"}
    assert http_error(429, BODY, headers).retry_after == 2.0
    assert http_error(429, BODY, {"retry-after-ms": value}).retry_after is None
