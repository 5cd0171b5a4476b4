"""RedisLogSettings: one frozen, validated value for a RedisStreamLog, and the constructor paths
existing callers use (no Redis server needed: nothing connects until first use)."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("redis")

from streamcite.relay.redis import RedisLogSettings, RedisStreamLog

URL = "redis://:s3cret-pw@127.0.0.1:6390/2"


def test_defaults_and_derived_values() -> None:
    s = RedisLogSettings(URL)
    assert (s.maxlen, s.retention, s.lease_ms, s.unavailable_after) == (10_000, 300.0, 5000, 5.0)
    assert (s.prefix, s.local_delivery, s.write_batch) == ("streamcite:relay:", "after_write", 2000)
    assert s.where == "127.0.0.1:6390/2"
    assert s.running_ttl_ms == 300_000 + 5000 and s.retention_ms == 300_000
    assert s.local_retention == 30.0
    assert s.keys.stream("x") == "streamcite:relay:s:x"
    assert s.keys.control("A") == "streamcite:relay:c:A"
    assert s.keys.fanout("A") == "streamcite:relay:f:A"
    # A unique instance id per settings value unless given.
    assert s.instance_id and s.instance_id != RedisLogSettings(URL).instance_id


def test_frozen_slotted_and_no_secret_in_repr() -> None:
    s = RedisLogSettings(URL, instance_id="A")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.maxlen = 3  # type: ignore[misc]
    assert not hasattr(s, "__dict__")
    assert "s3cret" not in repr(s) and "instance_id='A'" in repr(s)
    log = RedisStreamLog(s)
    assert "s3cret" not in repr(log) and "127.0.0.1:6390/2" in repr(log)


@pytest.mark.parametrize(
    "bad",
    [
        {"local_delivery": "sometimes"},
        {"maxlen": 0},
        {"retention": 0},
        {"lease_ms": 99},
        {"unavailable_after": -1},
        {"write_batch": 0},
        {"max_connections": 0},
        {"connect_timeout": 0},
        {"command_timeout": -1},
        {"close_flush": -1},
        {"close_flush": float("inf")},
        {"close_flush": float("nan")},
        {"instance_id": ""},
        {"prefix": ""},
    ],
)
def test_invalid_values_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        RedisLogSettings(URL, **bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # the keyword constructor validates the same way
        RedisStreamLog(URL, **bad)
    with pytest.raises(ValueError):  # and so does an override
        RedisStreamLog(RedisLogSettings(URL), **bad)


def test_every_constructor_path_gives_the_same_settings() -> None:
    from streamcite.relay import redislog

    by_settings = RedisStreamLog(RedisLogSettings(URL, instance_id="A", lease_ms=300))
    by_keywords = RedisStreamLog(URL, instance_id="A", lease_ms=300)
    by_override = RedisStreamLog(RedisLogSettings(URL, instance_id="A"), lease_ms=300)
    by_old_path = redislog.RedisStreamLog(URL, instance_id="A", lease_ms=300)
    assert by_settings.settings == by_keywords.settings == by_override.settings
    assert by_old_path.settings == by_settings.settings
    assert redislog.RedisStreamLog is RedisStreamLog
    assert by_settings.instance_id == "A"
    with pytest.raises(TypeError):
        RedisStreamLog(URL, no_such_setting=1)
