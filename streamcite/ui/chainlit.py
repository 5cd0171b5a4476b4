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
place), then its sources and the grounding verdict. Sources are Chainlit's own pattern
for citations: one ``cl.Text`` element (``display="side"``) per footnote, which the
message names (``¹ Remote Work Policy``) so Chainlit makes the name a link; a click
opens the side panel with that footnote's document (title, link, heading) and ITS OWN
quoted passages. Reasoning streams into a "Thinking" step and each tool call is a tool
step. Chainlit's Stop button cancels the task, which closes the upstream request.
"""

from __future__ import annotations

import unicodedata
import warnings
from typing import Any

with warnings.catch_warnings():  # Chainlit's own DeprecationWarnings (pydantic), not the caller's
    warnings.simplefilter("ignore", DeprecationWarning)
    import chainlit as cl

from streamcite.core.events import ReasoningEvent
from streamcite.core.models import CitedAnswer
from streamcite.pipeline import ChatStream
from streamcite.ui.render import (
    ChatView,
    Footnote,
    Pacer,
    escape_markdown,
    footnote_heading,
    footnotes,
    full_markdown,
    quote_markdown,
    tool_markdown,
)

__all__ = ["AnswerMessage", "send_answer", "source_content", "source_name", "sources_refs"]

THINKING_STEP = "Thinking"
MAX_NAME_CHARS = 60
"""A source's name (its link in the message) keeps this much of the document's title."""
_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def source_name(note: Footnote) -> str:
    """The name of a footnote's side element, which the message shows as a link: its
    superscript number and its document's title as plain words (letters, digits and
    spaces only, so the name reads the same in the escaped Markdown and is inert where
    Chainlit writes it into a link).

    >>> source_name(Footnote(2, "Remote <b>Work</b> Policy (v2)", None, None, ()))
    '² Remote b Work b Policy v2'
    """
    title = unicodedata.normalize("NFC", note.title)
    words = " ".join("".join(c if c.isalnum() else " " for c in title).split())
    if len(words) > MAX_NAME_CHARS:
        words = words[:MAX_NAME_CHARS].rsplit(" ", 1)[0] + "…"
    return f"{str(note.number).translate(_SUPERSCRIPTS)} {words or 'Source'}"


def source_content(note: Footnote) -> str:
    """What the side panel shows for one footnote: its document (title linked to its
    URL, heading) and each passage the provider quoted for it."""
    passages = [quote_markdown(p) for p in note.passages] or ["_(no quoted passage)_"]
    return "\n\n".join([footnote_heading(note), *passages])


def sources_refs(view: ChatView) -> str:
    """The message's sources list: each footnote's element name (a link in Chainlit),
    with the section of the document it quotes."""
    lines = []
    for note in footnotes(view):
        heading = f" — {escape_markdown(note.heading)}" if note.heading else ""
        lines.append(f"- {source_name(note)}{heading}")
    return "**Sources**\n\n" + "\n".join(lines) if lines else ""


class AnswerMessage:
    """One answer being shown: its message, its thinking step and its tool steps."""

    def __init__(self, author: str | None = None) -> None:
        self.view = ChatView()
        self.message = cl.Message(content="", author=author)
        self._shown = ""
        self._thinking: cl.Step | None = None
        self._tools: dict[int, cl.Step] = {}
        self._sources: dict[int, cl.Text] = {}

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
            if changed in ("sources", "done"):
                await self._show_sources()

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

    async def _show_sources(self) -> None:
        """One side element per footnote, sent (or sent again) when it changed."""
        wanted = {n.number: (source_name(n), source_content(n)) for n in footnotes(self.view)}
        elements: list[Any] = self.message.elements  # Chainlit types it with a TypeVar
        for number in [n for n in self._sources if n not in wanted]:
            gone = self._sources.pop(number)
            elements.remove(gone)
            await gone.remove()
        for number, (name, content) in wanted.items():
            element = self._sources.get(number)
            if element is None:
                element = cl.Text(name=name, content=content, display="side")
                self._sources[number] = element
                elements.append(element)
            elif (element.name, element.content) == (name, content):
                continue
            else:  # Chainlit stores its content again and the page replaces it (same id)
                element.name, element.content, element.updatable = name, content, True
            await element.send(for_id=self.message.id)
            element.updatable = False

    async def _show_answer(self) -> None:
        content = full_markdown(self.view, sources_refs)
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
        self.message.content = full_markdown(self.view, sources_refs)
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
