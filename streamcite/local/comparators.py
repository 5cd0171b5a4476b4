"""Numbers with comparators: "more than / at least / under / before N" against a fact's value.

A claim "sold more than 20 million" is supported by a fact "sold 23 million", though 20
is not in the fact; "sold under 20 million" is not. :func:`comparisons` reads the
(relation, value, unit) of each comparator in a claim; :func:`holds` compares one with
the fact's numbers that have the same unit (the closest in magnitude decides).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from streamcite.local.lexical import TokenTable, fold, raw_tokens

__all__ = [
    "Comparison",
    "comparisons",
    "holds",
    "number_value",
    "status_conflict",
    "swapped_number",
]

# Changed event status: a claim that something is done ("has already opened") against
# a fact that it is planned ("will open", "wants to"). Raw lower-case tokens.
_DONE_CUES = frozenset(
    w.encode()
    for w in [
        "already",
        "completed",
        "finished",
        "déjà",
        "achevé",
        "achevée",
        "terminé",
        "terminée",
        "già",
        "completato",
        "completata",
        "concluso",
        "conclusa",
        "terminato",
        "terminata",
        "כבר",
        "הושלם",
        "הושלמה",
    ]
)
_PLANNED_CUES = frozenset(
    w.encode()
    for w in [
        "will",
        "plans",
        "plan",
        "planned",
        "wants",
        "want",
        "intends",
        "intend",
        "going",
        "expected",
        "scheduled",
        "va",
        "vont",
        "prévoit",
        "prévu",
        "prévue",
        "souhaite",
        "veut",
        "sera",
        "seront",
        "ouvrira",
        "sarà",
        "prevede",
        "previsto",
        "prevista",
        "vuole",
        "intende",
        "aprirà",
        "יפתח",
        "תיפתח",
        "מתוכנן",
        "מתוכננת",
        "עתיד",
        "עתידה",
    ]
)


def status_conflict(claim_tokens: list[bytes], fact_tokens: list[bytes]) -> bool:
    """The claim says done where the fact says planned (or wanted)."""
    return (
        not _DONE_CUES.isdisjoint(claim_tokens)
        and not _PLANNED_CUES.isdisjoint(fact_tokens)
        and _DONE_CUES.isdisjoint(fact_tokens)
    )


_RELATIONS = {
    ">": "more than|over|above|greater than|higher than|exceeding|in excess of|after|later than|"
    "יותר מ|אחרי|"
    "plus de|au-dela de|superieur a|superieure a|apres|"
    "piu di|oltre|superiore a|dopo il|dopo",
    ">=": "at least|no less than|a minimum of|au moins|au minimum|almeno|come minimo|לפחות",
    "<": "less than|fewer than|under|below|lower than|before|earlier than|"
    "moins de|inferieur a|inferieure a|avant|meno di|inferiore a|sotto|prima del|prima di|"
    "prima|פחות מ|לפני",
    # Not "up to / jusqu'à / fino a / עד": a cap of 40 is not supported by a cap of 25.
    "<=": "at most|no more than",
}
_ALTS = "|".join(f"(?P<r{i}>{alts})" for i, alts in enumerate(fold(a) for a in _RELATIONS.values()))
_OPS = list(_RELATIONS)
_COMPARATOR_RE = re.compile(
    rf"(?<![^\W_])(?:{_ALTS})[\s-]*(\d+(?:[.,]\d+)*)(?:\s+([^\W\d_]+))?", re.UNICODE
)


@dataclass(slots=True, frozen=True)
class Comparison:
    op: str
    value: float
    key: str
    """The number's key (``#20``) as the claim's features hold it."""
    unit: str
    """Key of the word after the number (``million``), or ``""``."""


def number_value(key: str) -> float | None:
    """The value of a number key (``#1500`` -> 1500.0); None for other ``#`` keys."""
    try:
        return float(key[1:])
    except ValueError:
        return None


def comparisons(text: str, table: TokenTable) -> list[Comparison]:
    """The comparator-number pairs of a claim (empty for most claims, at one regex scan)."""
    folded = fold(text)
    out: list[Comparison] = []
    for m in _COMPARATOR_RE.finditer(folded):
        op = next(_OPS[i] for i in range(len(_OPS)) if m.group(f"r{i}") is not None)
        keys = table.keys(raw_tokens(m.group(len(_OPS) + 1)))
        key = keys[0] if keys else ""
        value = number_value(key) if key.startswith("#") else None
        if value is None:
            continue
        unit_keys = table.keys(raw_tokens(m.group(len(_OPS) + 2) or ""))
        out.append(Comparison(op, value, key, unit_keys[0] if unit_keys else ""))
    return out


def holds(cmp: Comparison, fact_numbers: list[tuple[float, str]]) -> bool | None:
    """Whether the relation holds for the fact's closest number with the same unit.

    ``fact_numbers`` are (value, key of the next word). None when the fact has no
    number to compare with.
    """
    same = [v for v, unit in fact_numbers if unit == cmp.unit] or (
        [v for v, _ in fact_numbers] if not cmp.unit else []
    )
    if not same:
        return None

    def distance(v: float) -> float:
        return abs(math.log((abs(v) + 1e-9) / (abs(cmp.value) + 1e-9)))

    v = min(same, key=distance)
    if cmp.op == ">":
        return v > cmp.value
    if cmp.op == ">=":
        return v >= cmp.value
    if cmp.op == "<":
        return v < cmp.value
    return v <= cmp.value


def _near(keys: list[str], i: int, reach: int = 2) -> list[str]:
    return keys[max(0, i - reach) : i] + keys[i + 1 : i + 1 + reach]


def _number_runs(keys: list[str]) -> list[str]:
    """Keys with each run of numbers ("December 19, 1997") joined as one ``#…`` key."""
    out: list[str] = []
    for k in keys:
        if k[:1] == "#" and out and out[-1][:1] == "#":
            out[-1] += " " + k
        else:
            out.append(k)
    return out


def swapped_number(claim_keys: list[str], fact_keys: list[str]) -> bool:
    """A number of the claim bound to the wrong word: "Physics in 1911" against a fact
    "Physics in 1903 … Chemistry in 1911" (content keys, function words dropped).

    True when the word next to the claim's number ``N`` is, in the fact, next to other
    numbers that the claim does not have, and never next to ``N``.
    """
    claim_set = set(claim_keys)
    runs = _number_runs(fact_keys)
    for i, k in enumerate(claim_keys):
        if k[:1] != "#":
            continue
        words = [w for w in _near(claim_keys, i, 1) if w[:1] != "#"]
        at = [j for j, f in enumerate(runs) if f[:1] == "#" and k in f.split()]
        if not words or not at:
            continue
        for w in words:
            if any(w in _near(runs, j) for j in at):
                continue
            for j, f in enumerate(runs):
                if f == w and any(
                    n[:1] == "#" and not claim_set.intersection(n.split())
                    for n in _near(runs, j, 1)
                ):
                    return True
    return False
