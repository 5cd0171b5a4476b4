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


_API_ROOTS = {  # --api -> the version paths its API root ends with (the first: the usual)
    "chat": ("/v1",),
    "responses": ("/v1",),
    "anthropic": ("/v1",),
    "gemini": ("/v1beta", "/v1"),
    "cohere": ("/v2",),
}
_API_NAMES = {
    "chat": "OpenAI-compatible APIs live",
    "responses": "OpenAI's Responses API lives",
    "anthropic": "Anthropic's Messages API lives",
    "gemini": "Gemini's API lives",
    "cohere": "Cohere's v2 chat API lives",
}


def base_url_hint(base_url: str, status: int | None, api: str = "chat") -> str | None:
    """A hint for an HTTP error status coming back from ``base_url`` (None: nothing to add)."""
    roots = _API_ROOTS.get(api, ("/v1",))
    if status == 404 and not urlsplit(base_url).path.rstrip("/").endswith(roots):
        return (
            f"hint: {_API_NAMES.get(api, 'the API lives')} under {roots[0]}; "
            f"try --base-url {base_url.rstrip('/')}{roots[0]}"
        )
    if status == 401:
        return (
            "hint: the API key was refused or missing; set it in the variable --api-key-env names"
        )
    return None


def warn_unset_key(name: str | None) -> None:
    """A warning on stderr when ``--api-key-env NAME`` names an unset variable."""
    if name and not os.environ.get(name):
        click.echo(
            f"streamcite: warning: environment variable {name} is not set; "
            "requests go without an API key",
            err=True,
        )
