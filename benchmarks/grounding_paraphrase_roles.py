"""Balanced accuracy of the offline checker on synonym paraphrases and role swaps.

The set (``benchmarks/data/paraphrase_roles/``, its README says how it was built) holds
claims in English, French, Italian and Hebrew, in two classes: ``synonym`` (a paraphrase
with common synonyms, supported, against the same paraphrase with one word that changes
the meaning, unsupported) and ``role`` (``NAME, the ROLE, …`` with the fact's own role,
supported, against another role, unsupported). Dev and held-out are split by fact.

    .venv/bin/python benchmarks/grounding_paraphrase_roles.py            # dev only
    .venv/bin/python benchmarks/grounding_paraphrase_roles.py --heldout  # both splits
    .venv/bin/python benchmarks/grounding_paraphrase_roles.py --heldout --json

The decision is ``support_score >= 0.6`` (the product's threshold). ``--errors`` lists
the claims decided wrongly (dev only, unless ``--heldout``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grounding_sets as sets

from streamcite.grounding.checker import LocalGrounding

DATA = Path(__file__).resolve().parent / "data" / "paraphrase_roles"
THRESHOLD = 0.6
LANGS = ("en", "fr", "it", "he")
CLASSES = ("synonym", "role")


def load(split: str) -> list[dict[str, Any]]:
    with (DATA / f"{split}.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def score(rows: list[dict[str, Any]]) -> list[float]:
    checker = LocalGrounding()
    out = []
    for row in rows:
        r = checker.check_sync(row["claim"], row["facts"])
        out.append(r.support_score if r.support_score is not None else 0.0)
    return out


def report(split: str, errors: bool) -> dict[str, Any]:
    rows = load(split)
    scores = score(rows)
    out: dict[str, Any] = {"split": split, "n": len(rows)}
    for cls in CLASSES:
        for lang in (*LANGS, "all"):
            idx = [
                i
                for i, r in enumerate(rows)
                if r["cls"] == cls and (lang == "all" or r["lang"] == lang)
            ]
            ys = [bool(rows[i]["label"]) for i in idx]
            ss = [scores[i] for i in idx]
            out[f"{cls}_{lang}_ba"] = sets.balanced_accuracy(ss, ys, THRESHOLD)
            out[f"{cls}_{lang}_n"] = len(idx)
            # Per label: the share decided right (recall of supported / unsupported).
            for lab, tag in ((True, "tpr"), (False, "tnr")):
                sub = [s for s, y in zip(ss, ys, strict=True) if y is lab]
                ok = sum((s >= THRESHOLD) is lab for s in sub)
                out[f"{cls}_{lang}_{tag}"] = ok / len(sub) if sub else float("nan")
    if errors:
        out["errors"] = [
            {**r, "score": round(s, 3)}
            for r, s in zip(rows, scores, strict=True)
            if (s >= THRESHOLD) is not bool(r["label"])
        ]
    return out


def _print(rep: dict[str, Any]) -> None:
    print(f"== {rep['split']} ({rep['n']} claims), BA @0.6 (supported right / unsupported right)")
    for cls in CLASSES:
        cells = []
        for lang in (*LANGS, "all"):
            k = f"{cls}_{lang}"
            cells.append(
                f"{lang} {rep[k + '_ba']:.3f} ({rep[k + '_tpr']:.2f}/{rep[k + '_tnr']:.2f})"
            )
        print(f"  {cls:8s} " + "  ".join(cells))
    for e in rep.get("errors", []):
        print(f"  ✘ {e['fact_id']} {e['kind']:12s} {e['score']:.3f}  {e['claim']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--heldout", action="store_true", help="score the held-out split too")
    ap.add_argument("--errors", action="store_true", help="list the claims decided wrongly")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    splits = ("dev", "heldout") if args.heldout else ("dev",)
    reps = [report(s, args.errors) for s in splits]
    if args.json:
        print(json.dumps(reps, ensure_ascii=False, indent=1))
    else:
        for rep in reps:
            _print(rep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
