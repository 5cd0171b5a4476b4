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

from streamcite.local.grounding.tokens import TokenTable, raw_tokens
from streamcite.local.grounding.words import fold

__all__ = ["Comparison", "comparisons", "holds", "number_value"]

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
