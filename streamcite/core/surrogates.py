"""UTF-16 surrogates escaped in JSON (``"\\ud83d"``) and split across two chunks. Sans-I/O.

A server that slices its text by UTF-16 index and serialises each slice with
``JSON.stringify`` sends a character outside the BMP as two chunks: the high half
(``"smile \\ud83d"``) ending one delta, the low half (``"\\ude00 ok"``) starting the
next. Each chunk alone holds a lone surrogate, which orjson rejects (so does UTF-8).
Only when orjson has refused a payload does this module look at it
(:func:`loads_lone_surrogates`): the hot path never pays for it. A
:class:`SurrogateJoiner` then carries a trailing high half over to the next text of
the same key (a choice's content), where the pair is joined into its character. A
surrogate that stays alone becomes U+FFFD (the Unicode replacement character) and is
counted, so the caller reports it (``lone_surrogate``): the text is never lost and
never holds something that cannot be encoded.

>>> obj = loads_lone_surrogates(b'{"t": "smile \\\\ud83d"}')
>>> j = SurrogateJoiner()
>>> j.join(0, obj["t"])
('smile ', 0)
>>> j.join(0, loads_lone_surrogates(b'{"t": "\\\\ude00 ok"}')["t"]) == ("\\U0001f600 ok", 0)
True
>>> j.join(1, "\\udc00 alone") == ("\\ufffd alone", 1)
True
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["SurrogateJoiner", "fix_surrogates", "loads_lone_surrogates", "scrub_surrogates"]

_ESCAPED = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A JSON escape of a UTF-16 surrogate (high ``d800-dbff`` or low ``dc00-dfff``)."""
# The UTF-16 surrogate halves, for the core's modules that test for them. Written with
# chr(): mypyc (the optional compiled build) refuses them in string literals.
HIGH_FIRST, HIGH_LAST, LOW_FIRST, LOW_LAST = chr(0xD800), chr(0xDBFF), chr(0xDC00), chr(0xDFFF)
SURROGATE = re.compile(f"[{HIGH_FIRST}-{LOW_LAST}]")
"""Any surrogate half (a lone one in a ``str``: JSON's ``\\udXXX`` escapes make them)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_lone_surrogates(payload: bytes) -> Any | None:
    """``payload`` parsed as JSON when it is valid JSON but for escaped lone surrogates
    (their strings then hold lone surrogate code points: see :func:`scrub_surrogates`);
    ``None`` when it holds no such escape or is not JSON for another reason. Cold: called
    only after orjson refused ``payload``."""
    if _ESCAPED.search(payload) is None:
        return None
    try:
        return json.loads(payload, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None


def fix_surrogates(text: str) -> tuple[str, int]:
    """``text`` with its surrogate pairs joined into their characters and each lone
    surrogate replaced by U+FFFD; and the number of lone ones."""
    if SURROGATE.search(text) is None:
        return text, 0
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return fixed, _lone_count(text, fixed)


def _lone_count(before: str, after: str) -> int:
    return after.count("\ufffd") - before.count("\ufffd")


class SurrogateJoiner:
    """Joins surrogate pairs split across the texts of one key (e.g. a choice's content)."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held: dict[Any, str] = {}
        """The high surrogate that ended the last text of a key, awaiting its low half."""

    def join(self, key: Any, text: str) -> tuple[str, int]:
        """``text`` of ``key``, with the high half held from its previous text put in
        front and a trailing high half held back; pairs joined, lone ones U+FFFD.
        Returns the text and the number of lone surrogates replaced."""
        held = self.held.pop(key, "")
        text = held + text
        if text and HIGH_FIRST <= text[-1] <= HIGH_LAST:
            self.held[key] = text[-1]
            text = text[:-1]
        if SURROGATE.search(text) is None:
            return text, 0
        fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed, _lone_count(text, fixed)

    def release(self, key: Any) -> str | None:
        """The high half held for ``key``, now known to be alone: U+FFFD (else None)."""
        return "\ufffd" if self.held.pop(key, None) is not None else None


def scrub_surrogates(obj: Any) -> tuple[Any, int]:
    """``obj`` (parsed JSON) with every string's surrogates fixed (:func:`fix_surrogates`,
    keys too); and the number of lone ones replaced. Iterative: any depth."""
    lone = 0

    def fix(s: str) -> str:
        nonlocal lone
        if SURROGATE.search(s) is None:
            return s
        fixed = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        lone += _lone_count(s, fixed)
        return fixed

    if isinstance(obj, str):
        return fix(obj), lone
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k in list(node):
                v = node[k]
                if isinstance(k, str) and SURROGATE.search(k) is not None:
                    del node[k]
                    k = fix(k)
                    node[k] = v
                if isinstance(v, str):
                    node[k] = fix(v)
                elif isinstance(v, dict | list):
                    stack.append(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, str):
                    node[i] = fix(v)
                elif isinstance(v, dict | list):
                    stack.append(v)
    return obj, lone
