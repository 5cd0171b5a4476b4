"""Copies of the answer's models made field by field, and the guard of the answer
that :meth:`~streamcite.core.answer.AnswerBuilder.snapshot` builds so. Sans-I/O.

``dataclasses.replace`` and a 23-keyword ``__init__`` were most of a short stream's
``done``: the hand-built forms are held to the classes' fields at import
(:func:`~streamcite.core._fields.expect_fields`)."""

from __future__ import annotations

from streamcite.core._fields import expect_fields
from streamcite.core.models import CitedAnswer, ToolCall

__all__ = ["copy_tool_call"]

_new = object.__new__


def copy_tool_call(tc: ToolCall) -> ToolCall:
    """A copy of ``tc`` (``dataclasses.replace`` costs ten times as much)."""
    c = _new(ToolCall)
    c.id, c.type, c.name, c.arguments = tc.id, tc.type, tc.name, tc.arguments
    return c


expect_fields(ToolCall, ["id", "type", "name", "arguments"], "copies.py (copy_tool_call)")
expect_fields(
    CitedAnswer,
    [
        "text",
        "display_text",
        "finish_reason",
        "id",
        "model",
        "citations",
        "citation_refs",
        "dangling_refs",
        "uncited_documents",
        "sources",
        "grounding",
        "usage",
        "errors",
        "timings",
        "complete",
        "reasoning_text",
        "tool_calls",
        "refusal",
        "references",
        "citation_spans",
        "errors_dropped",
        "enrichment_skipped",
        "claims",
        "skipped_types",
        "provider_tools",
    ],
    "answer.py (AnswerBuilder.snapshot)",
)
