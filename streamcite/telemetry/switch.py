"""The on/off switch the pipeline reads: no OpenTelemetry import here.

The pipeline asks :func:`active` once per stream; while nothing was instrumented it is
``None`` and no telemetry code runs (one global read per stream, nothing per event).
:func:`streamcite.telemetry.instrument` installs the OpenTelemetry implementation, and so
does the environment variable ``STREAMCITE_OTEL`` (``1``, or ``propagate`` to send
``traceparent`` too), read once when this module is imported: with
``opentelemetry-instrument``, which sets up the SDK, any program — ``streamcite relay``,
``ask``, ``bench`` — is traced without a line of code.
"""

from __future__ import annotations

import os
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


ENV = "STREAMCITE_OTEL"


def install_from_env(value: str | None) -> bool:
    """Instrument with the global providers when ``value`` (``STREAMCITE_OTEL``) asks:
    ``1``/``true``/``on``, or ``propagate``. Without OpenTelemetry installed it warns and
    stays off (a setting must not stop the program). Returns whether it is on."""
    wanted = (value or "").strip().lower()
    if wanted not in ("1", "true", "on", "yes", "propagate"):
        return False
    try:
        from streamcite.telemetry.otel import OtelTelemetry
    except ImportError:
        import warnings

        warnings.warn(
            f"{ENV} is set but OpenTelemetry is not installed (pip install 'streamcite[otel]')",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    install(OtelTelemetry(propagate=wanted == "propagate"))
    return True


install_from_env(os.environ.get(ENV))
