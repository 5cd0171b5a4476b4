"""OpenTelemetry for streamcite: GenAI spans and metrics (optional extra ``otel``).

Off by default, and then free: the pipeline reads one global per stream and runs no
telemetry code (``opentelemetry`` is not even imported). Turn it on once::

    from streamcite import telemetry
    telemetry.instrument()                # the global tracer and meter providers
    telemetry.instrument(propagate=True)  # and send W3C traceparent upstream

Or set ``STREAMCITE_OTEL=1`` (``propagate`` for the traceparent too) in the environment,
e.g. under ``opentelemetry-instrument``: no code at all.

Every stream then has a span ``chat {model}`` (GenAI semantic conventions) with the
events ``streamcite.first_token``, ``streamcite.citations``, ``streamcite.first_claim``
and one ``exception`` event per typed error; each enricher a child span ``enrich
{kind}`` with its retries and status; and the metrics ``gen_ai.client.operation.duration``,
``gen_ai.client.token.usage``, ``gen_ai.client.operation.time_to_first_chunk`` and
``streamcite.client.time_to_{citations,sources,grounding,first_claim}``. See
docs/observability.md.
"""

from __future__ import annotations

from typing import Any

from streamcite.telemetry import switch

__all__ = ["instrument", "is_instrumented", "uninstrument"]


def instrument(
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    propagate: bool = False,
) -> None:
    """Trace and measure every stream started from now on.

    ``tracer_provider`` / ``meter_provider``: OpenTelemetry providers (default: the
    global ones, set by your SDK setup or ``opentelemetry-instrument``). ``propagate``:
    send the stream span's W3C ``traceparent`` (and ``tracestate``) to the upstream, so
    a provider or gateway that traces joins the same trace; off by default (the
    upstream is usually a third party). Raises ``ImportError`` naming the extra when
    ``opentelemetry-api`` is not installed.
    """
    try:
        from streamcite.telemetry.otel import OtelTelemetry
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "streamcite.telemetry needs OpenTelemetry: pip install 'streamcite[otel]'"
        ) from exc
    switch.install(
        OtelTelemetry(
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            propagate=propagate,
        )
    )


def uninstrument() -> None:
    """Stop tracing new streams (running ones finish their spans)."""
    switch.install(None)


def is_instrumented() -> bool:
    return switch.active() is not None
