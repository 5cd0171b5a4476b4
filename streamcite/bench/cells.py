"""How the bench tool's tables write a number (the JSON and CSV keep every digit) and a
run's title."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NBSP", "cell", "fmt", "nowrap", "run_title"]

NBSP = "\u00a0"


def fmt(x: Any, digits: int = 1) -> str:
    """``1,234.5`` for a float, ``—`` for a missing value, ``str`` otherwise.

    >>> fmt(1234.56), fmt(None), fmt(3)
    ('1,234.6', '—', '3')
    """
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return str(x)


def cell(x: Any, digits: int = 1) -> str:
    """A table cell: large figures shortened so an 80-column table never cuts a number
    to ``625,…``.

    >>> cell(625_412.0), cell(10_712_345.0), cell(12_638.5), cell(8.25)
    ('625k', '10.7M', '12,638', '8.2')
    """
    if isinstance(x, int | float) and not isinstance(x, bool):
        if abs(x) >= 10_000_000:
            return f"{x / 1e6:,.1f}M"
        if abs(x) >= 100_000:
            return f"{x / 1e3:,.0f}k"
        if abs(x) >= 1_000:
            digits = 0  # a fraction of a thousand says nothing and costs a column
    return fmt(x, digits)


def nowrap(text: str) -> str:
    """Keep a phrase on one line: wrapping may only happen at the ` · ` separators."""
    return text.replace(" ", NBSP)


def run_title(load: Mapping[str, Any]) -> str:
    parts = [f"concurrency {load.get('concurrency')}"]
    if load.get("rate") is not None:
        parts.append(f"rate {load['rate']:g}/s ({load.get('schedule')})")
    else:
        parts.append("closed loop")
    if load.get("duration_s"):
        parts.append(f"{load['duration_s']:g} s window")
    else:
        parts.append(f"{load.get('requests')} requests")
    if load.get("warmup"):
        parts.append(f"+{load['warmup']} warm-up")
    if load.get("ramp_up_s"):
        parts.append(f"{load['ramp_up_s']:g} s ramp-up")
    return " · ".join(nowrap(p) for p in parts)
