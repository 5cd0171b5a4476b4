"""Live claims: how soon a sentence's verdict arrives, and what it costs the tokens.

An upstream in its own process (its own event loop, like a real provider) streams an
answer of 24 sentences, one word per chunk, at 50 chunks/s, and records when it sent
each chunk (``time.perf_counter``: CLOCK_MONOTONIC, one clock for both processes).
The client runs ``stream_chat(after=[LocalGrounding(facts=20 facts)])`` and stamps
every event as its consumer receives it.

Measured:

* **sentence → claim**: for each claim, from the arrival of the chunk that completed
  the sentence's text (its last token) and from the arrival of the chunk that showed
  it was complete (the next word, or the finish chunk: a sentence can end only when
  what follows is seen) to the arrival of its ``claim`` event. Target: p50 ≤ 5 ms.
* **per-chunk latency**, server send → consumer receive, live claims on vs off
  (``LocalGrounding(facts, live_claims=False)``: the same check once, after the
  stream). Target: p99 on ≤ p99 off + 5 % of the 20 ms inter-chunk gap.
* **first claim vs grounding** on the embedded backend (``streamcite serve-local``,
  50 chunks/s): ``timings.first_claim_ms`` against the arrival of the ``grounding``
  event, with request-time facts (live) and with facts from the citations (at the
  finish chunk).

Run: ``.venv/bin/python benchmarks/bench_claims.py [--runs 3] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RATE = 50.0  # chunks per second
FACTS = [
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "It is 330 metres tall and was the tallest structure in the world until 1930.",
    "Gustave Eiffel's company designed and built the tower.",
    "The tower receives about seven million visitors a year.",
    "The Louvre is the world's most visited museum, with the Mona Lisa among its works.",
    "The Seine flows through Paris and into the English Channel at Le Havre.",
    "Notre-Dame de Paris was damaged by a fire in April 2019.",
    "The Paris Metro opened in 1900 and has 16 lines.",
    "Paris hosted the Summer Olympics in 1900, 1924 and 2024.",
    "The Arc de Triomphe stands at the western end of the Champs-Élysées.",
    "Montmartre is a hill in the north of Paris known for the Sacré-Cœur basilica.",
    "The Musée d'Orsay is housed in a former railway station.",
    "Paris has a population of about 2.1 million inhabitants within the city limits.",
    "The Palace of Versailles lies about 20 kilometres west of Paris.",
    "The Centre Pompidou opened in 1977 and houses a museum of modern art.",
    "The Latin Quarter is home to the Sorbonne university.",
    "Paris is divided into 20 arrondissements.",
    "The Pont Neuf is the oldest standing bridge across the Seine in Paris.",
    "Charles de Gaulle airport is the main international airport of Paris.",
    "The Catacombs of Paris hold the remains of more than six million people.",
]
# 24 sentences: facts restated (supported) and changed (unsupported), a question.
ANSWER = " ".join(
    [
        "The Eiffel Tower was completed in 1889 for the World's Fair.",
        "It is 330 metres tall.",
        "Gustave Eiffel's company built it.",
        "It receives about seven million visitors a year.",
        "The Louvre is the most visited museum in the world.",
        "The Seine flows into the Channel at Le Havre.",
        "Notre-Dame was damaged by a fire in 2019.",
        "The Metro opened in 1905 and has 20 lines.",
        "Paris hosted the Olympics in 1900, 1924 and 2024.",
        "The Arc de Triomphe stands at the end of the Champs-Élysées.",
        "Is Montmartre worth a visit?",
        "Montmartre is known for the Sacré-Cœur basilica.",
        "The Musée d'Orsay is in a former railway station.",
        "Paris has about 2.1 million inhabitants.",
        "Versailles lies about 20 kilometres west of Paris.",
        "The Centre Pompidou opened in 1987.",
        "The Sorbonne is in the Latin Quarter.",
        "Paris has 20 arrondissements.",
        "The Pont Neuf is the oldest bridge across the Seine.",
        "Orly is the main international airport of Paris.",
        "The Catacombs hold the remains of six million people.",
        "The tower was the tallest structure until 1930.",
        "Its designer was Gustave Eiffel's company.",
        "Paris is a great city to visit.",
    ]
)


def _chunk(content: str | None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    body = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


def _words(text: str) -> list[str]:
    out: list[str] = []
    for i, w in enumerate(text.split(" ")):
        out.append(w if i == 0 else " " + w)
    return out


def _serve(port_q: Any) -> None:
    """The paced upstream (its own process and loop): POST /v1/chat/completions streams
    the answer at RATE chunks/s; GET /sent returns the send times of the last stream."""
    from aiohttp import web

    sent: list[float] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        sent.clear()
        gap = 1.0 / RATE
        t = time.perf_counter()
        for w in _words(ANSWER):
            t += gap
            await asyncio.sleep(max(0.0, t - time.perf_counter()))  # pacing, not sync
            sent.append(time.perf_counter())
            await resp.write(_chunk(w))
        await resp.write(_chunk(None, "stop"))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async def sent_times(request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(sent), content_type="application/json")

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        app.router.add_get("/sent", sent_times)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_q.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


def _dist(xs: list[float]) -> dict[str, float]:
    return {
        "n": len(xs),
        "p50": round(_pct(xs, 50), 3),
        "p90": round(_pct(xs, 90), 3),
        "p99": round(_pct(xs, 99), 3),
        "max": round(max(xs), 3) if xs else float("nan"),
        "mean": round(statistics.fmean(xs), 3) if xs else float("nan"),
    }


async def _one_stream(base: str, live: bool) -> dict[str, Any]:
    import aiohttp

    from streamcite import stream_chat
    from streamcite.core.events import ClaimEvent, FinishEvent, TokenEvent
    from streamcite.grounding.checker import LocalGrounding

    request = {"model": "m", "messages": [{"role": "user", "content": "Tell me about Paris."}]}
    arrivals: list[float] = []  # per token
    ends: list[int] = []  # cumulative text length after each token
    texts: list[str] = []
    claims: list[tuple[float, ClaimEvent]] = []
    finish_at = 0.0
    length = 0
    grounding = LocalGrounding(facts=FACTS, live_claims=live)
    async with stream_chat(request, base_url=base + "/v1", after=[grounding]) as s:
        async for ev in s:
            now = time.perf_counter()
            if type(ev) is TokenEvent:
                arrivals.append(now)
                length += len(ev.text)
                ends.append(length)
                texts.append(ev.text)
            elif type(ev) is ClaimEvent:
                claims.append((now, ev))
            elif type(ev) is FinishEvent:
                finish_at = now
    async with aiohttp.ClientSession() as http, http.get(base + "/sent") as r:
        sent = orjson.loads(await r.read())
    latency = [(a - b) * 1000 for a, b in zip(arrivals, sent, strict=True)]
    last_token: list[float] = []
    revealed: list[float] = []
    if live:
        full = "".join(texts)
        for at, c in claims:
            k = next(i for i, e in enumerate(ends) if e >= c.end)
            last_token.append((at - arrivals[k]) * 1000)
            # Known complete when a non-blank character after it arrived (else: finish).
            p = next((i for i in range(c.end, len(full)) if not full[i].isspace()), None)
            reveal_at = finish_at
            if p is not None:
                reveal_at = arrivals[next(i for i, e in enumerate(ends) if e > p)]
            revealed.append((at - reveal_at) * 1000)
    return {
        "latency": latency,
        "last_token": last_token,
        "revealed": revealed,
        "claims": len(claims),
        "supported": sum(1 for _, c in claims if c.supported),
    }


async def _backend_first_claim(runs: int) -> dict[str, Any]:
    from streamcite import stream_chat
    from streamcite.core.events import GroundingEvent
    from streamcite.grounding.checker import LocalGrounding
    from streamcite.local.server import BackendConfig, LocalBackend

    request = {
        "model": "streamcite-local",
        "messages": [{"role": "user", "content": "How many days can I work remotely?"}],
        "stream": True,
    }
    out: dict[str, Any] = {}
    async with LocalBackend(BackendConfig(token_delay=1.0 / RATE)) as be:
        async with stream_chat(request, base_url=be.base_url) as s:
            facts = [c.cited_text for c in (await s.until_done()).citations if c.cited_text]
        for name, grounding in (
            ("request facts (live)", LocalGrounding(facts=facts)),
            ("citations (at the finish chunk)", LocalGrounding()),
        ):
            first: list[float] = []
            ground: list[float] = []
            for _ in range(runs):
                async with stream_chat(request, base_url=be.base_url, after=[grounding]) as s:
                    t0 = time.perf_counter()
                    g_at = None
                    async for ev in s:
                        if isinstance(ev, GroundingEvent):
                            g_at = (time.perf_counter() - t0) * 1000
                    answer = s.answer
                if answer.timings.first_claim_ms is not None and g_at is not None:
                    first.append(answer.timings.first_claim_ms)
                    ground.append(g_at)
            out[name] = {"first_claim_ms": _dist(first), "grounding_ms": _dist(ground)}
    return out


async def _main(runs: int) -> dict[str, Any]:
    q: Any = mp.get_context("spawn").Queue()
    proc = mp.get_context("spawn").Process(target=_serve, args=(q,), daemon=True)
    proc.start()
    try:
        port = q.get(timeout=30)
        base = f"http://127.0.0.1:{port}"
        await _one_stream(base, True)  # warm-up (imports, first tables)
        on: dict[str, list[float]] = {"latency": [], "last_token": [], "revealed": []}
        off: list[float] = []
        claims = supported = 0
        for _ in range(runs):  # interleaved: on, off, on, off …
            r = await _one_stream(base, True)
            for k in on:
                on[k].extend(r[k])
            claims, supported = r["claims"], r["supported"]
            off.extend((await _one_stream(base, False))["latency"])
        backend = await _backend_first_claim(runs * 3)
    finally:
        proc.terminate()
        proc.join(5)
    gap_ms = 1000.0 / RATE
    return {
        "rate_chunks_per_s": RATE,
        "facts": len(FACTS),
        "sentences_per_answer": claims,
        "supported_per_answer": supported,
        "last_token_to_claim_ms": _dist(on["last_token"]),
        "complete_to_claim_ms": _dist(on["revealed"]),
        "chunk_latency_live_on_ms": _dist(on["latency"]),
        "chunk_latency_live_off_ms": _dist(off),
        "p99_added_ms": round(_pct(on["latency"], 99) - _pct(off, 99), 3),
        "p99_added_pct_of_gap": round(100 * (_pct(on["latency"], 99) - _pct(off, 99)) / gap_ms, 2),
        "backend_first_claim_vs_grounding": backend,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="streams per mode (default 3)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    logging.disable(logging.CRITICAL)
    res = asyncio.run(_main(args.runs))
    if args.json:
        print(orjson.dumps(res, option=orjson.OPT_INDENT_2).decode())
        return
    print(
        f"{res['sentences_per_answer']} sentences/answer, {res['facts']} facts, {RATE:.0f} chunks/s"
    )
    for key in ("last_token_to_claim_ms", "complete_to_claim_ms"):
        d = res[key]
        print(
            f"{key:32} p50 {d['p50']:7.2f}  p90 {d['p90']:7.2f}  p99 {d['p99']:7.2f}  (n={d['n']})"
        )
    for key in ("chunk_latency_live_off_ms", "chunk_latency_live_on_ms"):
        d = res[key]
        print(
            f"{key:32} p50 {d['p50']:7.2f}  p90 {d['p90']:7.2f}  p99 {d['p99']:7.2f}  (n={d['n']})"
        )
    print(
        f"p99 added by live claims: {res['p99_added_ms']:+.2f} ms "
        f"({res['p99_added_pct_of_gap']:+.1f} % of the {1000 / RATE:.0f} ms gap)"
    )
    for name, d in res["backend_first_claim_vs_grounding"].items():
        print(
            f"embedded backend, {name}: first claim p50 {d['first_claim_ms']['p50']:.1f} ms, "
            f"grounding p50 {d['grounding_ms']['p50']:.1f} ms"
        )


if __name__ == "__main__":
    main()
