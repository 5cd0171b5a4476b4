"""Chainlit: a cited, streaming answer as a ``cl.Message`` with steps (``streamcite[chainlit]``).

::

    import chainlit as cl
    from streamcite import stream_chat
    from streamcite.ui.chainlit import send_answer

    @cl.on_message
    async def on_message(message: cl.Message) -> None:
        request = {"model": "streamcite-local", "stream": True,
                   "messages": [{"role": "user", "content": message.content}]}
        await send_answer(stream_chat(request, base_url="http://127.0.0.1:8765/v1"))

``send_answer`` streams the answer into one message (superscript footnotes as tokens
arrive, ✓/✗ after each claim as soon as it is checked: the message is updated in
place), then its sources section (each footnote's own quoted passage, the document's
title and link) and the grounding verdict. Reasoning streams into a "Thinking" step and
each tool call is a tool step. Chainlit's Stop button cancels the task, which closes
the upstream request.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():  # Chainlit's own DeprecationWarnings (pydantic), not the caller's
    warnings.simplefilter("ignore", DeprecationWarning)
    import chainlit as cl

from streamcite.core.events import ReasoningEvent
from streamcite.core.models import CitedAnswer
from streamcite.pipeline import ChatStream
from streamcite.ui.render import ChatView, Pacer, escape_markdown, full_markdown, tool_markdown

__all__ = ["AnswerMessage", "send_answer"]

THINKING_STEP = "Thinking"


class AnswerMessage:
    """One answer being shown: its message, its thinking step and its tool steps."""

    def __init__(self, author: str | None = None) -> None:
        self.view = ChatView()
        self.message = cl.Message(content="", author=author)
        self._shown = ""
        self._thinking: cl.Step | None = None
        self._tools: dict[int, cl.Step] = {}

    async def show(self, changed: str, event: object) -> None:
        """Bring the page up to date after an event that changed ``changed``."""
        if changed == "reasoning" and isinstance(event, ReasoningEvent):
            if self._thinking is None:
                self._thinking = cl.Step(name=THINKING_STEP, type="llm")
                await self._thinking.send()
            await self._thinking.stream_token(escape_markdown(event.text))
        elif changed == "tool":
            await self._show_tools()
        elif changed:
            await self._show_answer()

    async def refresh(self) -> None:
        """Bring the answer and the tool steps up to date (after held-back changes)."""
        if self.view.tool_calls:
            await self._show_tools()
        await self._show_answer()

    async def _show_tools(self) -> None:
        for index, call in self.view.tool_calls.items():
            step = self._tools.get(index)
            if step is None:
                name = escape_markdown(call.name or "tool")
                step = self._tools[index] = cl.Step(name=name, type="tool", show_input=False)
                await step.send()
            step.output = tool_markdown(call)
            await step.update()

    async def _show_answer(self) -> None:
        content = full_markdown(self.view)
        if content == self._shown:
            return
        if self._shown and content.startswith(self._shown):
            await self.message.stream_token(content[len(self._shown) :])
        else:  # a footnote completed or a claim mark arrived: the whole text again
            await self.message.stream_token(content, is_sequence=True)
        self._shown = content

    async def finish(self) -> None:
        if self._thinking is not None:
            await self._thinking.update()
        self.message.content = full_markdown(self.view)
        if self._shown:
            await self.message.update()
        else:
            await self.message.send()


async def send_answer(stream: ChatStream, *, author: str | None = None) -> CitedAnswer:
    """Run ``stream`` into the chat; returns its final answer. A cancelled task (the
    Stop button) closes the stream and the upstream request."""
    shown = AnswerMessage(author)
    pacer = Pacer()  # a long answer is redrawn at a pace its size allows
    async with stream:
        async for event in stream:
            changed = shown.view.feed(event)
            if changed == "reasoning":  # streamed token by token: nothing to redraw
                await shown.show(changed, event)
            elif pacer.wants(changed):
                started = pacer.start()
                await (shown.show(changed, event) if changed else shown.refresh())
                pacer.drawn(started)
    await shown.finish()
    return stream.answer
