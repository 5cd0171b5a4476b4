"""The user's question in a request of any API ``stream_chat`` speaks.

An enricher gets the request as it was sent (:attr:`EnrichContext.request`): a Chat
Completions, Anthropic or Cohere body has ``messages``, a Responses body ``input`` (a
string or input items), a Gemini body ``contents`` (``parts`` with ``text``). Azure's
QnA check sends the question as ``qna.query``; the local checker reads it as a language
sample. Only string text counts (a hostile nested value is no text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["question_of"]


def question_of(request: Mapping[str, Any]) -> str:
    """The last user turn's text, whichever API's body ``request`` is; ``""`` if none.

    >>> question_of({"messages": [{"role": "user", "content": "Why?"}]})
    'Why?'
    >>> question_of({"input": [{"role": "user", "content": [{"type": "input_text", "text": "Où ?"}]}]})
    'Où ?'
    >>> question_of({"contents": [{"role": "user", "parts": [{"text": "Wie?"}]}]})
    'Wie?'
    """
    turns: Any = request.get("messages")
    if turns is None:
        turns = request.get("input")
        if isinstance(turns, str):
            return turns
    if turns is None:
        turns = request.get("contents")
    if not isinstance(turns, list):
        return ""
    for turn in reversed(turns):
        if isinstance(turn, Mapping) and turn.get("role", "user") == "user":
            content = turn.get("content", turn.get("parts"))
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                texts = (p.get("text") for p in content if isinstance(p, Mapping))
                return " ".join(t for t in texts if isinstance(t, str))
            return ""
    return ""
