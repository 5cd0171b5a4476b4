"""The chat UIs' framework-neutral rendering (streamcite.ui.render) and the adapters'
pure parts, without a browser: footnotes, passages, claim marks, verdicts, errors,
hostile upstream text made inert, and no framework imported by ``import streamcite``."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from streamcite import CitedAnswer
from streamcite.events import (
    CitationsEvent,
    ClaimEvent,
    DoneEvent,
    ErrorEvent,
    GroundingEvent,
    ReasoningEvent,
    TokenEvent,
    ToolCallEvent,
)
from streamcite.models import Citation, CitationSpan
from streamcite.ui.render import (
    ChatView,
    answer_markdown,
    escape_markdown,
    footnotes,
    full_markdown,
    markdown_link,
    plain_text,
    sources_markdown,
    verdict_text,
)

HOSTILE = '<img src=x onerror="alert(1)"> [click](javascript:alert(1)) ![t](http://e/x.png) $x$ :red[x] \u202eevil\x1b[31m'


def _view(*texts: str) -> ChatView:
    view = ChatView()
    for t in texts:
        view.feed(TokenEvent(text=t))
    return view


def test_footnotes_are_superscripts_and_a_partial_marker_waits() -> None:
    view = _view("Paris [", "1")
    assert answer_markdown(view) == "Paris"  # "[1" may still become a footnote
    view.feed(TokenEvent(text="], Lyon [2, 3]."))
    assert answer_markdown(view) == "Paris¹, Lyon²˒³\\."


def test_claim_marks_follow_their_sentence() -> None:
    view = _view("It rains [1]. It snows [1].")
    view.feed(ClaimEvent(index=0, start=0, end=13, text="It rains [1].", supported=True))
    view.feed(ClaimEvent(index=1, start=14, end=27, text="It snows [1].", supported=False))
    assert answer_markdown(view) == "It rains¹\\. ✓ It snows¹\\. ✗"
    assert answer_markdown(view, marks=False) == "It rains¹\\. It snows¹\\."


def test_two_footnotes_on_one_document_show_their_own_passages() -> None:
    view = _view("A [1]. B [2].")
    same = {"document_title": "Policy", "source_url": "https://example.org/policy"}
    view.feed(CitationsEvent(citations=[
        Citation(cited_text="First passage.", document_index=0, **same),
        Citation(cited_text="Second passage.", document_index=1, **same),
    ]))  # fmt: skip
    notes = footnotes(view)
    assert [(n.number, n.passages) for n in notes] == [
        (1, ("First passage.",)),
        (2, ("Second passage.",)),
    ]
    section = sources_markdown(view)
    assert "¹ **[Policy](https://example.org/policy)**\n\n> First passage\\." in section
    assert "² **[Policy](https://example.org/policy)**\n\n> Second passage\\." in section


def test_one_source_cited_twice_shows_both_span_passages() -> None:
    # Anthropic-style: one citation per source, each span carries its own quote.
    view = _view("Three days. Tuesday is a team day.")
    view.feed(CitationsEvent(
        citations=[Citation(cited_text="Employees may work remotely up to three days.",
                            document_index=0, document_title="Policy")],
        spans=[
            CitationSpan(0, 0, 11, cited_text="Employees may work remotely up to three days."),
            CitationSpan(0, 12, 34, cited_text="Tuesday is a team day."),
        ],
    ))  # fmt: skip
    (note,) = footnotes(view)
    assert note.passages == (
        "Employees may work remotely up to three days.",
        "Tuesday is a team day.",
    )


def test_hostile_upstream_text_is_inert_everywhere() -> None:
    view = _view(HOSTILE)
    view.feed(CitationsEvent(citations=[Citation(
        cited_text=HOSTILE, document_title=HOSTILE, document_index=0,
        source_url="javascript:alert(1)", cited_text_heading=HOSTILE,
    )]))  # fmt: skip
    view.feed(ErrorEvent(code="bad<b>", message=HOSTILE))
    page = full_markdown(view)
    assert "\u202e" not in page and "\x1b" not in page
    unescaped = re.sub(r"\\.", "", page)  # what Markdown reads as syntax
    for syntax in ("<", "](", "![", "$", ":", "[", "`"):  # ">": our own block quotes
        assert syntax not in unescaped, syntax
    assert "javascript:" not in markdown_link("x", "javascript:alert(1)")
    assert markdown_link("t", "https://e.org/a b") == "t"  # whitespace: not a link
    assert markdown_link("t", "https://e.org/(x)") == "[t](https://e.org/%28x%29)"
    assert escape_markdown("a\\b") == "a\\\\b"


def test_verdicts_and_errors_read_as_sentences() -> None:
    assert verdict_text(None) is None
    view = _view("It rains [1].")
    view.feed(GroundingEvent(provider="local", support_score=None, nothing_to_check=True))
    assert verdict_text(view.grounding) == "Grounding (local): no verdict, nothing to check"
    view.feed(ErrorEvent(code="connect_error", message="cannot connect to 127.0.0.1:9"))
    assert "⚠ cannot connect to 127\\.0\\.0\\.1\\:9 \\(connect\\_error\\)" in full_markdown(view)


def test_an_empty_answer_is_never_an_empty_bubble() -> None:
    view = ChatView()
    assert full_markdown(view) == "…"
    view.feed(DoneEvent(answer=CitedAnswer()))
    assert full_markdown(view) == "_(no answer)_"


def test_plain_text_gives_the_answer_back_for_the_history() -> None:
    view = _view("Costs $5 [1].")
    view.feed(ClaimEvent(start=0, end=13, supported=True))
    view.feed(CitationsEvent(citations=[Citation(cited_text="x", document_index=0)]))
    assert plain_text(full_markdown(view)) == "Costs $5¹."


def test_reasoning_and_tool_calls_are_folded() -> None:
    view = ChatView()
    assert view.feed(ReasoningEvent(text="hm")) == "reasoning"
    view.feed(ToolCallEvent(tool_index=0, id="c1", name="search", arguments='{"q":'))
    view.feed(ToolCallEvent(tool_index=0, arguments='"x"}'))
    assert view.reasoning == "hm"
    assert (view.tool_calls[0].name, view.tool_calls[0].arguments) == ("search", '{"q":"x"}')


def test_gradio_messages_thinking_tool_steps_and_history() -> None:
    pytest.importorskip("gradio")
    from streamcite.ui.gradio import history_messages, view_messages

    view = ChatView()
    view.feed(ReasoningEvent(text="thinking <b>"))
    view.feed(ToolCallEvent(tool_index=0, name="search", arguments="{}"))
    view.feed(TokenEvent(text="Yes [1]."))
    thinking, tool, answer = view_messages(view)
    assert thinking.metadata["title"] == "Thinking" and thinking.metadata["status"] == "done"
    assert "<b>" not in str(thinking.content)
    assert tool.metadata["title"] == "Tool call: search"
    assert answer.content == "Yes¹\\."
    history = [
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": "x", "metadata": {"title": "Thinking"}},
        {"role": "assistant", "content": [{"type": "text", "text": str(answer.content)}]},
    ]
    assert history_messages(history) == [
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": "Yes¹."},
    ]


def test_import_streamcite_imports_no_chat_framework() -> None:
    code = (
        "import sys, streamcite, streamcite.ui, streamcite.ui.render\n"
        "streamcite.stream_chat_sync\n"
        "print(sorted(m for m in ('gradio', 'chainlit', 'streamlit') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
