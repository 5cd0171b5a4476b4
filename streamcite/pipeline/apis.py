"""What each provider API wants on the wire: path, auth and version headers, body.

``stream_chat(request, base_url=..., api=...)`` sends ``request`` (that API's own body)
to the API's streaming endpoint under ``base_url``. ``base_url`` is what the API's SDK
takes, or the API root with its version (:func:`api_base`):

- ``chat``, ``responses``: as given (the OpenAI SDK's ``https://api.openai.com/v1``, or any
  OpenAI-compatible root);
- ``anthropic``: ``https://api.anthropic.com`` (its SDK's; ``/v1`` added) or ``…/v1``;
- ``gemini``: ``https://generativelanguage.googleapis.com`` (``/v1beta`` added), or
  ``…/v1beta`` / ``…/v1``;
- ``cohere``: ``https://api.cohere.com`` (``/v2`` added) or ``…/v2``;

and appends:

=============  =================================================  =======================================
api            URL                                                headers
=============  =================================================  =======================================
``chat``       ``{base}/chat/completions``                         ``Authorization: Bearer KEY``
``responses``  ``{base}/responses``                                ``Authorization: Bearer KEY``
``anthropic``  ``{base}/messages``                                 ``x-api-key: KEY``, ``anthropic-version``
``gemini``     ``{base}/models/{model}:streamGenerateContent``     ``x-goog-api-key: KEY``
               ``?alt=sse`` (``:generateContent`` when the
               request says ``"stream": false``)
``cohere``     ``{base}/chat``                                     ``Authorization: Bearer KEY``
=============  =================================================  =======================================

Gemini's body has no model: :func:`prepare_request` takes ``request["model"]`` (a
leading ``models/`` dropped), puts it in the path, and sends the rest of the body.
Pure functions: no I/O here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args
from urllib.parse import quote, urlsplit

import orjson

__all__ = [
    "ANTHROPIC_VERSION",
    "APIS",
    "Api",
    "PreparedRequest",
    "api_base",
    "api_root",
    "check_api",
    "prepare_request",
    "version_segment",
]

Api = Literal["chat", "responses", "anthropic", "gemini", "cohere"]
"""The provider APIs ``stream_chat`` speaks (each read by the core dialect of that name)."""

APIS: tuple[Api, ...] = get_args(Api)

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent unless the caller's headers set one."""

_PATHS: dict[str, str] = {
    "chat": "/chat/completions",
    "responses": "/responses",
    "anthropic": "/messages",
    "cohere": "/chat",
}

_ROOTS: dict[str, str] = {
    "chat": "/v1",
    "responses": "/v1",
    "anthropic": "/v1",
    "gemini": "/v1beta",
    "cohere": "/v2",
}


_KNOWN: dict[str, Api] = {a: a for a in APIS}


def check_api(api: str) -> Api:
    """``api`` if it is one of :data:`APIS`, else ``ValueError``."""
    known = _KNOWN.get(api) if isinstance(api, str) else None
    if known is None:
        raise ValueError(f"unknown api {api!r}: one of {', '.join(APIS)}")
    return known


_VERSION = re.compile(r"v[0-9]{1,3}(?:(?:alpha|beta)[0-9]{0,3})?")
"""A path segment that names an API version: ``v1``, ``v2``, ``v1beta``, ``v1beta1``…"""
_SDK_ROOT_APIS = frozenset({"anthropic", "gemini", "cohere"})
"""The APIs whose SDKs take the server's root and add the version themselves (the OpenAI
SDK's base URL already ends with it, and OpenAI-compatible servers put it anywhere)."""


def version_segment(base_url: str) -> str | None:
    """The version segment ``base_url``'s path ends with (``v1``, ``v1beta``…), else None.

    >>> version_segment("http://h/v1/"), version_segment("http://h/api"), version_segment("x")
    ('v1', None, None)
    """
    last = urlsplit(base_url).path.rstrip("/").rpartition("/")[2]
    return last if _VERSION.fullmatch(last) else None


def api_base(base_url: str, api: str) -> str:
    """The versioned API root ``base_url`` stands for, as ``api``'s SDK reads it.

    A base URL whose path ends with a version segment (``…/v1``, ``…/v2``,
    ``…/v1beta``) is the API root already. Otherwise, for Anthropic, Gemini and Cohere
    it is the server's root their SDKs take, and the API's version is added (``/v1``,
    ``/v1beta``, ``/v2``; a Vertex AI ``…/publishers/google`` root is kept whole). The
    OpenAI APIs' base URL is always as given: the OpenAI SDK's includes the version, and
    OpenAI-compatible servers serve at many paths.

    >>> api_base("http://127.0.0.1:8765", "anthropic"), api_base("http://h/v2/", "cohere")
    ('http://127.0.0.1:8765/v1', 'http://h/v2')
    >>> api_base("https://generativelanguage.googleapis.com/", "gemini")
    'https://generativelanguage.googleapis.com/v1beta'
    >>> api_base("https://api.perplexity.ai", "chat")
    'https://api.perplexity.ai'
    """
    api = check_api(api)
    root = base_url.rstrip("/")
    if api not in _SDK_ROOT_APIS or version_segment(root) is not None:
        return root
    if api == "gemini" and "/publishers/" in urlsplit(root).path:
        return root
    return api_root(root, api)


_api_base_of = functools.lru_cache(maxsize=64)(api_base)
""":func:`api_base`, kept per base URL and API: every stream of a relay asks it again
(two URL splits), and the answer is a string."""


def api_root(server_root: str, api: str) -> str:
    """The API root of ``api`` on a server (its SDK's base URL), e.g. the embedded backend.

    >>> api_root("http://127.0.0.1:8765", "gemini"), api_root("http://127.0.0.1:8765/", "cohere")
    ('http://127.0.0.1:8765/v1beta', 'http://127.0.0.1:8765/v2')
    """
    return server_root.rstrip("/") + _ROOTS[check_api(api)]


@dataclass(slots=True)
class PreparedRequest:
    """One request as sent: where, with which headers, which bytes."""

    url: str
    headers: dict[str, str]
    """Includes the credentials: never log or show them."""
    body: bytes
    model: str | None
    """The model asked for (Gemini's is in ``url``, not ``body``)."""

    def __repr__(self) -> str:  # never the headers (keys) nor the body (the conversation)
        return f"<PreparedRequest {self.url.partition('?')[0]!r} model={self.model!r}>"


def prepare_request(
    api: str,
    request: Mapping[str, Any],
    *,
    base_url: str,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> PreparedRequest:
    """The URL, headers and body of ``request`` for ``api``.

    The caller's ``headers`` are kept (they may override ``anthropic-version``); the
    key, when given, is set in the API's own auth header, replacing any the caller set.

    >>> r = prepare_request("gemini", {"model": "models/gemini-2.5-flash", "contents": []},
    ...                     base_url="https://generativelanguage.googleapis.com/v1beta/",
    ...                     api_key="k")
    >>> r.url
    'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse'
    >>> r.body, sorted(r.headers)
    (b'{"contents":[]}', ['Content-Type', 'x-goog-api-key'])
    """
    api = check_api(api)
    root = _api_base_of(base_url, api) if type(base_url) is str else api_base(base_url, api)
    model = request.get("model")
    out: dict[str, str] = {"Content-Type": "application/json"}
    if api == "anthropic":
        out["anthropic-version"] = ANTHROPIC_VERSION
    if headers:
        out.update(_without_auth(headers, api) if api_key else headers)
    if api == "gemini":
        body: Mapping[str, Any] = {k: v for k, v in request.items() if k not in ("model", "stream")}
        url = root + _gemini_path(model, streaming=request.get("stream", True) is not False)
    else:
        body = request if type(request) is dict else dict(request)
        url = root + _PATHS[api]
    if api_key:
        if api == "anthropic":
            out["x-api-key"] = api_key
        elif api == "gemini":
            out["x-goog-api-key"] = api_key
        else:
            out["Authorization"] = f"Bearer {api_key}"
    return PreparedRequest(url, out, orjson.dumps(body), model if isinstance(model, str) else None)


_AUTH_HEADERS = {
    "anthropic": frozenset({"x-api-key", "authorization"}),
    "gemini": frozenset({"x-goog-api-key", "authorization"}),
}


def _without_auth(headers: Mapping[str, str], api: str) -> dict[str, str]:
    """The caller's headers, minus the auth header(s) the key replaces (any case)."""
    names = _AUTH_HEADERS.get(api, frozenset({"authorization"}))
    return {k: v for k, v in headers.items() if k.lower() not in names}


def _gemini_path(model: Any, *, streaming: bool) -> str:
    if not isinstance(model, str) or not model.strip():
        raise ValueError('api="gemini" needs request["model"] (it goes into the URL path)')
    name = model.strip().removeprefix("models/")
    # Quoted whole: a model name cannot add path segments or a query to the URL.
    method = ":streamGenerateContent?alt=sse" if streaming else ":generateContent"
    return f"/models/{quote(name, safe='')}{method}"
