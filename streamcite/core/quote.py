"""The one renderer of upstream values quoted in messages and logs. Sans-I/O.

An upstream controls what it sends: a value nested a thousand deep, a list of a million
items, a string of megabytes, control characters and terminal escapes. ``repr`` of such
a value builds the whole text first (a ``RecursionError`` for deep nesting, seconds and
gigabytes for a big one) before any ``[:120]`` cuts it. :func:`quote` walks the value
iteratively and stops as soon as it has ``limit`` characters: bounded in depth, in
length and in time (it looks at no more items than it writes), whatever the value.
Strings are quoted as ``repr`` quotes them (control characters, bidi overrides and
other unprintable characters escaped), so a quote is inert in a log line or a page.

>>> quote({"a": [1, "x\\x1b[31m", None]})
"{'a': [1, 'x\\\\x1b[31m', None]}"
>>> deep = []
>>> for _ in range(5000):
...     deep = [deep]
>>> quote(deep, 40)
'[[[[[[[[[…]]]]]]]]]'
>>> quote("y" * 500, 10)
"'yyyyyyyyy…"
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["MAX_QUOTE_DEPTH", "QUOTE_CHARS", "dump_json", "quote"]

QUOTE_CHARS = 120
"""Characters of a quote by default (what fault messages show of a value)."""
MAX_QUOTE_DEPTH = 8
"""Containers shown inside one another; deeper ones are ``[…]`` / ``{…}``."""

_OPEN: dict[type, tuple[str, str]] = {dict: ("{", "}"), list: ("[", "]"), tuple: ("(", ")")}


def _scalar(v: Any, limit: int) -> str:
    t = type(v)
    if t is str or t is bytes or t is bytearray:
        head = v[: limit + 1]
        return repr(head) if len(v) <= limit else repr(head[:limit])[:-1] + "…"
    if v is None or t is bool or t is float:
        return repr(v)
    if t is int:
        return repr(v) if v.bit_length() <= 256 else f"<int of {v.bit_length()} bits>"
    return f"<{t.__name__}>"


def quote(value: Any, limit: int = QUOTE_CHARS, max_depth: int = MAX_QUOTE_DEPTH) -> str:
    """``value`` as ``repr`` would show it, cut to ``limit`` characters (``…`` appended),
    containers deeper than ``max_depth`` elided: iterative, it never builds more than it
    shows."""
    parts: list[str] = []
    size = 0
    stack: list[list[Any]] = []  # [iterator, closer, is_dict, first]
    pending, have = value, True
    while size <= limit:
        if have:
            have = False
            t: type = type(pending)
            brackets = _OPEN.get(t)
            if brackets is None:
                piece = _scalar(pending, limit - size + 1)
            elif len(stack) >= max_depth:
                piece = f"{brackets[0]}…{brackets[1]}" if pending else "".join(brackets)
            else:
                piece = brackets[0]
                items = iter(pending.items()) if t is dict else iter(pending)
                stack.append([items, brackets[1], t is dict, True])
            parts.append(piece)
            size += len(piece)
            continue
        if not stack:
            break
        top = stack[-1]
        item: Any = next(top[0], _END)
        if item is _END:
            stack.pop()
            parts.append(top[1])
            size += 1
            continue
        if not top[3]:
            parts.append(", ")
            size += 2
        top[3] = False
        if top[2]:
            key = _scalar(item[0], limit - size + 1) + ": "
            parts.append(key)
            size += len(key)
            pending = item[1]
        else:
            pending = item
        have = True
    text = "".join(parts)
    return text if len(text) <= limit else text[:limit] + "…"


_END = object()


def dump_json(value: Any) -> str | None:
    """``value`` (tool arguments an API sent already parsed) as JSON text; ``None`` when
    it cannot be (nested beyond orjson's 255 levels: the caller reports it, never a
    ``TypeError`` out of a dialect).

    >>> dump_json({"q": 1}), dump_json(orjson.loads("[" * 300 + "]" * 300))
    ('{"q":1}', None)
    """
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return None
