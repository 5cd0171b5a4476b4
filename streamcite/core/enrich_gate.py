"""Whether post-stream enrichers run on an answer (and why not).

A refusal is not a grounding failure, and an answer cut by a provider error is not the
answer the model meant to give: enrichers skip both, unless the caller asked for
incomplete answers to be enriched (``enrich_incomplete=True``). The reason is kept on
the answer as ``CitedAnswer.enrichment_skipped``.
"""

from __future__ import annotations

from streamcite.core.answer import AnswerBuilder

__all__ = ["skip_reason"]


def skip_reason(builder: AnswerBuilder, *, enrich_incomplete: bool) -> str | None:
    """``"refusal"``, ``"incomplete"`` or ``None`` (enrich).

    An incomplete answer with nothing in it (the stream was cut before its first token,
    reasoning or tool call) is never enriched, even with ``enrich_incomplete``: there is
    nothing to ground or to find sources for, and a remote check would be paid for."""
    if builder.has_refusal():
        return "refusal"
    if not builder.complete and (not enrich_incomplete or _empty(builder)):
        return "incomplete"
    return None


def _empty(builder: AnswerBuilder) -> bool:
    return not builder.text_length() and not builder.tool_calls and not builder.has_reasoning()
