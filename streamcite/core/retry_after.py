"""``Retry-After`` (RFC 9110 §10.2.3): seconds to wait, from delta-seconds or an HTTP-date.

One parser for the chat stream and every enricher. Strict, because the header comes
from upstream: ASCII digits (with an optional fraction, which some providers send)
or an HTTP-date; ``inf``, ``nan``, ``1_0``, ``²`` or ``-5`` are no delay.
"""

from __future__ import annotations

import email.utils
import re
import time

__all__ = ["parse_retry_after", "parse_retry_after_ms"]

_SECONDS = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,6})?")


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait, or ``None`` when the header is absent or not a valid value.

    >>> parse_retry_after("120"), parse_retry_after("1.5"), parse_retry_after("soon")
    (120.0, 1.5, None)
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0)
    10.0
    """
    if not value:
        return None
    value = value.strip()
    if _SECONDS.fullmatch(value):
        return float(value)
    if len(value) > 64:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None  # RFC 9110: an HTTP-date is always GMT; a naive date is not one
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def parse_retry_after_ms(value: str | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI and Anthropic send it beside
    ``Retry-After``; their SDKs read it first): milliseconds as ASCII digits, with an
    optional fraction; anything else is no delay.

    >>> parse_retry_after_ms("250"), parse_retry_after_ms("1.5"), parse_retry_after_ms("-5")
    (0.25, 0.0015, None)
    """
    if not value:
        return None
    value = value.strip()
    return float(value) / 1000.0 if _SECONDS.fullmatch(value) else None
