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
    """``"refusal"``, ``"incomplete"`` or ``None`` (enrich)."""
    if builder.refusal_parts:
        return "refusal"
    if not builder.complete and not enrich_incomplete:
        return "incomplete"
    return None
