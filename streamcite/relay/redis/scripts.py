"""The Lua scripts of the Redis stream log, and the packed wire forms they read and write.

Each script runs atomically and costs one round trip whatever the batch size. Replies and
fan-out messages that carry entries are packed into one string (``{seq} {len} {payload}``
repeated): redis-py's pure-Python reply parser costs microseconds per element, and an
``XRANGE`` entry is five elements; packed, a whole backlog is one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.exceptions import NoScriptError

from streamcite.streamlog import LogEntry

__all__ = [
    "APPEND",
    "FETCH",
    "FINISH",
    "FINISH_SEQ",
    "NOTE_READERS",
    "OPEN",
    "READERS_ELSEWHERE",
    "RELEASE",
    "RENEW",
    "STATUS",
    "WATCH",
    "Script",
    "WriteTarget",
    "bulk",
    "finish_notice",
    "pack_append",
    "unpack_entries",
    "unpack_fanout",
]


class Script:
    """EVALSHA with a one-time ``SCRIPT LOAD`` fallback (the cache is empty after a restart)."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    async def __call__(
        self, client: aioredis.Redis, keys: Sequence[Any], args: Sequence[Any]
    ) -> Any:
        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            await client.script_load(self.source)
            return await client.evalsha(self.sha, len(keys), *keys, *args)


# KEYS: the streams, one per entry, then (stream, meta) per superseded entry. ARGV: maxlen,
# fan-out channel, fan-out message (the batch, packed), the number of superseded entries,
# then seq and payload per entry, then seq and replacement per superseded entry. The message
# is published after the entries are stored, atomically with them. An id at or below the
# stream's top is an entry an earlier attempt already stored: counted, not an error (a
# retried batch is idempotent).
#
# A superseded entry (a citations frame a newer one replaced, see ``relay.producer``) is
# deleted from the stream (XDEL: it stops counting against ``MAXLEN`` and holding its bytes),
# or never added (replaced while still queued, a later entry of its stream in the same
# batch), and its small replacement kept in the stream's meta hash as field ``s{seq}``,
# which ``FETCH`` puts back in its place. Past ``2 * maxlen + 16`` replacements the oldest are
# dropped down to ``maxlen`` (a reader that far behind sees a gap, as for trimmed entries).
APPEND = Script("""
local maxlen = ARGV[1]
local sup = tonumber(ARGV[4])
local n = #KEYS - 2 * sup
local dup = 0
for i = 1, n do
  local r = redis.pcall('XADD', KEYS[i], 'MAXLEN', '~', maxlen, ARGV[2 * i + 3] .. '-0', 'p', ARGV[2 * i + 4])
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'equal or smaller', 1, true) then
      dup = dup + 1
    else
      return redis.error_reply(r.err)
    end
  end
end
for j = 1, sup do
  local stream = KEYS[n + 2 * j - 1]
  local meta = KEYS[n + 2 * j]
  local seq = ARGV[4 + 2 * n + 2 * j - 1]
  redis.call('XDEL', stream, seq .. '-0')
  if redis.call('EXISTS', meta) == 1 then
    redis.call('HSET', meta, 's' .. seq, ARGV[4 + 2 * n + 2 * j])
    local cap = tonumber(maxlen)
    if redis.call('HLEN', meta) > 2 * cap + 16 then
      local seqs = {}
      for _, f in ipairs(redis.call('HKEYS', meta)) do
        if string.sub(f, 1, 1) == 's' then seqs[#seqs + 1] = tonumber(string.sub(f, 2)) end
      end
      table.sort(seqs)
      for k = 1, #seqs - cap do redis.call('HDEL', meta, 's' .. seqs[k]) end
    end
  end
end
if ARGV[3] ~= '' then
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return dup
""")

# KEYS: lease, meta, stream. ARGV: instance, lease ms, running TTL ms, owner label.
OPEN = Script("""
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[2], 'owner', ARGV[4], 'instance', ARGV[1], 'state', 'running')
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('DEL', KEYS[3])
return 1
""")

# KEYS: (lease, meta, stream) per stream. ARGV: instance, lease ms, running TTL ms, then the
# owner label per stream. One char per stream: '1' renewed, '2' re-acquired (it had lapsed: a
# stall or Redis lost its data), '0' another instance holds it. Meta and stream TTLs are
# pushed out with the lease so a crashed owner's keys still expire (``ttl_ms`` after its last
# heartbeat).
RENEW = Script("""
local out = {}
for i = 1, #KEYS, 3 do
  local v = redis.call('GET', KEYS[i])
  local r = '0'
  if v == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    r = '1'
  elseif not v then
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
    r = '2'
  end
  if r ~= '0' then
    if redis.call('EXISTS', KEYS[i + 1]) == 0 then
      redis.call('HSET', KEYS[i + 1], 'owner', ARGV[4 + (i - 1) / 3], 'instance', ARGV[1], 'state', 'running')
    end
    redis.call('PEXPIRE', KEYS[i + 1], ARGV[3])
    redis.call('PEXPIRE', KEYS[i + 2], ARGV[3])
  end
  out[#out + 1] = r
end
return table.concat(out)
""")

# KEYS: lease, meta, stream. ARGV: instance, retention ms, last seq, owner label, fan-out
# channel, finish notice (see ``finish_notice``). The notice follows the stream's last write
# batch on the channel, so followers blocked past the end return at once.
FINISH = Script("""
redis.call('HSET', KEYS[2], 'owner', ARGV[4], 'instance', ARGV[1], 'state', 'done', 'last_seq', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
""")

# KEYS: leases. ARGV: instance. Deletes those this instance still holds.
RELEASE = Script("""
local n = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    n = n + 1
  end
end
return n
""")

# KEYS: (lease, meta) per followed stream. One char per stream: '2' when it is finished (a
# follower that missed the finish notice learns it here), '0' when it is unfinished and its
# lease has lapsed (the owner is gone), else '1'.
WATCH = Script("""
local out = {}
for i = 1, #KEYS, 2 do
  local r = '1'
  if redis.call('HGET', KEYS[i + 1], 'state') == 'done' then
    r = '2'
  elseif redis.call('EXISTS', KEYS[i]) == 0 then
    r = '0'
  end
  out[#out + 1] = r
end
return table.concat(out)
""")

# Entries after a seq, packed into one string per stream (see ``unpack_entries``). KEYS:
# (stream, meta) per stream; ARGV: after-seq per stream, the count per stream, then '1' to
# append the first stream's state and owning instance to the reply. A hole before an entry
# (deleted as superseded, see ``APPEND``) is filled from the meta hash's ``s{seq}`` fields,
# walking down from the entry while they exist: entries trimmed by ``MAXLEN`` stay a gap.
FETCH = Script("""
local n = (#KEYS) / 2
local count = ARGV[n + 1]
local out = {}
for i = 1, n do
  local stream = KEYS[2 * i - 1]
  local meta = KEYS[2 * i]
  local expect = tonumber(ARGV[i]) + 1
  local entries = redis.call('XRANGE', stream, '(' .. ARGV[i] .. '-0', '+', 'COUNT', count)
  local parts = {}
  for j = 1, #entries do
    local id = entries[j][1]
    local fields = entries[j][2]
    local seq = tonumber(string.sub(id, 1, string.find(id, '-', 1, true) - 1))
    if seq > expect then
      local held = {}
      local k = seq - 1
      while k >= expect do
        local m = redis.call('HGET', meta, 's' .. k)
        if not m then break end
        held[#held + 1] = k .. ' ' .. #m .. ' ' .. m
        k = k - 1
      end
      for h = #held, 1, -1 do parts[#parts + 1] = held[h] end
    end
    local payload = ''
    for f = 1, #fields, 2 do
      if fields[f] == 'p' then payload = fields[f + 1] end
    end
    parts[#parts + 1] = seq .. ' ' .. #payload .. ' ' .. payload
    expect = seq + 1
  end
  out[i] = table.concat(parts)
end
if ARGV[n + 2] == '1' then
  local m = redis.call('HMGET', KEYS[2], 'state', 'instance')
  out[n + 1] = m[1] or ''
  out[n + 2] = m[2] or ''
end
return out
""")

# KEYS: lease, meta, stream. Reply: lease holder, owner, instance, state, last_seq, top id.
STATUS = Script("""
local lease = redis.call('GET', KEYS[1]) or ''
local m = redis.call('HMGET', KEYS[2], 'owner', 'instance', 'state', 'last_seq')
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
local last_id = ''
if #last > 0 then last_id = last[1][1] end
return {lease, m[1] or '', m[2] or '', m[3] or '', m[4] or '', last_id}
""")


# Readers on other instances (issue 13): one hash per stream, field = instance id, value =
# when its last heartbeat lapses, in Redis's own clock (TIME: instances' clocks may differ).
# KEYS: the streams' reader hashes. ARGV: instance id, ttl in ms.
NOTE_READERS = Script("""
local t = redis.call('TIME')
local until_ms = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[2])
for i = 1, #KEYS do
  redis.call('HSET', KEYS[i], ARGV[1], until_ms)
  redis.call('PEXPIRE', KEYS[i], 2 * tonumber(ARGV[2]))
end
return #KEYS
""")

# KEYS[1]: the stream's reader hash. ARGV[1]: the asking instance (its own readers do not
# count: it knows them). 1 when another instance's heartbeat has not lapsed yet.
READERS_ELSEWHERE = Script("""
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local h = redis.call('HGETALL', KEYS[1])
for i = 1, #h, 2 do
  if h[i] ~= ARGV[1] and tonumber(h[i + 1]) > now then return 1 end
end
return 0
""")


def bulk(value: bytes) -> bytes:
    """``value`` as a RESP bulk string."""
    return b"$%d\r\n%s\r\n" % (len(value), value)


class WriteTarget(Protocol):
    """What :func:`pack_append` needs of a stream: its keys and id, pre-packed once."""

    @property
    def key_bulk(self) -> bytes: ...

    @property
    def meta_bulk(self) -> bytes: ...

    @property
    def sid_prefix(self) -> bytes: ...


def pack_append(
    batch: Sequence[tuple[WriteTarget, LogEntry]],
    maxlen_bulk: bytes,
    channel_bulk: bytes,
    superseded: Sequence[tuple[WriteTarget, LogEntry]] = (),
    fanout_entries: Sequence[tuple[WriteTarget, LogEntry]] | None = None,
) -> bytes:
    """One ``EVALSHA`` of :data:`APPEND` for ``batch``, packed by hand (redis-py's generic
    packing costs several µs per argument): ``EVALSHA sha n+2s key_1..key_n (stream,
    meta)_1..(stream, meta)_s maxlen channel message s seq_1 payload_1 .. seq_n payload_n
    seq'_1 replacement_1 ..``. ``superseded`` are entries already written whose payload is
    replaced (see :data:`APPEND`). The fan-out message is ``{len(sid)} {sid} {seq} {len}
    {payload}`` per entry of ``fanout_entries`` (default: ``batch`` then ``superseded``; see
    :func:`unpack_fanout`): a follower that already has that seq replaces it, one that lacks
    it takes it as the entry."""
    n = len(batch)
    s = len(superseded)
    fanout: list[bytes] = []
    for target, entry in (*batch, *superseded) if fanout_entries is None else fanout_entries:
        fanout.append(b"%s %d %d " % (target.sid_prefix, entry.seq, len(entry.payload)))
        fanout.append(entry.payload)
    parts: list[bytes] = [
        b"*%d\r\n$7\r\nEVALSHA\r\n" % (3 + n + 2 * s + 4 + 2 * n + 2 * s),
        bulk(APPEND.sha.encode()),
        bulk(str(n + 2 * s).encode()),
    ]
    parts += [target.key_bulk for target, _ in batch]
    for target, _ in superseded:
        parts.append(target.key_bulk)
        parts.append(target.meta_bulk)
    parts.append(maxlen_bulk)
    parts.append(channel_bulk)
    parts.append(bulk(b"".join(fanout)))
    parts.append(bulk(str(s).encode()))
    for _, entry in (*batch, *superseded):
        seq = str(entry.seq).encode()
        payload = entry.payload
        parts.append(b"$%d\r\n%s\r\n$%d\r\n" % (len(seq), seq, len(payload)))
        parts.append(payload)
        parts.append(b"\r\n")
    return b"".join(parts)


FINISH_SEQ = 0
"""The seq of a finish notice on a fan-out channel (real entries start at 1)."""


def finish_notice(stream_id: str) -> bytes:
    """The fan-out message that says ``stream_id`` is finished: one entry of seq
    :data:`FINISH_SEQ` with an empty payload. A follower that predates the notice takes it
    for an entry it already has and skips it, so instances can be upgraded one by one."""
    sid = stream_id.encode()
    return b"%d %s %d 0 " % (len(sid), sid, FINISH_SEQ)


def unpack_entries(packed: bytes) -> list[LogEntry]:
    """Entries of one stream from :data:`FETCH`'s packed form: ``{seq} {len} {payload}``..."""
    out: list[LogEntry] = []
    i, n = 0, len(packed)
    find = packed.index
    while i < n:
        j = find(b" ", i)
        k = find(b" ", j + 1)
        end = k + 1 + int(packed[j + 1 : k])
        out.append(LogEntry(int(packed[i:j]), packed[k + 1 : end]))
        i = end
    return out


def unpack_fanout(packed: bytes) -> list[tuple[str, LogEntry]]:
    """``(stream_id, entry)`` pairs of a fan-out message: ``{n} {sid} {seq} {len} {payload}``."""
    out: list[tuple[str, LogEntry]] = []
    i, n = 0, len(packed)
    find = packed.index
    while i < n:
        j = find(b" ", i)
        sid_end = j + 1 + int(packed[i:j])
        k = find(b" ", sid_end + 1)
        m = find(b" ", k + 1)
        end = m + 1 + int(packed[k + 1 : m])
        out.append(
            (
                packed[j + 1 : sid_end].decode(),
                LogEntry(int(packed[sid_end + 1 : k]), packed[m + 1 : end]),
            )
        )
        i = end
    return out
