"""What the Redis stream log adds per token, against the in-memory log, in one run.

N streams (100 and 1,000) each get one token event every 20 ms (50 tokens/s, the relay
benchmark's upstream rate) for ``--seconds``; one reader per stream follows it with the
relay's own loop (``read(after_seq, block=...)``). Added latency per token = reader has the
entry − writer called ``append``, on one monotonic clock (CLOCK_MONOTONIC is system-wide, so
it also holds across processes). Three set-ups:

  memory         MemoryStreamLog; writer and readers in one process (one relay)
  redis-local    RedisStreamLog; readers on the owner instance (a client on its own relay);
                 they see an entry once Redis has stored it (local_delivery="after_write")
  redis-local-immediate  the same with local_delivery="immediate" (Redis written behind)
  redis-remote   RedisStreamLog; the owner in a child process, readers in this one — every
                 client reconnected to another relay instance (the worst case)

Redis operations per token: commands Redis executed (INFO commandstats, scripts' inner
commands included) and client round trips, each divided by the tokens written.

Run: ``.venv/bin/python benchmarks/bench_redislog.py [--streams 100 1000] [--seconds 5]``
(starts its own redis-server through scripts/redis-server.sh unless ``--redis-url`` is given).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamcite.relay.memlog import MemoryStreamLog  # noqa: E402
from streamcite.relay.streamlog import StreamLog  # noqa: E402

RATE = 50.0
WORDS = [" the", " policy", " allows", " remote", " work", " up", " to", " three", " days", " [1]"]
DONE = b'{"type":"done"}'


TOKENS = [orjson.dumps({"type": "token", "index": 0, "text": w, "display": w}) for w in WORDS]
SLOTS = 20
"""The 20 ms token period is cut in 1 ms slots; each stream belongs to one slot."""


def token_payload(i: int) -> bytes:
    # A relay token event, prefixed with the send time (fixed width, cheap to parse back).
    return b"%018.6f" % time.perf_counter() + TOKENS[i % len(TOKENS)]


def sent_at(payload: bytes) -> float:
    return float(payload[:18])


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


async def open_streams(log: StreamLog, sids: list[str], owner: str) -> None:
    await asyncio.gather(*(log.open_stream(sid, owner=owner) for sid in sids))


async def write_streams(log: StreamLog, sids: list[str], seconds: float) -> int:
    n_tokens = int(seconds * RATE)
    # One ticker wakes each slot's streams every 20 ms, as upstream data would wake the relay's
    # producers: one wake-up per token, without a timer per token.
    slots = [asyncio.Event() for _ in range(SLOTS)]

    async def ticker() -> None:
        start = time.monotonic() + 0.2
        k = 0
        while True:  # until cancelled: a stream that fell behind still gets its ticks
            k += 1
            delay = start + k / (RATE * SLOTS) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            event = slots[k % SLOTS]
            slots[k % SLOTS] = asyncio.Event()
            event.set()

    async def one(idx: int, sid: str) -> None:
        for i in range(n_tokens):
            await slots[idx % SLOTS].wait()
            await log.append(sid, token_payload(i))
        await log.append(sid, DONE)
        await log.finish(sid)

    tick = asyncio.create_task(ticker())
    await asyncio.gather(*(one(i, s) for i, s in enumerate(sids)))
    tick.cancel()
    return len(sids) * (n_tokens + 1)


async def read_streams(log: StreamLog, sids: list[str], deadline: float) -> list[float]:
    latencies: list[float] = []

    async def one(sid: str) -> None:
        after = 0
        while time.monotonic() < deadline:
            entries = await log.read(sid, after, block=1.0)
            if not entries:
                continue
            now = time.perf_counter()
            for e in entries:
                assert e.seq == after + 1, f"{sid}: gap or duplicate ({after} -> {e.seq})"
                after = e.seq
                if e.payload == DONE:
                    return
                latencies.append(now - sent_at(e.payload))

    await asyncio.gather(*(one(s) for s in sids))
    return latencies


def redis_calls(url: str) -> int:
    import redis

    r = redis.Redis.from_url(url)
    try:
        stats = r.info("commandstats")
        return sum(v["calls"] for k, v in stats.items() if k not in ("cmdstat_info",))
    finally:
        r.close()


async def run_mode(mode: str, n: int, seconds: float, url: str | None) -> dict[str, Any]:
    run = f"{os.getpid()}-{time.monotonic_ns()}"
    sids = [f"b{n}-{mode}-{i}-{run}" for i in range(n)]
    round_trips = 0
    deadline = time.monotonic() + seconds + 60
    if mode == "memory":
        log: Any = MemoryStreamLog()
        await open_streams(log, sids, "bench")
        cpu0 = os.times()
        readers = asyncio.create_task(read_streams(log, sids, deadline))
        tokens = await write_streams(log, sids, seconds)
        lat = await readers
        cpu1 = os.times()
        await log.aclose()
    else:
        from streamcite.relay.redis import RedisLogSettings, RedisStreamLog

        assert url is not None
        log = RedisStreamLog(
            RedisLogSettings(
                url,
                instance_id=f"bench-reader-{mode}-{n}-{run}",
                local_delivery="immediate" if mode == "redis-local-immediate" else "after_write",
            )
        )
        await log.connect()
        if mode in ("redis-local", "redis-local-immediate"):
            await open_streams(log, sids, "bench")
            calls0 = redis_calls(url)
            trips0 = log.stats()["round_trips"]
            cpu0 = os.times()
            readers = asyncio.create_task(read_streams(log, sids, deadline))
            tokens = await write_streams(log, sids, seconds)
            lat = await readers
        else:
            child = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--role-writer",
                url,
                str(n),
                str(seconds),
                json.dumps(sids),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            assert child.stdin is not None and child.stdout is not None
            # The owner opens the streams, then waits for us: every reader is following
            # (blocked in read) before the first token.
            line = await asyncio.wait_for(child.stdout.readline(), 120)
            assert line.strip() == b"ready", line
            calls0 = redis_calls(url)
            trips0 = log.stats()["round_trips"]
            cpu0 = os.times()
            readers = asyncio.create_task(read_streams(log, sids, deadline))
            await asyncio.sleep(1.0)
            child.stdin.write(b"go\n")
            await child.stdin.drain()
            lat = await readers
            out = await asyncio.wait_for(child.stdout.read(), 120)
            await asyncio.wait_for(child.wait(), 60)
            child_stats = json.loads(out)
            tokens = child_stats["tokens"]
            round_trips += child_stats["round_trips"]
        cpu1 = os.times()
        round_trips += log.stats()["round_trips"] - trips0
        await log.aclose()
    calls = (redis_calls(url) - calls0) if url and mode != "memory" else 0
    # The bench's own INFO calls are not counted (they are excluded by name).
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    cpu += (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system)
    return {
        "mode": mode,
        "streams": n,
        "tokens": tokens,
        "received": len(lat),
        "p50_ms": pct(lat, 50) * 1e3,
        "p99_ms": pct(lat, 99) * 1e3,
        "max_ms": max(lat) * 1e3 if lat else float("nan"),
        "redis_cmds_per_token": calls / tokens if tokens else 0.0,
        "round_trips_per_token": round_trips / tokens if tokens else 0.0,
        "cpu_s": cpu,
    }


async def writer_role(url: str, n: int, seconds: float, sids: list[str]) -> None:
    from streamcite.relay.redis import RedisLogSettings, RedisStreamLog

    log = RedisStreamLog(RedisLogSettings(url, instance_id=f"bench-owner-{os.getpid()}"))
    await log.connect()
    await open_streams(log, sids, "bench-owner")
    trips0 = log.stats()["round_trips"]
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    tokens = await write_streams(log, sids, seconds)
    stats = {"round_trips": log.stats()["round_trips"] - trips0}
    await log.aclose()
    print(json.dumps({"tokens": tokens, "round_trips": stats["round_trips"]}))


@contextlib.contextmanager
def own_redis() -> Any:
    script = ROOT / "scripts" / "redis-server.sh"
    if not shutil.which("redis-server") and not Path("/usr/bin/redis-server").exists():
        subprocess.run(["bash", str(script), "install"], check=True)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = tempfile.mkdtemp(prefix="bench-redis-")
    subprocess.run(["bash", str(script), "start", str(port), d], check=True, capture_output=True)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        subprocess.run(["bash", str(script), "stop", d], check=False)
        shutil.rmtree(d, ignore_errors=True)


async def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--role-writer":
        _, _, url, n, seconds, sids = sys.argv
        await writer_role(url, int(n), float(seconds), json.loads(sids))
        return
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--streams", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument(
        "--modes",
        nargs="+",
        default=["memory", "redis-local", "redis-local-immediate", "redis-remote"],
    )
    ap.add_argument("--redis-url", default=None, help="use this Redis instead of starting one")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()

    with contextlib.ExitStack() as stack:
        url = args.redis_url or stack.enter_context(own_redis())
        rows = []
        for n in args.streams:
            for mode in args.modes:
                row = await run_mode(mode, n, args.seconds, url)
                rows.append(row)
                print(
                    f"{n:>5} streams  {mode:<13} p50 {row['p50_ms']:6.2f} ms  p99 {row['p99_ms']:6.2f} ms"
                    f"  max {row['max_ms']:7.2f} ms  redis cmds/token {row['redis_cmds_per_token']:.3f}"
                    f"  round trips/token {row['round_trips_per_token']:.3f}"
                    f"  cpu {row['cpu_s']:.1f} s  ({row['received']}/{row['tokens'] - n} tokens)",
                    flush=True,
                )
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
