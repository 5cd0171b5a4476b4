"""A Streamlit chat with cited, streaming answers (``pip install 'streamcite[streamlit]'``).

    streamcite serve-local &                                          # 127.0.0.1:8765
    streamlit run examples/streamlit_chat.py --server.headless true --server.port 8501

Footnotes stream as superscripts, each claim gets ✓/✗ as soon as it is checked, and
under the answer: each footnote's own quoted passage, Wikit's quoted sources and the
grounding verdict. Streamlit runs this script again for every message: the
conversation lives in ``st.session_state``. ``STREAMCITE_BASE_URL`` (an
OpenAI-compatible ``/v1`` root), ``STREAMCITE_MODEL`` and ``STREAMCITE_API`` (``chat``,
``responses``, ``anthropic``, ``gemini``, ``cohere``) choose the upstream;
``STREAMCITE_API_KEY`` its key.
"""

import os
from urllib.parse import urlsplit

import streamlit as st

from streamcite import Enricher, stream_chat_sync
from streamcite.enrich import LocalGrounding, WikitSources
from streamcite.pipeline.bodies import chat_request_as
from streamcite.ui.render import escape_markdown
from streamcite.ui.streamlit import show_answer, write_answer

BASE_URL = os.environ.get("STREAMCITE_BASE_URL", "http://127.0.0.1:8765/v1")
MODEL = os.environ.get("STREAMCITE_MODEL", "streamcite-local")
API = os.environ.get("STREAMCITE_API", "chat")
LOCAL = urlsplit(BASE_URL).hostname in ("127.0.0.1", "localhost", "::1")


def enrichers() -> list[Enricher]:
    """After each answer: the offline checker; Wikit's quoted sources from serve-local."""
    root = BASE_URL.rsplit("/", 1)[0]  # serve-local's Wikit API is beside its /v1
    return [WikitSources(base_url=root), LocalGrounding()] if LOCAL else [LocalGrounding()]


st.title("streamcite · Streamlit")
turns = st.session_state.setdefault("turns", [])  # (question, CitedAnswer) pairs
for asked, answered in turns:
    with st.chat_message("user"):
        st.markdown(escape_markdown(asked))
    with st.chat_message("assistant"):
        show_answer(answered)

if question := st.chat_input("Ask a question"):
    with st.chat_message("user"):
        st.markdown(escape_markdown(question))
    messages = []
    for asked, answered in turns:
        messages += [
            {"role": "user", "content": asked},
            {"role": "assistant", "content": answered.text},
        ]
    messages.append({"role": "user", "content": question})
    request = chat_request_as(API, {"model": MODEL, "messages": messages, "stream": True})
    stream = stream_chat_sync(
        request,
        base_url=BASE_URL,
        api=API,
        api_key=os.environ.get("STREAMCITE_API_KEY"),
        after=enrichers(),
    )
    with st.chat_message("assistant"):
        answer = write_answer(stream)  # Stop (or a new message) closes it, and the upstream
    turns.append((question, answer))
