"""Content-template fast path for chat chunks. Sans-I/O.

Most chunks of a stream are byte-identical except for their ``delta.content``
string. Once a chunk's envelope has been located (the bytes before and after its
content string) and a later chunk proved it (a full parse agreeing with the
slice), a chunk matching both ends needs only its string slice decoded.

Strict: a slice holding a quote (an escaped quote, or a different structure that
happens to share both ends) is never trusted and goes the full way; a slice that
is not a valid JSON string body makes orjson raise, and goes the full way too.
A stream whose envelope varies (per-chunk ids, OpenAI's ``obfuscation`` field)
switches the path off after a few misses, so it costs nothing there.
"""

from __future__ import annotations

import orjson

__all__ = ["ContentTemplate"]

_loads = orjson.loads
_KEY = b'"content":"'
_MAX_MISSES = 16


class ContentTemplate:
    """The envelope of a stream's content-only chunks, learned and proven."""

    __slots__ = ("_plen", "_slen", "hits", "misses", "on", "prefix", "proven", "suffix")

    def __init__(self) -> None:
        self.prefix = b""
        self.suffix = b""
        self._plen = 0
        self._slen = 0
        self.proven = False
        self.on = True
        self.hits = 0
        self.misses = 0

    def match(self, payload: bytes) -> str | None:
        """The content of ``payload`` if it fits the proven template, else None."""
        n = len(payload)
        if (
            n < self._plen + self._slen
            or not payload.startswith(self.prefix)
            or not payload.endswith(self.suffix)
        ):
            return None
        sl = payload[self._plen : n - self._slen]
        if b'"' in sl:
            return None
        if b"\\" not in sl:
            try:
                text = sl.decode()
            except UnicodeDecodeError:
                return None
            if not text.isprintable() and any(c < " " for c in text):
                return None  # raw control characters: invalid JSON, the full path says so
            return text
        try:
            value = _loads(b'"' + sl + b'"')
        except orjson.JSONDecodeError:
            return None
        return value if type(value) is str else None

    def observe(self, payload: bytes, content: str) -> None:
        """A content-only chunk was fully parsed: prove, keep or relearn the template."""
        if self.prefix and self._fits(payload):
            sl = payload[self._plen : len(payload) - self._slen]
            if b'"' in sl:
                return  # an escaped quote: fine, just not for the fast path
            if self._decode(sl) == content:
                self.proven = True
                self.hits += 1
                return
            self.on = False  # the ends agree but the content is elsewhere: never trust it
            return
        self.misses += 1
        if self.misses > _MAX_MISSES and self.misses > self.hits:
            self.on = False  # the envelope varies chunk to chunk
            return
        self._learn(payload, content)

    def _fits(self, payload: bytes) -> bool:
        return (
            len(payload) >= self._plen + self._slen
            and payload.startswith(self.prefix)
            and payload.endswith(self.suffix)
        )

    @staticmethod
    def _decode(sl: bytes) -> str | None:
        try:
            value = _loads(b'"' + sl + b'"')
        except orjson.JSONDecodeError:
            return None
        return value if type(value) is str else None

    def _learn(self, payload: bytes, content: str) -> None:
        self.proven = False
        self.prefix = b""
        if payload.count(_KEY) != 1:
            return
        start = payload.index(_KEY) + len(_KEY)
        end = start
        while True:
            end = payload.find(b'"', end)
            if end == -1:
                return
            backslashes = 0
            while payload[end - 1 - backslashes] == 0x5C:
                backslashes += 1
            if backslashes % 2 == 0:
                break
            end += 1
        if self._decode(payload[start:end]) != content:
            return
        self.prefix = payload[:start]
        self.suffix = payload[end:]
        self._plen = start
        self._slen = len(payload) - end
