"""Who may talk to the relay: Host and Origin allow-lists, principals, stream binding.

Pure parts (no I/O): :func:`parse_host`, :func:`host_matches`, :func:`origin_matches`
and :class:`StreamBinder`. :class:`Guard` applies them to aiohttp requests.

**Host** (DNS rebinding): a page on ``evil.example`` whose name the attacker re-points at
``127.0.0.1`` reaches the relay *same-origin* from the browser's point of view, with
``Host: evil.example``. Checking ``Origin`` against ``Host`` cannot catch that (both are
the attacker's), so the relay checks ``Host`` against an allow-list first: by default
the address the connection arrived on and the localhost names, with the relay's port.

**Principal**: with tokens configured, each token is one principal (``t0``, ``t1``…).
A stream id carries a tag derived from the creating principal's token, so resume and
cancel by another principal fail exactly like an unknown stream, on any relay
instance that knows the same tokens (no shared state needed).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.typedefs import Middleware

__all__ = [
    "Guard",
    "HostPattern",
    "Identity",
    "StreamBinder",
    "default_host_patterns",
    "host_matches",
    "origin_matches",
    "parse_host",
    "parse_host_pattern",
]

HostPattern = tuple[str, int | None]
"""``(name, port)``: ``name`` lower-case without a trailing dot (IPv6 without brackets,
compressed), ``"*"`` for any name, or ``".example.com"`` for that domain and its
subdomains; ``port`` None matches any port."""

_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_PORT = re.compile(r"[0-9]{1,5}")
_MAX_HOST = 255
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


def _norm_name(name: str, *, bare_ipv6: bool) -> str | None:
    if ":" in name:
        if not bare_ipv6:
            return None
        try:
            return ipaddress.IPv6Address(name).compressed
        except ValueError:
            return None
    name = name.lower()
    if name.endswith("."):
        name = name[:-1]
    if not name.isascii() or _NAME.fullmatch(name) is None:
        return None
    return name


def parse_host(value: str, *, bare_ipv6: bool = False) -> tuple[str, int | None] | None:
    """``"Example.COM.:8080"`` → ``("example.com", 8080)``; ``"[::1]"`` → ``("::1", None)``.

    Case is folded, one trailing dot dropped, IPv6 literals (in brackets; bare too when
    ``bare_ipv6``, for configuration) compressed. None for anything malformed: empty,
    whitespace, userinfo, a path, a non-ASCII name, a port that is not 1-5 ASCII digits
    or above 65535. Never raises.
    """
    if not isinstance(value, str) or not value or len(value) > _MAX_HOST:
        return None
    port: int | None = None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if "%" in name:
            return None  # zone ids are never in a Host header a browser sends
        if rest:
            if not rest.startswith(":"):
                return None
            port = _parse_port(rest[1:])
            if port is None:
                return None
        norm = _norm_name(name, bare_ipv6=True)
        return None if norm is None or ":" not in name else (norm, port)
    if value.count(":") > 1:
        norm = _norm_name(value, bare_ipv6=bare_ipv6)
        return None if norm is None else (norm, None)
    name, sep, raw_port = value.partition(":")
    if sep:
        port = _parse_port(raw_port)
        if port is None:
            return None
    norm = _norm_name(name, bare_ipv6=False)
    return None if norm is None else (norm, port)


def _parse_port(raw: str) -> int | None:
    if _PORT.fullmatch(raw) is None:
        return None
    port = int(raw)
    return port if 0 < port <= 65535 else None


def parse_host_pattern(value: str) -> HostPattern:
    """A ``--allowed-host`` entry: ``name[:port]``, ``[v6]:port``, bare IPv6, ``*`` or
    ``.domain`` (the domain and its subdomains). ``ValueError`` when malformed."""
    value = value.strip()
    if value == "*":
        return ("*", None)
    if value.startswith(".") and len(value) > 1:
        parsed = parse_host(value[1:])
        if parsed is None or ":" in parsed[0]:
            raise ValueError(f"not a valid allowed host: {value!r}")
        return ("." + parsed[0], parsed[1])
    parsed = parse_host(value, bare_ipv6=True)
    if parsed is None:
        raise ValueError(f"not a valid allowed host: {value!r}")
    return parsed


def _name_matches(name: str, pattern: str) -> bool:
    if pattern == "*" or name == pattern:
        return True
    return pattern.startswith(".") and (name == pattern[1:] or name.endswith(pattern))


def host_matches(value: str, allowed: Iterable[HostPattern], *, default_port: int) -> bool:
    """True when the ``Host`` header ``value`` names an allowed host.

    A Host without a port means ``default_port`` (80 or 443 by scheme); a pattern
    without a port matches any port. Malformed values never match."""
    parsed = parse_host(value)
    if parsed is None:
        return False
    name, port = parsed
    effective = default_port if port is None else port
    return any(
        _name_matches(name, pname) and (pport is None or pport == effective)
        for pname, pport in allowed
    )


def origin_matches(origin: str, allowed: Iterable[HostPattern]) -> bool:
    """True for an ``http(s)://host[:port]`` origin whose host is allowed (the default
    Origin rule: the origins of the allowed hosts). ``null`` and other schemes: False."""
    scheme, sep, rest = origin.strip().partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https") or not rest or "/" in rest.rstrip("/"):
        return False
    return host_matches(rest.rstrip("/"), allowed, default_port=_DEFAULT_PORTS[scheme])


def default_host_patterns(local_addr: str | None, port: int) -> tuple[HostPattern, ...]:
    """The address a connection arrived on and the localhost names, with ``port``."""
    names = list(LOCAL_NAMES)
    if local_addr:
        norm = _norm_name(local_addr, bare_ipv6=True)
        if norm is not None and norm not in names:
            names.append(norm)
    return tuple((n, port) for n in names)


def norm_origin(origin: str) -> str:
    """An origin as compared against an explicit ``--allowed-origin`` list."""
    return origin.strip().rstrip("/").lower()


# -- principals and stream binding -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Identity:
    """Who sent a request: a principal (``t0``… with tokens, None without) and an address."""

    principal: str | None
    remote: str
    key: bytes | None = field(default=None, repr=False)
    """Binding key derived from the principal's token (never logged)."""

    @property
    def quota_key(self) -> str:
        """What ``max_streams_per_client`` counts: one principal at one address."""
        return f"{self.principal or '-'}@{self.remote}"


_RAND_CHARS = 16  # secrets.token_urlsafe(12)
_TAG_BYTES = 9  # 12 url-safe characters


class StreamBinder:
    """Stream ids bound to principals, statelessly: ``random(16) + tag(12)`` where the
    tag is an HMAC of the random part under the principal's key. Without tokens ids
    are the 16 random characters and anyone may use them."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self._keys = [
            hashlib.sha256(b"streamcite-relay-principal\0" + t.encode()).digest() for t in tokens
        ]
        self._tokens = [t.encode() for t in tokens]

    @property
    def auth(self) -> bool:
        return bool(self._tokens)

    def __repr__(self) -> str:
        return f"<StreamBinder principals={len(self._tokens)}>"

    def principal_of(self, candidates: Iterable[str]) -> Identity | None:
        """The identity (address left empty) of the first candidate that is a known
        token; every comparison runs in constant time and all tokens are tried."""
        for cand in candidates:
            raw = cand.encode("utf-8", "surrogatepass")
            found: int | None = None
            for i, tok in enumerate(self._tokens):
                if hmac.compare_digest(raw, tok) and found is None:
                    found = i
            if found is not None:
                return Identity(f"t{found}", "", self._keys[found])
        return None

    def new_stream_id(self, who: Identity) -> str:
        base = secrets.token_urlsafe(12)
        return base if who.key is None else base + self._tag(who.key, base)

    def may_use(self, who: Identity, stream_id: str) -> bool:
        """True when ``who`` may resume or cancel ``stream_id``."""
        if not self._tokens:
            return True
        if who.key is None or len(stream_id) != _RAND_CHARS + 12:
            return False
        base, tag = stream_id[:_RAND_CHARS], stream_id[_RAND_CHARS:]
        return hmac.compare_digest(self._tag(who.key, base), tag)

    @staticmethod
    def _tag(key: bytes, base: str) -> str:
        import base64

        mac = hmac.new(key, base.encode(), hashlib.sha256).digest()[:_TAG_BYTES]
        return base64.urlsafe_b64encode(mac).decode()


# -- applied to requests ---------------------------------------------------------------------

Reject = Callable[[str, int, str], web.Response]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_UNGUARDED = frozenset({"/healthz"})


class Guard:
    """The relay's request checks: Host, Origin, token → :class:`Identity`."""

    def __init__(
        self,
        *,
        tokens: Sequence[str],
        allowed_hosts: Sequence[str],
        allowed_origins: Sequence[str],
        cookie: str,
    ) -> None:
        self.binder = StreamBinder(tokens)
        self.allowed_hosts = tuple(parse_host_pattern(h) for h in allowed_hosts)
        self.allowed_origins = tuple(norm_origin(o) for o in allowed_origins)
        self._cookie = cookie

    def __repr__(self) -> str:
        return f"<Guard hosts={len(self.allowed_hosts)} origins={len(self.allowed_origins)}>"

    def hosts_for(self, request: web.Request) -> tuple[HostPattern, ...]:
        if self.allowed_hosts:
            return self.allowed_hosts
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        if isinstance(sockname, tuple) and len(sockname) >= 2:
            return default_host_patterns(str(sockname[0]), int(sockname[1]))
        return default_host_patterns(None, 0)  # no socket (a test client): names only

    def host_ok(self, request: web.Request) -> bool:
        if request.path in _UNGUARDED:
            return True
        host = request.headers.get("Host")
        if host is None:
            return False
        return host_matches(
            host, self.hosts_for(request), default_port=443 if request.secure else 80
        )

    def origin_ok(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser: the token (when set) is the gate
        if self.allowed_origins:
            return "*" in self.allowed_origins or norm_origin(origin) in self.allowed_origins
        return origin_matches(origin, self.hosts_for(request))

    def identify(self, request: web.Request) -> Identity | None:
        """The request's identity; None when tokens are configured and none matches."""
        remote = request.remote or "?"
        if not self.binder.auth:
            return Identity(None, remote)
        candidates: list[str] = []
        auth = request.headers.get("Authorization", "")
        if auth[:7].lower() == "bearer ":
            candidates.append(auth[7:].strip())
        if "token" in request.query:
            candidates.append(request.query["token"])
        cookie = request.cookies.get(self._cookie)
        if cookie:
            candidates.append(cookie)
        found = self.binder.principal_of(candidates)
        return None if found is None else Identity(found.principal, remote, found.key)

    def middleware(self, reject: Reject) -> Middleware:
        """An aiohttp middleware refusing (403 ``host_not_allowed``) unknown Host headers."""

        @web.middleware
        async def host_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            if not self.host_ok(request):
                return reject("host_not_allowed", 403, "this Host is not served here")
            return await handler(request)

        return host_guard
