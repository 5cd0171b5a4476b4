"""The embedded backend's Host and Origin allow-lists (DNS rebinding).

``serve-local --corpus`` serves private documents on a loopback port. A page on
``http://evil.example`` whose name the attacker re-points at ``127.0.0.1`` reaches that
port with the browser's full cooperation, same-origin from the browser's point of view,
and reads the answers; its requests still say ``Host: evil.example``. So every request
(``/healthz`` aside) must name an allowed host, and a browser's ``Origin``, when
present, an allowed origin.

Defaults, as the relay's: the address the connection arrived on and ``localhost``,
``127.0.0.1``, ``::1``, each with the port it arrived on; origins: the ``http(s)``
origins of the allowed hosts. ``--allowed-host`` (``name[:port]``, ``[v6]:port``,
``.domain``, ``*``) and ``--allowed-origin`` (``*`` for any) replace them. The parsing
and matching are :mod:`streamcite.relay.guard`'s pure functions: one implementation for
both servers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aiohttp import web

from streamcite.relay.guard import (
    HostPattern,
    default_host_patterns,
    host_matches,
    norm_origin,
    origin_matches,
    parse_host_pattern,
)

__all__ = ["UNCHECKED_PATHS", "HostCheck"]

UNCHECKED_PATHS = frozenset({"/healthz"})
"""Paths served whatever the Host (a liveness probe carries no data)."""


@dataclass(frozen=True, slots=True)
class HostCheck:
    """Which ``Host`` and ``Origin`` headers a backend serves."""

    hosts: tuple[HostPattern, ...] = ()
    """Allowed hosts; empty: the connection's own address and the localhost names."""
    origins: tuple[str, ...] = ()
    """Allowed origins, normalised; empty: the http(s) origins of the allowed hosts."""

    @classmethod
    def from_config(cls, hosts: Iterable[str], origins: Iterable[str]) -> HostCheck:
        """Parse ``--allowed-host`` / ``--allowed-origin`` values (``ValueError`` if bad)."""
        parsed = tuple(parse_host_pattern(h) for h in hosts)
        wanted = tuple(norm_origin(o) for o in origins)
        for origin in wanted:
            if origin != "*" and not origin_matches(origin, [("*", None)]):
                raise ValueError(f"not an http(s)://host[:port] origin: {origin!r}")
        return cls(parsed, wanted)

    def hosts_for(self, request: web.Request) -> tuple[HostPattern, ...]:
        """The allowed hosts for this request (the defaults depend on its socket)."""
        if self.hosts:
            return self.hosts
        transport = request.transport
        sockname = transport.get_extra_info("sockname") if transport is not None else None
        if isinstance(sockname, tuple) and len(sockname) >= 2:
            return default_host_patterns(str(sockname[0]), int(sockname[1]))
        return default_host_patterns(None, 0)

    def refusal(self, request: web.Request) -> tuple[str, str] | None:
        """``(code, message)`` when the request must be refused (403), else None."""
        if request.path in UNCHECKED_PATHS:
            return None
        host = request.headers.get("Host")
        allowed = self.hosts_for(request)
        default_port = 443 if request.secure else 80
        if host is None or not host_matches(host, allowed, default_port=default_port):
            shown = "no Host header" if host is None else f"Host {host[:100]!r}"
            return (
                "host_not_allowed",
                f"{shown} is not served here (DNS rebinding protection); "
                "start serve-local with --allowed-host NAME to serve another name",
            )
        origin = request.headers.get("Origin")
        if origin is None:
            return None  # not a browser, or a same-origin GET
        if self.origins:
            ok = "*" in self.origins or norm_origin(origin) in self.origins
        else:
            ok = origin_matches(origin, allowed)
        if ok:
            return None
        return (
            "origin_not_allowed",
            f"Origin {origin[:100]!r} is not allowed; start serve-local with "
            "--allowed-origin ORIGIN to allow another page",
        )
