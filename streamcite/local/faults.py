"""Fault injection for the local backend: a misbehaving upstream on request.

A fault spec is a semicolon-separated list of ``key=value`` pairs, e.g.
``first_token_delay=0.5;drop_after=3``. It can come from the server's default
(``BackendConfig.faults``, ``serve-local --fault``), from the request's ``fault=``
query parameter, or from its ``X-Streamcite-Fault`` header; for each key the header
wins over the query parameter, which wins over the server default.

Stream positions count content chunks (those carrying ``delta.content``) from 1;
a position past the last content chunk means the finish chunk. See
``docs/local-backend.md`` for the full table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

__all__ = [
    "FAULT_HEADER",
    "FAULT_QUERY",
    "ClientFaultsOff",
    "FaultSpec",
    "FaultSpecError",
    "request_faults",
]

FAULT_HEADER = "X-Streamcite-Fault"
FAULT_QUERY = "fault"
MAX_DELAY = 3600.0
"""No delay may exceed an hour: every wait of the backend is bounded."""


class FaultSpecError(ValueError):
    """A fault spec that cannot be parsed (unknown key, bad value)."""


@dataclass(slots=True, frozen=True)
class FaultSpec:
    """Faults to inject; ``None`` (or ``False``) means "not requested"."""

    first_token_delay: float | None = None
    """Seconds between the role chunk and the first content chunk."""
    token_delay: float | None = None
    """Seconds between two content chunks."""
    drop_after: int | None = None
    """Close the TCP connection abruptly after N content chunks (no finish, no ``[DONE]``)."""
    malformed_at: int | None = None
    """Content chunk N is sent as invalid JSON (its first half), then the stream goes on."""
    error_at: int | None = None
    """Content chunk N is replaced by ``{"error": {...}}`` and the stream ends."""
    status: int | None = None
    """Answer with this HTTP status and the API's error body instead of the normal response."""
    retry_after: float | None = None
    """With ``status``: the ``Retry-After`` header, in seconds."""
    stall_after: int | None = None
    """Stop sending after N content chunks, keep the connection open (idle-timeout tests)."""
    stall_for: float | None = None
    """How long a stall lasts before the connection is closed (default 300 s)."""
    sources_404_until: int | None = None
    """The Wikit sources endpoints answer 404 for the first N calls for that query id."""
    sources_delay: float | None = None
    """Seconds the Wikit sources endpoints wait before answering."""
    no_done: bool | None = None
    """Omit the final ``data: [DONE]``."""
    bom: bool | None = None
    """Start the stream body with a UTF-8 byte order mark."""
    hallucinate: bool | None = None
    """Change a number in one cited sentence of the answer (for grounding-check demos)."""
    profile: str | None = None
    """Stream a provider's shape (:mod:`streamcite.local.profiles`): ``reasoning``,
    ``refusal`` or ``mistral_parts``."""
    tool_call: str | None = None
    """Answer with a streamed call of the tool of this name instead of text."""
    provider_error: int | None = None
    """Cut the answer halfway with an OpenRouter-style error chunk of this HTTP status
    (``error.code``) and ``finish_reason: "error"``."""

    @classmethod
    def parse(cls, spec: str | None) -> FaultSpec:
        """Parse ``key=value;key=value`` (whitespace and empty items are ignored)."""
        if spec is None or not spec.strip():
            return cls()
        values: dict[str, object] = {}
        for item in spec.split(";"):
            item = item.strip()
            if not item:
                continue
            key, sep, raw = item.partition("=")
            key, raw = key.strip().lower(), raw.strip()
            if not sep:
                raise FaultSpecError(f"fault {item!r}: expected key=value")
            kind = _KINDS.get(key)
            if kind is None:
                raise FaultSpecError(f"unknown fault {key!r}; known: {', '.join(sorted(_KINDS))}")
            values[key] = _convert(key, kind, raw)
        return cls(**values)  # type: ignore[arg-type]

    def over(self, base: FaultSpec) -> FaultSpec:
        """This spec layered over ``base``: the keys set here win."""
        changes = {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }
        return replace(base, **changes)

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) not in (None, False) for f in fields(self))

    def to_spec(self) -> str:
        """The spec string that parses back to this object."""
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, bool):
                value = int(value)
            parts.append(f"{f.name}={value}")
        return ";".join(parts)


_KINDS: dict[str, str] = {
    "first_token_delay": "delay",
    "token_delay": "delay",
    "drop_after": "count",
    "malformed_at": "position",
    "error_at": "position",
    "status": "status",
    "retry_after": "delay",
    "stall_after": "count",
    "stall_for": "delay",
    "sources_404_until": "count",
    "sources_delay": "delay",
    "no_done": "flag",
    "bom": "flag",
    "hallucinate": "flag",
    "profile": "profile",
    "tool_call": "name",
    "provider_error": "status",
}

PROFILES = frozenset({"reasoning", "refusal", "mistral_parts"})


def _convert(key: str, kind: str, raw: str) -> float | int | bool | str:
    if kind == "profile":
        if raw not in PROFILES:
            raise FaultSpecError(f"fault profile: {raw!r}; known: {', '.join(sorted(PROFILES))}")
        return raw
    if kind == "name":
        if not raw or len(raw) > 64 or not all(c.isalnum() or c in "_-" for c in raw):
            raise FaultSpecError(f"fault {key}: {raw!r} is not a tool name ([A-Za-z0-9_-]{{1,64}})")
        return raw
    if kind == "delay":
        try:
            value = float(raw)
        except ValueError:
            raise FaultSpecError(f"fault {key}: {raw!r} is not a number of seconds") from None
        if not math.isfinite(value) or not 0.0 <= value <= MAX_DELAY:
            raise FaultSpecError(
                f"fault {key}: {raw!r} must be between 0 and {MAX_DELAY:g} seconds"
            )
        return value
    if kind == "flag":
        low = raw.lower()
        if low in ("1", "true", "yes", "on", ""):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise FaultSpecError(f"fault {key}: {raw!r} is not a boolean (1 or 0)")
    try:
        number = int(raw)
    except ValueError:
        raise FaultSpecError(f"fault {key}: {raw!r} is not an integer") from None
    if kind == "status" and not 400 <= number <= 599:
        raise FaultSpecError(f"fault {key}: {number} is not an HTTP error status (400-599)")
    if kind == "position" and number < 1:
        raise FaultSpecError(f"fault {key}: positions start at 1, got {number}")
    if number < 0:
        raise FaultSpecError(f"fault {key}: {number} must not be negative")
    return number


class ClientFaultsOff(FaultSpecError):
    """A request asked for faults that this server does not take from clients."""

    status = 403


def request_faults(
    server: FaultSpec, headers: Mapping[str, str], query: Mapping[str, str]
) -> FaultSpec:
    """The faults of one request: header over query parameter over the server default.

    Raises :class:`FaultSpecError` for a malformed header or query parameter.
    """
    spec = server
    from_query = query.get(FAULT_QUERY)
    if from_query:
        spec = FaultSpec.parse(from_query).over(spec)
    from_header = headers.get(FAULT_HEADER)
    if from_header:
        spec = FaultSpec.parse(from_header).over(spec)
    return spec
