"""Gradio: a cited, streaming answer as ``gr.ChatInterface`` messages (``streamcite[gradio]``).

::

    import gradio as gr
    from streamcite.ui.gradio import chat_fn

    gr.ChatInterface(chat_fn(base_url="http://127.0.0.1:8765/v1", model="streamcite-local"),
                     chatbot=gr.Chatbot(latex_delimiters=[])).launch()

The function ``chat_fn`` returns is the async generator ``ChatInterface`` takes: each
change yields the assistant's messages so far — the reasoning as a collapsible
"Thinking" message, each tool call as a collapsible step, then the answer with
superscript footnotes and claim marks, its sources section (each footnote's own quoted
passage, the document's title and link) and the grounding verdict. Gradio's Stop
button closes the generator, which closes the upstream request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import gradio as gr

from streamcite.core.models import CitedAnswer
from streamcite.enrich.base import Enricher
from streamcite.pipeline import ChatStream, stream_chat
from streamcite.pipeline.apis import Api
from streamcite.ui.render import (
    ChatView,
    Pacer,
    escape_markdown,
    full_markdown,
    plain_text,
    tool_markdown,
)

__all__ = ["answer_messages", "chat_fn", "history_messages", "view_messages"]

THINKING_TITLE = "Thinking"


def view_messages(view: ChatView) -> list[gr.ChatMessage]:
    """The assistant's messages for ``view``: thinking, tool steps, the answer."""
    out: list[gr.ChatMessage] = []
    answering = bool(view.text) or view.done
    if view.reasoning:
        out.append(
            gr.ChatMessage(
                content=escape_markdown(view.reasoning),
                metadata={"title": THINKING_TITLE, "status": "done" if answering else "pending"},
            )
        )
    for call in view.tool_calls.values():
        title = f"Tool call: {escape_markdown(call.name or '?')}"
        out.append(gr.ChatMessage(content=tool_markdown(call), metadata={"title": title}))
    out.append(gr.ChatMessage(content=full_markdown(view)))
    return out


async def answer_messages(stream: ChatStream) -> AsyncIterator[list[gr.ChatMessage]]:
    """Run ``stream``; after each event that changes what is shown, the messages so far.

    The stream is closed when this generator is (Gradio's Stop button). A long answer
    is redrawn at a pace its size allows (:class:`~streamcite.ui.render.Pacer`)."""
    view = ChatView()
    pacer = Pacer()
    async with stream:
        async for event in stream:
            if pacer.wants(view.feed(event)):
                started = pacer.start()
                messages = view_messages(view)
                pacer.drawn(started)
                yield messages
        if pacer.pending:
            yield view_messages(view)


def history_messages(history: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Gradio's chat history as chat-completions messages: text only, thinking and tool
    steps left out, each answer without its sources section and marks."""
    out: list[dict[str, str]] = []
    for message in history:
        role = message.get("role")
        metadata = message.get("metadata") or {}
        if role not in ("user", "assistant") or metadata.get("title"):
            continue
        text = _text_of(message.get("content"))
        if role == "assistant":
            text = plain_text(text)
        if text:
            out.append({"role": str(role), "content": text})
    return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        text = content.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(content, list):
        return "\n".join(t for t in (_text_of(c) for c in content) if t)
    return ""


def chat_fn(
    *,
    base_url: str,
    model: str,
    api: Api = "chat",
    enrichers: Callable[[], Sequence[Enricher]] = lambda: (),
    on_answer: Callable[[CitedAnswer], None] | None = None,
    **options: Any,
) -> Callable[[Any, list[Any]], AsyncIterator[list[gr.ChatMessage]]]:
    """The function for ``gr.ChatInterface(fn)``: asks ``model`` at ``base_url`` (``api``:
    the provider API) with the conversation so far. ``enrichers()`` makes the enrichers
    of each answer (Wikit sources, a grounding check); ``options`` go to ``stream_chat``
    (``api_key``, ``timeouts``, ...); ``on_answer`` receives each final answer."""
    from streamcite.pipeline.bodies import chat_request_as

    async def respond(message: Any, history: list[Any]) -> AsyncIterator[list[gr.ChatMessage]]:
        messages = [*history_messages(history), {"role": "user", "content": _text_of(message)}]
        chat = {"model": model, "messages": messages, "stream": True}
        stream = stream_chat(
            chat_request_as(api, chat), base_url=base_url, api=api, after=enrichers(), **options
        )
        async for messages_so_far in answer_messages(stream):
            yield messages_so_far
        if on_answer is not None:
            on_answer(stream.answer)

    return respond
