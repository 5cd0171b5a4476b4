"""Same scores before and after a speed change of the offline grounding checker.

Dumps every claim's verdict (offsets, raw score, calibrated score, each candidate fact's
score, citations, the result's offsets in bytes and UTF-16) of the engine found under
``--root`` (a checkout's directory holding ``streamcite/``) over the benchmark sets and
the speed cases, then compares two dumps exactly (floats within 1e-12)::

    git archive main streamcite | tar -x -C /tmp/old
    .venv/bin/python benchmarks/grounding_same_scores.py dump --root /tmp/old --out /tmp/a.json
    .venv/bin/python benchmarks/grounding_same_scores.py dump --root . --out /tmp/b.json
    .venv/bin/python benchmarks/grounding_same_scores.py compare /tmp/a.json /tmp/b.json

Sets: the multilingual claims (``tests/data/grounding_claims.jsonl``), HaluEval
summarization (``--rows`` documents, both summaries), VitaminC and the conflict set (from
the cached bigbench sdist, see ``grounding_sets.py``), the two speed cases of
``grounding_quality.py``, and random mixes of those texts (answers of several sentences,
markers, line breaks, Hebrew and emoji) so that offsets and shortlists are exercised.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _use_root(root: str) -> None:
    """Import ``streamcite`` from ``root`` (not from the editable install)."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
    sys.path.insert(0, str(Path(root).resolve()))
    sys.path.insert(1, str(HERE))


def _cases(rows: int, n: int, seed: int) -> list[tuple[str, str, list[str]]]:
    import grounding_quality as gq
    import grounding_sets as sets
    import grounding_speed

    out: list[tuple[str, str, list[str]]] = []
    for it in sets.multilingual():
        out.append(("multi", it.claim, it.facts))
    path = gq.dataset_path(install=False)
    for it in sets.halueval(path, rows, seed, gq.passages):
        out.append(("halueval", it.claim, it.facts))
    if n:  # --n 0: without the two bigbench sets (their sdist may not be cached, see --help)
        for it in sets.vitaminc(False, n, seed):
            out.append(("vitaminc", it.claim, it.facts))
        for it in sets.conflicts(False, n, seed):
            out.append(("conflicts", it.claim, it.facts))
    speed_cases = grounding_speed.cases(gq.load_rows(path, 2000, seed))
    out.append(("speed_small", *speed_cases["small"]))
    out.append(("speed_limits", *speed_cases["limits"]))
    out.extend(_mixes([c for c in out if c[0] != "speed_limits"], seed))
    return out


def _mixes(cases: list[tuple[str, str, list[str]]], seed: int) -> list[tuple[str, str, list[str]]]:
    """Answers of several claims against the facts of several items (more than 6 and more
    than 50 facts, so BM25 and the shortlist at scale run), with markers and odd text."""
    rng = random.Random(seed)
    extras = [" [1]", " [2, 3]", "\n", "\n- ", " 🙂", " ¹", ""]
    out: list[tuple[str, str, list[str]]] = []
    for i in range(300):
        picks = rng.sample(cases, rng.choice((2, 4, 8, 20)))
        answer = "".join(c[1] + rng.choice(extras) + " " for c in picks)
        facts = [f for c in picks for f in c[2]]
        rng.shuffle(facts)
        if i % 3 == 0:
            facts = facts + [f.upper() for f in facts[:5]] + ["", "   ", "\n\n"]
        out.append(("mix", answer, facts[:200]))
    return out


def _verdict_row(v: Any) -> list[Any]:
    return [
        *(v.start, v.end, v.text, v.required, v.score, v.raw_score, v.fact_scores),
        *(getattr(v, "coverage", None), getattr(v, "weight", None)),  # answer aggregate
    ]


def _claim_row(c: Any) -> list[Any]:
    return [
        *(c.start, c.end, c.start_byte, c.end_byte, c.start_utf16, c.end_utf16),
        *(c.citation_indices, c.grounding_check_required, c.score),
    ]


def dump(root: str, out_path: str, rows: int, n: int, seed: int) -> None:
    _use_root(root)
    import streamcite

    assert str(Path(streamcite.__file__).resolve()).startswith(str(Path(root).resolve()))
    from streamcite.grounding import evaluate
    from streamcite.grounding.checker import LocalGrounding
    from streamcite.logs import configure_logging

    configure_logging("WARNING")
    checker = LocalGrounding()
    records: list[dict[str, Any]] = []
    for name, answer, facts in _cases(rows, n, seed):
        verdicts = evaluate(answer, facts)
        result = checker.check_sync(answer, facts, claim_level_scores=True)
        records.append(
            {
                "set": name,
                "verdicts": [_verdict_row(v) for v in verdicts],
                "claims": [_claim_row(c) for c in result.claims],
                "support": result.support_score,
                "chunks": [c.fact_index for c in result.cited_chunks],
            }
        )
    Path(out_path).write_text(json.dumps(records), encoding="utf-8")
    print(f"{len(records)} checks dumped to {out_path}")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=0.0, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def compare(a_path: str, b_path: str) -> int:
    a = json.loads(Path(a_path).read_text(encoding="utf-8"))
    b = json.loads(Path(b_path).read_text(encoding="utf-8"))
    if len(a) != len(b):
        print(f"different number of checks: {len(a)} != {len(b)}")
        return 1
    bad = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if not _same(x, y)]
    per_set: dict[str, int] = {}
    for rec in a:
        per_set[rec["set"]] = per_set.get(rec["set"], 0) + 1
    claims = sum(len(r["verdicts"]) for r in a)
    print(f"{len(a)} checks, {claims} claims: {per_set}")
    for i in bad[:5]:
        print(f"DIFFERENT: check {i} ({a[i]['set']})")
        print(json.dumps(a[i])[:600])
        print(json.dumps(b[i])[:600])
    print(f"{len(bad)} checks differ" if bad else "identical")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--root", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--rows", type=int, default=1000, help="HaluEval documents")
    d.add_argument(
        "--n",
        type=int,
        default=1500,
        help="VitaminC claims and conflict questions; 0 leaves both out (where the bigbench "
        "sdist is not cached: grounding_quality.py fetches it once)",
    )
    d.add_argument("--seed", type=int, default=7)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        dump(args.root, args.out, args.rows, args.n, args.seed)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    raise SystemExit(main())
