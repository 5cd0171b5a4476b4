"""What every dialect reads the same way in a provider's payload: which error codes are
worth a retry, the strings' surrogates (fixed in place, streamed texts' halves left for
the neighbouring delta), and how many UTF-16 units a text takes. Sans-I/O."""

from __future__ import annotations

from _codecs import utf_16_le_encode
from typing import Any

from streamcite.core.surrogates import HIGH_FIRST, HIGH_LAST, LOW_FIRST, LOW_LAST, fix_surrogates

__all__ = ["astral", "fix_strings", "status_retryable"]

_TEXT_KEYS = frozenset(
    {"text", "delta", "thinking", "partial_json", "arguments", "tool_plan", "refusal"}
)
"""Keys whose strings are streamed text: a surrogate half at either end may be joined
with the neighbouring delta's (the other strings are fixed at once)."""

_RETRYABLE = frozenset(
    {
        "rate_limit_exceeded",
        "rate_limit_error",
        "overloaded",
        "overloaded_error",
        "server_error",
        "api_error",
        "timeout",
        "service_unavailable",
        "internal_error",
        "RESOURCE_EXHAUSTED",
        "UNAVAILABLE",
        "INTERNAL",
        "DEADLINE_EXCEEDED",
        "TIMEOUT",
    }
)


def status_retryable(code: str, status: int | None) -> bool:
    """Whether a provider error is worth retrying: by its code, else its HTTP status."""
    return code in _RETRYABLE or (status is not None and (status == 429 or status >= 500))


def astral(s: str) -> int:
    """Characters of ``s`` beyond the BMP (each two UTF-16 units)."""
    # (The codec's own function: ``str.encode("utf-16-le")`` looks the codec up by name
    # at each call, which costs more than encoding a paragraph.)
    return 0 if s.isascii() else (len(utf_16_le_encode(s, "surrogatepass")[0]) >> 1) - len(s)


def fix_strings(obj: dict[str, Any]) -> int:
    """Fix the surrogates of every string of ``obj`` in place (pairs joined, lone ones
    U+FFFD), but a high half ending or a low half starting a streamed text (under
    :data:`_TEXT_KEYS`): the dialect joins those with the neighbouring delta. Returns the
    number of lone surrogates replaced."""
    lone = 0
    stack: list[Any] = [obj]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in list(items):
            if isinstance(v, dict | list):
                stack.append(v)
            elif isinstance(v, str):
                if k in _TEXT_KEYS and isinstance(node, dict):
                    head = v[:1] if v[:1] and LOW_FIRST <= v[0] <= LOW_LAST else ""
                    tail = v[-1:] if len(v) > len(head) and HIGH_FIRST <= v[-1] <= HIGH_LAST else ""
                    inner, n = fix_surrogates(v[len(head) : len(v) - len(tail)])
                    node[k] = head + inner + tail
                else:
                    node[k], n = fix_surrogates(v)
                lone += n
        if isinstance(node, dict):
            for k in [k for k in node if isinstance(k, str) and fix_surrogates(k)[1]]:
                node[fix_surrogates(k)[0]] = node.pop(k)
    return lone
