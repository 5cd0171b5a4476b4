"""The on/off switch the pipeline reads: no OpenTelemetry import here.

The pipeline asks :func:`active` once per stream; while nothing was instrumented it is
``None`` and no telemetry code runs (one global read per stream, nothing per event).
:func:`streamcite.telemetry.instrument` installs the OpenTelemetry implementation.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamcite.telemetry.otel import EnricherSpan, OtelTelemetry

__all__ = ["active", "enter_enricher", "install", "leave_enricher", "note_retry"]

_active: OtelTelemetry | None = None

_enricher_span: ContextVar[EnricherSpan | None] = ContextVar(
    "streamcite_enricher_span", default=None
)
"""The span of the enricher running in this task (set by the enrichment stage)."""


def active() -> OtelTelemetry | None:
    """The installed telemetry, or ``None`` (the default: telemetry off)."""
    return _active


def install(telemetry: OtelTelemetry | None) -> None:
    """Install (or with ``None`` remove) the telemetry every new stream uses."""
    global _active
    _active = telemetry


def enter_enricher(span: EnricherSpan | None) -> Any:
    """Make ``span`` the enricher span of this task; returns the token for :func:`leave`."""
    return _enricher_span.set(span)


def leave_enricher(token: Any) -> None:
    _enricher_span.reset(token)


def note_retry(attempt: int, code: str | None, status: int | None, sleep_s: float) -> None:
    """Called by the enrichers' retry loop before it sleeps: a ``retry`` event on the
    running enricher's span (nothing when telemetry is off or no enricher span runs)."""
    span = _enricher_span.get()
    if span is not None:
        span.retry(attempt, code, status, sleep_s)
