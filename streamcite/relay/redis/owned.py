"""A stream this instance owns: the writer's state for it and the copy its local readers see."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamcite.core.errors import StreamciteError
from streamcite.relay.redis.scripts import bulk
from streamcite.relay.redis.settings import KeyLayout
from streamcite.relay.redis.waiting import Waiters
from streamcite.streamlog import LogEntry

__all__ = ["OwnedStream"]


@dataclass(slots=True, eq=False)
class OwnedStream:
    """A stream this instance owns (runs the upstream request of): the writer side, the lease
    it renews, plus an in-memory copy of the entries for this instance's readers."""

    stream_id: str
    owner: str
    """The relay's label for the stream, reported by ``status``."""
    key: str
    meta_key: str
    lease_key: str
    key_bulk: bytes = b""
    """``key`` as a RESP bulk string, packed once for every write of this stream."""
    meta_bulk: bytes = b""
    """``meta_key`` as a RESP bulk string (where superseded entries' replacements live)."""
    sid_prefix: bytes = b""
    """``{len} {stream_id}`` for the fan-out message."""
    next_seq: int = 1
    written: int = 0
    """Highest seq the writer has settled (stored in Redis, or failed for good)."""
    entries: list[LogEntry] = field(default_factory=list)
    """Entries local readers can see, contiguous seqs (see ``local_delivery``)."""
    first_seq: int = 1
    finished: bool = False
    finished_at: float = 0.0
    lost: bool = False
    """Another instance holds the lease: appends are refused."""
    error: StreamciteError | None = None
    """Set when a write of this stream failed for good (Redis unavailable): later entries are
    delivered to local readers only, and ``append`` raises it."""
    waiters: Waiters = field(default_factory=Waiters)
    replaced: dict[int, bytes] = field(default_factory=dict)
    """Replacements of entries not delivered to local readers yet (see ``supersede``)."""

    @classmethod
    def create(cls, stream_id: str, owner: str, keys: KeyLayout) -> OwnedStream:
        key = keys.stream(stream_id)
        sid = stream_id.encode()
        return cls(
            stream_id=stream_id,
            owner=owner,
            key=key,
            meta_key=keys.meta(stream_id),
            lease_key=keys.lease(stream_id),
            key_bulk=bulk(key.encode()),
            meta_bulk=bulk(keys.meta(stream_id).encode()),
            sid_prefix=b"%d %s" % (len(sid), sid),
        )

    def deliver(self, entry: LogEntry, cap: int) -> None:
        """Make ``entry`` visible to local readers, keeping about ``cap`` entries."""
        if self.replaced:
            payload = self.replaced.pop(entry.seq, None)
            if payload is not None:
                entry = LogEntry(entry.seq, payload)
        self.entries.append(entry)
        # Trim in chunks so the list copy is amortised over many appends.
        if len(self.entries) > cap + cap // 4 + 16:
            drop = len(self.entries) - cap
            del self.entries[:drop]
            self.first_seq += drop

    def supersede(self, seq: int, payload: bytes) -> None:
        """Local readers see ``payload`` in place of entry ``seq`` (now, or once delivered)."""
        i = seq - self.first_seq
        if 0 <= i < len(self.entries):
            self.entries[i] = LogEntry(seq, payload)
        elif seq > self.last_seq and len(self.replaced) < 1024:
            self.replaced[seq] = payload

    def slice(self, after_seq: int) -> list[LogEntry]:
        start = max(after_seq + 1 - self.first_seq, 0)
        return self.entries[start:]

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self.entries) - 1

    @property
    def renewable(self) -> bool:
        """Its lease is this instance's to renew."""
        return not self.finished and not self.lost
