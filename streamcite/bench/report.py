"""``results.json`` (stable schema), the summary tables and ``--compare``.

Schema (``schema_version`` 2; keys are only ever added, a version-1 file still
reads)::

    {"schema_version": 2, "tool": "streamcite bench", "created_at": ISO-8601 UTC,
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

from streamcite.bench.diagnose import warnings_for
from streamcite.bench.records import RequestRecord, RunResult
from streamcite.bench.slo import Objective, evaluate
from streamcite.bench.stats import DEFAULT_PERCENTILES, summarize
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
    "run_summary",
    "summary_tables",
    "versions",
    "write_results",
]

SCHEMA_VERSION = 2

_PACKAGES = ("streamcite", "aiohttp", "httpx", "httpx-sse", "orjson", "numpy", "rich", "matplotlib")


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


def run_summary(
    run: RunResult,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    slos: Sequence[Objective] = (),
) -> dict[str, Any]:
    """:func:`~streamcite.bench.stats.summarize`, with the SLO results (``slo``,
    ``goodput_rps``) when objectives are given, and the run's ``warnings``."""
    qs = sorted({*percentiles, *(o.percentile for o in slos if o.percentile is not None)})
    summary = summarize(run, qs)
    if slos:
        summary["slo"] = evaluate(slos, run, summary)
        summary["goodput_rps"] = summary["slo"]["goodput_rps"]
    summary["warnings"] = warnings_for(run, summary)
    return summary


def build_results(
    runs: Sequence[RunResult],
    config: Mapping[str, Any],
    *,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    slos: Sequence[Objective] = (),
) -> dict[str, Any]:
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
                "summary": run_summary(run, percentiles, slos),
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


from streamcite.bench.tables import (  # noqa: E402  (re-exported: the tables read documents)
    compare_rows,
    compare_tables,
    print_summary,
    summary_tables,
)
