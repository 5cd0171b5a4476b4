"""Speed of the offline grounding checker, for ``grounding_quality.py``.

Cases (texts from HaluEval's CNN/DailyMail documents and summaries): 20 facts × 300
words with a 116-token answer; the API limits, 200 facts × 300 words with a 4,084-token
answer (209 claims); and 200 facts of 10,000 characters. Each is timed as the CPU time
of one ``check_sync`` (best of N, after one warm-up call that fills the per-process
token memo, as in a long-running service; no per-fact analysis is kept between calls,
so every call reads its facts as unseen documents), and the wall median.

:func:`breakdown` times the stages of one check at the limits (best of N each): the
language, the claims, the facts' token codes, the names veto, BM25, the candidates'
sentence sets, the alignment of each claim with its candidates (with the answer's
coverage), and the whole check.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from streamcite.enrich.limits import count_answer_tokens
from streamcite.grounding.checker import LocalGrounding

__all__ = ["answer_of_tokens", "breakdown", "cases", "facts_of", "speed"]


def answer_of_tokens(sentences: list[str], tokens: int) -> str:
    """The first sentences that fit in ``tokens`` answer tokens (as the API counts them)."""
    out: list[str] = []
    n = 0
    for s in sentences:
        k = count_answer_tokens(s)
        if n + k > tokens:
            break
        out.append(s)
        n += k
    return " ".join(out)


def facts_of(rows: list[dict[str, str]], count: int, words: int) -> list[str]:
    """``count`` facts of ``words`` words each, cut from the documents in order."""
    pool = " ".join(r["document"] for r in rows).split()
    while len(pool) < count * words:
        pool = pool + pool
    return [" ".join(pool[i * words : (i + 1) * words]) for i in range(count)]


def cases(rows: list[dict[str, str]]) -> dict[str, tuple[str, list[str]]]:
    """The speed cases: name -> (answer, facts)."""
    sentences = [
        s.strip() + "."
        for r in rows
        for s in (r["right_summary"] + " " + r["hallucinated_summary"]).split(". ")
        if len(s.split()) > 3
    ]
    big_answer = answer_of_tokens(sentences, 4096)
    return {
        "small": (answer_of_tokens(sentences, 120), facts_of(rows, 20, 300)),
        "limits": (big_answer, facts_of(rows, 200, 300)),
        "limits_max_chars": (big_answer, [f[:10_000] for f in facts_of(rows, 200, 1800)]),
    }


def _timings(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Median wall time and best CPU time of ``fn`` in ms (after one warm-up call).

    On a shared machine the wall median includes other processes' load; the best CPU
    time is the checker's own cost.
    """
    fn()
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    return {"wall_median_ms": round(statistics.median(wall), 2), "cpu_best_ms": round(min(cpu), 2)}


def speed(rows: list[dict[str, str]], repeat: int = 10) -> dict[str, Any]:
    """Timings of each case (``repeat`` calls at the limits, 5× as many for the small case)."""
    check = LocalGrounding().check_sync
    out: dict[str, Any] = {}
    for name, (answer, facts) in cases(rows).items():
        n = {"small": 5 * repeat, "limits": repeat}.get(name, max(repeat // 2, 1))
        out[name] = {
            "facts": len(facts),
            "fact_chars": max(map(len, facts)),
            "answer_tokens": count_answer_tokens(answer),
            **_timings(lambda a=answer, f=facts: check(a, f), n),  # type: ignore[misc]
        }
    out["breakdown_limits"] = breakdown(*cases(rows)["limits"], repeat=repeat)
    return out


def _stages(answer: str, facts: list[str]) -> dict[str, float]:
    # The engine's internals, imported here: the dump of grounding_same_scores.py imports
    # this module with other versions of the engine.
    from streamcite.core.grounding import GroundingFact
    from streamcite.grounding import checker, engine
    from streamcite.grounding.answer import rarity_weights
    from streamcite.grounding.config import DEFAULT_CONFIG
    from streamcite.grounding.facts import Facts
    from streamcite.grounding.scoring import score_with_coverage
    from streamcite.grounding.tokens import token_table

    cfg = DEFAULT_CONFIG
    clock = time.process_time
    t: dict[str, float] = {}
    t0 = clock()
    lang = engine._language(answer, facts)
    t["language"] = clock() - t0
    t0 = clock()
    _, claims = engine._claims(answer, lang, cfg)
    t["claims"] = clock() - t0
    t0 = clock()
    corpus = Facts(facts, token_table(lang))
    t["fact token codes"] = clock() - t0
    t0 = clock()
    engine._mark_unknown_names(claims, corpus)
    t["names"] = clock() - t0
    t0 = clock()
    shortlists = engine._shortlists(claims, corpus, cfg)
    t["bm25"] = clock() - t0
    t0 = clock()
    for candidates in shortlists:
        for j in candidates:
            corpus.facts[j].sets()
    t["candidates' sentence sets"] = clock() - t0
    t0 = clock()
    absent = engine._absent_keys(claims, corpus) if len(claims) > 1 else set()
    for claim, candidates in zip(claims, shortlists, strict=True):
        rare = rarity_weights(claim.unique, absent) if len(claims) > 1 else None
        for j in candidates:
            score_with_coverage(claim, corpus.facts[j], cfg, rare)
    t["alignment"] = clock() - t0
    grounding_facts = [GroundingFact(f) for f in facts]
    t0 = clock()
    checker._check(answer, grounding_facts, 0.6, False, None)
    t["whole check"] = clock() - t0
    return t


def breakdown(answer: str, facts: list[str], repeat: int = 10) -> dict[str, float]:
    """Best CPU time of each stage of one check, in ms (``whole check`` is timed apart:
    the stages do not add up to it exactly)."""
    _stages(answer, facts)
    best: dict[str, float] = {}
    for _ in range(repeat):
        for k, v in _stages(answer, facts).items():
            best[k] = min(best.get(k, v), v)
    return {k: round(v * 1000, 2) for k, v in best.items()}
