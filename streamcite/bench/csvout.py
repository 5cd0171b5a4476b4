"""``requests.csv``: one row per measured request, beside ``results.json``.

The columns are the scalar fields of each request record in ``results.json`` (same
names, same values), preceded by the run's number and load; lists are folded:
``errors`` becomes ``code@stage`` items joined by ``;`` and ``error_message`` is the
first error's message (one line, clipped; a leading ``= + - @`` quoted with ``'`` so that
a spreadsheet reads text, not a formula), ``token_ms`` and the
pipeline's own timings are left to the JSON. Empty cells are ``null`` values.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CSV_COLUMNS", "write_csv"]

_RUN_COLUMNS = ("run", "concurrency", "rate")
CSV_COLUMNS: tuple[str, ...] = (
    *_RUN_COLUMNS,
    "index",
    "question",
    "ok",
    "complete",
    "scheduled_ms",
    "start_ms",
    "queue_ms",
    "reasoning_ms",
    "ttft_ms",
    "finish_ms",
    "citations_ms",
    "sources_ms",
    "grounding_ms",
    "first_claim_ms",
    "stream_ms",
    "total_ms",
    "e2e_ms",
    "tpot_ms",
    "tokens",
    "tokens_per_s",
    "output_tokens",
    "output_tokens_source",
    "output_tokens_per_s",
    "input_tokens",
    "input_tokens_source",
    "reasoning_chunks",
    "reasoning_tokens",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "citations",
    "citation_refs",
    "sources",
    "support_score",
    "nothing_to_check",
    "errors",
    "error_message",
)


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _text_cell(value: str | None) -> str | None:
    """Upstream text for a CSV cell: read as text by a spreadsheet, never as a formula."""
    if value and value[0] in "=+-@\t\r":
        return "'" + value
    return value


def write_csv(doc: Mapping[str, Any], out_dir: str | Path) -> Path:
    """Write ``requests.csv`` into ``out_dir``; return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "requests.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS)
        for n, run in enumerate(doc.get("runs", []), 1):
            load = run["load"]
            for req in run["requests"]:
                row: dict[str, Any] = {
                    "run": n,
                    "concurrency": load.get("concurrency"),
                    "rate": load.get("rate"),
                    **req,
                }
                row["errors"] = ";".join(f"{e['code']}@{e['stage']}" for e in req["errors"])
                first = next((e.get("message") for e in req["errors"] if e.get("message")), None)
                row["error_message"] = _text_cell(first)
                writer.writerow([_cell(row.get(c)) for c in CSV_COLUMNS])
    return path
