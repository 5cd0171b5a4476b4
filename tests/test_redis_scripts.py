"""The packed wire forms of the Redis log's scripts, without a server: what the writer packs,
the follower unpacks, byte for byte (hypothesis), and the finish notice old followers skip."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("redis")

from streamcite.relay.redis.scripts import (
    APPEND,
    FINISH_SEQ,
    bulk,
    finish_notice,
    pack_append,
    unpack_entries,
    unpack_fanout,
)
from streamcite.relay.streamlog import LogEntry


@dataclass
class _Target:
    key_bulk: bytes
    sid_prefix: bytes
    meta_bulk: bytes = b""


def _target(sid: str) -> _Target:
    raw = sid.encode()
    return _Target(bulk(b"k:" + raw), b"%d %s" % (len(raw), raw), bulk(b"m:" + raw))


def _resp_parts(packed: bytes) -> list[bytes]:
    """The bulk strings of a packed RESP array, in order."""
    parts: list[bytes] = []
    i = packed.index(b"\r\n") + 2
    while i < len(packed):
        j = packed.index(b"\r\n", i)
        n = int(packed[i + 1 : j])
        parts.append(packed[j + 2 : j + 2 + n])
        i = j + 2 + n + 2
    assert int(packed[1 : packed.index(b"\r\n")]) == len(parts)  # the array's own count
    return parts


def _fanout_message(packed: bytes) -> bytes:
    """The fan-out message argument of a packed ``EVALSHA`` (after the keys, maxlen, channel)."""
    # Parse the RESP array back: *N, then $len bulk strings.
    parts: list[bytes] = []
    i = packed.index(b"\r\n") + 2
    while i < len(packed):
        j = packed.index(b"\r\n", i)
        n = int(packed[i + 1 : j])
        parts.append(packed[j + 2 : j + 2 + n])
        i = j + 2 + n + 2
    assert parts[0] == b"EVALSHA" and parts[1] == APPEND.sha.encode()
    nkeys = int(parts[2])
    return parts[3 + nkeys + 2]


sids = st.text(min_size=1, max_size=12)
payloads = st.binary(max_size=64)


@given(st.lists(st.tuples(sids, st.integers(1, 10**9), payloads), min_size=1, max_size=20))
def test_the_fanout_message_carries_every_entry_exactly(
    items: list[tuple[str, int, bytes]],
) -> None:
    batch = [(_target(sid), LogEntry(seq, p)) for sid, seq, p in items]
    packed = pack_append(batch, bulk(b"100"), bulk(b"chan"))
    assert unpack_fanout(_fanout_message(packed)) == [
        (sid, LogEntry(seq, p)) for sid, seq, p in items
    ]


@given(st.lists(st.tuples(st.integers(1, 10**9), payloads), max_size=20))
def test_backlog_entries_unpack_exactly(items: list[tuple[int, bytes]]) -> None:
    packed = b"".join(b"%d %d %s" % (seq, len(p), p) for seq, p in items)
    assert unpack_entries(packed) == [LogEntry(seq, p) for seq, p in items]


@given(sids)
def test_a_finish_notice_is_an_empty_entry_of_seq_zero(sid: str) -> None:
    # Real entries start at 1: a follower from before the notice existed sees an entry at or
    # below its tail and skips it, so a mixed-version deployment keeps working.
    assert unpack_fanout(finish_notice(sid)) == [(sid, LogEntry(FINISH_SEQ, b""))]
    assert FINISH_SEQ == 0


@given(
    st.lists(st.tuples(sids, st.integers(1, 10**9), payloads), max_size=10),
    st.lists(st.tuples(sids, st.integers(1, 10**9), payloads), min_size=1, max_size=10),
)
def test_superseded_entries_follow_the_batch_as_key_pairs_and_replacements(
    items: list[tuple[str, int, bytes]], replaced: list[tuple[str, int, bytes]]
) -> None:
    batch = [(_target(sid), LogEntry(seq, p)) for sid, seq, p in items]
    sup = [(_target(sid), LogEntry(seq, p)) for sid, seq, p in replaced]
    parts = _resp_parts(pack_append(batch, bulk(b"100"), bulk(b"chan"), sup))
    n, s = len(batch), len(sup)
    assert parts[:3] == [b"EVALSHA", APPEND.sha.encode(), b"%d" % (n + 2 * s)]
    keys = parts[3 : 3 + n + 2 * s]
    assert keys[:n] == [b"k:" + sid.encode() for sid, _, _ in items]
    assert keys[n:] == [
        k for sid, _, _ in replaced for k in (b"k:" + sid.encode(), b"m:" + sid.encode())
    ]
    maxlen, channel, message, count = parts[3 + n + 2 * s : 7 + n + 2 * s]
    assert (maxlen, channel, count) == (b"100", b"chan", b"%d" % s)
    args = parts[7 + n + 2 * s :]
    assert args == [x for _, seq, p in (*items, *replaced) for x in (b"%d" % seq, p)]
    # Followers get the replacements after the batch (they put them in place).
    assert unpack_fanout(message) == [
        (sid, LogEntry(seq, p)) for sid, seq, p in (*items, *replaced)
    ]
