"""Small strict readers for cold-path JSON (citations, sources, grounding).

Each raises :class:`MalformedResponse` naming the offending path, so a bad body
from a provider becomes a clear typed error instead of a ``KeyError`` deep inside.
"""

from __future__ import annotations

import math
import re
from typing import Any

from streamcite.core.errors import MalformedResponse
from streamcite.core.quote import quote

_DECIMAL = re.compile(r"-?[0-9]{1,32}(?:\.[0-9]{1,32})?(?:[eE][-+]?[0-9]{1,3})?", re.ASCII)


def digits_int(text: str, max_digits: int = 18) -> int | None:
    """``text`` (surrounding blanks ignored) as a non-negative int when it is 1 to
    ``max_digits`` ASCII digits, else None. Never raises: ``str.isdigit()`` accepts
    ``"²"`` and ``"①"``, which ``int()`` refuses, and ``int()`` refuses 4,300+ digits.

    >>> digits_int(" 12 "), digits_int("²"), digits_int("١٢"), digits_int("-1"), digits_int("9" * 40)
    (12, None, None, None, None)
    """
    t = text.strip()
    return int(t) if 0 < len(t) <= max_digits and t.isascii() and t.isdigit() else None


def obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedResponse(f"{path}: expected an object, got {type(value).__name__}")
    return value


def arr(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise MalformedResponse(f"{path}: expected an array, got {type(value).__name__}")
    return value


def opt_str(d: dict[str, Any], key: str, path: str, *, coerce_num: bool = False) -> str | None:
    v = d.get(key)
    if v is None or isinstance(v, str):
        return v
    if coerce_num and isinstance(v, int | float) and not isinstance(v, bool):
        return str(v)
    raise MalformedResponse(f"{path}.{key}: expected a string or null, got {type(v).__name__}")


def req_str(d: dict[str, Any], key: str, path: str) -> str:
    v = d.get(key)
    if not isinstance(v, str):
        raise MalformedResponse(f"{path}.{key}: expected a string, got {type(v).__name__}")
    return v


def opt_int(d: dict[str, Any], key: str, path: str) -> int | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        # Google's JSON mapping sends int64 as strings; accept digit strings.
        if isinstance(v, str):
            n = digits_int(v.removeprefix("-"))
            if n is not None:
                return -n if v.startswith("-") else n
        raise MalformedResponse(f"{path}.{key}: expected an integer or null, got {quote(v)}")
    return v


def opt_float(d: dict[str, Any], key: str, path: str) -> float | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool):
        raise MalformedResponse(f"{path}.{key}: expected a number, got a boolean")
    number: float | None = None
    if isinstance(v, int | float):
        number = float(v)
    elif isinstance(v, str) and _DECIMAL.fullmatch(v.strip()):
        number = float(v)  # Google's JSON mapping may send numbers as strings
    # "nan", "inf", "1_0" and "١٫٥" are not numbers a provider means (float() takes them).
    if number is not None and math.isfinite(number):
        return number
    raise MalformedResponse(f"{path}.{key}: expected a finite number or null, got {quote(v)}")


def opt_bool(d: dict[str, Any], key: str, path: str) -> bool | None:
    v = d.get(key)
    if v is None or isinstance(v, bool):
        return v
    raise MalformedResponse(f"{path}.{key}: expected a boolean or null, got {quote(v)}")


def str_map(d: dict[str, Any], key: str, path: str) -> dict[str, str]:
    v = d.get(key)
    if v is None:
        return {}
    m = obj(v, f"{path}.{key}")
    out: dict[str, str] = {}
    for k, val in m.items():
        if not isinstance(val, str):
            raise MalformedResponse(f"{path}.{key}.{k}: expected a string, got {quote(val)}")
        out[k] = val
    return out
