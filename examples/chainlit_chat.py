"""A Chainlit chat with cited, streaming answers (``pip install 'streamcite[chainlit]'``).

    streamcite serve-local &                                    # 127.0.0.1:8765
    chainlit run examples/chainlit_chat.py --headless --port 8000

Footnotes stream as superscripts, each claim gets ✓/✗ as soon as it is checked, and
under the answer: a link per footnote (a side ``cl.Text`` element; a click shows that
footnote's own quoted passages in the side panel), Wikit's quoted sources and the
grounding verdict; reasoning and tool calls are steps. ``STREAMCITE_BASE_URL`` (an
OpenAI-compatible ``/v1`` root), ``STREAMCITE_MODEL`` and ``STREAMCITE_API`` (``chat``,
``responses``, ``anthropic``, ``gemini``, ``cohere``) choose the upstream;
``STREAMCITE_API_KEY`` its key. Chainlit writes ``.chainlit/``, ``chainlit.md`` and
``.files/`` in the directory it runs in.
"""

import os
from urllib.parse import urlsplit

import chainlit as cl

from streamcite import Enricher, stream_chat
from streamcite.enrich import LocalGrounding, WikitSources
from streamcite.pipeline.bodies import chat_request_as
from streamcite.ui.chainlit import send_answer

BASE_URL = os.environ.get("STREAMCITE_BASE_URL", "http://127.0.0.1:8765/v1")
MODEL = os.environ.get("STREAMCITE_MODEL", "streamcite-local")
API = os.environ.get("STREAMCITE_API", "chat")
LOCAL = urlsplit(BASE_URL).hostname in ("127.0.0.1", "localhost", "::1")


def enrichers() -> list[Enricher]:
    """After each answer: the offline checker; Wikit's quoted sources from serve-local."""
    root = BASE_URL.rsplit("/", 1)[0]  # serve-local's Wikit API is beside its /v1
    return [WikitSources(base_url=root), LocalGrounding()] if LOCAL else [LocalGrounding()]


@cl.on_message
async def on_message(message: cl.Message) -> None:
    history = cl.user_session.get("history") or []
    history.append({"role": "user", "content": message.content})
    request = chat_request_as(API, {"model": MODEL, "messages": history, "stream": True})
    stream = stream_chat(
        request,
        base_url=BASE_URL,
        api=API,
        api_key=os.environ.get("STREAMCITE_API_KEY"),
        after=enrichers(),
    )
    answer = await send_answer(stream)  # the Stop button cancels it (and the upstream)
    history.append({"role": "assistant", "content": answer.text})
    cl.user_session.set("history", history)
