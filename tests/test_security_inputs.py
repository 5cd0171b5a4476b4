"""Hostile input stays a client error: sequence numbers, terminal escapes, console markup.

Each case failed on the code before its fix (an HTTP 500, a raw escape sequence on the
terminal, a rich ``MarkupError`` traceback).
"""

from __future__ import annotations

import aiohttp
import pytest

from streamcite.web.eventsse import parse_last_event_id
from tests._relay_fixtures import fake_upstream, relay

# Digits Python's str.isdigit() accepts but that are no ASCII sequence number.
NOT_SEQUENCE_NUMBERS = ["²", "①", "١٢", "1²", "+1", "1_0", "-1", "1" * 19, "0x10", "1 2"]


@pytest.mark.parametrize("value", NOT_SEQUENCE_NUMBERS)
def test_last_event_id_is_ascii_digits_only(value: str) -> None:
    with pytest.raises(ValueError):
        parse_last_event_id(value)


def test_last_event_id_accepts_what_eventsource_sends() -> None:
    assert parse_last_event_id(" 42 ") == 42
    assert parse_last_event_id("") == parse_last_event_id(None) == 0


async def test_relay_answers_400_for_a_non_ascii_sequence_number() -> None:
    async with (
        fake_upstream() as up,
        relay(up.url + "/v1") as server,
        aiohttp.ClientSession() as session,
    ):
        for value in NOT_SEQUENCE_NUMBERS:
            r = await session.get(
                server.url + "/sse", params={"stream_id": "s1", "after_seq": value}
            )
            assert r.status == 400, value
            assert (await r.json())["code"] == "bad_message"
            r = await session.get(
                server.url + "/sse",
                params={"stream_id": "s1"},
                headers={"Last-Event-ID": value.encode().decode("latin-1")},
            )
            assert r.status == 400, value
