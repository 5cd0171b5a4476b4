"""Parse cost on REAL provider recordings, per dialect: µs per SSE event and per stream.

The recordings are what providers actually send (short streams, many event kinds): the
shared ones in ``../shared/dialects/fixtures`` (relative to the repository; or
``$STREAMCITE_DIALECT_RECORDINGS``) where they exist, the project's own
``tests/fixtures/dialects`` otherwise. A file's dialect is its name up to ``__``.

Per dialect, one process, interleaved rounds, each recording fed from memory in 4 KiB
reads, everything a stream costs counted:

  floor      split the body on blank lines, ``orjson.loads`` each ``data:`` line
  streamcite ``ChatStreamParser(dialect=D)`` created, ``feed`` per read, ``close``,
             ``done_event()`` (the answer snapshot): parser creation to ``done``
  auto       the same with ``dialect="auto"`` (decided from the first event)
  SDK        the vendor SDK's own stream parser over an httpx MockTransport (openai
             ``chat.completions`` / ``responses.stream``, anthropic ``messages.stream``,
             google-genai ``generate_content_stream``, cohere ``chat_stream``); recordings
             the SDK raises on are left out of its column *and* of the ratio beside it

Times are CPU time of this process (``time.process_time``), the minimum of the rounds
(each round runs every recording of the dialect ``--repeat`` times). Prints µs per event,
µs per stream, the ratio to the floor (target ≤ 1.3×) and SDK ÷ streamcite (target ≥ 20×).

``--only ours|floor --dialects D`` runs one implementation ``--repeat`` times and nothing
else, for ``valgrind --tool=callgrind`` (instruction counts are stable on a noisy machine).

Run: ``.venv/bin/python benchmarks/bench_recordings.py [--rounds 9] [--repeat 20]
[--dialects anthropic gemini] [--no-sdk]``
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_dialects

READ = 4096
REPO = Path(__file__).resolve().parents[1]
DIALECT_ORDER = ["chat", "responses", "anthropic", "gemini", "cohere"]


def recordings_dir() -> Path:
    env = os.environ.get("STREAMCITE_DIALECT_RECORDINGS")
    for cand in (env, REPO.parent / "shared/dialects/fixtures", "/work/shared/dialects/fixtures"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return REPO / "tests/fixtures/dialects"


def load(root: Path) -> dict[str, list[tuple[str, list[bytes], int]]]:
    """dialect → [(file name, 4 KiB reads, SSE events with data)]."""
    out: dict[str, list[tuple[str, list[bytes], int]]] = {}
    for f in sorted(root.glob("*.sse")):
        dialect = f.name.split("__", 1)[0]
        if dialect not in DIALECT_ORDER:
            continue
        body = f.read_bytes()
        parts = [body[i : i + READ] for i in range(0, len(body), READ)]
        out.setdefault(dialect, []).append((f.name, parts, floor(parts)))
    return out


def floor(parts: list[bytes]) -> int:
    """Split on blank lines, ``orjson.loads`` each ``data:`` line: events with data."""
    buf = b""
    n = 0
    loads = orjson.loads
    for piece in parts:
        buf += piece
        blocks = buf.replace(b"\r\n", b"\n").split(b"\n\n") if b"\r" in buf else buf.split(b"\n\n")
        buf = blocks.pop()
        for block in blocks:
            at = block.find(b"data:")
            if at < 0:
                continue
            data = block[at + 5 :].lstrip(b" ")
            if data != b"[DONE]":
                loads(data)
            n += 1
    return n


def make_ours(dialect: str) -> Callable[[list[bytes]], int]:
    from streamcite.core.api import ChatStreamParser

    def run(parts: list[bytes]) -> int:
        p = ChatStreamParser(dialect=dialect)  # type: ignore[arg-type]
        n = 0
        for piece in parts:
            n += len(p.feed(piece))
        n += len(p.close())
        p.done_event()
        return n

    return run


def sdk_chat(parts: list[bytes]) -> int:
    import openai

    with bench_dialects._http(parts, bench_dialects._httpx_of(openai)) as http:
        client = openai.OpenAI(api_key="x", base_url="http://bench/v1", http_client=http)
        n = 0
        for chunk in client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "q"}], stream=True
        ):
            n += len(chunk.choices)
    return n


SDKS: dict[str, Callable[[list[bytes]], int]] = {"chat": sdk_chat, **bench_dialects.SDKS}


def _sdk_ok(fn: Callable[[list[bytes]], int], parts: list[bytes]) -> bool:
    try:
        fn(parts)
    except Exception:  # an SDK that refuses a real recording is left out
        return False
    return True


def timed(fn: Callable[[list[bytes]], int], streams: list[list[bytes]], repeat: int) -> float:
    gc.collect()
    t0 = time.process_time()
    for _ in range(repeat):
        for parts in streams:
            fn(parts)
    return time.process_time() - t0


def bench_dialect(
    dialect: str, recs: list[tuple[str, list[bytes], int]], args: Any
) -> dict[str, Any]:
    streams = [parts for _, parts, _ in recs]
    events = sum(n for *_, n in recs)
    impls: dict[str, tuple[Callable[[list[bytes]], int], list[list[bytes]], int]] = {
        "floor": (floor, streams, events),
        "ours": (make_ours(dialect), streams, events),
        "auto": (make_ours("auto"), streams, events),
    }
    if not args.no_sdk:
        sdk = SDKS[dialect]
        ok = [(p, n) for _, p, n in recs if _sdk_ok(sdk, p)]
        if ok:
            sub = [p for p, _ in ok]
            sub_events = sum(n for _, n in ok)
            impls["sdk"] = (sdk, sub, sub_events)
            impls["ours_sdkset"] = (make_ours(dialect), sub, sub_events)
    best: dict[str, float] = {k: float("inf") for k in impls}
    for _ in range(args.rounds):
        for k, (fn, ss, _) in impls.items():
            reps = max(1, args.repeat // 10) if k == "sdk" else args.repeat
            best[k] = min(best[k], timed(fn, ss, reps) / reps)
    res: dict[str, Any] = {"streams": len(recs), "events": events}
    for k, (_, ss, ev) in impls.items():
        res[k] = (best[k] / ev * 1e6, best[k] / len(ss) * 1e6, len(ss))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--repeat", type=int, default=20, help="runs of every recording per round")
    ap.add_argument("--dialects", nargs="*", default=DIALECT_ORDER)
    ap.add_argument("--no-sdk", action="store_true", help="skip the vendor SDKs")
    ap.add_argument("--only", choices=["ours", "floor"], help="one implementation (valgrind)")
    args = ap.parse_args()
    root = recordings_dir()
    recs = load(root)
    if args.only:
        for d in args.dialects:
            fn = floor if args.only == "floor" else make_ours(d)
            for _ in range(args.repeat):
                for _, parts, _ in recs.get(d, []):
                    fn(parts)
        return
    import streamcite
    from streamcite.core.build import core_build

    print(f"recordings: {root}; streamcite from {Path(streamcite.__file__).parent} "
          f"(core: {core_build()}); python "
          f"{sys.version.split()[0]}; {args.rounds} rounds × {args.repeat}; CPU time, min of rounds")  # fmt: skip
    print(f"{'dialect':<10} {'files':>5} {'events':>6}  {'floor µs/ev':>11}  {'ours µs/ev':>10}"
          f"  {'×floor':>6}  {'auto ×':>6}  {'floor µs/st':>11}  {'ours µs/st':>10}"
          f"  {'SDK µs/ev':>9}  {'SDK÷ours':>8}")  # fmt: skip
    for d in args.dialects:
        if d not in recs:
            continue
        r = bench_dialect(d, recs[d], args)
        f_ev, f_st, _ = r["floor"]
        o_ev, o_st, _ = r["ours"]
        a_ev = r["auto"][0]
        sdk = r.get("sdk")
        sdk_s = (f"{sdk[0]:9.2f}  {sdk[0] / r['ours_sdkset'][0]:7.1f}×"
                 + (f" ({sdk[2]}/{r['streams']} files)" if sdk[2] < r["streams"] else "")
                 if sdk else f"{'-':>9}  {'-':>8}")  # fmt: skip
        print(f"{d:<10} {r['streams']:>5} {r['events']:>6}  {f_ev:11.3f}  {o_ev:10.3f}"
              f"  {o_ev / f_ev:5.2f}×  {a_ev / f_ev:5.2f}×  {f_st:11.1f}  {o_st:10.1f}"
              f"  {sdk_s}")  # fmt: skip


if __name__ == "__main__":
    main()
