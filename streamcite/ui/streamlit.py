"""Streamlit: a cited, streaming answer in ``st.chat_message`` (``streamcite[streamlit]``).

::

    import streamlit as st
    from streamcite import stream_chat_sync
    from streamcite.ui.streamlit import write_answer

    if question := st.chat_input("Ask"):
        request = {"model": "streamcite-local", "stream": True,
                   "messages": [{"role": "user", "content": question}]}
        with st.chat_message("assistant"):
            write_answer(stream_chat_sync(request, base_url="http://127.0.0.1:8765/v1"))

``write_answer`` reads the stream with the synchronous API (Streamlit runs the script
in a plain thread) and redraws one Markdown element as events arrive: the answer with
superscript footnotes, ✓/✗ after each claim as soon as it is checked, then its sources
section (each footnote's own quoted passage, the document's title and link) and the
grounding verdict. Reasoning is shown in a "Thinking" expander, each tool call in its
own. Streamlit's Stop button (and a new message) stops the script at its next
Streamlit call: the stream is closed there, and with it the upstream request.
"""

from __future__ import annotations

import streamlit as st

from streamcite.core.models import CitedAnswer
from streamcite.pipeline.sync import SyncChatStream
from streamcite.ui.render import (
    ChatView,
    Pacer,
    escape_markdown,
    full_markdown,
    tool_markdown,
    view_of,
)

__all__ = ["show_answer", "write_answer"]

THINKING_LABEL = "Thinking"


def _show_steps(view: ChatView, thinking: object, tools: object) -> None:
    if view.reasoning:
        with thinking.container(), st.expander(THINKING_LABEL, expanded=not view.text):  # type: ignore[attr-defined]
            st.markdown(escape_markdown(view.reasoning))
    if view.tool_calls:
        with tools.container():  # type: ignore[attr-defined]
            for call in view.tool_calls.values():
                with st.expander(f"Tool call: {escape_markdown(call.name or '?')}"):
                    st.markdown(tool_markdown(call))


def write_answer(stream: SyncChatStream) -> CitedAnswer:
    """Read ``stream`` into the current container; returns its final answer."""
    view = ChatView()
    pacer = Pacer()  # a long answer is redrawn at a pace its size allows
    thinking, tools, body = st.empty(), st.empty(), st.empty()
    body.markdown(full_markdown(view))
    with stream:
        for event in stream:
            changed = view.feed(event)
            if not pacer.wants(changed):
                continue
            started = pacer.start()
            if changed in ("reasoning", "tool") or not changed:
                _show_steps(view, thinking, tools)
            if changed not in ("reasoning", "tool"):
                body.markdown(full_markdown(view))
            pacer.drawn(started)
    _show_steps(view, thinking, tools)
    body.markdown(full_markdown(view))
    return stream.answer


def show_answer(answer: CitedAnswer) -> None:
    """A finished answer again (the script reruns for every message: the history)."""
    view = view_of(answer)
    _show_steps(view, st.empty(), st.empty())
    st.markdown(full_markdown(view))
