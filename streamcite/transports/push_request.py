"""The request head of the push transport (:mod:`streamcite.transports.push`): a POST's
request line and headers as aiohttp sends them — the target percent-encoded (UTF-8), the
headers merged without regard to case and encoded in UTF-8, URL userinfo as Basic auth —
and nothing that could end a line inside a header."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from urllib.parse import quote as url_quote
from urllib.parse import unquote, urlsplit

from streamcite.core.quote import quote
from streamcite.transports.base import TransportError

__all__ = ["Origin", "request_head"]

Origin = tuple[str, str, int]
"""``(scheme, host, port)``."""

_SSE_HEADERS = {
    "Accept": "text/event-stream",
    "Cache-Control": "no-store",
    "Accept-Encoding": "identity",
}
_BAD_HEADER_CHARS = ("\r", "\n", "\x00")
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
"""Kept as they are in a path (``%``: what is already encoded stays so, as yarl does)."""
_QUERY_SAFE = _PATH_SAFE + "?"


def request_head(url: str, headers: Mapping[str, str], body_len: int) -> tuple[Origin, bytes]:
    """The origin to connect to and the request's head (ValueError: a header that would
    end a line; TransportError: not an http(s) URL, shown without its user:password)."""
    parts = urlsplit(url)
    scheme = parts.scheme
    if scheme not in ("http", "https") or not parts.hostname:
        shown = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
        raise TransportError(f"not an http(s) URL: {quote(shown, 120)}", code="connect_failed")
    port = parts.port or (443 if scheme == "https" else 80)
    host = parts.hostname
    host_header = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        host_header += f":{parts.port}"
    target = url_quote(parts.path or "/", safe=_PATH_SAFE)
    if parts.query:
        target += "?" + url_quote(parts.query, safe=_QUERY_SAFE)
    fields = {"Host": host_header, "User-Agent": "streamcite"}
    if parts.username is not None:  # as aiohttp does: userinfo → Basic auth
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        fields["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    merged: dict[str, tuple[str, str]] = {}  # by lower-case name: one of each, the last
    for source in (fields, headers, _SSE_HEADERS, {"Content-Length": str(body_len)}):
        for name, value in source.items():
            merged[name.lower()] = (name, value)
    lines = [f"POST {target} HTTP/1.1"]
    for name, value in merged.values():
        if any(c in name or c in value for c in _BAD_HEADER_CHARS) or ":" in name:
            raise ValueError(f"invalid character in the request header {quote(name, 60)}")
        lines.append(f"{name}: {value}")
    lines.append("\r\n")
    return (scheme, host, port), "\r\n".join(lines).encode("utf-8")
