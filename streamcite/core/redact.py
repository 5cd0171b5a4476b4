"""Secrets out of every message: exact values, and any cut of them of 8+ characters.

Error messages quote upstream bytes (an error body that echoes the request headers,
a bad chunk), and quotes are truncated (``payload[:120]``): a key cut there is no
longer its exact value. So a :class:`Redactor` masks the whole value *and* every
prefix of it of at least ``MIN_CUT`` characters, wherever it stands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["MASK", "MIN_CUT", "Redactor", "header_secrets", "is_secret_header"]

MASK = "***"
MIN_CUT = 8
"""A prefix this long of a secret is masked too (shorter ones say too little to matter)."""

_SECRET_HEADER_WORDS = ("authorization", "api-key", "apikey", "api_key", "token", "secret", "key")


def is_secret_header(name: str) -> bool:
    """Whether a request header carries a credential (its value is then a secret)."""
    low = name.lower()
    return any(w in low for w in _SECRET_HEADER_WORDS)


def header_secrets(headers: Iterable[tuple[str, str]]) -> list[str]:
    """The secrets a request's headers carry: each credential header's value, and its
    credential alone (``Bearer sk-…`` → ``sk-…`` too)."""
    values = [v for k, v in headers if v and is_secret_header(k)]
    return values + [w for v in values for w in v.split()[1:] if len(w) >= 6]


def _prefixes(secret: str) -> str:
    """A pattern matching ``secret`` or any prefix of it of ``MIN_CUT``+ characters."""
    if len(secret) <= MIN_CUT:
        return re.escape(secret)
    head, tail = secret[:MIN_CUT], secret[MIN_CUT:]
    nested = ""
    for ch in reversed(tail):
        nested = f"(?:{re.escape(ch)}{nested})?"
    return re.escape(head) + nested


class Redactor:
    """Masks the given secrets in text and in bytes.

    >>> r = Redactor(["sk-live-0123456789abcdef"])
    >>> r.text("key sk-live-0123456789abcdef and a cut 'sk-live-01234")
    "key *** and a cut '***"
    >>> r.data(b"echo: sk-live-0123456789abcdef")
    b'echo: ***'
    """

    __slots__ = ("_bytes", "_text")

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret that contains another is masked whole.
        values = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        if not values:
            self._text: re.Pattern[str] | None = None
            self._bytes: re.Pattern[bytes] | None = None
            return
        pattern = "|".join(_prefixes(s) for s in values)
        self._text = re.compile(pattern)
        self._bytes = re.compile(pattern.encode("utf-8", "surrogatepass"))

    def __bool__(self) -> bool:
        return self._text is not None

    def text(self, text: str) -> str:
        """``text`` with every secret (and every 8+ character cut of one) masked."""
        return text if self._text is None else self._text.sub(MASK, text)

    def data(self, data: bytes) -> bytes:
        """The same for bytes (a response body, before anything quotes it)."""
        return data if self._bytes is None else self._bytes.sub(MASK.encode(), data)
