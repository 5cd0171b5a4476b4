"""A Chat Completions request body → the same request in another API's own body.

``stream_chat`` sends the body it is given, unchanged: for ``api="anthropic"`` an
Anthropic Messages body, and so on. The command line (``ask``, ``bench``, ``relay``)
and the relay build one chat-shaped request (model, messages, a few options); this
module rewrites it for the API chosen with ``--api``:

=============  ================================================================
api            body
=============  ================================================================
``chat``       unchanged
``responses``  ``input`` (the messages), ``instructions`` (system), ``max_output_tokens``
``anthropic``  ``messages``, ``system``, ``max_tokens`` (required: 1024 when not given)
``gemini``     ``contents`` (roles ``user`` / ``model``, text ``parts``),
               ``systemInstruction``, ``generationConfig`` (``maxOutputTokens``,
               ``temperature``, ``topP``, ``stopSequences``)
``cohere``     ``messages`` (system included), ``max_tokens``
=============  ================================================================

``model`` and ``stream`` are kept (Gemini's model goes to the URL path, see
:mod:`~streamcite.pipeline.apis`); ``stream_options`` (``include_usage``) is dropped:
the other APIs report usage without being asked. Other keys are passed on as they
are (a benchmark's ``--extra-body`` is written for the API it targets).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamcite.pipeline.apis import check_api

__all__ = ["ANTHROPIC_MAX_TOKENS", "chat_request_as"]

ANTHROPIC_MAX_TOKENS = 1024
"""``max_tokens`` sent to Anthropic when the chat request has none (the API requires it)."""

_COMMON = ("model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens")


def chat_request_as(api: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """``request`` (a Chat Completions body) rewritten for ``api``.

    >>> chat = {"model": "m", "stream": True, "max_tokens": 50,
    ...         "messages": [{"role": "system", "content": "Be brief."},
    ...                      {"role": "user", "content": "Hi?"}]}
    >>> chat_request_as("anthropic", chat)
    {'model': 'm', 'stream': True, 'max_tokens': 50, 'system': 'Be brief.', 'messages': [{'role': 'user', 'content': 'Hi?'}]}
    >>> chat_request_as("gemini", chat)["contents"]
    [{'role': 'user', 'parts': [{'text': 'Hi?'}]}]
    """
    api = check_api(api)
    if api == "chat":
        return dict(request)
    messages = [m for m in request.get("messages") or () if isinstance(m, Mapping)]
    system = "\n\n".join(
        _text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    )
    turns = [m for m in messages if m.get("role") not in ("system", "developer")]
    limit = request.get("max_completion_tokens", request.get("max_tokens"))
    rest = {k: v for k, v in request.items() if k not in _COMMON}
    out: dict[str, Any] = {}
    if "model" in request:
        out["model"] = request["model"]
    if api != "gemini":
        out["stream"] = request.get("stream", True)
    elif request.get("stream") is False:
        out["stream"] = False  # read by prepare_request: :generateContent, not sent
    if api == "responses":
        if system:
            out["instructions"] = system
        out["input"] = [_message(m) for m in turns]
        if limit is not None:
            out["max_output_tokens"] = limit
    elif api == "anthropic":
        out["max_tokens"] = limit if limit is not None else ANTHROPIC_MAX_TOKENS
        if system:
            out["system"] = system
        out["messages"] = [_message(m) for m in turns]
    elif api == "cohere":
        out["messages"] = [_message(m) for m in messages]
        if limit is not None:
            out["max_tokens"] = limit
    else:  # gemini
        out["contents"] = [
            {"role": "model" if m.get("role") == "assistant" else "user", "parts": [_part(m)]}
            for m in turns
        ]
        if system:
            out["systemInstruction"] = {"parts": [{"text": system}]}
        config = _generation_config(rest, limit)
        if config:
            out["generationConfig"] = config
    out.update(rest)
    return out


def _text(content: Any) -> str:
    """A message's text: a string, or the ``text`` of its typed parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, Mapping)
            and p.get("type") in (None, "text", "input_text")
            and isinstance(p.get("text"), str)
        )
    return ""


def _message(m: Mapping[str, Any]) -> dict[str, Any]:
    role = m.get("role")
    role = "system" if role == "developer" else role
    if role not in ("user", "assistant", "system"):
        role = "user"  # tool results and unknown roles: their text, as the user's
    return {"role": role, "content": _text(m.get("content"))}


def _part(m: Mapping[str, Any]) -> dict[str, Any]:
    return {"text": _text(m.get("content"))}


_GEMINI_CONFIG = {"temperature": "temperature", "top_p": "topP", "stop": "stopSequences"}


def _generation_config(rest: dict[str, Any], limit: Any) -> dict[str, Any]:
    """Gemini's ``generationConfig`` from the chat options it has (taken out of ``rest``)."""
    config: dict[str, Any] = {}
    if limit is not None:
        config["maxOutputTokens"] = limit
    for chat_key, key in _GEMINI_CONFIG.items():
        if chat_key in rest:
            value = rest.pop(chat_key)
            config[key] = [value] if key == "stopSequences" and isinstance(value, str) else value
    return config
