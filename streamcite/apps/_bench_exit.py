"""How ``streamcite bench`` ends: exit 1 when no request succeeded, 3 when an SLO was
missed (one line on stderr saying why)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape

from streamcite.apps._terminal import one_line
from streamcite.bench.slo import EXIT_SLO_MISSED

__all__ = ["exit_on_missed_slo", "exit_when_nothing_succeeded"]


def exit_when_nothing_succeeded(doc: Mapping[str, Any], err: Console) -> None:
    """Exit 1 with one line (the most frequent error and its message) when not one
    measured request succeeded: there is nothing to measure."""
    summaries = [run["summary"] for run in doc["runs"]]
    if not summaries or any(s["ok"] for s in summaries):
        return
    codes: dict[str, int] = {}
    messages: dict[str, str] = {}
    for s in summaries:
        for code, n in s.get("errors_by_code", {}).items():
            codes[code] = codes.get(code, 0) + n
        for code, message in (s.get("error_messages") or {}).items():
            messages.setdefault(code, message)
    line = "no request succeeded"
    if codes:
        code = max(codes, key=lambda c: codes[c])
        line += f": {one_line(code)}×{codes[code]}"
        if code in messages:
            line += f": {one_line(messages[code])}"
    err.print(f"[red]error:[/red] {escape(line)}", soft_wrap=True)
    raise SystemExit(1)


def exit_on_missed_slo(doc: Mapping[str, Any], err: Console) -> None:
    missed = [
        c["spec"]
        for run in doc["runs"]
        for c in (run["summary"].get("slo") or {}).get("objectives", [])
        if not c["passed"]
    ]
    if missed:
        err.print(f"[red]SLO missed:[/red] {escape(', '.join(dict.fromkeys(missed)))}")
        raise SystemExit(EXIT_SLO_MISSED)
