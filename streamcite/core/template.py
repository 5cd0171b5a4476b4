"""Content-template fast path for chat chunks. Sans-I/O.

Most chunks of a stream are byte-identical except for their ``delta.content``
string. Once a chunk's envelope has been located (the bytes before and after its
content string) and a later chunk proved it (a full parse agreeing with the
slice), a chunk matching both ends needs only its string slice decoded.

Strict: the slice is trusted only when it is a valid JSON string body by itself
(no unescaped quote, valid escapes, no raw control character, valid UTF-8). Then
the chunk's JSON tokens are exactly the proven chunk's — the same prefix bytes, one
string ending at the suffix's first byte, the same suffix bytes — so the slice is
its ``delta.content``. Anything else (a different structure that happens to share
both ends always has an unescaped quote in the slice) goes the full way.
A stream whose envelope varies (per-chunk ids, OpenAI's ``obfuscation`` field)
switches the path off after a few misses, so it costs nothing there.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = [
    "REFUSAL",
    "ContentTemplate",
    "DeltaTemplate",
    "has_control",
    "string_body",
    "string_end",
]

_loads = orjson.loads
_dumps = orjson.dumps
_JSONDecodeError = orjson.JSONDecodeError
_KEY = b'"content":"'
_MAX_MISSES = 16
_REFUSAL_KEY = b'"refusal":"'
_ARGS_KEY = b'"arguments":"'
_IDLE_LEARNS = 8
"""Learnings beyond the hits after which a stream's delta envelope is taken as varying."""
REFUSAL = -1
""":attr:`DeltaTemplate.tidx` of a refusal template (else: the call's ``index``)."""
_QUOTE = 0x22  # membership tests take the byte as an int: ``b'"' in s`` first tries
_BACKSLASH = 0x5C  # int(b'"'), raises and catches a TypeError, ten times slower


def string_body(sl: bytes) -> str | None:
    """``sl`` decoded as the inside of a JSON string, or None if it is not one."""
    try:
        value = _loads(b'"' + sl + b'"')
    except _JSONDecodeError:
        return None
    return value if type(value) is str else None


def string_end(payload: bytes, start: int) -> int:
    """Where the JSON string whose body starts at ``start`` ends (its closing quote:
    the first one not escaped), or -1."""
    end = start
    while True:
        end = payload.find(b'"', end)
        if end == -1:
            return -1
        backslashes = 0
        while payload[end - 1 - backslashes] == _BACKSLASH:
            backslashes += 1
        if backslashes % 2 == 0:
            return end
        end += 1


def has_control(text: str) -> bool:
    """A raw U+0000–U+001F: not allowed unescaped in a JSON string."""
    return any(c < " " for c in text)


def json_string(body: bytes) -> str | None:
    r"""``body`` decoded as the inside of a JSON string (None: not one, not UTF-8, or a raw
    control character in it: the general way reports it). The per-token loops of
    ``fastpath``, ``dialects.hotloop``, ``dialects._cohere_loop`` and
    ``dialects.sequenced`` inline these lines (a call per token costs more than the rest).

    >>> json_string(rb'caf\u00e9 \"ok\"'), json_string(b'un"escaped'), json_string(b"\x01")
    ('café "ok"', None, None)
    """
    if _QUOTE in body or _BACKSLASH in body:
        return string_body(body)  # escapes (None: not a JSON string body)
    try:
        text = body.decode()
    except UnicodeDecodeError:
        return None
    if not text.isprintable() and has_control(text):
        return None  # raw control characters: invalid JSON
    return text


class ContentTemplate:
    """The envelope of a stream's content-only chunks, learned and proven."""

    __slots__ = ("hits", "misses", "on", "plen", "prefix", "proven", "slen", "suffix")

    def __init__(self) -> None:
        self.prefix = b""
        self.suffix = b""
        self.plen = 0
        """``len(prefix)``."""
        self.slen = 0
        """``len(suffix)``: at least 1 once learned (the closing quote)."""
        self.proven = False
        self.on = True
        self.hits = 0
        self.misses = 0

    def match(self, payload: bytes) -> str | None:
        """The content of ``payload`` if it fits the proven template, else None."""
        if not self.proven or not self.on or not self._fits(payload):
            return None
        return json_string(payload[self.plen : len(payload) - self.slen])

    def observe(self, payload: bytes, content: str) -> None:
        """A content-only chunk was fully parsed: prove, keep or relearn the template."""
        if self.prefix and self._fits(payload):
            sl = payload[self.plen : len(payload) - self.slen]
            if string_body(sl) == content:
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
            bool(self.prefix)
            and len(payload) >= self.plen + self.slen
            and payload[: self.plen] == self.prefix
            and payload[len(payload) - self.slen :] == self.suffix
        )

    def _learn(self, payload: bytes, content: str) -> None:
        self.proven = False
        self.prefix = b""
        if payload.count(_KEY) != 1:
            return
        start = payload.index(_KEY) + len(_KEY)
        end = string_end(payload, start)
        if end < 0 or string_body(payload[start:end]) != content:
            return
        self.prefix = payload[:start]
        self.suffix = payload[end:]
        self.plen = start
        self.slen = len(payload) - end


class DeltaTemplate:
    """The envelope of the last refusal or tool-argument chunk taken in one step
    (``core.one_step``), for :mod:`streamcite.core.delta_fastpath`.

    Strict as :class:`ContentTemplate` is, and proven at once: the string's place is
    not guessed from its key, the learnt chunk with another body in that place must
    parse to the same object but for that field (``refusal``, or the ``arguments`` of
    its one call). A stream whose envelope varies chunk to chunk stops learning after
    a few tries."""

    __slots__ = ("hits", "learns", "on", "plen", "prefix", "slen", "suffix", "tidx")

    def __init__(self) -> None:
        self.prefix = b""
        """The bytes up to the string's body (empty: no template)."""
        self.suffix = b""
        """The bytes from the string's closing quote."""
        self.plen = 0
        self.slen = 0
        self.tidx = REFUSAL
        """The call's ``index`` of a tool-argument template, :data:`REFUSAL` for a refusal."""
        self.on = True
        self.hits = 0
        self.learns = 0

    def learn(self, payload: bytes, obj: dict[str, Any]) -> None:
        """``obj`` (parsed from ``payload``) was just taken in one step: a
        ``refusal`` delta or one call's ``arguments`` fragment (``one_step.LEARNABLE``)."""
        self.prefix = b""
        self.learns += 1
        if self.learns > self.hits + _IDLE_LEARNS:
            self.on = False  # the envelope varies chunk to chunk: stop paying for this
            return
        delta = obj["choices"][0]["delta"]
        if "refusal" in delta:
            holder, field, key, tidx = delta, "refusal", _REFUSAL_KEY, REFUSAL
        else:
            call = delta["tool_calls"][0]
            holder, field, key, tidx = call["function"], "arguments", _ARGS_KEY, call["index"]
        if payload.count(key) != 1:
            return
        start = payload.index(key) + len(key)
        end = string_end(payload, start)
        value = holder[field]
        if end < 0 or string_body(payload[start:end]) != value:
            return
        # The proof that this string is that field (not a look-alike elsewhere): with
        # another body there, the chunk parses to the same object but for the field.
        # Where the provider writes JSON as orjson does (compact, same escapes), the
        # object so changed, written out, is those bytes (and orjson reads back what
        # it writes): cheaper than a parse.
        holder[field] = value + "x"
        other = payload[:end] + b"x" + payload[end:]
        same = _dumps(obj) == other
        if not same:
            try:
                same = _loads(other) == obj
            except _JSONDecodeError:
                same = False
        holder[field] = value
        if same:
            self.prefix, self.suffix = payload[:start], payload[end:]
            self.plen, self.slen = start, len(payload) - end
            self.tidx = tidx
