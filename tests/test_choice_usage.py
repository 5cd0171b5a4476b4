"""Usage inside a choice (Moonshot sends it in the finishing choice), in any split."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.api import iter_events
from streamcite.core.events import Event, UsageEvent

_USAGE = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}


def _chunk(delta: dict[str, object], finish: str | None = None, **choice: object) -> bytes:
    ch = {"index": 0, "delta": delta, "finish_reason": finish, **choice}
    body = {"id": "c1", "object": "chat.completion.chunk", "model": "kimi-k2", "choices": [ch]}
    return b"data: " + orjson.dumps(body) + b"\n\n"


def _stream(mid_usage: bool) -> bytes:
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": f"w{i} "}) for i in range(8)]
    if mid_usage:  # usage inside a content chunk's choice, before the finish
        chunks.append(_chunk({"content": "x"}, usage=_USAGE))
    chunks.append(_chunk({}, "stop", **({} if mid_usage else {"usage": _USAGE})))
    return b"".join(chunks) + b"data: [DONE]\n\n"


def _events(data: bytes, cuts: list[int]) -> list[Event]:
    bounds = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *bounds], [*bounds, len(data)], strict=True)]
    return list(iter_events(pieces))


def test_usage_in_the_finishing_choice_is_captured() -> None:
    events = _events(_stream(mid_usage=False), [])
    usage = [e for e in events if type(e) is UsageEvent]
    assert len(usage) == 1 and usage[0].total_tokens == 14
    answer = events[-1].answer  # type: ignore[attr-defined]
    assert answer.usage.prompt_tokens == 11 and not answer.errors
    # After the finish, as for a chunk-level usage on the finish chunk.
    types = [e.type for e in events]
    assert types.index("usage") > types.index("finish")


@settings(max_examples=60, deadline=None)
@given(mid=st.booleans(), cuts=st.lists(st.integers(0, 4000), max_size=10))
def test_choice_usage_is_one_event_in_any_split(mid: bool, cuts: list[int]) -> None:
    # Also once the fast loop runs: a content chunk whose choice carries usage leaves it.
    events = _events(_stream(mid_usage=mid), cuts)
    usage = [e for e in events if type(e) is UsageEvent]
    assert [u.total_tokens for u in usage] == [14]
    text = events[-1].answer.text  # type: ignore[attr-defined]
    assert text == "".join(f"w{i} " for i in range(8)) + ("x" if mid else "")
