"""WHATWG Server-Sent Events decoder: feed it bytes, ask it for events. No I/O.

Implements the HTML standard's "event stream interpretation" exactly:

- one leading U+FEFF BOM is stripped (a later one is data);
- lines end at CRLF, LF or CR — and only those (U+2028, U+0085 are text) —
  including a CR that ends one read and an LF that starts the next;
- a field line is split at the first colon, one leading space of the value removed;
  a line starting with a colon is a comment; a line without colon is a field with
  an empty value;
- ``id`` values containing NUL are ignored; ``retry`` only when all ASCII digits;
- a blank line dispatches the block; a block with no ``data`` is not dispatched
  (its ``id`` still updates the last event id);
- at end of input an unterminated block is discarded (``pending`` tells you).

Performance: a read that ends at a block boundary with nothing pending (a relay feeds
one upstream read at a time, often one event) skips the general set-up (BOM, CR, tail,
discard checks: one test each) and, when it is one event of the usual shape, is cut with
two slices. A read whose blocks are all one ``data:`` line (chat; Gemini's, CRLF-ended,
without normalising) is cut into events by one C-level split, with no Python work per
event; one whose blocks are all ``event:`` + one ``data:`` line (Anthropic, Responses,
Cohere) by one split and a ``partition`` per block; none steps one byte at a time. Any
other read is split into lines on bytes (after turning CRLF and CR into LF). Field values
are decoded once; :meth:`SSEDecoder.feed_raw` hands ``data`` as bytes (orjson parses it
without a ``str`` round-trip). Only newly arrived bytes are scanned for line ends, so a
huge event in small reads costs linear time; ``max_event_size`` bounds memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from streamcite.core.errors import EventTooLarge

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "OVERFLOW", "RawEvent", "SSEDecoder", "ServerSentEvent"]

RawEvent: TypeAlias = "bytes | tuple[bytes, bytes, str, int | None]"
"""What :meth:`SSEDecoder.feed_raw` returns per event: the ``data`` bytes of a plain
``message`` event, or ``(event type, data, last event id, retry)`` for any other."""

OVERFLOW: RawEvent = (b"\x00overflow", b"", "", None)
"""In :meth:`SSEDecoder.feed_raw` output: an event was dropped here for its size.
Recognise it by identity (``item is OVERFLOW``), never by its event type: a real
event may be named ``"\x00overflow"`` (the standard allows NUL in event types).
(Typed as the union, not as its tuple: compiled by mypyc, a fixed-shape tuple is kept
unboxed and boxed anew at each use, which would break the identity.)"""

DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024

_BOM = b"\xef\xbb\xbf"
_MAX_RETRY_DIGITS = 4000
_MAX_RETRY = 10**_MAX_RETRY_DIGITS - 1
"""A ``retry`` longer than this many digits counts as this (milliseconds: forever)."""


def _block_size(tail: bytearray) -> int:
    """Size of the block an unterminated tail will be: its final LF is a line end
    that the blank line will consume, not a byte of the block."""
    return len(tail) - (tail[-1:] == b"\n")


@dataclass(slots=True, frozen=True)
class ServerSentEvent:
    """One dispatched SSE event."""

    event: str = "message"
    data: str = ""
    id: str = ""
    """The last event id in force when this event was dispatched ("" if none)."""
    retry: int | None = None
    """The last valid ``retry`` value seen so far, in milliseconds."""

    def to_dict(self) -> dict[str, object]:
        return {"event": self.event, "data": self.data, "id": self.id, "retry": self.retry}


class SSEDecoder:
    """Incremental, sans-I/O SSE decoder.

    >>> d = SSEDecoder()
    >>> d.feed(b"data: hel")
    []
    >>> d.feed(b"lo\\n\\n")
    [ServerSentEvent(event='message', data='hello', id='', retry=None)]
    """

    __slots__ = (
        "_bom_done",
        "_discarding",
        "_last_lf",
        "_line_tail",
        "_skip_lf",
        "_tail",
        "last_event_id",
        "max_event_size",
        "retry",
        "truncated",
    )

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self.last_event_id = ""
        self.retry: int | None = None
        self._tail = bytearray()  # bytes of the unterminated block
        self._skip_lf = False  # the previous read ended with CR: a leading LF is its pair
        self._bom_done = False
        self._discarding = False  # dropping the rest of an oversized block
        self._last_lf = False
        self._line_tail = False  # the tail is _data_lines' (one data line; _feed resets)
        self.truncated = False
        """Set by :meth:`close` when an unterminated block had to be discarded."""

    @property
    def pending(self) -> bool:
        """True when input is buffered that has not been terminated by a blank line."""
        # Blocks are parsed only once complete, so all that can be pending is the tail.
        return bool(self._tail.strip(b"\n"))

    # -- public API ----------------------------------------------------------------

    def feed(self, data: bytes) -> list[ServerSentEvent]:
        """Decode ``data`` (any split of the stream) and return the events it completed.

        Raises :class:`EventTooLarge` when an event exceeds ``max_event_size``: that
        event is dropped (up to its blank line) and ``exc.events`` holds the other
        events this read completed; decoding can go on with the next read.
        """
        try:
            raw = self._feed(data, True)
        except EventTooLarge as exc:
            exc.events = _public(exc.events)
            raise
        return _public(raw)

    def close(self) -> list[ServerSentEvent]:
        """End of input. Per the standard, an unterminated final block is discarded."""
        self._line_tail = False
        if not self._tail:  # (the usual end: nothing pending, nothing to discard)
            self.truncated = False
            return []
        self.truncated = self.pending
        if self.truncated and not self._discarding:
            # The complete lines of the unterminated block were processed as they
            # came, per the standard: a ``retry`` among them sets the reconnection
            # time. Only the pending event (its data, type, id) is discarded.
            end = self._tail.rfind(b"\n")
            for line in bytes(self._tail[:end]).split(b"\n") if end != -1 else ():
                field, _, value = line.partition(b":")
                if field == b"retry":
                    self._field(field, value[1:] if value[:1] == b" " else value)
        self._reset_block()
        return []

    def feed_raw(self, data: bytes) -> list[RawEvent]:
        """Hot-path variant of :meth:`feed`, for consumers of JSON data.

        Each item is the ``data`` bytes of a default-type event whose block had only
        its ``data:`` line (the common case: nothing else to report), or a tuple
        ``(event type, data, last event id, retry)`` with type and data as bytes.
        Data stays bytes so it can go to orjson without a ``str`` round-trip.
        An event over ``max_event_size`` is dropped and :data:`OVERFLOW` stands in
        its place (this method does not raise).
        """
        cr = 13 in data  # (searched once: the general way is told, not searching again)
        if self._tail or data[-2:] != b"\n\n" or self._skip_lf or self._discarding or cr:
            if (
                not (self._skip_lf or self._discarding)
                and (self._line_tail or cr)
                and (lines := self._data_lines(data)) is not None  # (Gemini's CRLF events)
            ):
                return lines
            return self._feed(data, False, cr)
        if not self._bom_done:
            if len(data) < 3 or data[:3] == _BOM:
                return self._feed(data, False)
            self._bom_done = True  # (as _normalise decides for a first read without BOM)
        # The usual read (a relay feeds one upstream read at a time, often one event):
        # at a block boundary, ending one, nothing to normalise. Its blocks are the read
        # less its final blank line, exactly what :meth:`_region` would cut.
        region = data[:-2]
        if len(region) <= self.max_event_size:
            if region.startswith(b"data: ") and 10 not in region:
                return [region[6:]]  # one block, one data line
            if (
                region.startswith(b"event: ")
                and (lf := region.find(b"\n")) > 0
                and region.startswith(b"data: ", lf + 1)
                and region.find(b"\n", lf + 1) == -1
            ):
                return [(region[7:lf], region[lf + 7 :], self.last_event_id, self.retry)]
        return self._events(region, False, False)

    # -- internals -----------------------------------------------------------------

    def _data_lines(self, data: bytes) -> list[RawEvent] | None:
        """The events of a read whose blocks are each one ``data:`` line ended by CRLF
        CRLF (Gemini: few, large events that straddle reads), or that only extends such
        a pending line; None: another shape (nothing changed). Cut at each
        ``\\r\\n\\r\\ndata: `` by one split, of that shape when the pieces hold no CR or
        LF (a join, two ``memchr``); decided as the general way would (sizes, tail)."""
        tail = self._tail
        if not self._bom_done:
            if tail or len(data) < 3 or data.startswith(_BOM):
                return None
            self._bom_done = True  # (as _normalise decides for a first read without BOM)
        elif tail and not self._line_tail and (10 in tail or not tail.startswith(b"data: ")):
            return None  # (a tail the general way left, not one data line)
        ends = data.endswith(b"\r\n\r\n")
        parts = data.split(b"\r\n\r\ndata: ")
        if ends:
            parts[-1] = parts[-1][:-4]
        joined = b"".join(parts)  # (the read itself when it is one piece: no copy)
        if 13 in joined or 10 in joined:
            return None
        limit = self.max_event_size
        if not tail:
            if not parts[0].startswith(b"data: "):
                return None
            parts[0] = parts[0][6:]
        elif len(tail) + len(parts[0]) > limit:
            return None
        if max(map(len, parts)) + 6 > limit:  # (each block, and the tail it leaves)
            return None
        rest = None if ends else parts.pop()
        if tail and parts:  # the pending line ends in this read
            tail += parts[0]
            del tail[:6]  # (a bytearray drops its head in place, without a copy)
            parts[0] = bytes(tail)
            tail.clear()
        if rest is not None:
            if not tail:
                tail += b"data: "
            tail += rest
            self._line_tail = True
        return parts  # type: ignore[return-value]

    def _feed(self, chunk: bytes, full: bool, cr: bool = True) -> list[RawEvent]:
        self._line_tail = False
        normalised = self._normalise(chunk, cr)
        if not normalised:
            return []
        region, tail_overflow = self._region(normalised)
        if region is None:
            return self._finish([OVERFLOW], full) if tail_overflow else []
        return self._events(region, tail_overflow, full)

    def _events(self, region: bytes, tail_overflow: bool, full: bool) -> list[RawEvent]:
        """The events of ``region`` (complete blocks, LF line ends), then :data:`OVERFLOW`
        if the tail grew past the limit."""
        limit = self.max_event_size
        if not full and region.startswith(b"data: "):
            # Fastest path: every block of this read is exactly one "data: " line
            # (no lone LF, every block starts "data: "). Then one C-level split
            # yields all payloads, with no Python work per event.
            payloads = region.split(b"\n\ndata: ")
            payloads[0] = payloads[0][6:]  # (not region[6:]: a copy of the whole read)
            # Each separator holds exactly two LFs: if the payloads hold none, every
            # block was one "data: " line and nothing else. (A join and a memchr cost a
            # fifth of ``region.count(10)``, a byte-by-byte loop: 7% of a chunk's time.)
            if 10 not in b"".join(payloads) and (
                len(region) <= limit or max(map(len, payloads)) + 6 <= limit
            ):
                if tail_overflow:
                    payloads.append(OVERFLOW)  # type: ignore[arg-type]
                    return self._finish(payloads, full)  # type: ignore[arg-type]
                # (not typing.cast: a function call on the hottest path)
                return payloads  # type: ignore[return-value]
        if (
            not full
            and region.startswith(b"event: ")
            and len(region) <= limit
            and (
                named := self._named_then_data(region)
                if region.endswith(b"\n\ndata: [DONE]")
                else self._named(region)
            )
            is not None
        ):
            # Second fastest: every block is "event: NAME" + one "data: " line.
            if tail_overflow:
                named.append(OVERFLOW)
            return named
        out: list[RawEvent] = []
        for block in region.split(b"\n\n"):
            # An event's size is its block's bytes (every line: field names, comments,
            # ignored lines; line ends as LF), so the verdict is the same however
            # the stream was split into reads (the unterminated tail is counted so).
            if len(block) > limit and len(block.strip(b"\n")) > limit:
                out.append(OVERFLOW)  # this event is dropped whole, the others kept
                continue
            # Fast path: a block that is exactly one "data: ..." line.
            if block.startswith(b"data: ") and 10 not in block:
                if full:
                    out.append((b"", block[6:], self.last_event_id, self.retry))
                else:
                    out.append(block[6:])
            elif (
                block.startswith(b"event: ")
                and (lf := block.find(b"\n")) > 0
                and block.startswith(b"data: ", lf + 1)
                and block.find(b"\n", lf + 1) == -1
            ):
                # Second fast path: exactly "event: NAME" then one "data: ..." line, as
                # the Anthropic, Responses and Cohere streams send every event.
                out.append((block[7:lf], block[lf + 7 :], self.last_event_id, self.retry))
            else:
                lines = block.split(b"\n")
                lines.append(b"")
                self._lines(lines, out)
        if tail_overflow:
            out.append(OVERFLOW)
        return self._finish(out, full)

    def _named(self, region: bytes) -> list[RawEvent] | None:
        """The events of ``region`` if every block is exactly ``event: NAME`` and one
        ``data: `` line (Anthropic, OpenAI Responses and Cohere send every event so), else
        None. No pass over the bytes that steps one byte at a time (``split(b"\\n")``
        does: it was the costliest part of reading these streams): the region is cut at
        each ``\\n\\nevent: ``, each block at its first ``\\ndata: ``; the blocks are of
        that shape exactly when every cut found its ``data:`` line and no name or data
        holds a LF (a comment, an ``id:``, a second ``data:`` line or a blank line more
        would). One ``partition`` and two ``memchr`` per block, in a plain loop: a third
        cheaper compiled, and cheaper interpreted too, than transposing the partitions
        with ``zip`` and checking joins of the names and of the data."""
        blocks = region.split(b"\n\nevent: ")
        blocks[0] = blocks[0][7:]  # (the region, so the first block, starts "event: ")
        lid, retry = self.last_event_id, self.retry
        out: list[RawEvent] = []
        for block in blocks:
            name, sep, data = block.partition(b"\ndata: ")
            if not sep or 10 in name or 10 in data:
                return None
            out.append((name, data, lid, retry))
        return out

    def _named_then_data(self, region: bytes) -> list[RawEvent] | None:
        """:meth:`_named` for a region whose last block is one ``data: `` line (Cohere
        ends its stream with ``data: [DONE]``: a read that holds it is not read twice),
        that block's data last; else None."""
        cut = region.rfind(b"\n\n")
        if cut == -1 or not region.startswith(b"data: ", cut + 2):
            return None
        last = region[cut + 8 :]
        if 10 in last or (named := self._named(region[:cut])) is None:
            return None
        named.append(last)
        return named

    def _normalise(self, chunk: bytes, cr: bool = True) -> bytes:
        """The read with the BOM, a CR's LF from the previous read, CRLF/CR line ends
        and the rest of a block being discarded taken care of (b"": nothing to do)."""
        if not chunk:
            return b""  # an empty read changes nothing (not even a pending CR)
        if not self._bom_done:
            if self._tail or len(chunk) < 3:  # (a first read shorter than a BOM)
                chunk = bytes(self._tail) + chunk
                if len(chunk) < 3 and _BOM.startswith(chunk):
                    # Not yet known whether this is a BOM: wait for more bytes.
                    self._tail[:] = chunk
                    return b""
                self._tail.clear()
            self._bom_done = True
            if chunk[:3] == _BOM:
                chunk = chunk[3:]
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if not chunk:
            return b""
        if cr and 13 in chunk:  # (``cr`` False: the read was searched, it holds none)
            # CRLF and lone CR are line ends too: normalise them to LF once, here.
            if chunk[-1:] == b"\r":
                self._skip_lf = True  # its LF, if any, starts the next read
            chunk = chunk.replace(b"\r\n", b"\n")
            if 13 in chunk:  # (a lone CR: rare; the search is a tenth of a replace)
                chunk = chunk.replace(b"\r", b"\n")
        if self._discarding:
            chunk = self._discard(chunk)
        return chunk

    def _region(self, chunk: bytes) -> tuple[bytes | None, bool]:
        """The complete blocks this read ends (None: none yet), the rest kept as the
        tail; and whether the tail grew past the limit (then it was dropped)."""
        limit = self.max_event_size
        tail = self._tail
        if tail:
            # Only the new bytes (and the one before them) can hold a new block end.
            scan_from = len(tail) - 1
            tail += chunk
            end = tail.rfind(b"\n\n", scan_from)
            if end == -1:
                region = None
            else:
                region = bytes(tail[:end])
                del tail[: end + 2]
                if tail[:1] == b"\n":
                    tail[:] = tail.lstrip(b"\n")  # blank lines: not bytes of the next block
        else:
            end = chunk.rfind(b"\n\n")
            if end == -1:
                # At a block boundary: leading LFs are blank lines, not block bytes.
                tail += chunk.lstrip(b"\n") if chunk[:1] == b"\n" else chunk
                region = None
            else:
                region = chunk[:end]
                if end + 2 < len(chunk):
                    tail += chunk[end + 2 :].lstrip(b"\n")
        overflow = len(tail) > limit and _block_size(tail) > limit
        if overflow:
            self._overflow_tail()  # reported after this read's complete events
        return region, overflow

    def _overflow_tail(self) -> None:
        """The unterminated block grew past the limit: drop it, and drop what follows
        of it until its blank line, so its remainder is never parsed as new events."""
        self._last_lf = self._tail.endswith(b"\n")
        self._reset_block()
        self._discarding = True

    def _discard(self, chunk: bytes) -> bytes:
        """Bytes after the end of the block being discarded (b"" while it goes on)."""
        s = b"\n" + chunk if self._last_lf else chunk
        i = s.find(b"\n\n")
        if i == -1:
            self._last_lf = s.endswith(b"\n")
            return b""
        self._discarding = False
        return s[i + 2 :]

    def _finish(self, out: list[RawEvent], full: bool) -> list[RawEvent]:
        """Raw mode keeps OVERFLOW markers in place (the consumer reports the fault
        where it happened); full mode raises with the other events attached."""
        if not full or not any(e is OVERFLOW for e in out):
            return out
        raise EventTooLarge(
            f"an SSE event exceeded max_event_size ({self.max_event_size} bytes) and was dropped",
            events=[e for e in out if e is not OVERFLOW],
        )

    def _lines(self, lines: list[bytes], out: list[RawEvent]) -> None:
        # Blocks are handed over whole (``lines`` ends with a blank one), so a block's
        # data and type never outlive this call.
        data: list[bytes] = []
        event = b""
        for line in lines:
            if not line:
                if data:
                    payload = data[0] if len(data) == 1 else b"\n".join(data)
                    out.append((event, payload, self.last_event_id, self.retry))
                    data = []
                event = b""
                continue
            # Fast path: the overwhelmingly common "data: ..." line.
            if line[:6] == b"data: ":
                value = line[6:]
            else:
                colon = line.find(b":")
                if colon == 0:
                    continue  # comment
                if colon == -1:
                    field, value = line, b""
                else:
                    field = line[:colon]
                    value = (
                        line[colon + 2 :]
                        if line[colon + 1 : colon + 2] == b" "
                        else line[colon + 1 :]
                    )
                if field == b"event":
                    event = value
                    continue
                if field != b"data":
                    self._field(field, value)
                    continue
            data.append(value)

    def _field(self, field: bytes, value: bytes) -> None:
        if field == b"id":
            if b"\x00" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit():
            # bytes.isdigit is ASCII-only, as the standard requires. Python refuses
            # int() of over 4,300 digits: such a value saturates instead of raising.
            digits = value.lstrip(b"0") or b"0"
            self.retry = int(digits) if len(digits) <= _MAX_RETRY_DIGITS else _MAX_RETRY
        # Any other field is ignored, as the standard requires.

    def _reset_block(self) -> None:
        self._tail.clear()


def _public(raw: list[Any]) -> list[ServerSentEvent]:
    out: list[ServerSentEvent] = []
    for item in raw:
        assert isinstance(item, tuple)  # full mode always gives tuples
        ev, payload, lid, retry = item
        event = "message" if not ev else ev.decode("utf-8", "replace")
        out.append(ServerSentEvent(event, payload.decode("utf-8", "replace"), lid, retry))
    return out
