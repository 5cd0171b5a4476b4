"""The relay's stream log in Redis Streams: resumable streams across several relay instances.

``from streamcite.relay.redis import RedisStreamLog, RedisLogSettings`` (needs
``pip install 'streamcite[redis]'``). One module per concept:

==================  =========================================================================
``settings``        :class:`RedisLogSettings` (frozen, validated) and the key layout
``streamlog``       :class:`RedisStreamLog`: lifecycle, ``open/append/finish/read/status``
``writer``          the batched writer: one ``EVALSHA`` per round trip, whatever the batch
``owned``           the state of a stream this instance owns (and its local readers' copy)
``lease``           ownership: the lease heartbeat and the watch on followed streams' owners
``follow``          remote readers: backlog reads and the live tail through the fan-out
``control``         cancels routed to the owning instance through its control stream
``connections``     pools, dedicated hot connections, bounded retries, the outage error
``scripts``         the Lua scripts and the packed wire forms they read and write
``waiting``         blocked readers: futures woken together, a shared timer per 50 ms tick
``errors``          :class:`RedisUnavailable`, :class:`StreamLogConflict`
==================  =========================================================================
"""

from __future__ import annotations

from streamcite.relay.redis.errors import RedisUnavailable, StreamLogConflict
from streamcite.relay.redis.settings import RedisLogSettings
from streamcite.relay.redis.streamlog import RedisStreamLog

__all__ = ["RedisLogSettings", "RedisStreamLog", "RedisUnavailable", "StreamLogConflict"]
