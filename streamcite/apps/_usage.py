"""User mistakes reported as one line and a fix, never a traceback (shared by the commands)."""

from __future__ import annotations

import errno
import os
import socket
from urllib.parse import urlsplit

import click


class BindError(click.ClickException):
    """Listening on HOST:PORT failed; exit code 2 like a usage error."""

    exit_code = 2


def bind_error(exc: OSError, host: str, port: int) -> BindError:
    """One line naming the address and the fix for an ``OSError`` raised while binding."""
    where = f"{host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return BindError(
            f"cannot listen on {where}: the port is already in use; "
            "stop the other server or pick another --port (0 picks a free one)"
        )
    if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) or isinstance(exc, socket.gaierror):
        return BindError(
            f"cannot listen on {where}: {host} is not an address of this machine; "
            "use --host 127.0.0.1 (this machine only) or 0.0.0.0 (all interfaces)"
        )
    if exc.errno == errno.EACCES:
        return BindError(f"cannot listen on {where}: permission denied; pick a --port above 1023")
    return BindError(f"cannot listen on {where}: {exc.strerror or exc}")


def check_base_url(url: str | None) -> None:
    """A usage error for a base URL without an http(s) scheme or host."""
    if url is None:
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise click.BadParameter(
            f"{url!r} has no http:// or https:// scheme; e.g. http://{url.split('://')[-1]}",
            param_hint="--base-url",
        )


_API_ROOTS = {  # --api -> the version segments its API root ends with (the first: the usual)
    "chat": ("v1",),
    "responses": ("v1",),
    "anthropic": ("v1",),
    "gemini": ("v1beta", "v1"),
    "cohere": ("v2",),
}
_API_NAMES = {
    "chat": "OpenAI-compatible APIs live",
    "responses": "OpenAI's Responses API lives",
    "anthropic": "Anthropic's Messages API lives",
    "gemini": "Gemini's API lives",
    "cohere": "Cohere's v2 chat API lives",
}
_SDK_ROOT = frozenset({"anthropic", "gemini", "cohere"})
"""The APIs whose base URL may also be the server's root (their SDKs add the version)."""


def base_url_hint(base_url: str, status: int | None, api: str = "chat") -> str | None:
    """A hint for an HTTP error status coming back from ``base_url`` (None: nothing to add).

    A 404 names the form of base URL ``api`` takes: a version segment of another API is
    replaced (``--api cohere`` with ``…/v1`` → ``…/v2``, never ``…/v1/v2``), a missing one
    added (the OpenAI APIs); the server's root is offered where the API's SDK takes it.
    """
    from streamcite.pipeline.apis import version_segment

    if status == 401:
        return (
            "hint: the API key was refused or missing; set it in the variable --api-key-env names"
        )
    if status != 404:
        return None
    roots = _API_ROOTS.get(api, ("v1",))
    name = _API_NAMES.get(api, "the API lives")
    base = base_url.rstrip("/")
    version = version_segment(base)
    if version in roots:
        return None  # the URL has the right form: the 404 is about something else
    server = base[: -len(version) - 1] if version is not None else base
    usual = f"{server}/{roots[0]}"
    if version is None and api in _SDK_ROOT:
        # streamcite added the version to this root as the SDK does: the root is wrong.
        return (
            f"hint: {name} under /{roots[0]}; --base-url takes the server's root "
            f"(streamcite adds /{roots[0]}) or the API root {usual}: is {server} the server?"
        )
    alt = f" (or {server}, as its SDK takes it)" if api in _SDK_ROOT else ""
    return f"hint: {name} under /{roots[0]}; try --base-url {usual}{alt}"


def warn_unset_key(name: str | None) -> None:
    """A warning on stderr when ``--api-key-env NAME`` names an unset variable."""
    if name and not os.environ.get(name):
        click.echo(
            f"streamcite: warning: environment variable {name} is not set; "
            "requests go without an API key",
            err=True,
        )
