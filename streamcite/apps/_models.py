"""``ask --base-url URL`` with no ``--model``: the model the server lists, when it lists one.

``GET {base_url}/models`` in the API's own way (OpenAI and Anthropic: ``data[].id``;
Gemini: ``models[].name`` without ``models/``; Cohere: its ``/v1/models`` list beside
the ``/v2`` root). One model: it is used. Several: they are listed and the command
stops (a usage error: pick one with ``-m``). None, or no list (the server has no such
endpoint, it refused, it is not there): one line saying so and what to do.

Bounded: one request under :data:`TIMEOUT` seconds, at most :data:`MAX_BODY` bytes read,
at most :data:`MAX_LISTED` names shown, each made inert for the terminal.
"""

from __future__ import annotations

from typing import Any

import click
import orjson

from streamcite.apps._terminal import one_line

__all__ = ["MAX_BODY", "MAX_LISTED", "TIMEOUT", "ModelListError", "discover_model", "models_url"]

TIMEOUT = 10.0
MAX_BODY = 4 << 20
MAX_LISTED = 20
_MAX_NAME = 200


class ModelListError(click.ClickException):
    """No model could be chosen from the server's list (exit status 1)."""


class SeveralModels(click.UsageError):
    """The server lists several models: the user picks one (exit status 2)."""


def models_url(base_url: str, api: str) -> str:
    """Where ``api``'s model list lives for the API root ``base_url``."""
    from streamcite.pipeline.apis import api_base

    root = api_base(base_url, api).rstrip("/")  # a server root: the SDK's version added
    if api == "cohere" and root.endswith("/v2"):
        root = root[: -len("/v2")] + "/v1"  # Cohere lists its models under v1
    return root + "/models"


def _headers(api: str, key: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if api == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
        if key:
            headers["x-api-key"] = key
    elif api == "gemini":
        if key:
            headers["x-goog-api-key"] = key
    elif key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _names(body: Any) -> list[str]:
    """Model names of a list response in any of the vendors' shapes (others: none)."""
    if not isinstance(body, dict):
        return []
    items = body.get("data")
    key = "id"
    if not isinstance(items, list):
        items, key = body.get("models"), "name"
    if not isinstance(items, list):
        return []
    out: list[str] = []
    for item in items[:10_000]:
        if isinstance(item, dict):
            name = item.get(key) or item.get("id")
            if isinstance(name, str) and name:
                out.append(name.removeprefix("models/")[:_MAX_NAME])
    return list(dict.fromkeys(out))


def _fetch(url: str, headers: dict[str, str]) -> tuple[int, bytes]:
    import httpx

    with (
        httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client,
        client.stream("GET", url, headers=headers) as resp,
    ):
        body = bytearray()
        for part in resp.iter_bytes():
            body += part
            if len(body) > MAX_BODY:
                break
        return resp.status_code, bytes(body[:MAX_BODY])


def discover_model(base_url: str, api: str, key: str | None) -> str:
    """The one model ``base_url`` lists, or a click exception saying why there is none."""
    import httpx

    from streamcite.pipeline.opening import connect_message

    url = models_url(base_url, api)
    shown = one_line(url)
    fix = "give the model with -m NAME"
    try:
        status, raw = _fetch(url, _headers(api, key))
    except httpx.TimeoutException:
        raise ModelListError(f"no --model given and {shown} did not answer; {fix}") from None
    except httpx.HTTPError as exc:
        reason = connect_message(f"cannot connect: {type(exc).__name__}", url)
        raise ModelListError(f"no --model given and {one_line(reason)}; or {fix}") from None
    if status >= 400:
        from streamcite.apps._usage import base_url_hint

        hint = base_url_hint(base_url, status, api)  # a wrong root: where the API lives
        hint = f"; {one_line(hint.removeprefix('hint: '))}" if hint else ""
        raise ModelListError(
            f"no --model given and GET {shown} answered HTTP {status}{hint}; or {fix}"
        )
    try:
        names = _names(orjson.loads(raw))
    except orjson.JSONDecodeError:
        names = []
    if not names:
        raise ModelListError(f"no --model given and {shown} lists no model; {fix}")
    if len(names) > 1:
        listed = ", ".join(one_line(n) for n in names[:MAX_LISTED])
        more = len(names) - MAX_LISTED
        if more > 0:
            listed += f" (and {more} more)"
        raise SeveralModels(f"{shown} lists {len(names)} models: {listed}; pick one with -m NAME")
    return names[0]
