"""A Gradio chat with cited, streaming answers (``pip install 'streamcite[gradio]'``).

    streamcite serve-local &                 # the embedded backend on 127.0.0.1:8765
    python examples/gradio_chat.py           # http://127.0.0.1:7860 (GRADIO_SERVER_PORT)

Footnotes stream as superscripts, each claim gets ✓/✗ as soon as it is checked, and
under the answer: each footnote's own quoted passage, Wikit's quoted sources and the
grounding verdict. ``STREAMCITE_BASE_URL`` (an OpenAI-compatible ``/v1`` root),
``STREAMCITE_MODEL`` and ``STREAMCITE_API`` (``chat``, ``responses``, ``anthropic``,
``gemini``, ``cohere``) choose the upstream; ``STREAMCITE_API_KEY`` its key.
"""

import os
from urllib.parse import urlsplit

import gradio as gr

from streamcite import Enricher
from streamcite.enrich import LocalGrounding, WikitSources
from streamcite.ui.gradio import chat_fn

BASE_URL = os.environ.get("STREAMCITE_BASE_URL", "http://127.0.0.1:8765/v1")
MODEL = os.environ.get("STREAMCITE_MODEL", "streamcite-local")
API = os.environ.get("STREAMCITE_API", "chat")
LOCAL = urlsplit(BASE_URL).hostname in ("127.0.0.1", "localhost", "::1")


def enrichers() -> list[Enricher]:
    """After each answer: the offline checker; Wikit's quoted sources from serve-local."""
    root = BASE_URL.rsplit("/", 1)[0]  # serve-local's Wikit API is beside its /v1
    return [WikitSources(base_url=root), LocalGrounding()] if LOCAL else [LocalGrounding()]


demo = gr.ChatInterface(
    chat_fn(
        base_url=BASE_URL,
        model=MODEL,
        api=API,
        enrichers=enrichers,
        api_key=os.environ.get("STREAMCITE_API_KEY"),
    ),
    chatbot=gr.Chatbot(latex_delimiters=[], height="80vh"),  # "$" is text, not LaTeX
    title="streamcite · Gradio",
)

if __name__ == "__main__":
    demo.launch()  # GRADIO_SERVER_PORT / GRADIO_SERVER_NAME choose where
