"""``results.json`` (stable schema), the summary tables and ``--compare``.

Schema (``schema_version`` 1; keys are only ever added)::

    {"schema_version": 1, "tool": "streamcite bench", "created_at": ISO-8601 UTC,
     "config": {...}, "versions": {...}, "machine": {...},
     "runs": [{"load": {...}, "started_at": ..., "wall_s": ..., "warmup_requests": n,
               "summary": {...}, "requests": [{...}, ...]}]}

Every time in a request is milliseconds after that request was sent, except
``scheduled_ms`` / ``start_ms`` (after the start of the measured phase).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from streamcite.bench.runner import RequestRecord, RunResult
from streamcite.bench.stats import summarize
from streamcite.core import _validate as v
from streamcite.core.errors import StreamciteError

__all__ = [
    "SCHEMA_VERSION",
    "ResultsFileError",
    "build_results",
    "compare_rows",
    "compare_tables",
    "load_results",
    "machine_info",
    "print_summary",
    "records_of",
    "summary_tables",
    "versions",
    "write_results",
]

SCHEMA_VERSION = 1

_PACKAGES = ("streamcite", "aiohttp", "httpx", "httpx-sse", "orjson", "numpy", "rich", "matplotlib")

_ROWS: tuple[tuple[str, str], ...] = (
    ("ttft_ms", "TTFT (ms)"),
    ("itl_ms", "inter-token (ms)"),
    ("tokens_per_s", "tokens/s (per req)"),
    ("citations_ms", "→ citations (ms)"),
    ("sources_ms", "→ sources (ms)"),
    ("grounding_ms", "→ grounding (ms)"),
    ("total_ms", "total (ms)"),
    ("queue_ms", "queued (ms)"),
)

# (label, path into a summary); lower is better unless listed in _HIGHER_IS_BETTER.
_COMPARED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("TTFT p50 (ms)", ("ttft_ms", "p50")),
    ("TTFT p90 (ms)", ("ttft_ms", "p90")),
    ("TTFT p99 (ms)", ("ttft_ms", "p99")),
    ("inter-token p50 (ms)", ("itl_ms", "p50")),
    ("inter-token p99 (ms)", ("itl_ms", "p99")),
    ("tokens/s p50", ("tokens_per_s", "p50")),
    ("citations p50 (ms)", ("citations_ms", "p50")),
    ("citations p99 (ms)", ("citations_ms", "p99")),
    ("sources p50 (ms)", ("sources_ms", "p50")),
    ("grounding p50 (ms)", ("grounding_ms", "p50")),
    ("total p50 (ms)", ("total_ms", "p50")),
    ("total p99 (ms)", ("total_ms", "p99")),
    ("throughput (req/s)", ("throughput_rps",)),
    ("output tokens/s", ("output_tokens_per_s",)),
    ("error rate", ("error_rate",)),
)
_HIGHER_IS_BETTER = frozenset({"tokens/s p50", "throughput (req/s)", "output tokens/s"})


class ResultsFileError(StreamciteError):
    """A ``results.json`` that is not one this version can read."""

    code = "bench_results_invalid"


# -- environment --------------------------------------------------------------------


def versions() -> dict[str, str | None]:
    """Python and the versions of the packages that shape the measurement."""
    out: dict[str, str | None] = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
    }
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _proc_field(path: str, key: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                name, _, value = line.partition(":")
                if name.strip() == key:
                    return value.strip()
    except OSError:
        return None
    return None


def machine_info() -> dict[str, Any]:
    """OS, CPU, memory and load of the machine running the client (no host name)."""
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    mem = _proc_field("/proc/meminfo", "MemTotal")
    return {
        "system": platform.system(),
        "release": platform.release(),
        "machine": platform.machine(),
        "cpu_model": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "memory_total": mem,
        "loadavg": load,
    }


# -- results.json -------------------------------------------------------------------


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")


def build_results(runs: Sequence[RunResult], config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``results.json`` document of a benchmark."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "streamcite bench",
        "created_at": _iso(dt.datetime.now(dt.UTC).timestamp()),
        "config": dict(config),
        "versions": versions(),
        "machine": machine_info(),
        "runs": [
            {
                "load": run.load.to_dict(),
                "started_at": _iso(run.started_at),
                "wall_s": round(run.wall_s, 6),
                "warmup_requests": len(run.warmup_records),
                "summary": summarize(run),
                "requests": [r.to_dict() for r in run.records],
            }
            for run in runs
        ],
    }


def write_results(doc: Mapping[str, Any], out_dir: str | Path) -> Path:
    """Write ``results.json`` into ``out_dir`` (created if needed); return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    return path


def load_results(path: str | Path) -> dict[str, Any]:
    """Read and check a ``results.json`` (raises :class:`ResultsFileError`)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        doc = v.obj(orjson.loads(raw), str(path))
        version = doc.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise ResultsFileError(f"{path}: no schema_version: not a streamcite bench result")
        if version > SCHEMA_VERSION:
            raise ResultsFileError(
                f"{path}: schema_version {version} is newer than this streamcite reads "
                f"({SCHEMA_VERSION}); upgrade streamcite"
            )
        for i, run in enumerate(v.arr(doc.get("runs"), f"{path}.runs")):
            where = f"{path}.runs[{i}]"
            run = v.obj(run, where)
            v.obj(run.get("load"), f"{where}.load")
            v.obj(run.get("summary"), f"{where}.summary")
            v.arr(run.get("requests"), f"{where}.requests")
    except orjson.JSONDecodeError as exc:
        raise ResultsFileError(f"{path}: not JSON: {exc}") from exc
    except StreamciteError as exc:
        if isinstance(exc, ResultsFileError):
            raise
        raise ResultsFileError(exc.message) from exc
    return doc


def records_of(run: Mapping[str, Any]) -> list[RequestRecord]:
    """The request records of one run of a loaded ``results.json``."""
    try:
        return [RequestRecord.from_dict(r) for r in run["requests"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsFileError(f"a request record does not match the schema: {exc!r}") from exc


# -- tables -------------------------------------------------------------------------


def _fmt(x: Any, digits: int = 1) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return str(x)


def _run_title(load: Mapping[str, Any]) -> str:
    parts = [f"concurrency {load.get('concurrency')}"]
    if load.get("rate") is not None:
        parts.append(f"rate {load['rate']:g}/s ({load.get('schedule')})")
    else:
        parts.append("closed loop")
    parts.append(f"{load.get('requests')} requests")
    if load.get("warmup"):
        parts.append(f"+{load['warmup']} warm-up")
    return " · ".join(parts)


def summary_tables(doc: Mapping[str, Any]) -> Group:
    """One table per run, and a sweep table when there are several runs."""
    items: list[Any] = []
    runs = doc.get("runs", [])
    for run in runs:
        s = run["summary"]
        table = Table(title=_run_title(run["load"]), title_justify="left", expand=False)
        table.add_column("metric")
        for col in ("n", "p50", "p90", "p99", "max"):
            table.add_column(col, justify="right")
        for key, label in _ROWS:
            d = s.get(key) or {}
            if not d.get("count"):
                continue
            if key == "queue_ms" and run["load"].get("rate") is None:
                continue
            table.add_row(
                label,
                str(d["count"]),
                *(_fmt(d.get(k)) for k in ("p50", "p90", "p99", "max")),
            )
        items.append(table)
        errors = ", ".join(f"{k}×{n}" for k, n in s.get("errors_by_code", {}).items()) or "none"
        client = s.get("client", {})
        lag = client.get("loop_lag_ms", {})
        items.append(
            Text(
                f"ok {s['ok']}/{s['requests']} · error rate {100 * s['error_rate']:.1f}% "
                f"· {_fmt(s.get('throughput_rps'), 2)} req/s "
                f"· {_fmt(s.get('output_tokens_per_s'), 0)} tokens/s · errors: {errors}\n"
                f"client: loop lag p99 {_fmt(lag.get('p99'), 2)} ms, "
                f"max {_fmt(lag.get('max'), 2)} ms · CPU {_fmt(client.get('cpu_pct'), 0)}%\n"
            )
        )
    if len(runs) > 1:
        sweep = Table(title="sweep", title_justify="left")
        for col, justify in (
            ("C", "right"),
            ("rate", "right"),
            ("req/s", "right"),
            ("TTFT p50", "right"),
            ("TTFT p99", "right"),
            ("ITL p50", "right"),
            ("total p50", "right"),
            ("total p99", "right"),
            ("errors", "right"),
        ):
            sweep.add_column(col, justify=justify)  # type: ignore[arg-type]
        for run in runs:
            s = run["summary"]
            sweep.add_row(
                str(run["load"]["concurrency"]),
                _fmt(run["load"].get("rate")),
                _fmt(s.get("throughput_rps"), 2),
                _fmt(s["ttft_ms"].get("p50")),
                _fmt(s["ttft_ms"].get("p99")),
                _fmt(s["itl_ms"].get("p50")),
                _fmt(s["total_ms"].get("p50")),
                _fmt(s["total_ms"].get("p99")),
                f"{100 * s['error_rate']:.1f}%",
            )
        items.append(sweep)
    return Group(*items)


def _get(summary: Mapping[str, Any], path: Sequence[str]) -> float | None:
    cur: Any = summary
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return float(cur) if isinstance(cur, int | float) and not isinstance(cur, bool) else None


def compare_rows(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> list[tuple[str, float | None, float | None, float | None]]:
    """(metric, value in A, value in B, B / A) for two run summaries."""
    rows: list[tuple[str, float | None, float | None, float | None]] = []
    for label, path in _COMPARED:
        x, y = _get(a, path), _get(b, path)
        ratio = None if x is None or y is None or x == 0 else y / x
        rows.append((label, x, y, ratio))
    return rows


def _pairs(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Runs of A and B that measured the same load (same concurrency and rate), else by
    position."""

    def key(run: Mapping[str, Any]) -> tuple[Any, Any]:
        return run["load"].get("concurrency"), run["load"].get("rate")

    runs_b = {key(r): r for r in b["runs"]}
    pairs = [(r, runs_b[key(r)]) for r in a["runs"] if key(r) in runs_b]
    if pairs:
        return pairs
    return list(zip(a["runs"], b["runs"], strict=False))


def compare_tables(
    a: Mapping[str, Any], b: Mapping[str, Any], name_a: str = "A", name_b: str = "B"
) -> Group:
    """Side-by-side tables of two results documents, with B/A ratios."""
    items: list[Any] = []
    pairs = _pairs(a, b)
    if not pairs:
        items.append(Text("nothing to compare: one of the files has no runs"))
    for run_a, run_b in pairs:
        title = _run_title(run_a["load"])
        if _run_title(run_b["load"]) != title:
            title = f"{title}  vs  {_run_title(run_b['load'])}"
        table = Table(title=title, title_justify="left")
        table.add_column("metric")
        table.add_column(name_a, justify="right")
        table.add_column(name_b, justify="right")
        table.add_column(f"{name_b} / {name_a}", justify="right")
        for label, x, y, ratio in compare_rows(run_a["summary"], run_b["summary"]):
            if x is None and y is None:
                continue
            digits = 4 if label == "error rate" else 1
            if ratio is None:
                cell = Text("—")
            else:
                better = ratio > 1 if label in _HIGHER_IS_BETTER else ratio < 1
                style = "" if abs(ratio - 1) < 0.05 else ("green" if better else "red")
                cell = Text(f"{ratio:.2f}×", style=style)
            table.add_row(label, _fmt(x, digits), _fmt(y, digits), cell)
        items.append(table)
    return Group(*items)


def print_summary(doc: Mapping[str, Any], console: Console | None = None) -> None:
    """Print :func:`summary_tables` (to stdout by default)."""
    (console or Console()).print(summary_tables(doc))
