"""Numbers and dates with comparators: "more than / at least / under / before N".

A claim "sold more than 20 million" is supported by a fact "sold 23 million", though 20
is not in the fact; "sold under 20 million" is not, and neither is "more than 23
million" (the fact's own number fails a strict comparison). "Died after April 2008" is
supported by "May 15, 2008": dates compare at the precision the claim states, so
"premiered before 2014" is not supported by "September 22, 2014".

:func:`comparisons` reads each comparator of a claim; :func:`fact_numbers` and
:func:`fact_dates` read a fact's values from its content keys; :func:`holds` decides.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from streamcite.grounding.tokens import TokenTable, raw_tokens
from streamcite.grounding.words import fold

__all__ = [
    "Comparison",
    "comparisons",
    "fact_dates",
    "fact_numbers",
    "holds",
    "number_value",
]

Date = tuple[int, ...]
"""(year,), (year, month) or (year, month, day); year 0 when the text gives none."""

_NUMERIC = {
    ">": "more than|over|above|greater than|higher than|exceeding|in excess of|"
    "יותר מ|מעל|plus de|au-dela de|superieur a|superieure a|piu di|oltre|superiore a",
    ">=": "at least|no less than|a minimum of|au moins|au minimum|almeno|come minimo|לפחות",
    "<": "less than|fewer than|under|below|lower than|moins de|inferieur a|inferieure a|"
    "meno di|inferiore a|sotto|פחות מ|מתחת ל",
    # Not "up to / jusqu'à / fino a / עד": a cap of 40 is not supported by a cap of 25.
    "<=": "at most|no more than",
}
_TEMPORAL = {
    ">": "after|later than|apres|dopo il|dopo|אחרי",
    "<": "before|earlier than|prior to|avant|prima del|prima di|prima|לפני",
}
_GROUPS = [("n", op, alts) for op, alts in _NUMERIC.items()] + [
    ("t", op, alts) for op, alts in _TEMPORAL.items()
]
_ALTS = "|".join(f"(?P<g{i}>{fold(alts)})" for i, (_, _, alts) in enumerate(_GROUPS))
# The comparator, then the next few words (a number with its scale and unit, or a date),
# looked ahead at only: they may hold the next comparator ("under 5 and fewer than 3").
_COMPARATOR_RE = re.compile(
    rf"(?<![^\W_])(?:{_ALTS})(?=(?P<tail>(?:[\s$€£¥~≈-]*[^\s]+){{1,5}}))", re.UNICODE
)
_SCALE_WORDS = {
    "thousand": 1e3, "million": 1e6, "millions": 1e6, "billion": 1e9, "billions": 1e9,
    "trillion": 1e12, "mln": 1e6, "bn": 1e9, "milliard": 1e9, "milliards": 1e9,
    "milione": 1e6, "milioni": 1e6, "miliardo": 1e9, "miliardi": 1e9, "mila": 1e3,
    "מיליון": 1e6, "מיליארד": 1e9, "אלף": 1e3,
}  # fmt: skip
_GLUED_SCALE_RE = re.compile(r"#(\d+(?:\.\d+)?)(million|billion|bn|m|k)$")
_GLUED = {"million": 1e6, "billion": 1e9, "bn": 1e9, "m": 1e6, "k": 1e3}


@dataclass(slots=True, frozen=True)
class Comparison:
    """One comparator of a claim: ``value`` (a number, or a :data:`Date`) under ``op``."""

    op: str
    value: float | Date
    keys: frozenset[str]
    """The claim's keys the comparison stands for (number, scale, month, comparator
    words): when it holds, the fact need not contain them."""
    units: tuple[str, ...] = ()
    """Keys of the two content words after the number (``copi``, ``sold``)."""


def number_value(key: str) -> float | None:
    """The value of a number key (``#1500`` -> 1500.0, ``#15million`` -> 1.5e7)."""
    try:
        return float(key[1:])
    except ValueError:
        m = _GLUED_SCALE_RE.match(key)
        return float(m.group(1)) * _GLUED[m.group(2)] if m else None


def _scales(table: TokenTable) -> dict[str, float]:
    """Keys of the scale words in ``table``'s language -> factor (``#1000`` is thousand)."""
    return _scales_of(table.lang)


@lru_cache(maxsize=8)
def _scales_of(lang: str) -> dict[str, float]:
    # Cached by language, not by table: a full token table is replaced by a new one,
    # and a cache keyed by tables would keep the old ones alive.
    table = TokenTable(lang)
    out = {"#1000": 1e3}
    for word, factor in _SCALE_WORDS.items():
        keys = table.content_keys(raw_tokens(word))
        if keys:
            out[keys[0]] = factor
    return out


def _month(key: str) -> int | None:
    return int(key[2:]) if key.startswith("#m") and key[2:].isdigit() else None


def _int(key: str, lo: int, hi: int) -> int | None:
    v = number_value(key) if key[:1] == "#" else None
    return int(v) if v is not None and v.is_integer() and lo <= v <= hi else None


def _date_at(keys: list[str], i: int) -> tuple[Date, int] | None:
    """The date that starts at content key ``i`` and how many keys it spans."""
    n = len(keys)
    if (m := _month(keys[i])) is not None:
        day = _int(keys[i + 1], 1, 31) if i + 1 < n else None
        j = i + 1 + (day is not None)
        year = _int(keys[j], 1000, 2200) if j < n else None
        if year is None:  # "after March 19": year 0, compared without the year
            return ((0, m, day), j - i) if day else None
        return ((year, m, day) if day else (year, m)), j - i + 1
    day = _int(keys[i], 1, 31)
    if day is not None and i + 1 < n and (m := _month(keys[i + 1])) is not None:
        year = _int(keys[i + 2], 1000, 2200) if i + 2 < n else None
        return ((year, m, day), 3) if year else ((0, m, day), 2)
    year = _int(keys[i], 1000, 2200)
    return ((year,), 1) if year is not None else None


def comparisons(text: str, table: TokenTable) -> list[Comparison]:
    """The comparators of a claim with their number or date (at one regex scan)."""
    folded = fold(text)
    out: list[Comparison] = []
    for m in _COMPARATOR_RE.finditer(folded):
        i = next(i for i in range(len(_GROUPS)) if m.group(f"g{i}") is not None)
        kind, op, _ = _GROUPS[i]
        words = frozenset(table.content_keys(raw_tokens(m.group(f"g{i}"))))
        keys = table.content_keys(raw_tokens(m.group("tail")))
        if not keys:
            continue
        if kind == "t":
            found = _date_at(keys, 0)
            if found is not None:
                out.append(Comparison(op, found[0], words | frozenset(keys[: found[1]])))
            continue
        value = number_value(keys[0]) if keys[0][:1] == "#" and _month(keys[0]) is None else None
        if value is None:
            continue
        used = 1
        scale = _scales(table).get(keys[1]) if len(keys) > 1 else None
        if scale is not None:
            value, used = value * scale, 2
        units = tuple(keys[used : used + 2])
        out.append(Comparison(op, value, words | frozenset(keys[:used]), units))
    return out


def fact_numbers(keys: list[str], scales: dict[str, float]) -> list[tuple[float, tuple[str, ...]]]:
    """(value, keys of the next two content words) of each number of a fact's content keys."""
    out: list[tuple[float, tuple[str, ...]]] = []
    for j, k in enumerate(keys):
        if k[:1] != "#" or (value := number_value(k)) is None:
            continue
        nxt = j + 1
        if nxt < len(keys) and (scale := scales.get(keys[nxt])) is not None:
            value, nxt = value * scale, nxt + 1
        out.append((value, tuple(keys[nxt : nxt + 2])))
    return out


def fact_dates(keys: list[str]) -> list[Date]:
    """The dates of a fact's content keys: full dates, months of a year, years."""
    out: list[Date] = []
    i = 0
    while i < len(keys):
        found = _date_at(keys, i) if keys[i][:1] == "#" else None
        if found is None:
            i += 1
            continue
        out.append(found[0])
        i += found[1]
    return out


def _compare(op: str, a: float | Date, b: float | Date) -> bool:
    if op == ">":
        return a > b  # type: ignore[operator]
    if op == ">=":
        return a >= b  # type: ignore[operator]
    if op == "<":
        return a < b  # type: ignore[operator]
    return a <= b  # type: ignore[operator]


def _ordinal(d: Date) -> float:
    return d[0] * 400 + (d[1] if len(d) > 1 else 6) * 31 + (d[2] if len(d) > 2 else 15)


def holds(
    cmp: Comparison,
    numbers: list[tuple[float, tuple[str, ...]]],
    dates: list[Date],
) -> bool | None:
    """Whether the relation holds for the fact's closest value (same unit for numbers).

    None when the fact has nothing to compare with.
    """
    if isinstance(cmp.value, tuple):
        if not dates:
            return None
        claimed = cmp.value
        if claimed[0] == 0:  # no year in the claim: month and day against the fact's
            dates = [(0, *d[1:]) for d in dates if len(d) == 3]
            if not dates:
                return None
        else:
            dates = [d for d in dates if d[0]]
        if not dates:
            return None
        closest = min(dates, key=lambda d: abs(_ordinal(d) - _ordinal(claimed)))
        p = min(len(closest), len(claimed))
        if p < len(claimed) and closest[:p] == claimed[:p]:
            return None  # "after April 2008" against a bare "2008": cannot tell
        return _compare(cmp.op, closest[:p], claimed[:p])
    same = [v for v, units in numbers if not cmp.units or set(units) & set(cmp.units)]
    if not same:  # another word for the unit ("fatalities" / "deaths"): the closest
        same = [v for v, _ in numbers]
    if not same:
        return None
    target = cmp.value

    def distance(v: float) -> float:
        return abs(math.log((abs(v) + 1e-9) / (abs(target) + 1e-9)))

    return _compare(cmp.op, min(same, key=distance), target)
