"""The content-template fast path gives exactly the events of the general path."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:
    from _streams import general_path_events as _general
    from _streams import normalise
except ImportError:  # tests/ imported as a package
    from tests._streams import general_path_events as _general
    from tests._streams import normalise

from streamcite.core.api import ChatStreamParser
from streamcite.core.events import Event

_TRICKY = [
    '","finish_reason":null}]}',
    '"content":"',
    '\\"',
    "\\",
    '"',
    " [1]",
    "[2",
    "]",
    "\u2028",
    "\x01",
    "😀",
    "שלום",
    "é",
    "",
]
_texts = st.one_of(st.text(max_size=12), st.sampled_from(_TRICKY))


def _payload(text: str, cid: str, how: int, extra: dict[str, Any]) -> bytes:
    obj = {
        "id": cid,
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
        **extra,
    }
    if how == 0:
        return orjson.dumps(obj)
    if how == 1:
        return json.dumps(obj).encode()  # \uXXXX escapes, surrogate pairs for emoji
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(_texts, min_size=1, max_size=30),
    varying=st.lists(st.booleans(), max_size=30),
    hows=st.lists(st.integers(0, 2), max_size=30),
    extras=st.lists(
        st.sampled_from([{}, {}, {}, {"obfuscation": "x"}, {"usage": None}]), max_size=30
    ),
    cuts=st.lists(st.integers(0, 10_000), max_size=10),
    finish=st.booleans(),
)
def test_fast_path_events_equal_general_path(
    texts: list[str],
    varying: list[bool],
    hows: list[int],
    extras: list[dict[str, Any]],
    cuts: list[int],
    finish: bool,
) -> None:
    frames = []
    for i, text in enumerate(texts):
        cid = f"c{i}" if i < len(varying) and varying[i] else "c"
        how = hows[i] if i < len(hows) else 0
        extra = extras[i] if i < len(extras) else {}
        frames.append(b"data: " + _payload(text, cid, how, extra) + b"\n\n")
    if finish:
        fin = {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        frames.append(b"data: " + orjson.dumps(fin) + b"\n\ndata: [DONE]\n\n")
    stream = b"".join(frames)
    bounds = sorted({c % (len(stream) + 1) for c in cuts})
    reads = [stream[a:b] for a, b in zip([0, *bounds], [*bounds, len(stream)], strict=True)]
    p = ChatStreamParser()
    got: list[Event] = []
    for r in reads:
        got.extend(p.feed(r))
    got.extend(p.close())
    assert normalise(got) == normalise(_general(stream))
    assert p.answer.text == "".join(
        e.text  # type: ignore[attr-defined]
        for e in got
        if e.type == "token" and e.index == 0  # type: ignore[attr-defined]
    )


def test_template_is_used_and_switches_off_for_varying_envelopes() -> None:
    p = ChatStreamParser()
    for i in range(50):
        p.feed(b"data: " + _payload(f"w{i}", "c", 0, {}) + b"\n\n")
    tpl = p._interpreter._tpl
    assert tpl.on and tpl.proven
    assert p.answer.text == "".join(f"w{i}" for i in range(50))
    q = ChatStreamParser()
    for i in range(50):
        q.feed(b"data: " + _payload("w", "c", 0, {"obfuscation": "x" * (i % 7)}) + b"\n\n")
    assert not q._interpreter._tpl.on
    assert q.answer.text == "w" * 50


def test_a_bytearray_or_memoryview_read_gives_the_events_of_bytes() -> None:
    """Reads as a socket's ``recv_into`` gives them: the same events as ``bytes`` (the
    template loop takes only ``bytes`` items; a bytearray read once made the chat reader
    fail on its first chunk)."""
    body = (
        b"".join(
            b'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % w
            for w in (b"Paris", b" is [1]", b" the", b" capital.")
        )
        + b"data: [DONE]\n\n"
    )

    def events(kind: Any) -> list[Any]:
        p = ChatStreamParser(dialect="chat")
        got = [e for k in range(0, len(body), 37) for e in p.feed(kind(body[k : k + 37]))]
        return [orjson.dumps(e) for e in got + p.close()]

    want = events(bytes)
    assert len(want) == 5  # four tokens and the ref
    assert events(bytearray) == want
    assert events(memoryview) == want
